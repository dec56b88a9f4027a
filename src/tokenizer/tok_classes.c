/* The character classes of the GPT-2 pre-tokenizer pattern, per Unicode code point, taken from
 * PCRE2 itself (the library the CPU pre-tokenizer runs), so the GPU pre-tokenizer
 * (src/kernels/bpe/bpe_pretok.wgsl) classifies every character exactly as the CPU's regex does:
 * no hand-written Unicode tables. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "tokenizer/tok_internal.h"

/* The pattern's three classes, each as the pattern spells it, with the same options
 * (PCRE2_UTF | PCRE2_UCP) as tz_pretok_compile; a code point matching none is "other"
 * ([^\s\p{L}\p{N}]). Anchored: the one character must match at offset 0. */
static const char CLASS_PATTERN[] = "(\\p{L})|(\\p{N})|(\\s)";

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint32_t *table;
static double build_s;
static char why[300];

static size_t utf8(uint32_t cp, unsigned char *o) {
  if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

static void build(void) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int err;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)CLASS_PATTERN, PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &off, NULL);
  if (!re) {
    PCRE2_UCHAR msg[200];
    pcre2_get_error_message(err, msg, sizeof msg);
    snprintf(why, sizeof why, "PCRE2 cannot compile the class pattern %s: %s", CLASS_PATTERN, (const char *)msg);
    return;
  }
  int jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
  uint32_t *t = calloc(TZ_PRETOK_CLASS_WORDS, sizeof *t);
  int failed = 0;
  if (!t) TZ_ASSERT(!"out of memory");
  /* chunks of 64 Ki code points over the threads; each thread its own match data */
#pragma omp parallel for schedule(dynamic, 1)
  for (uint32_t c0 = 0; c0 < 0x110000; c0 += 0x10000) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) TZ_ASSERT(!"pcre2 out of memory");
    for (uint32_t cp = c0; cp < c0 + 0x10000; cp++) {
      if (cp >= 0xD800 && cp < 0xE000) continue; /* surrogates: invalid UTF-8, never classified */
      unsigned char s[4];
      size_t n = utf8(cp, s);
      int m = jit ? pcre2_jit_match(re, s, n, 0, 0, md, NULL) : pcre2_match(re, s, n, 0, 0, md, NULL);
      uint32_t k = TZ_CLASS_OTHER;
      if (m > 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (m >= 2 && ov[2] != PCRE2_UNSET) k = TZ_CLASS_LETTER;
        else if (m >= 3 && ov[4] != PCRE2_UNSET) k = TZ_CLASS_NUMBER;
        else if (m >= 4 && ov[6] != PCRE2_UNSET) k = TZ_CLASS_SPACE;
        if (ov[1] != n) {
#pragma omp atomic write
          failed = 1;
        }
      } else if (m != PCRE2_ERROR_NOMATCH) {
#pragma omp atomic write
        failed = 1;
      }
      t[cp >> 4] |= k << ((cp & 15) * 2); /* each 16-code-point word belongs to one chunk */
    }
    pcre2_match_data_free(md);
  }
  pcre2_code_free(re);
  if (failed) {
    free(t);
    snprintf(why, sizeof why, "PCRE2 did not classify every code point (UTF-8 / Unicode support?)");
    return;
  }
  table = t;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  build_s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

int tz_pretok_classes(const uint32_t **out, double *seconds) {
  pthread_once(&once, build);
  if (seconds) *seconds = build_s;
  *out = table;
  if (!table) return tz_err("tokenizer: character class table: %s", why);
  return 0;
}
