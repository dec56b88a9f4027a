/* train --recompute auto|on|off: whether the training arena keeps every layer's norm and
 * GeLU/SwiGLU outputs (stored) or one of each, recomputed in the backward (src/model/model.h;
 * the losses are bit-identical either way -- but where CUDA's forward GeLU epilogue runs
 * without recompute, GPT-2 in bf16 by default, which differs in the last bits -- so the choice
 * is one of memory against ~the cost of recomputing them).
 *
 * auto (the default) turns recompute on only where it is needed and enough: the caller
 * (src/train/train.c) sizes what the run will still allocate each way before the arena exists
 * (tz_model_training_bytes: gradients, AdamW moments, the activation arena; the final sample's
 * model too) and asks the backend how much it can still give (be->mem_free, backend.h). */
#ifndef TZ_TRAIN_RECOMPUTE_H
#define TZ_TRAIN_RECOMPUTE_H
#include <stddef.h>
#include <stdint.h>

/* be->mem_free's "cannot tell" (and what a NULL mem_free counts as). */
#define TZ_MEM_UNKNOWN SIZE_MAX

/* The arena to allocate: activations stored, recomputed, or neither fits (an error). */
typedef enum { TZ_RC_STORE = 0, TZ_RC_RECOMPUTE = 1, TZ_RC_NEITHER = -1 } tz_rc_choice;

/* The decision, a pure function. mode: TZ_RECOMPUTE_AUTO, _ON or _OFF (tezgah.h); need_store,
 * need_rc: bytes the run will still allocate with activations stored / recomputed (need_rc ≤
 * need_store for any model: recompute only leaves tensors out); free_bytes: what the backend can
 * still give, TZ_MEM_UNKNOWN when it cannot tell.
 *   on: TZ_RC_RECOMPUTE; off: TZ_RC_STORE (whatever the sizes: the allocation says if it fails);
 *   auto: TZ_RC_STORE when free is unknown (as before auto existed) or need_store fits
 *   (≤ free_bytes); else TZ_RC_RECOMPUTE when need_rc fits; else TZ_RC_NEITHER.
 * Any other mode counts as auto. */
tz_rc_choice tz_recompute_decide(int mode, size_t need_store, size_t need_rc, size_t free_bytes);

/* "auto", "on", "off" → the mode (0), or -1 with a one-line tz_err naming `flag` and the value
 * ("--recompute: 'yes' is not auto, on or off"). */
int tz_recompute_parse(const char *s, const char *flag, int *mode);
/* The mode's name ("auto", "on", "off"; anything else "auto"). */
const char *tz_recompute_name(int mode);

/* TEZGAH_DEBUG_MEM_FREE=BYTES (a test hook: the CLI tests drive auto on the CPU backend, which
 * cannot tell its free memory): *bytes = BYTES and 1; unset or empty: 0; anything but a
 * decimal integer from 0 to 2^63 − 1: -1 with a one-line tz_err. It replaces be->mem_free's answer. */
int tz_recompute_debug_free(size_t *bytes);

#endif
