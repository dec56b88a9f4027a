/* Tokenizer storage: JSON in the shape of a Hugging Face tokenizer.json (BPE model), plus
 * format detection for tz_tok_load.
 *
 * FORMAT (what tz_tok_to_json writes and tz_tok_from_json reads):
 *   {
 *     "version": "1.0",
 *     "added_tokens": [ {"id": 4095, "content": "<|endoftext|>", "single_word": false,
 *                        "lstrip": false, "rstrip": false, "normalized": false, "special": true} ],
 *     "normalizer": null,
 *     "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
 *                       "use_regex": true},
 *     "post_processor": {"type": "ByteLevel", ...},
 *     "decoder": {"type": "ByteLevel", ...},
 *     "model": {"type": "BPE", "dropout": null, "unk_token": null, ...,
 *               "vocab": {"!": 33, ..., "Ġthe": 300, ...},
 *               "merges": ["Ġ t", "h e", ...]}
 *   }
 * - vocab keys are token bytes through GPT-2's bytes_to_unicode (byte b -> code point b for the
 *   printable bytes 33..126, 161..172, 174..255, else 256+k for the k-th other byte; stored as
 *   UTF-8). Ids must be exactly 0..V-1 (each once) over vocab and added_tokens together.
 * - added_tokens: special tokens, matched literally in text (content is raw text, not mapped);
 *   "<|endoftext|>" is the EOT id. They may also appear in vocab (at their own id); no two
 *   may have the same content.
 * - merges: in rank order; "left right" (one space; mapped strings never contain a space) or
 *   ["left", "right"]. Every merge must name known tokens and produce a token in the vocab;
 *   no two merges may produce the same token. Encoding: a pair merges when its concatenation is a
 *   token produced by some merge, lowest merge rank first (tiktoken's rule).
 * - all 256 single bytes must be tokens.
 * Our trained tokenizers use id == byte for the 256 bytes, merges in id order, EOT last. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/utf8.h"
#include "tokenizer/tok_internal.h"

int tz_tok_to_json(const tz_tokenizer *t, char **json, size_t *len) {
  *json = NULL;
  *len = 0;
  if (t->kind != TZ_TOK_BYTELEVEL)
    return tz_err("tokenizer: only byte-level BPE tokenizers can be written as tokenizer.json");
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "version", "1.0");
  cJSON_AddNullToObject(root, "truncation");
  cJSON_AddNullToObject(root, "padding");
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  for (int i = 0; i < t->vocab_size; i++) {
    if (!t->special[i]) continue;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", i);
    cJSON_AddStringToObject(a, "content", t->tok[i]);
    cJSON_AddBoolToObject(a, "single_word", 0);
    cJSON_AddBoolToObject(a, "lstrip", 0);
    cJSON_AddBoolToObject(a, "rstrip", 0);
    cJSON_AddBoolToObject(a, "normalized", 0);
    cJSON_AddBoolToObject(a, "special", 1);
    cJSON_AddItemToArray(added, a);
  }
  cJSON_AddNullToObject(root, "normalizer");
  for (int k = 0; k < 2; k++) {
    cJSON *p = cJSON_AddObjectToObject(root, k == 0 ? "pre_tokenizer" : "post_processor");
    cJSON_AddStringToObject(p, "type", "ByteLevel");
    cJSON_AddBoolToObject(p, "add_prefix_space", 0);
    cJSON_AddBoolToObject(p, "trim_offsets", 1);
    cJSON_AddBoolToObject(p, "use_regex", 1);
  }
  cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
  cJSON_AddStringToObject(dec, "type", "ByteLevel");
  cJSON_AddBoolToObject(dec, "add_prefix_space", 1);
  cJSON_AddBoolToObject(dec, "trim_offsets", 1);
  cJSON_AddBoolToObject(dec, "use_regex", 1);
  cJSON *model = cJSON_AddObjectToObject(root, "model");
  cJSON_AddStringToObject(model, "type", "BPE");
  cJSON_AddNullToObject(model, "dropout");
  cJSON_AddNullToObject(model, "unk_token");
  cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
  cJSON_AddStringToObject(model, "end_of_word_suffix", "");
  cJSON_AddBoolToObject(model, "fuse_unk", 0);
  cJSON_AddBoolToObject(model, "byte_fallback", 0);
  cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
  char **mapped = tz_calloc((size_t)t->vocab_size, sizeof *mapped);
  for (int i = 0; i < t->vocab_size; i++) {
    mapped[i] = t->special[i] ? tz_strdup(t->tok[i]) : tz_map_token(t->tok[i], t->tok_len[i]);
    cJSON_AddNumberToObject(vocab, mapped[i], i);
  }
  cJSON *merges = cJSON_AddArrayToObject(model, "merges");
  for (int r = 0; r < t->n_merges; r++) {
    const char *a = mapped[t->merges[2 * r]], *b = mapped[t->merges[2 * r + 1]];
    size_t la = strlen(a), lb = strlen(b);
    char *m = tz_malloc(la + lb + 2);
    memcpy(m, a, la);
    m[la] = ' ';
    memcpy(m + la + 1, b, lb + 1);
    cJSON_AddItemToArray(merges, cJSON_CreateString(m));
    free(m);
  }
  for (int i = 0; i < t->vocab_size; i++) free(mapped[i]);
  free(mapped);
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  if (!s) return tz_err("tokenizer: out of memory while writing JSON");
  *json = s;
  *len = strlen(s);
  return 0;
}

static int get_id(const cJSON *v, const char *name, const char *what, int *out) {
  if (!cJSON_IsNumber(v)) return tz_err("%s: %s is not a number", name, what);
  double d = v->valuedouble;
  if (!(d >= 0 && d < (1 << 24)) || d != floor(d))
    return tz_err("%s: %s = %g is not a token id (integer in 0..%d)", name, what, d, (1 << 24) - 1);
  *out = (int)d;
  return 0;
}

int tz_tok_from_json(const char *json, size_t len, const char *name, tz_tokenizer **out) {
  *out = NULL;
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) {
    const char *ep = cJSON_GetErrorPtr();
    long off = (ep && ep >= json && ep <= json + len) ? (long)(ep - json) : -1;
    if (off >= (long)len) return tz_err("%s: invalid JSON (truncated? ends at byte %zu)", name, len);
    return tz_err("%s: invalid JSON near byte %ld", name, off);
  }
  tz_tokenizer *t = NULL;
  tz_bmap names; /* mapped vocab string -> id */
  tz_bmap_init(&names, 1024);
  tz_bmap specials; /* added token content -> id */
  tz_bmap_init(&specials, 16);
  int rc = -1, V = 0;
  char *buf = NULL;
  if (!cJSON_IsObject(root)) {
    tz_err("%s: top level is not a JSON object", name);
    goto done;
  }
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (!cJSON_IsObject(model)) {
    tz_err("%s: missing object \"model\"", name);
    goto done;
  }
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
  if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "BPE") == 0)) {
    tz_err("%s: model.type must be \"BPE\"", name);
    goto done;
  }
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (!cJSON_IsObject(vocab)) {
    tz_err("%s: missing object \"model.vocab\"", name);
    goto done;
  }
  if (!cJSON_IsArray(merges)) {
    tz_err("%s: missing array \"model.merges\"", name);
    goto done;
  }
  if (added && !cJSON_IsArray(added) && !cJSON_IsNull(added)) {
    tz_err("%s: \"added_tokens\" is not an array", name);
    goto done;
  }
  /* size */
  const cJSON *it;
  cJSON_ArrayForEach(it, vocab) {
    int id = 0;
    if (get_id(it, name, "a model.vocab value", &id)) goto done;
    if (id + 1 > V) V = id + 1;
  }
  if (cJSON_IsArray(added)) cJSON_ArrayForEach(it, added) {
      int id = 0;
      if (!cJSON_IsObject(it) || get_id(cJSON_GetObjectItemCaseSensitive(it, "id"), name, "added_tokens[].id", &id))
        goto done;
      if (id + 1 > V) V = id + 1;
    }
  if (V == 0) {
    tz_err("%s: empty vocab", name);
    goto done;
  }
  t = tz_tok_alloc(TZ_TOK_BYTELEVEL, V);
  if (cJSON_IsArray(added)) cJSON_ArrayForEach(it, added) {
      int id = 0;
      get_id(cJSON_GetObjectItemCaseSensitive(it, "id"), name, "", &id);
      const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
      if (!cJSON_IsString(content) || !content->valuestring[0]) {
        tz_err("%s: added token %d has no \"content\" string", name, id);
        goto done;
      }
      if (t->tok[id]) {
        tz_err("%s: added token id %d appears twice", name, id);
        goto done;
      }
      /* one text, two ids: encode can give only one of them, so the other never round-trips */
      int is_new;
      long e = tz_bmap_put(&specials, content->valuestring, strlen(content->valuestring), id, &is_new);
      if (!is_new) {
        tz_err("%s: added token \"%s\" appears twice (ids %d and %d)", name, content->valuestring,
               (int)specials.ents[e].val, id);
        goto done;
      }
      t->tok[id] = tz_strdup(content->valuestring);
      t->tok_len[id] = strlen(content->valuestring);
      t->special[id] = 1;
      if (strcmp(content->valuestring, TZ_EOT_STR) == 0) t->eot = id;
    }
  cJSON_ArrayForEach(it, vocab) {
    int id = (int)it->valuedouble;
    const char *key = it->string;
    size_t kl = strlen(key);
    int is_new;
    long e = tz_bmap_put(&names, key, kl, id, &is_new);
    if (!is_new) {
      tz_err("%s: vocab key \"%s\" appears twice", name, key);
      goto done;
    }
    (void)e;
    if (t->special[id]) {
      if (strcmp(t->tok[id], key) != 0) {
        tz_err("%s: vocab id %d is \"%s\" but added token %d is \"%s\"", name, id, key, id, t->tok[id]);
        goto done;
      }
      continue;
    }
    if (t->tok[id]) {
      tz_err("%s: vocab id %d appears twice", name, id);
      goto done;
    }
    char *raw = tz_malloc(kl + 1);
    long rl = tz_unmap_token(key, kl, raw);
    if (rl <= 0) {
      free(raw);
      tz_err("%s: vocab key \"%s\" (id %d) is not a byte-level (GPT-2 bytes_to_unicode) token", name, key, id);
      goto done;
    }
    raw[rl] = 0;
    t->tok[id] = raw;
    t->tok_len[id] = (size_t)rl;
  }
  /* merges */
  int nm = cJSON_GetArraySize(merges);
  t->merges = tz_malloc((size_t)(nm ? nm : 1) * 2 * sizeof *t->merges);
  t->n_merges = nm;
  int r = 0;
  cJSON_ArrayForEach(it, merges) {
    const char *parts[2];
    size_t plen[2];
    if (cJSON_IsString(it)) {
      const char *s = it->valuestring, *sp = strchr(s, ' ');
      if (!sp || strchr(sp + 1, ' ') || sp == s || !sp[1]) {
        tz_err("%s: merge %d \"%s\" is not \"left right\"", name, r, s);
        goto done;
      }
      parts[0] = s, plen[0] = (size_t)(sp - s), parts[1] = sp + 1, plen[1] = strlen(sp + 1);
    } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
      for (int k = 0; k < 2; k++) {
        parts[k] = cJSON_GetArrayItem(it, k)->valuestring;
        plen[k] = strlen(parts[k]);
      }
    } else {
      tz_err("%s: merge %d is neither a string nor a pair of strings", name, r);
      goto done;
    }
    for (int k = 0; k < 2; k++) {
      long e = tz_bmap_find(&names, parts[k], plen[k]);
      if (e < 0) {
        tz_err("%s: merge %d refers to unknown token \"%.*s\"", name, r, (int)plen[k], parts[k]);
        goto done;
      }
      t->merges[2 * r + k] = names.ents[e].val;
    }
    r++;
  }
  if (tz_tok_finish_bytelevel(t, name)) goto done;
  rc = 0;
