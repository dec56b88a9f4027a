#include "data/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

struct tz_metrics {
  FILE *f;
  char *path;
};

/* Cut the file back to just after its last '\n' (or to empty when there is none). */
static int drop_partial_line(int fd, const char *path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return tz_err("%s: %s", path, strerror(errno));
  off_t end = st.st_size;
  char buf[4096];
  while (end > 0) {
    off_t start = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
    ssize_t n = pread(fd, buf, (size_t)(end - start), start);
    if (n != end - start) return tz_err("%s: cannot read: %s", path, n < 0 ? strerror(errno) : "short read");
    for (ssize_t i = n - 1; i >= 0; i--) {
      if (buf[i] == '\n') {
        off_t keep = start + i + 1;
        if (keep != st.st_size && ftruncate(fd, keep) != 0)
          return tz_err("%s: cannot remove a partial last line: %s", path, strerror(errno));
        return 0;
      }
    }
    end = start;
  }
  if (st.st_size > 0 && ftruncate(fd, 0) != 0)
    return tz_err("%s: cannot remove a partial last line: %s", path, strerror(errno));
  return 0;
}

tz_metrics *tz_metrics_open(const char *path, int append) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) {
    tz_err("%s: cannot open metrics log: %s", path, strerror(errno));
    return NULL;
  }
  if (append && drop_partial_line(fd, path)) {
    close(fd);
    return NULL;
  }
  FILE *f = fdopen(fd, "a");
  if (!f) {
    tz_err("%s: %s", path, strerror(errno));
    close(fd);
    return NULL;
  }
  tz_metrics *m = tz_malloc(sizeof *m);
  m->f = f;
  m->path = tz_strdup(path);
  return m;
}

int tz_metrics_write_line(tz_metrics *m, const char *line, size_t n) {
  errno = 0;
  int ok = fwrite(line, 1, n, m->f) == n && fputc('\n', m->f) != EOF && fflush(m->f) == 0;
  if (!ok) {
    int e = errno ? errno : EIO;
    clearerr(m->f);
    return tz_err("%s: write failed: %s", m->path, strerror(e));
  }
  return 0;
}

int tz_metrics_write(tz_metrics *m, const cJSON *obj) {
  if (!cJSON_IsObject(obj)) return tz_err("%s: metrics record is not a JSON object", m->path);
  char *s = cJSON_PrintUnformatted(obj);
  if (!s) return tz_err("%s: cannot format metrics record", m->path);
  int rc = tz_metrics_write_line(m, s, strlen(s));
  cJSON_free(s);
  return rc;
}

int tz_metrics_write_kv(tz_metrics *m, size_t n, const char *const keys[], const double vals[]) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return tz_err("%s: out of memory", m->path);
  for (size_t i = 0; i < n; i++) {
    if (!cJSON_AddNumberToObject(o, keys[i], vals[i])) {
      cJSON_Delete(o);
      return tz_err("%s: cannot add metric '%s'", m->path, keys[i]);
    }
  }
  int rc = tz_metrics_write(m, o);
  cJSON_Delete(o);
  return rc;
}

int tz_metrics_close(tz_metrics *m) {
  if (!m) return 0;
  int e = 0;
  if (fflush(m->f) != 0) e = errno;
  if (fsync(fileno(m->f)) != 0 && !e) e = errno;
  if (fclose(m->f) != 0 && !e) e = errno;
  int rc = e ? tz_err("%s: closing metrics log failed: %s", m->path, strerror(e)) : 0;
  free(m->path);
  free(m);
  return rc;
}
