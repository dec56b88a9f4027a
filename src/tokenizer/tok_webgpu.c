/* The byte-level BPE tokenizer on WebGPU: training, encoding and decoding as WGSL kernels
 * (src/kernels/bpe/), output identical to the CPU's. One file per stage, as the kernels are:
 *   tok_webgpu_ctx.c     the device and the helpers every stage uses (tok_webgpu_ctx.h)
 *   tok_webgpu_pretok.c  GPT-2 pre-tokenization on the GPU (bpe_pretok.wgsl)
 *   tok_webgpu_words.c   word counting for training (bpe_words.wgsl)
 *   tok_webgpu_train.c   BPE training (bpe_train.wgsl)
 *   tok_webgpu_tables.c  the tokenizer's tables for the encoder and decoder
 *   tok_webgpu_encode.c  encoding (bpe_encode.wgsl)
 *   tok_webgpu_decode.c  decoding (bpe_encode.wgsl's dec_* entries)
 * tok_webgpu_stages.h holds what the stages share with each other. This file: the backend
 * choice for training, encoding and decoding, with the CPU as fallback (tz_tok_*_on). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tok_webgpu_stages.h"

static void fallback_notice(const char *what, const char *why) {
  fprintf(stderr, "tezgah: %s on WebGPU: %s; using the CPU\n", what, tz_tg_why_bare(why));
}

static int want_gpu(const char *backend, const char *what) {
  if (!backend || !strcmp(backend, "cpu")) return 0;
  if (tz_tok_webgpu_available()) return 1;
  fprintf(stderr, "tezgah: %s: WebGPU unavailable (%s); using the CPU\n", what, tz_tg_why_bare(tz_errmsg()));
  return 0;
}

int tz_tok_backend_check(const char *backend) {
  if (!backend || !strcmp(backend, "cpu") || !strcmp(backend, "webgpu")) return 0;
  return tz_err("'%s' is not one of cpu, webgpu (the tokenizing backends)", backend);
}

static const char *last_train = "cpu";
const char *tz_tok_train_ran_on(void) { return last_train; }

int tz_tok_train_on(const char *backend, const char *text, size_t len, int vocab_size, tz_tokenizer **out) {
  last_train = "cpu";
  if (tz_tok_backend_check(backend)) return -1;
  if (want_gpu(backend, "tokenizer training")) {
    char why[160];
    /* the limit that applies, with the value that exceeds it */
    if (vocab_size > 65536) {
      snprintf(why, sizeof why, "vocab size %d is above the GPU trainer's limit of 65536", vocab_size);
      fallback_notice("tokenizer training", why);
    } else if (len >= (1u << 31)) {
      snprintf(why, sizeof why, "%zu bytes of text are above the GPU trainer's limit of 2 GiB", len);
      fallback_notice("tokenizer training", why);
    } else {
      if (tz_tok_train_webgpu(text, len, vocab_size, out, NULL) == 0) {
        last_train = "webgpu";
        return 0;
      }
      fallback_notice("tokenizer training", tz_errmsg());
    }
  }
  return tz_tok_train(text, len, vocab_size, out);
}

int tz_tok_encode_on(const char *backend, const tz_tokenizer *t, const char *text, size_t len, int allow_special,
                     int32_t **ids, size_t *n_ids) {
  if (tz_tok_backend_check(backend)) return -1;
  if (t->kind == TZ_TOK_BYTELEVEL && want_gpu(backend, "encoding")) {
    if (t->vocab_size > 65536) {
      char why[96];
      snprintf(why, sizeof why, "vocab size %d is above the GPU encoder's limit of 65536", t->vocab_size);
      fallback_notice("encoding", why);
    } else {
      if (tz_tok_encode_webgpu(t, text, len, allow_special, ids, n_ids) == 0) return 0;
      fallback_notice("encoding", tz_errmsg());
    }
  }
  return tz_tok_encode(t, text, len, allow_special, ids, n_ids);
}

int tz_tok_decode_on(const char *backend, const tz_tokenizer *t, const int32_t *ids, size_t n, char **text,
                     size_t *len) {
  if (tz_tok_backend_check(backend)) return -1;
  if (t->kind == TZ_TOK_BYTELEVEL && want_gpu(backend, "decoding")) {
    for (size_t i = 0; i < n; i++)
      if (ids[i] < 0 || ids[i] >= t->vocab_size) return tz_tok_decode(t, ids, n, text, len); /* its error */
    if (t->vocab_size > 65536) {
      char why[96];
      snprintf(why, sizeof why, "vocab size %d is above the GPU decoder's limit of 65536", t->vocab_size);
      fallback_notice("decoding", why);
    } else {
      if (tz_tok_decode_webgpu(t, ids, n, text, len) == 0) return 0;
      fallback_notice("decoding", tz_errmsg());
    }
  }
  return tz_tok_decode(t, ids, n, text, len);
}
