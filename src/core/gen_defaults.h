/* Default generation settings, below every layer that names them: `tezgah sample`
 * (tz_sample_opts_default, src/sample/generate.c) starts from them, and the Hugging Face
 * export (src/formats/hf.c) writes them into generation_config.json, so that transformers'
 * generate() samples a converted model as `tezgah sample` does. A header of constants only:
 * formats need not link against the sampler to know them. */
#ifndef TZ_CORE_GEN_DEFAULTS_H
#define TZ_CORE_GEN_DEFAULTS_H

#define TZ_GEN_TEMPERATURE 0.8f /* softmax temperature (0: greedy) */
#define TZ_GEN_TOP_K 40         /* keep the 40 most likely tokens (0: off) */
#define TZ_GEN_TOP_P 1.0f       /* nucleus sampling's mass (1: off) */

#endif
