/* Dynamic loss scaling (as torch.cuda.amp.GradScaler does it), backend-neutral.
 * The loss gradient seed (cross-entropy's dscale) is multiplied by S, so every gradient of
 * the backward is S times the true one: small gradients of a reduced-precision backward stay
 * above underflow. The loop divides the global grad norm by S and gives AdamW grad_scale =
 * clip / S, so the parameters see the unscaled gradients. A step whose loss or grad norm is
 * not finite (an overflow of the scaled gradients) is skipped and S halved; after
 * growth_interval consecutive clean steps S doubles. S is a power of two in [1, 2^24], so
 * with fp32 gradients the scaling is exact (the losses equal those of an unscaled run unless
 * something overflows or leaves the normal range). */
#ifndef TZ_TRAIN_LOSS_SCALE_H
#define TZ_TRAIN_LOSS_SCALE_H

typedef enum { TZ_LS_OFF = 0, TZ_LS_FIXED, TZ_LS_DYNAMIC } tz_ls_mode;

#define TZ_LS_INIT 65536.0f      /* 2^16: the initial S of dynamic scaling */
#define TZ_LS_MIN 1.0f
#define TZ_LS_MAX 16777216.0f    /* 2^24 */
#define TZ_LS_GROWTH 2000        /* clean steps before S doubles (TEZGAH_LOSS_SCALE_GROWTH) */

typedef struct {
  tz_ls_mode mode;
  float scale;         /* S (1 when off) */
  int clean;           /* consecutive clean steps since S last changed (dynamic) */
  int growth_interval; /* TZ_LS_GROWTH, or TEZGAH_LOSS_SCALE_GROWTH for tests */
} tz_loss_scaler;

/* Parse a --loss-scale value: NULL or "" (the backend's default: *mode = -1), "dynamic",
 * "off", or a power of two N in [1, 2^24] (*fixed = N). 0, or -1 with a one-line tz_err
 * naming the flag and the value. */
int tz_loss_scale_parse(const char *s, int *mode, float *fixed);

/* Set the scaler up for a run: the mode from `opt` (--loss-scale) or, without one, dynamic
 * when the backend needs it (be->needs_loss_scale), else off. `restored_scale` /
 * `restored_clean` come from a resumed checkpoint (scale 0: none, or an old checkpoint):
 * dynamic scaling continues from them, else starts at 2^16. 0 or -1 with tz_err. */
int tz_loss_scaler_init(tz_loss_scaler *ls, const char *opt, int backend_needs, float restored_scale,
                        int restored_clean);

/* After a step: `overflow` (non-finite loss or grad norm) halves S (not below 1) and
 * restarts the clean count; a clean step counts, and growth_interval of them double S (not
 * above 2^24). Fixed and off scalers do not change. Returns 1 when S changed. */
int tz_loss_scaler_update(tz_loss_scaler *ls, int overflow);

/* "dynamic", "fixed" or "off". */
const char *tz_loss_scale_mode_name(tz_ls_mode mode);

#endif
