/* Loaders for other projects' tokenizer files (GPT-2, llama2.c, llm.c). */
#include "core/error.h"
#include "tokenizer/tok_internal.h"

int tz_tok_load_gpt2_files(const char *encoder_json, const char *vocab_bpe, tz_tokenizer **out) {
  *out = NULL;
  return tz_err("%s: GPT-2 tokenizer files are not supported yet", encoder_json);
}
int tz_tok_load_llama2c_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  return tz_err("%s: not a tokenizer.json file", path);
}
int tz_tok_load_llmc_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  return tz_err("%s: llm.c tokenizer files are not supported yet", path);
}
int tz_tok_encode_llama2c(const tz_tokenizer *t, const char *text, int bos, int eos, int32_t **ids,
                          size_t *n_ids) {
  *ids = NULL;
  *n_ids = 0;
  return tz_err("tokenizer: not a llama2.c tokenizer");
}
