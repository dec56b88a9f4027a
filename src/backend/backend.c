/* Backend selection by name. One entry per compiled backend; "cpu" is always present. */
#include "backend/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h"

int tz_backend_check(const char *name, const char *precision) {
  if (!name || (strcmp(name, "cpu") && strcmp(name, "webgpu") && strcmp(name, "cuda")))
    /* named as the option's other errors are ("--precision: ...", cli/args.h): the option, the
     * value, what it may be (every caller takes the name from --backend) */
    return tz_err("--backend: '%s' is not one of cpu, webgpu, cuda", name ? name : "(null)");
  if (precision && *precision) {
    if (strcmp(precision, "fp32") != 0 && strcmp(precision, "bf16") != 0 && strcmp(precision, "f16") != 0)
      return tz_err("--precision: '%s' is not one of fp32, bf16, f16", precision);
    /* bf16: CUDA; f16: WebGPU (where the adapter offers ShaderF16, checked when it is created) */
    const char *offered = !strcmp(name, "cuda") ? "bf16" : !strcmp(name, "webgpu") ? "f16" : NULL;
    if (strcmp(precision, "fp32") != 0 && (!offered || strcmp(precision, offered) != 0))
      return tz_err("--precision: '%s' is not offered by the %s backend (%s%s; bf16 needs --backend cuda, f16 "
                    "--backend webgpu)",
                    precision, name, offered ? "fp32 or " : "fp32 only", offered ? offered : "");
  }
  return 0;
}

static int g_matmul_rows = -1;
static int g_cuda_created; /* tz_backend_create made a CUDA backend in this process */
void tz_backend_hint_matmul_rows(int rows) { g_matmul_rows = rows; }
int tz_backend_matmul_rows_expected(void) { return g_matmul_rows; }
static int g_weights_read_only;
void tz_backend_hint_weights_read_only(int on) { g_weights_read_only = on != 0; }
int tz_backend_weights_read_only(void) { return g_weights_read_only; }

tz_backend *tz_backend_create(const char *name, int threads, const char *precision) {
  if (tz_backend_check(name, precision)) return NULL;
  if (strcmp(name, "cpu") == 0) return tz_backend_cpu_create(threads);
  if (strcmp(name, "webgpu") == 0) return tz_backend_webgpu_create(precision);
  tz_backend *be = tz_backend_cuda_create(precision);
  if (be) g_cuda_created = 1;
  return be;
}
int tz_backend_cuda_was_created(void) { return g_cuda_created; }
void tz_backend_env(const char *name, const char *precision) {
  if (name && !strcmp(name, "cuda")) tz_backend_cuda_env(precision);
  if (name && !strcmp(name, "webgpu")) tz_backend_webgpu_env();
}

static int prof_slower(const void *a, const void *b) {
  double x = ((const tz_prof_row *)a)->ns, y = ((const tz_prof_row *)b)->ns;
  return (x < y) - (x > y);
}

/* tz_prof_print's table over `rows` (reordered in place). */
static void prof_table(const char *title, tz_prof_row *rows, int n, double steps) {
  double total = 0;
  for (int i = 0; i < n; i++) total += rows[i].ns;
  if (steps <= 0) steps = 1;
  qsort(rows, (size_t)n, sizeof *rows, prof_slower);
  fprintf(stderr, "%s, per step over %.0f step%s):\n", title, steps, tz_plural((long long)steps));
  fprintf(stderr, "  %-18s %10s %8s %7s %12s\n", "kernel", "ms/step", "calls", "share", "rate");
  for (int i = 0; i < n; i++) {
    const tz_prof_row *r = &rows[i];
    char rate[32] = "";
    if (r->ns > 0 && r->flop > 0) snprintf(rate, sizeof rate, "%.1f GFLOP/s", r->flop / r->ns);
    else if (r->ns > 0 && r->bytes > 0) snprintf(rate, sizeof rate, "%.1f GB/s", r->bytes / r->ns);
    fprintf(stderr, "  %-18s %10.3f %8.0f %6.1f%% %12s\n", r->label, r->ns / 1e6 / steps, r->calls / steps,
            total > 0 ? 100.0 * r->ns / total : 0.0, rate);
  }
  fprintf(stderr, "  %-18s %10.3f\n", "total", total / 1e6 / steps);
}

int tz_prof_label(tz_prof_totals *t, const char *label) {
  for (int i = 0; i < t->n; i++)
    if (t->row[i].label == label || !strcmp(t->row[i].label, label)) return i;
  if (t->n < TZ_PROF_LABELS - 1) {
    t->row[t->n].label = label;
    return t->n++;
  }
  t->row[TZ_PROF_LABELS - 1].label = "(other)";
  if (t->n < TZ_PROF_LABELS) t->n = TZ_PROF_LABELS;
  return TZ_PROF_LABELS - 1;
}

void tz_prof_print(const tz_prof_totals *t, const char *title, double steps) {
  tz_prof_row rows[TZ_PROF_LABELS]; /* a copy: the table reorders its rows */
  int n = 0;
  for (int i = 0; i < t->n; i++)
    if (t->row[i].calls) rows[n++] = t->row[i];
  prof_table(title, rows, n, steps);
}

void tz_prof_clear(tz_prof_totals *t) {
  for (int i = 0; i < t->n; i++) t->row[i].ns = t->row[i].calls = t->row[i].flop = t->row[i].bytes = 0;
}