done:
  free(buf);
  tz_bmap_free(&names);
  tz_bmap_free(&specials);
  cJSON_Delete(root);
  if (rc) {
    tz_tok_free(t);
    return -1;
  }
  *out = t;
  return 0;
}

int tz_tok_save(const tz_tokenizer *t, const char *path) {
  char *js;
  size_t n;
  if (tz_tok_to_json(t, &js, &n)) return -1;
  int rc = tz_write_file_atomic(path, js, n);
  free(js);
  return rc;
}

int tz_tok_load(const char *path, tz_tokenizer **out) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* a run directory (tokenizer.json or tokenizer.bin beside the checkpoint) */
    static const char *const RUN_TOK[2] = {"tokenizer.json", "tokenizer.bin"};
    for (int i = 0; i < 2; i++) {
      char *f = tz_path_join(path, RUN_TOK[i]);
      if (tz_exists(f)) {
        int rc = tz_tok_load(f, out);
        free(f);
        return rc;
      }
      free(f);
    }
    char *enc = tz_path_join(path, "encoder.json"), *bpe = tz_path_join(path, "vocab.bpe");
    int rc;
    if (!tz_exists(enc) || !tz_exists(bpe))
      rc = tz_err("%s: a tokenizer directory must hold tokenizer.json, tokenizer.bin, or encoder.json and vocab.bpe (GPT-2)", path);
    else
      rc = tz_tok_load_gpt2_files(enc, bpe, out);
    free(enc);
    free(bpe);
    return rc;
  }
  char *data;
  size_t len;
  if (tz_read_file(path, &data, &len)) return -1;
  int rc = tz_tok_load_buf(path, data, len, out);
  free(data);
  return rc;
}

