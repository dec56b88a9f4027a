/* Reading metrics.jsonl for tezgah plot (see plot.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/plot.h"
#include "core/error.h"
#include "core/fileio.h"

static void push(tz_plot_series *s, double x, double y) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->x = tz_realloc(s->x, s->cap * sizeof *s->x);
    s->y = tz_realloc(s->y, s->cap * sizeof *s->y);
  }
  s->x[s->n] = x;
  s->y[s->n++] = y;
}

static int finite_num(const cJSON *j, const char *name, double *v) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, name);
  if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return 0;
  *v = x->valuedouble;
  return 1;
}

void tz_plot_metrics_free(tz_plot_metrics *m) {
  tz_plot_series *all[] = {&m->loss, &m->val, &m->lr};
  for (int i = 0; i < 3; i++) free(all[i]->x), free(all[i]->y);
  memset(m, 0, sizeof *m);
}

int tz_plot_read_metrics(const char *path, tz_plot_metrics *m) {
  memset(m, 0, sizeof *m);
  char *data;
  size_t len;
  if (tz_read_file(path, &data, &len)) return -1;
  int rc = 0, lineno = 0;
  m->last_step = -1;
  for (char *line = data, *end; line < data + len; line = end + 1) {
    end = memchr(line, '\n', (size_t)(data + len - line));
    if (!end) break; /* an unterminated last line: being written by a running train */
    lineno++;
    size_t n = (size_t)(end - line);
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
    if (n == 0) continue;
    cJSON *j = cJSON_ParseWithLength(line, n);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    double s = cJSON_IsNumber(step) ? step->valuedouble : -1, v;
    const char *bad = !cJSON_IsObject(j) ? "not a JSON object"
                      : !(s >= 0 && s <= 2147483647.0 && s == floor(s)) ? "field 'step' is missing or not a non-negative integer"
                                                                         : NULL;
    if (bad) { /* left out, like train --resume does (a line cut short by a kill is normal) */
      if (!m->bad_lines++) {
        m->first_bad = lineno;
        snprintf(m->first_bad_why, sizeof m->first_bad_why, "%s", bad);
      }
      cJSON_Delete(j);
      continue;
    }
    m->steps++;
    if (s > m->last_step) m->last_step = (int)s;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "final"))) {
      if (finite_num(j, "val_loss", &v)) push(&m->val, s, v);
    } else {
      int skipped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "skipped"));
      m->skipped += skipped;
      if (!skipped && finite_num(j, "loss", &v)) push(&m->loss, s, v);
      if (finite_num(j, "lr", &v)) push(&m->lr, s, v);
      if (finite_num(j, "val_loss", &v)) push(&m->val, s - 1, v); /* measured before step s */
    }
    cJSON_Delete(j);
  }
  free(data);
  if (m->steps == 0 && m->bad_lines)
    rc = tz_err("%s: no valid line (%d malformed, the first at line %d: %s)", path, m->bad_lines, m->first_bad,
                m->first_bad_why);
  else if (m->loss.n == 0 && m->val.n == 0 && m->lr.n == 0 && m->skipped == 0)
    rc = tz_err("%s: no training steps recorded (empty metrics)", path);
  if (rc) tz_plot_metrics_free(m);
  return rc;
}

double *tz_plot_smooth(const tz_plot_series *s, int window) {
  double *out = tz_malloc((s->n ? s->n : 1) * sizeof *out), sum = 0;
  if (window < 1) window = 1;
  for (size_t i = 0; i < s->n; i++) {
    sum += s->y[i];
    if (i >= (size_t)window) sum -= s->y[i - window];
    size_t k = i + 1 < (size_t)window ? i + 1 : (size_t)window;
    out[i] = sum / (double)k;
  }
  return out;
}
