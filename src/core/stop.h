/* A stop request shared by the library's long loops: the CLI's SIGINT / SIGTERM handler sets
 * it (through tz_train_request_stop); training checks it after every step, and the work
 * before step 1 (BPE training, encoding a corpus) checks it between pieces of work, so that
 * Ctrl-C during data preparation ends within a fraction of a second instead of after step 1.
 * One process-wide flag (a lock-free atomic_int): setting it is async-signal-safe, and threads
 * may read it. */
#ifndef TZ_CORE_STOP_H
#define TZ_CORE_STOP_H

/* Record a stop request: sig is the signal's number (SIGTERM when sig <= 0). */
void tz_stop_request(int sig);
/* The signal of the pending request, 0 when none. */
int tz_stop_pending(void);
/* Forget the request and which signal came first (tz_train does at its end). */
void tz_stop_clear(void);
/* 0 when no stop is pending, else -1 after tz_err("interrupted by <SIGINT|SIGTERM|signal N>"):
 * what a loop that can stop early calls between pieces of work. */
int tz_stop_check(void);

#ifndef __wasi__ /* (WASI's emulated signals carry no siginfo) */
#include <signal.h>
/* A signal handler's repeat rule (called from the SA_SIGINFO handlers of train and of the --nproc
 * launcher; async-signal-safe). Each stop signal is one of:
 *   TZ_STOP_SIG_FIRST   the first since the last tz_stop_clear (or the start): its sender is
 *                       recorded (kill(2), SI_USER, and keep_sender: si_pid; else none), and so
 *                       is the time;
 *   TZ_STOP_SIG_REPEAT  the first one again: the same signal from the same recorded process
 *                       within one second (a second that is no signal at all);
 *   TZ_STOP_SIG_AGAIN   any other: a user's second Ctrl-C, a second sender, a different signal.
 * Why: GNU timeout(1) without --foreground signals its command and then its own process group,
 * which holds the command, so `timeout -s INT 60 tezgah train ...` got SIGINT twice and, taking
 * the second for a user's second Ctrl-C, ended at once without its checkpoint (about one run in
 * five, 2026-12-06). A terminal's Ctrl-C (SI_KERNEL) never counts as a repeat.
 * Exactly one signal is ever FIRST, even when two arrive at once on two threads (a
 * compare-and-swap claims it; the other waits the few instructions the record takes). So a
 * handler must block the other stop signals while it runs (sigaction's sa_mask), else a second
 * signal on the same thread could wait on a record that thread cannot finish. */
enum { TZ_STOP_SIG_FIRST, TZ_STOP_SIG_REPEAT, TZ_STOP_SIG_AGAIN };
int tz_stop_signal_seen(const siginfo_t *si, int keep_sender);
/* *mask set to the stop signals (SIGINT, SIGTERM): sigaction's sa_mask for a handler that calls
 * tz_stop_signal_seen (above: why). */
void tz_stop_handler_mask(sigset_t *mask);
#endif

#endif