int tz_tok_load_buf(const char *path, const char *data, size_t len, tz_tokenizer **out) {
  *out = NULL;
  int rc;
  size_t i = 0, pl = strlen(path);
  while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t')) i++;
  uint32_t magic = 0;
  if (len >= 4) memcpy(&magic, data, 4);
  /* a name in .json is a tokenizer.json whatever its bytes: a damaged one (a run's, read by
   * encode --tokenizer RUN) was read as llama2.c's binary format and blamed its header fields */
  int json_name = pl >= 5 && !strcmp(path + pl - 5, ".json");
  if (len == 0)
    rc = tz_err("%s: file is empty", path);
  else if (json_name && (i == len || data[i] != '{')) {
    /* valid JSON of another kind ([], 3, "x") is no "text file": say what it is */
    const char *end = NULL; /* one value and white space alone ("3 apples" is text) */
    cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, 0);
    while (j && end && end < data + len && strchr(" \t\r\n", *end) && *end) end++;
    if (j && (!end || end < data + len)) cJSON_Delete(j), j = NULL;
    if (j) {
      rc = tz_err("%s: not a tokenizer.json: JSON, but %s, not an object (a tokenizer.json is one JSON object)", path,
                  cJSON_IsArray(j) ? "an array" : cJSON_IsString(j) ? "a string" : cJSON_IsNumber(j) ? "a number"
                  : cJSON_IsNull(j) ? "null" : "a boolean");
      cJSON_Delete(j);
    } else {
      char head[128];
      size_t n = len < 64 ? len : 64;
      int text = tz_utf8_describe_head((const unsigned char *)data, n, len > n, head, sizeof head);
      rc = tz_err("%s: not a tokenizer.json: %s%s%s, not a JSON object", path, text ? "a text file (starts with " : "starts with ",
                  head, text ? ")" : "");
    }
  } else if (i < len && data[i] == '{' && (json_name || !memchr(data, 0, len < 64 ? len : 64)))
    /* JSON has no NUL bytes; a llama2.c file with max_token_length 123 starts "{\0\0\0" */
    rc = tz_tok_from_json(data, len, path, out);
  else if (magic == 20240328)
    rc = tz_tok_load_llmc_buf(path, data, len, out);
  else
    rc = tz_tok_load_llama2c_buf(path, data, len, out);
  return rc;
}
