/* Drawing a run's metrics with GNU plotutils' libplot (see plot.h): two panels on one page,
 * loss above (train loss per step, its moving average, validation points), learning rate
 * below, a shared step axis. Page units are 800 x 600 (PNG: pixels; SVG: 8 x 6 inches).
 * SVG text uses the PostScript font Helvetica (<text> elements: searchable, sharp); PNG, a
 * bitmap, uses libplot's built-in Hershey stroke font (no font files needed). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/plot.h"
#include "core/error.h"
#include "core/fileio.h"

int tz_plot_check_ext(const char *out) {
  size_t n = strlen(out);
  const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
  int ext_ok = n >= 4 && (!strcasecmp(out + n - 4, ".svg") || !strcasecmp(out + n - 4, ".png"));
  if (ext_ok && strlen(base) > 4) return 1;
  if (ext_ok) { /* ".svg" or "dir/.png": an extension alone (a hidden file, not a plot) */
    tz_err("--out: '%s' has no file name before %s (e.g. loss%s)", out, out + n - 4, out + n - 4);
    return 0;
  }
  tz_err("--out: '%s' must end in .svg or .png", out);
  return 0;
}

#ifndef TZ_HAVE_LIBPLOT

int tz_plot_available(void) {
  tz_err("plot: this tezgah was built without libplot (GNU plotutils): install Debian's libplot-dev "
         "(scripts/setup.sh does) and rebuild");
  return 0;
}

int tz_plot_write(const char *out, const tz_plot_metrics *m, const char *title, int smooth) {
  (void)out, (void)m, (void)title, (void)smooth;
  tz_plot_available();
  return -1;
}

#else
#include <dlfcn.h>
#include <plot.h>

#include "core/dlib.h"

/* libplot is not linked: it and its X11 libraries cost every tezgah call ~10 ms of CPU in the
 * dynamic loader (src/core/dlib.h). tz_plot_available loads it on first use, from its soname
 * (TZ_LIBPLOT_SONAME, the usual library search) or else the file the build found, and takes
 * the functions below from it; the calls go through the table plib (same prototypes: the
 * table's types are those of plot.h's declarations). */
#define TZ_PLOT_FUNCS(X)                                                                      \
  X(pl_newplparams) X(pl_setplparam) X(pl_deleteplparams) X(pl_newpl_r) X(pl_openpl_r)         \
  X(pl_closepl_r) X(pl_deletepl_r) X(pl_fontname_r) X(pl_fspace_r) X(pl_erase_r)               \
  X(pl_joinmod_r) X(pl_pencolorname_r) X(pl_fillcolorname_r) X(pl_flinewidth_r)              \
  X(pl_ffontsize_r) X(pl_ftextangle_r) X(pl_fmove_r) X(pl_fcont_r) X(pl_fline_r)              \
  X(pl_fbox_r) X(pl_fmarker_r) X(pl_endpath_r) X(pl_alabel_r)

static struct {
#define TZ_PL_FIELD(name) __typeof__(&name) name;
  TZ_PLOT_FUNCS(TZ_PL_FIELD)
#undef TZ_PL_FIELD
} plib;
static int plib_state; /* 0: not tried, 1: loaded, -1: failed (plib_error says why) */
static char plib_error[TZ_ERR_MAX];

