/* tezgah plot RUN_DIR|METRICS.jsonl [--out FILE.svg|.png]: a run's loss and learning rate
 * against steps, drawn with libplot (plot_draw.c) from metrics.jsonl (plot_metrics.c). */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/plot.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/progress.h"

static const char *HELP =
    "usage: tezgah plot RUN_DIR|METRICS.jsonl [--out FILE.svg|FILE.png] [--smooth N]\n"
    "       tezgah plot -h|--help\n"
    "Draw a run's metrics.jsonl: the training loss of every step with its moving\n"
    "average and the validation losses (top panel), the learning rate (bottom\n"
    "panel), against the step; the title names the run. Works while the run is still\n"
    "training (the steps so far).\n\n"
    "  --out FILE             .svg (8x6 in) or .png (800x600 px), by extension;\n"
    "                         written to a temporary name and renamed (default:\n"
    "                         RUN_DIR/loss.svg)\n"
    "  --smooth N             moving-average window in steps (default: 1/20 of the\n"
    "                         steps; 1 = off)\n"
    "example: tezgah plot runs/latest --out loss.png\n"
    "(train --plot writes RUN_DIR/loss.svg at the end)\n";

int tz_plot_run(const char *run, const char *out, int smooth, int quiet) {
  struct stat st;
  if (!tz_plot_available()) return -1; /* before anything else: the one line that matters */
  if (stat(run, &st) != 0) return tz_err("%s: no such run directory or metrics file", run);
  int is_dir = S_ISDIR(st.st_mode);
  char *metrics = is_dir ? tz_path_join(run, "metrics.jsonl") : tz_strdup(run);
  char *dcopy = tz_strdup(metrics), *dir = tz_strdup(dirname(dcopy)), *def_out = NULL;
  free(dcopy);
  int rc = -1;
  tz_plot_metrics m;
  if (is_dir && !tz_exists(metrics)) {
    tz_err("%s: run directory has no metrics.jsonl (not a training run?)", run);
    goto out;
  }
  if (!out) out = def_out = tz_path_join(dir, "loss.svg");
  /* the default output (train --plot, plot RUN) was given by no flag: its errors name none */
  const char *flag = def_out ? "plot" : "--out";
  if (def_out && stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
    tz_err("%s is a directory; the plot is not drawn", out);
    goto out;
  }
  if (tz_out_path(flag, out, "a plot", 0) || !tz_plot_check_ext(out) || tz_out_not_input(flag, out, "the metrics file", metrics, NULL) ||
      tz_plot_read_metrics(metrics, &m))
    goto out;
  /* the title names the run: the run directory's real name (runs/latest -> its target) */
  char real[PATH_MAX], title[PATH_MAX + 96];
  const char *name = realpath(dir, real) ? basename(real) : dir;
  if (m.bad_lines && !quiet)
    fprintf(stderr, "note: %s: %d malformed line%s left out (the first at line %d: %s)\n", metrics, m.bad_lines,
            m.bad_lines == 1 ? "" : "s", m.first_bad, m.first_bad_why);
  int steps = m.loss.n ? (int)m.loss.x[m.loss.n - 1] : m.last_step > 0 ? m.last_step : 0;
  if (smooth <= 0) smooth = m.loss.n / 20 > 1 ? (int)(m.loss.n / 20) : 1;
  int k = snprintf(title, sizeof title, "%s: %d step%s", name, steps, tz_plural(steps));
  if (m.loss.n) k += snprintf(title + k, sizeof title - k, ", loss %.4f", m.loss.y[m.loss.n - 1]);
  else if (m.skipped) k += snprintf(title + k, sizeof title - k, ", all %d skipped", m.skipped);
  if (m.val.n) snprintf(title + k, sizeof title - k, ", val %.4f@%g", m.val.y[m.val.n - 1], m.val.x[m.val.n - 1]);
  rc = tz_plot_write(out, &m, title, smooth);
  if (!rc && !quiet)
    fprintf(stderr, "plot: wrote %s (%zu train loss%s, %zu val loss%s, %zu learning rate%s)\n", out, m.loss.n,
            m.loss.n == 1 ? "" : "es", m.val.n, m.val.n == 1 ? "" : "es", m.lr.n, tz_plural((long long)m.lr.n));
  tz_plot_metrics_free(&m);
out:
  free(metrics);
  free(dir);
  free(def_out);
  return rc;
}

int tz_cmd_plot(int argc, char **argv) {
  static const struct option LONG[] = {{"out", 1, 0, 'o'}, {"smooth", 1, 0, 's'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  const char *out = NULL, *run = NULL;
  int smooth = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    switch (c) {
      case 'o':
        out = optarg;
        if (tz_arg_path("--out", optarg)) return tz_cli_fail();
        break;
      case 's':
        if (tz_arg_int("--smooth", optarg, 1, 1 << 30, &smooth)) return tz_cli_fail();
        break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("plot", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("plot", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
  }
  if (optind < argc) run = argv[optind++];
  if (optind < argc) {
    tz_err("plot: unexpected argument '%s' (see tezgah plot --help)", argv[optind]);
    return tz_cli_fail();
  }
  if (!run) {
    tz_err("plot: give a run directory or a metrics.jsonl file (see tezgah plot --help)");
    return tz_cli_fail();
  }
  if (tz_arg_path("plot: RUN_DIR|METRICS.jsonl", run)) return tz_cli_fail();
  return tz_plot_run(run, out, smooth, 0) ? tz_cli_fail() : 0;
}
