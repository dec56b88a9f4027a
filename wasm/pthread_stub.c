/* The few POSIX thread calls tezgah makes, for the wasm build (scripts/build_wasm.sh).
 * Debian's wasi-libc for wasm32-wasi is single-threaded and its libpthread.a is empty, so
 * these are the single-thread answers: a mutex has no other thread to wait for, a once-routine
 * runs on the first call, and no thread can be started (pthread_create fails with EAGAIN:
 * src/dist/comm.c's watchdog thread, used only by multi-process runs, is then not started,
 * which that code allows for). */
#include <errno.h>
#include <pthread.h>

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) { (void)m, (void)a; return 0; }
int pthread_mutex_destroy(pthread_mutex_t *m) { (void)m; return 0; }
int pthread_mutex_lock(pthread_mutex_t *m) { (void)m; return 0; }
int pthread_mutex_unlock(pthread_mutex_t *m) { (void)m; return 0; }

/* pthread_once_t is an int in wasi-libc (musl): 0 until the routine has run */
int pthread_once(pthread_once_t *once, void (*fn)(void)) {
  if (*(volatile int *)once == 0) {
    *(volatile int *)once = 1;
    fn();
  }
  return 0;
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
  (void)t, (void)a, (void)fn, (void)arg;
  return EAGAIN;
}
int pthread_join(pthread_t t, void **ret) { (void)t, (void)ret; return ESRCH; }
int pthread_detach(pthread_t t) { (void)t; return ESRCH; }
