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
/* Forget the request (tz_train does at its end). */
void tz_stop_clear(void);
/* 0 when no stop is pending, else -1 after tz_err("interrupted by <SIGINT|SIGTERM|signal N>"):
 * what a loop that can stop early calls between pieces of work. */
int tz_stop_check(void);

#endif
