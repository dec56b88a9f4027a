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

#define JSTR_(x) #x
#define JSTR(x) JSTR_(x)

typedef struct {
  const unsigned char *s;
  size_t n, i;      /* text, length, position of the scan */
  const char *want; /* what was expected at i, once the scan failed */
} jscan;

static int jfail(jscan *p, const char *want) {
  p->want = want;
  return -1;
}
static void jspace(jscan *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}
static int jdigit(const jscan *p) { return p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9'; }
static int jhex(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f'); }

/* at the opening '"' */
static int jstring(jscan *p) {
  for (p->i++; p->i < p->n; p->i++) {
    unsigned char c = p->s[p->i];
    if (c == '"') {
      p->i++;
      return 0;
    }
    if (c < 0x20) return jfail(p, "'\"' to close the string (a control character, such as a line break, must be escaped)");
    if (c != '\\') continue;
    if (++p->i >= p->n) break;
    c = p->s[p->i];
    if (c == 'u') {
      for (int k = 0; k < 4; k++)
        if (++p->i >= p->n || !jhex(p->s[p->i])) return jfail(p, "4 hex digits after \\u");
    } else if (!strchr("\"\\/bfnrt", c) || !c) {
      return jfail(p, "an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX");
    }
  }
  return jfail(p, "'\"' to close the string");
}

static int jnumber(jscan *p) {
  if (p->s[p->i] == '-') p->i++;
  if (!jdigit(p)) return jfail(p, "a digit");
  if (p->s[p->i] == '0') p->i++;
  else while (jdigit(p)) p->i++;
  if (p->i < p->n && p->s[p->i] == '.') {
    p->i++;
    if (!jdigit(p)) return jfail(p, "a digit after '.'");
    while (jdigit(p)) p->i++;
  }
  if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
    p->i++;
    if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
    if (!jdigit(p)) return jfail(p, "a digit in the exponent");
    while (jdigit(p)) p->i++;
  }
  return 0;
}

static int jvalue(jscan *p, int depth) {
  static const char *const lit[] = {"true", "false", "null"};
  jspace(p);
  if (p->i >= p->n) return jfail(p, "a value");
  unsigned char c = p->s[p->i];
  if (c == '{' || c == '[') {
    int obj = c == '{';
    if (depth >= CJSON_NESTING_LIMIT) return jfail(p, "at most " JSTR(CJSON_NESTING_LIMIT) " levels of nesting (cJSON's limit)");
    p->i++;
    jspace(p);
    if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
      p->i++;
      return 0;
    }
    for (int first = 1;; first = 0) {
      if (obj) {
        jspace(p);
        if (p->i >= p->n || p->s[p->i] != '"')
          return jfail(p, first ? "a key in double quotes or '}'" : "a key in double quotes (a ',' must not end the object)");
        if (jstring(p)) return -1;
        jspace(p);
        if (p->i >= p->n || p->s[p->i] != ':') return jfail(p, "':' after the key");
        p->i++;
      }
      if (jvalue(p, depth + 1)) return -1; /* also after a ',' ending an array ("[1,]"): expected a value, found ']' */
      jspace(p);
      if (p->i < p->n && p->s[p->i] == ',') {
        p->i++;
        continue;
      }
      if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
        p->i++;
        return 0;
      }
      return jfail(p, obj ? "',' or '}' after the member" : "',' or ']' after the element");
    }
  }
  if (c == '"') return jstring(p);
  if (c == '-' || (c >= '0' && c <= '9')) return jnumber(p);
  for (int k = 0; k < 3; k++) {
    size_t l = strlen(lit[k]);
    if (p->n - p->i >= l && !memcmp(p->s + p->i, lit[k], l)) {
      p->i += l;
      return 0;
    }
  }
  return jfail(p, "a value (a string, number, object, array, true, false or null)");
}

cJSON *tz_json_parse(const char *txt, size_t len, const char *name) {
  cJSON *j = cJSON_ParseWithLength(txt, len);
  if (j) return j;
  jscan p = {(const unsigned char *)txt, len, 0, NULL};
  size_t at;
  if (jvalue(&p, 0)) {
    at = p.i;
  } else { /* the scan takes what cJSON refused: cJSON's own place */
    const char *ep = cJSON_GetErrorPtr();
    at = ep && ep >= txt && ep <= txt + len ? (size_t)(ep - txt) : 0;
    p.want = NULL;
  }
  int line = 1, col = 1;
  for (size_t k = 0; k < at; k++) {
    if (txt[k] == '\n') line++, col = 1;
    else if (((unsigned char)txt[k] & 0xC0) != 0x80) col++; /* a character: not a UTF-8 continuation byte */
  }
  char found[32];
  unsigned char c = at < len ? (unsigned char)txt[at] : 0;
  if (at >= len) snprintf(found, sizeof found, "the end of the file");
  else if (c == '\'') snprintf(found, sizeof found, "\"'\"");
  else if (c > 0x20 && c < 0x7f) snprintf(found, sizeof found, "'%c'", c);
  else if (c == '\n') snprintf(found, sizeof found, "the end of the line");
  else snprintf(found, sizeof found, "byte 0x%02x", c);
  if (p.want) tz_err("%s:%d:%d: invalid JSON: expected %s, found %s", name, line, col, p.want, found);
  else tz_err("%s:%d:%d: invalid JSON (cJSON stops here, at %s)", name, line, col, found);
  return NULL;
}
