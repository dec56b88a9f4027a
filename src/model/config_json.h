/* tz_config <-> JSON (stored in checkpoints' "meta" section and printed by tools).
 * {"arch":"llama","n_layer":4,"n_head":4,"n_kv_head":4,"d_model":128,"d_ff":352,
 *  "vocab_size":2048,"padded_vocab":2048,"max_seq_len":128,"tied":1,"rope_theta":10000,
 *  "norm_eps":1e-5} */
#ifndef TZ_MODEL_CONFIG_JSON_H
#define TZ_MODEL_CONFIG_JSON_H
#include <cjson/cJSON.h>

#include "tezgah.h"

cJSON *tz_config_to_json(const tz_config *c);
/* Parse and finalize. Errors name `where` (e.g. the checkpoint path), the field and value. */
int tz_config_from_json(const cJSON *j, const char *where, tz_config *c);
const char *tz_arch_name(tz_arch a);
/* "llama" / "gpt2" → arch; -1 if unknown. */
int tz_arch_parse(const char *s);

#endif
