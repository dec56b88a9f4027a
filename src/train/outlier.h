/* Running z-score of a scalar series (loss, grad norm) for skipping spiking steps, in the
 * spirit of llm.c's outlier detector (its -sl / -sg flags).
 *
 * A window holds the last TZ_OUTLIER_WINDOW values of *accepted* steps (a skipped step's
 * value is not added, so one spike does not widen the band for the next). z(x) =
 * (x - mean) / std over the window (population std), and is NaN (no verdict) until the
 * window holds TZ_OUTLIER_MIN values. Only upward spikes are outliers (z > threshold).
 * The window is part of the training state (checkpoints), so a resumed run decides the
 * same way an uninterrupted one does. Fixed size: pushing never allocates. */
#ifndef TZ_TRAIN_OUTLIER_H
#define TZ_TRAIN_OUTLIER_H
#include <cjson/cJSON.h>

#define TZ_OUTLIER_WINDOW 128
#define TZ_OUTLIER_MIN 16

typedef struct {
  double v[TZ_OUTLIER_WINDOW]; /* ring buffer */
  int n;                       /* values held, <= TZ_OUTLIER_WINDOW */
  int head;                    /* index of the oldest value when full */
} tz_outlier;

/* z-score of x against the window, or NaN while fewer than TZ_OUTLIER_MIN values are held.
 * A window of identical values gives 0 for an equal x and ±inf otherwise. */
double tz_outlier_z(const tz_outlier *o, double x);
/* Add a (finite) value, dropping the oldest when full. */
void tz_outlier_push(tz_outlier *o, double x);
/* The values oldest first as a JSON array (doubles print with 17 digits: exact). */
cJSON *tz_outlier_to_json(const tz_outlier *o);
/* Restore from tz_outlier_to_json's array; NULL gives an empty window. Errors name `where`
 * and `field`. */
int tz_outlier_from_json(const cJSON *arr, const char *where, const char *field, tz_outlier *o);

#endif
