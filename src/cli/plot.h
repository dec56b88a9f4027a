/* tezgah plot: a run's metrics.jsonl drawn as train/val loss and learning rate against steps.
 *
 * plot_metrics.c reads metrics.jsonl (src/data/metrics.h writes it; README "A run directory
 * holds ...") into series; plot_draw.c draws them with GNU plotutils' libplot (Debian
 * libplot-dev) as SVG or PNG. libplot is loaded on first use (tz_plot_available; not linked:
 * src/core/dlib.h); without it at build time, or when it does not load, tz_plot_write fails
 * with one line saying how to get it. */
#ifndef TZ_CLI_PLOT_H
#define TZ_CLI_PLOT_H
#include <stddef.h>

/* Points (x = optimizer step, y = value), in file order. */
typedef struct {
  double *x, *y;
  size_t n, cap;
} tz_plot_series;

typedef struct {
  tz_plot_series loss; /* training loss per step (skipped steps and non-finite losses left out) */
  tz_plot_series val;  /* validation loss, at the step whose weights it measured */
  tz_plot_series lr;   /* learning rate per step */
  int skipped;         /* steps marked "skipped": true */
  int steps;           /* valid step lines read (skipped ones included); last_step: the highest step */
  int last_step;
  int bad_lines;       /* malformed lines left out; first_bad: the first one's line number and why */
  int first_bad;
  char first_bad_why[96];
} tz_plot_metrics;

/* Read a metrics.jsonl file. Each line is one JSON object with a numeric "step"; "loss",
 * "lr" and "val_loss" are taken when they are numbers (null = not finite: left out). A
 * step line's val_loss was measured before that step, i.e. on the weights after step-1; the
 * final line {"step": S, "val_loss": V, "final": true} measured the weights after step S.
 * An unterminated last line (a run writing it right now) is ignored. Malformed lines (not a
 * JSON object, no non-negative integer 'step'; a half-written line after a kill) are left out
 * and counted in bad_lines / first_bad, as train --resume drops them.
 * Errors (one line, nothing allocated on failure): "<path>: <strerror>", "<path>: no
 * training steps recorded (empty metrics)", "<path>: no valid line (N malformed, the first
 * at line L: not a JSON object)". */
int tz_plot_read_metrics(const char *path, tz_plot_metrics *m);
void tz_plot_metrics_free(tz_plot_metrics *m);

/* Trailing moving average of y over `window` points (window >= 1; the first points average
 * what there is). Returns a malloc'ed array of s->n doubles. */
double *tz_plot_smooth(const tz_plot_series *s, int window);

/* Draw `m` as `out` (".svg" or ".png", by extension, case-insensitive), written to a
 * temporary name and renamed. `title` names the run; `smooth` is the moving-average window
 * of the smoothed loss line (1 = none). Errors (one line): an unknown extension, libplot
 * missing from this build, libplot failures, write errors naming `out` and the OS error
 * ("No space left on device"). */
int tz_plot_write(const char *out, const tz_plot_metrics *m, const char *title, int smooth);

/* 1 if this build draws plots (libplot was found at build time and loads now: the first call
 * dlopens it), else 0 with the error message set ("plot: cannot load GNU plotutils'
 * libplot.so.2 (Debian: apt-get install libplot2c2): <reason>", or the build's). */
int tz_plot_available(void);

/* 1 if `out` ends in .svg or .png (case-insensitive) after a non-empty file name, else 0
 * with the error message set ("'.svg' has no file name before .svg", "'x.pdf' must end ..."). */
int tz_plot_check_ext(const char *out);

/* Plot a run directory (RUN/metrics.jsonl) or a metrics .jsonl file into `out` (NULL:
 * loss.svg beside metrics.jsonl); smooth <= 0 picks a window of about 1/20 of the steps.
 * Prints "plot: wrote OUT (...)" on stdout unless quiet. */
int tz_plot_run(const char *run, const char *out, int smooth, int quiet);

#endif
