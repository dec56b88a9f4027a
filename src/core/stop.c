#include "core/stop.h"

#include <signal.h>

#include "core/error.h"

static volatile sig_atomic_t g_stop;

void tz_stop_request(int sig) { g_stop = sig > 0 ? sig : SIGTERM; }
int tz_stop_pending(void) { return g_stop; }
void tz_stop_clear(void) { g_stop = 0; }

int tz_stop_check(void) {
  int s = g_stop;
  if (!s) return 0;
  if (s == SIGINT) return tz_err("interrupted by SIGINT");
  if (s == SIGTERM) return tz_err("interrupted by SIGTERM");
  return tz_err("interrupted by signal %d", s);
}
