/* Append-only training metrics log in JSON Lines: one JSON object per line, e.g.
 *   {"step":10,"loss":3.2871,"lr":0.0006,"tok_per_s":5120}
 * Each line is flushed to the kernel (fflush) as soon as it is written, so `tail -f` and a
 * crash lose at most the line being written. Numbers are printed by cJSON (integers exactly,
 * other doubles with up to 17 significant digits; NaN and infinities become null).
 *
 * Unlike every other file tezgah writes, this log does not go through tz_afile: it grows
 * line by line and is never replaced. Instead, opening in append mode repairs a crash
 * mid-line by cutting the file back to its last complete line. */
#ifndef TZ_DATA_METRICS_H
#define TZ_DATA_METRICS_H
#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct tz_metrics tz_metrics;

/* Open `path` for writing metrics. append != 0 keeps existing lines (a trailing partial
 * line, left by a crash, is removed); append == 0 starts an empty file. The directory must
 * exist. Returns the handle, or NULL with a one-line tz_err message naming the path and
 * errno's text. */
tz_metrics *tz_metrics_open(const char *path, int append);

/* Write `obj` (must be a JSON object) as one line and fflush. Returns 0, or -1 with a
 * one-line message naming the path (e.g. a write error such as ENOSPC). */
int tz_metrics_write(tz_metrics *m, const cJSON *obj);

/* Write one preformatted JSON object `line` (n bytes, no newline) and fflush. Allocates
 * nothing (the training loop's per-step records use it). Errors as tz_metrics_write. */
int tz_metrics_write_line(tz_metrics *m, const char *line, size_t n);

/* Convenience: write {"keys[0]": vals[0], ...} (n pairs, numbers only) as one line. */
int tz_metrics_write_kv(tz_metrics *m, size_t n, const char *const keys[], const double vals[]);

/* fflush, fsync and close; NULL is fine. Returns 0, or -1 if any of them failed (the
 * message names the path). */
int tz_metrics_close(tz_metrics *m);

#endif
