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
/* Parse the JSON text txt[0..len) of the file `name` (its path, as messages name it) with cJSON:
 * the tree, or NULL with one line saying where: "NAME:LINE:COLUMN: invalid JSON near '64'" (line
 * and column from 1, the column in UTF-8 characters; the place is where cJSON's parser stopped,
 * cJSON_GetErrorPtr, which for a cut text is at or just before its end); "NAME: empty: ..." for
 * a text of white space alone; text after the value is refused too ("... invalid JSON: text after
 * the value near 'x'"; cJSON takes the first value and stops). Users: a Hugging Face
 * directory's config.json and model.safetensors.index.json (formats/hf.c). */
cJSON *tz_json_parse(const char *txt, size_t len, const char *name);

#endif
