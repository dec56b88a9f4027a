#include "core/stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "core/error.h"

/* atomic (lock-free on every target we build for): written by a signal handler, read by the
 * BPE worker threads too, where a volatile sig_atomic_t would be a data race */
static atomic_int g_stop;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag is set from a signal handler: atomic_int must be lock-free");

#ifndef __wasi__
/* The first stop signal: 0 none yet, 1 being recorded, 2 recorded. The record (plain variables) is
 * published by the release store of 2 and read after an acquire load of 2. */
static atomic_int g_first_state;
#endif

void tz_stop_request(int sig) { g_stop = sig > 0 ? sig : SIGTERM; }
int tz_stop_pending(void) { return g_stop; }
void tz_stop_clear(void) {
  g_stop = 0;
#ifndef __wasi__
  /* back to "none yet", but never under a handler that is recording the first signal on another
   * thread (state 1): its waiters would read a half-made record */
  int recorded = 2;
  while (!atomic_compare_exchange_weak(&g_first_state, &recorded, 0) && recorded != 0)
    recorded = 2;
#endif
}

int tz_stop_check(void) {
  int s = g_stop;
  if (!s) return 0;
  if (s == SIGINT) return tz_err("interrupted by SIGINT");
  if (s == SIGTERM) return tz_err("interrupted by SIGTERM");
  return tz_err("interrupted by signal %d", s);
}

#ifndef __wasi__
static long g_first_pid = -1; /* the first stop signal's sender under SI_USER, else -1 */
static int g_first_sig;       /* and its number */
static struct timespec g_first_t;

int tz_stop_signal_seen(const siginfo_t *si, int keep_sender) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe (POSIX) */
  int none = 0;
  if (atomic_compare_exchange_strong(&g_first_state, &none, 1)) {
    g_first_pid = keep_sender && si && si->si_code == SI_USER ? (long)si->si_pid : -1;
    g_first_sig = si ? si->si_signo : 0;
    g_first_t = now;
    atomic_store_explicit(&g_first_state, 2, memory_order_release);
    return TZ_STOP_SIG_FIRST;
  }
  while (atomic_load_explicit(&g_first_state, memory_order_acquire) == 1) {
    /* another thread is recording the first signal (a few stores; see stop.h on sa_mask) */
  }
  long long dt = (long long)(now.tv_sec - g_first_t.tv_sec) * 1000000000LL + (now.tv_nsec - g_first_t.tv_nsec);
  int repeat = si && si->si_code == SI_USER && g_first_pid > 0 && (long)si->si_pid == g_first_pid &&
               si->si_signo == g_first_sig && dt < 1000000000LL;
  return repeat ? TZ_STOP_SIG_REPEAT : TZ_STOP_SIG_AGAIN;
}

void tz_stop_handler_mask(sigset_t *mask) {
  sigemptyset(mask);
  sigaddset(mask, SIGINT);
  sigaddset(mask, SIGTERM);
}
#endif
