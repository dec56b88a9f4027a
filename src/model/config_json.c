#include "model/config_json.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"

const char *tz_arch_name(tz_arch a) { return a == TZ_ARCH_GPT2 ? "gpt2" : "llama"; }

int tz_arch_parse(const char *s) {
  if (!strcmp(s, "llama")) return TZ_ARCH_LLAMA;
  if (!strcmp(s, "gpt2")) return TZ_ARCH_GPT2;
  return -1;
}

cJSON *tz_config_to_json(const tz_config *c) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "arch", tz_arch_name(c->arch));
#define I(f) cJSON_AddNumberToObject(j, #f, c->f)
  I(n_layer); I(n_head); I(n_kv_head); I(d_model); I(d_ff); I(vocab_size); I(padded_vocab);
  I(max_seq_len); I(tied); I(rope_theta); I(norm_eps);
#undef I
  return j;
}

static int get_num(const cJSON *j, const char *where, const char *field, double *out) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, field);
  if (!cJSON_IsNumber(x)) return tz_err("%s: config field '%s' is missing or not a number", where, field);
  *out = x->valuedouble;
  return 0;
}

int tz_config_from_json(const cJSON *j, const char *where, tz_config *c) {
  memset(c, 0, sizeof *c);
  const cJSON *arch = cJSON_GetObjectItemCaseSensitive(j, "arch");
  if (!cJSON_IsString(arch) || tz_arch_parse(arch->valuestring) < 0)
    return tz_err("%s: config field 'arch' is %s (expected \"llama\" or \"gpt2\")", where,
                  cJSON_IsString(arch) ? arch->valuestring : "missing");
  c->arch = (tz_arch)tz_arch_parse(arch->valuestring);
  double v = 0;
#define I(f)                                                                 \
  if (get_num(j, where, #f, &v)) return -1;                                  \
  if (v != (int)v) return tz_err("%s: config field '" #f "' is %g (expected an integer)", where, v); \
  c->f = (int)v;
#define F(f)                                                                 \
  if (get_num(j, where, #f, &v)) return -1;                                  \
  c->f = (float)v;
  I(n_layer) I(n_head) I(n_kv_head) I(d_model) I(d_ff) I(vocab_size) I(padded_vocab)
  I(max_seq_len) I(tied) F(rope_theta) F(norm_eps)
#undef I
#undef F
  if (tz_config_finalize(c)) return tz_err_prefix(where);
  return 0;
}

/* ---- tz_json_parse: where a JSON text goes wrong ---- */

/* Line and column (from 1; the column in UTF-8 characters) of byte `at` of txt. */
static void line_col(const char *txt, size_t at, int *line, int *col) {
  *line = 1, *col = 1;
  for (size_t k = 0; k < at; k++) {
    if (txt[k] == '\n') ++*line, *col = 1;
    else if (((unsigned char)txt[k] & 0xC0) != 0x80) ++*col; /* a character: not a UTF-8 continuation byte */
  }
}

/* "NAME:LINE:COL: invalid JSON<what> near '<up to 16 bytes of the line at `at`>'" */
static void near_err(const char *txt, size_t len, size_t at, const char *name, const char *what) {
  int line, col;
  line_col(txt, at, &line, &col);
  char near[80]; /* 16 bytes, each at most 4 characters as \xNN */
  size_t n = 0;
  for (size_t k = at; k < len && k < at + 16 && txt[k] != '\n' && txt[k] != '\r'; k++) {
    unsigned char c = (unsigned char)txt[k];
    n += (size_t)snprintf(near + n, sizeof near - n, c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
  }
  near[n] = 0;
  size_t blank = at;
  while (blank < len && (txt[blank] == ' ' || txt[blank] == '\t')) blank++;
  if (n && blank < len && txt[blank] != '\n' && txt[blank] != '\r') { /* (blanks alone: the line's end, below) */
    tz_err("%s:%d:%d: invalid JSON%s near '%s'", name, line, col, what, near);
    return;
  }
  /* at a line's end: cJSON stopped after the last token of a cut text (white space to the end),
   * or before a line break */
  size_t k = at;
  while (k < len && txt[k] && strchr(" \t\r\n", txt[k])) k++;
  if (k >= len)
    tz_err("%s:%d:%d: invalid JSON%s: the text ends too soon (unclosed brace, bracket or string, or a ',' "
           "before the end?)", name, line, col, what);
  else
    tz_err("%s:%d:%d: invalid JSON%s at the end of the line (a ',' before a '}' or ']'?)", name, line, col, what);
}

cJSON *tz_json_parse(const char *txt, size_t len, const char *name) {
  size_t lead = 0; /* (bounded by len: the text need not end in a NUL) */
  while (lead < len && txt[lead] && strchr(" \t\r\n", txt[lead])) lead++;
  if (lead >= len) return tz_err("%s: empty: no JSON value in it", name), NULL;
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(txt, len, &end, 0);
  if (j) { /* cJSON stops after the value: what follows it must be white space */
    size_t at = end && end >= txt && end <= txt + len ? (size_t)(end - txt) : len;
    while (at < len && txt[at] && strchr(" \t\r\n", txt[at])) at++;
    if (at >= len) return j;
    cJSON_Delete(j);
    near_err(txt, len, at, name, ": text after the value");
    return NULL;
  }
  /* cJSON's place: where its parser stopped (the unexpected character; in a cut text, the last
   * character but white space, cJSON 1.7.15 ending its place at len - 1). `end` is set on
   * failure too (cJSON_GetErrorPtr's global, without the global). */
  size_t at = end && end >= txt && end <= txt + len ? (size_t)(end - txt) : 0;
  size_t last = len; /* just after the last character that is not white space */
  while (last > 0 && strchr(" \t\r\n", txt[last - 1]) && txt[last - 1]) last--;
  if (at + 1 >= last && txt[at] != '}' && txt[at] != ']') { /* a cut text: said where it ends */
    int line, col;
    line_col(txt, last, &line, &col);
    tz_err("%s:%d:%d: invalid JSON: the text ends too soon (unclosed brace, bracket or string, or a ',' before "
           "the end?)", name, line, col);
  } else {
    near_err(txt, len, at, name, "");
  }
  return NULL;
}