int tz_plot_available(void) {
  if (!plib_state) {
    const char *paths[] = {TZ_LIBPLOT_SONAME, TZ_LIBPLOT_PATH};
    void *h = NULL;
    for (int i = 0; i < 2 && !h; i++)
      if (!(h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)))
        snprintf(plib_error, sizeof plib_error,
                 "plot: cannot load GNU plotutils' %s (Debian: apt-get install libplot2c2): %s", paths[i],
                 tz_dl_why(paths[i]));
    plib_state = h ? 1 : -1;
#define TZ_PL_LOAD(name)                                                                        \
  if (h && plib_state == 1 && !(*(void **)&plib.name = dlsym(h, #name))) {                      \
    snprintf(plib_error, sizeof plib_error, "plot: %s has no %s (not GNU plotutils' libplot?)", \
             TZ_LIBPLOT_SONAME, #name);                                                         \
    plib_state = -1;                                                                            \
  }
    TZ_PLOT_FUNCS(TZ_PL_LOAD)
#undef TZ_PL_LOAD
  }
  if (plib_state == 1) return 1;
  tz_err("%s", plib_error);
  return 0;
}

#define PAGE_W 800.0
#define PAGE_H 600.0

typedef struct { /* a panel: its box on the page and the data ranges mapped onto it */
  double x0, y0, x1, y1;
  double xmin, xmax, ymin, ymax;
} panel;

static double px(const panel *p, double x) { return p->x0 + (x - p->xmin) / (p->xmax - p->xmin) * (p->x1 - p->x0); }
static double py(const panel *p, double y) { return p->y0 + (y - p->ymin) / (p->ymax - p->ymin) * (p->y1 - p->y0); }

/* 1, 2 or 5 times a power of ten: about `n` ticks over `range` */
static double nice_step(double range, int n) {
  double raw = range / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void fmt_tick(char *buf, size_t n, double v, double step) {
  if (fabs(v) < step * 1e-6) v = 0; /* -0 and 1e-19 from accumulated steps */
  if (v == floor(v) && fabs(v) < 1e7) snprintf(buf, n, "%.0f", v);
  else snprintf(buf, n, "%.4g", v);
}

static void text(plPlotter *pl, double x, double y, int hj, int vj, double size, double angle, const char *s) {
  plib.pl_ffontsize_r(pl, size);
  plib.pl_ftextangle_r(pl, angle);
  plib.pl_fmove_r(pl, x, y);
  plib.pl_alabel_r(pl, hj, vj, s);
  plib.pl_ftextangle_r(pl, 0);
}

/* Tick k of `step` in [lo, hi]: the range of k (at most 40 ticks; none when a range is too
 * narrow for its magnitude, e.g. [1e10, 1e10 + 1e-6], where k * step cannot tell them apart). */
static int tick_range(double lo, double hi, double step, long *k0, long *k1) {
  double a = ceil(lo / step - 1e-9), b = floor(hi / step + 1e-9);
  if (!(b - a <= 40 && a >= -1e15 && b <= 1e15)) return 0;
  *k0 = (long)a, *k1 = (long)b;
  return 1;
}

/* Box, grid lines, tick labels and the axis labels of a panel. */
static void axes(plPlotter *pl, const panel *p, const char *ylabel, int xlabels) {
  char buf[48];
  double ys = nice_step(p->ymax - p->ymin, 5), xs = nice_step(p->xmax - p->xmin, 8);
  if (xs < 1) xs = 1; /* steps are integers */
  long y0, y1, x0, x1;
  int yt = tick_range(p->ymin, p->ymax, ys, &y0, &y1), xt = tick_range(p->xmin, p->xmax, xs, &x0, &x1);
  plib.pl_flinewidth_r(pl, 0.5);
  plib.pl_pencolorname_r(pl, "gainsboro");
  for (long k = y0; yt && k <= y1; k++) plib.pl_fline_r(pl, p->x0, py(p, k * ys), p->x1, py(p, k * ys));
  for (long k = x0; xt && k <= x1; k++) plib.pl_fline_r(pl, px(p, k * xs), p->y0, px(p, k * xs), p->y1);
  plib.pl_endpath_r(pl);
  plib.pl_pencolorname_r(pl, "black");
  plib.pl_flinewidth_r(pl, 1);
  plib.pl_fbox_r(pl, p->x0, p->y0, p->x1, p->y1);
  for (long k = y0; yt && k <= y1; k++) {
    fmt_tick(buf, sizeof buf, k * ys, ys);
    text(pl, p->x0 - 6, py(p, k * ys), 'r', 'c', 12, 0, buf);
  }
  for (long k = x0; xlabels && xt && k <= x1; k++) {
    fmt_tick(buf, sizeof buf, k * xs, xs);
    text(pl, px(p, k * xs), p->y0 - 6, 'c', 't', 12, 0, buf);
  }
  text(pl, 22, (p->y0 + p->y1) / 2, 'c', 'c', 14, 90, ylabel);
}

/* A series as one polyline. More points than twice the panel's width in page units are
 * drawn as each unit column's minimum and maximum (in step order): the spikes stay visible
 * and the file stays small. */
static void polyline(plPlotter *pl, const panel *p, const double *x, const double *y, size_t n) {
  if (n == 0) return;
  size_t cols = (size_t)(p->x1 - p->x0);
  if (n <= 2 * cols) {
    plib.pl_fmove_r(pl, px(p, x[0]), py(p, y[0]));
    for (size_t i = 1; i < n; i++) plib.pl_fcont_r(pl, px(p, x[i]), py(p, y[i]));
    plib.pl_endpath_r(pl);
    return;
  }
  int first = 1;
  for (size_t i = 0; i < n;) {
    long col = lround(px(p, x[i]));
    size_t lo = i, hi = i, j = i;
    for (; j < n && lround(px(p, x[j])) == col; j++) {
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    size_t a = lo < hi ? lo : hi, b = lo < hi ? hi : lo;
    if (first) plib.pl_fmove_r(pl, px(p, x[a]), py(p, y[a])), first = 0;
    else plib.pl_fcont_r(pl, px(p, x[a]), py(p, y[a]));
    if (b != a) plib.pl_fcont_r(pl, px(p, x[b]), py(p, y[b]));
    i = j;
  }
  plib.pl_endpath_r(pl);
}

/* A series of one point (a run of one step): a filled dot in `color`, since a polyline of
 * one point draws nothing visible. */
static void lone_point(plPlotter *pl, const panel *p, const tz_plot_series *s, const char *color) {
  if (s->n != 1) return;
  plib.pl_fillcolorname_r(pl, color);
  plib.pl_fmarker_r(pl, px(p, s->x[0]), py(p, s->y[0]), 16, 6);
}

static void range_of(const tz_plot_series *s, double *lo, double *hi, int use_x) {
  for (size_t i = 0; i < s->n; i++) {
    double v = use_x ? s->x[i] : s->y[i];
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
}

/* Title text for libplot: its labels take ISO-8859-1 and treat '\' as an escape. */
static void plain_ascii(char *s) {
  for (; *s; s++)
    if (*s == '\\') *s = '/';
    else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) *s = '?';
}

static void legend_entry(plPlotter *pl, double x, double y, const char *color, double width, int marker, const char *label) {
  plib.pl_pencolorname_r(pl, color);
  plib.pl_fillcolorname_r(pl, color);
  if (marker) {
    plib.pl_fmarker_r(pl, x + 12, y, 16, 7);
  } else {
    plib.pl_flinewidth_r(pl, width);
    plib.pl_fline_r(pl, x, y, x + 24, y);
    plib.pl_endpath_r(pl);
  }
  plib.pl_pencolorname_r(pl, "black");
  text(pl, x + 30, y, 'l', 'c', 12, 0, label);
}

static void draw(plPlotter *pl, const tz_plot_metrics *m, const char *title, int smooth) {
  double xmin = INFINITY, xmax = -INFINITY, lmin = INFINITY, lmax = -INFINITY, rmin = 0, rmax = -INFINITY;
  range_of(&m->loss, &xmin, &xmax, 1);
  range_of(&m->val, &xmin, &xmax, 1);
  range_of(&m->lr, &xmin, &xmax, 1);
  range_of(&m->loss, &lmin, &lmax, 0);
  range_of(&m->val, &lmin, &lmax, 0);
  range_of(&m->lr, &rmin, &rmax, 0);
  if (xmax <= xmin) xmin -= 1, xmax += 1; /* one step: in the middle of the axis */
  if (lmin > lmax) lmin = 0, lmax = 1;    /* no loss (all steps skipped): an empty panel */
  if (lmax <= lmin) lmin -= 0.5, lmax += 0.5;
  double pad = (lmax - lmin) * 0.05;
  panel lp = {80, 300, 770, 545, xmin, xmax, lmin - pad, lmax + pad};
  panel rp = {80, 70, 770, 240, xmin, xmax, 0, rmax > 0 ? rmax * 1.05 : 1};

  plib.pl_fspace_r(pl, 0, 0, PAGE_W, PAGE_H);
  plib.pl_erase_r(pl);
  plib.pl_joinmod_r(pl, "round");
  plib.pl_pencolorname_r(pl, "black");
  text(pl, PAGE_W / 2, 588, 'c', 't', 16, 0, title);
  axes(pl, &lp, "loss (nats/token)", 0);
  axes(pl, &rp, "learning rate", 1);
  text(pl, (rp.x0 + rp.x1) / 2, 22, 'c', 'c', 14, 0, "step");

  /* loss: the per-step line (pale under a moving average), the average on top, then the
   * validation points */
  char label[64];
  int smoothed = smooth > 1 && m->loss.n > 1;
  const char *raw_color = smoothed ? "lightsteelblue" : "mediumblue";
  plib.pl_flinewidth_r(pl, smoothed ? 1 : 1.5);
  plib.pl_pencolorname_r(pl, raw_color);
  polyline(pl, &lp, m->loss.x, m->loss.y, m->loss.n);
  lone_point(pl, &lp, &m->loss, raw_color);
  if (!m->loss.n && !m->val.n) {
    snprintf(label, sizeof label, "no training loss: all %d step%s skipped", m->skipped, m->skipped == 1 ? " was" : "s were");
    plib.pl_pencolorname_r(pl, "black");
    text(pl, (lp.x0 + lp.x1) / 2, (lp.y0 + lp.y1) / 2, 'c', 'c', 12, 0, label);
  }
  if (smoothed) {
    double *sm = tz_plot_smooth(&m->loss, smooth);
    plib.pl_flinewidth_r(pl, 2);
    plib.pl_pencolorname_r(pl, "mediumblue");
    polyline(pl, &lp, m->loss.x, sm, m->loss.n);
    free(sm);
  }
  if (m->val.n) {
    plib.pl_flinewidth_r(pl, 1);
    plib.pl_pencolorname_r(pl, "red");
    plib.pl_fillcolorname_r(pl, "red");
    if (m->val.n > 1) polyline(pl, &lp, m->val.x, m->val.y, m->val.n);
    for (size_t i = 0; i < m->val.n; i++) plib.pl_fmarker_r(pl, px(&lp, m->val.x[i]), py(&lp, m->val.y[i]), 16, 7);
  }
  double ly = lp.y1 - 14;
  if (m->loss.n) legend_entry(pl, lp.x1 - 190, ly, raw_color, smoothed ? 1 : 1.5, 0, "train loss"), ly -= 16;
  if (smoothed) {
    snprintf(label, sizeof label, "mean of the last %d steps", smooth);
    legend_entry(pl, lp.x1 - 190, ly, "mediumblue", 2, 0, label), ly -= 16;
  }
  if (m->val.n) legend_entry(pl, lp.x1 - 190, ly, "red", 1, 1, "val loss"), ly -= 16;
  if (m->skipped) {
    snprintf(label, sizeof label, "%d skipped step%s left out", m->skipped, m->skipped == 1 ? "" : "s");
    plib.pl_pencolorname_r(pl, "black");
    text(pl, lp.x1 - 160, ly, 'l', 'c', 12, 0, label);
  }

  /* learning rate */
  plib.pl_flinewidth_r(pl, 1.5);
  plib.pl_pencolorname_r(pl, "darkgreen");
  polyline(pl, &rp, m->lr.x, m->lr.y, m->lr.n);
  lone_point(pl, &rp, &m->lr, "darkgreen");
  if (!m->lr.n) {
    plib.pl_pencolorname_r(pl, "black");
    text(pl, (rp.x0 + rp.x1) / 2, (rp.y0 + rp.y1) / 2, 'c', 'c', 12, 0, "no learning rate recorded");
  }
}

/* libplot draws into memory (open_memstream), and the bytes then go to `out` through tz_afile
 * (temporary name, renamed). libplot writing the file itself hid the cause of a failed write:
 * on a full disk its pl_closepl_r returned only -1 (no errno worth reading by then), and the
 * PNG plotter's libpng printed its own "libpng error: Write Error" line on stderr; from memory,
 * libplot's writes cannot fail for want of disk, and tz_afile_write / tz_afile_commit name
 * `out` and the OS error of the write, fflush, fsync or close ("No space left on device").
 * The page is held in memory once (kilobytes; a few MB for the polylines of 100,000 steps).
 * The temporary file is opened before drawing, so that an unwritable path is refused before
 * any work. */
int tz_plot_write(const char *out, const tz_plot_metrics *m, const char *title, int smooth) {
  if (!tz_plot_check_ext(out) || !tz_plot_available()) return -1;
  int svg = !strcasecmp(out + strlen(out) - 4, ".svg");
  tz_afile af;
  if (tz_afile_open(&af, out)) return -1;
  char *page = NULL;
  size_t page_n = 0;
  FILE *mem = open_memstream(&page, &page_n);
  if (!mem) {
    int e = errno;
    tz_afile_abort(&af);
    return tz_err("%s: cannot draw the page in memory: %s", out, strerror(e));
  }
  plPlotterParams *pp = plib.pl_newplparams();
  /* SVG: 8 x 6 inches (768 x 576 CSS pixels); PNG: 800 x 600 pixels */
  plib.pl_setplparam(pp, "PAGESIZE", (void *)"letter,xsize=8in,ysize=6in");
  plib.pl_setplparam(pp, "BITMAPSIZE", (void *)"800x600");
  plib.pl_setplparam(pp, "BG_COLOR", (void *)"white");
  /* errfile NULL: libplot prints nothing; its failures come back as return codes */
  plPlotter *pl = plib.pl_newpl_r(svg ? "svg" : "png", NULL, mem, NULL, pp);
  int rc = 0;
  if (!pl || plib.pl_openpl_r(pl) < 0) {
    rc = tz_err("%s: libplot could not start a %s plotter", out, svg ? "svg" : "png");
  } else {
    char *t = tz_strdup(title);
    plain_ascii(t);
    plib.pl_fontname_r(pl, svg ? "Helvetica" : "HersheySans");
    draw(pl, m, t, smooth);
    free(t);
    if (plib.pl_closepl_r(pl) < 0) rc = tz_err("%s: libplot failed to finish the %s page", out, svg ? "SVG" : "PNG");
  }
  if (pl) plib.pl_deletepl_r(pl);
  plib.pl_deleteplparams(pp);
  /* a memory stream fails only for want of memory */
  if (fclose(mem) != 0 && !rc) rc = tz_err("%s: cannot draw the page in memory: %s", out, strerror(errno ? errno : ENOMEM));
  if (!rc) rc = tz_afile_write(&af, page, page_n);
  free(page);
  if (rc) {
    tz_afile_abort(&af);
    return -1;
  }
  return tz_afile_commit(&af);
}

#endif
