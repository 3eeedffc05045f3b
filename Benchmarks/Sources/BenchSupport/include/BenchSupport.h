#ifndef BENCHSUPPORT_H
#define BENCHSUPPORT_H
// Helpers shared by every system's benchmarks, so each one hands off, waits and does I/O with the
// very same primitives: a futex-backed POSIX semaphore, a raw pthread, non-blocking socket pairs.
// Only compiler headers here, so any Swift module (Foundation, NIO, RunLoopKit) can import it.
#include <stdint.h>
#include <stddef.h>

/// A POSIX semaphore (sem_t, futex-backed) on the heap.
typedef struct bs_sem bs_sem;
bs_sem *bs_sem_new(void);
void bs_sem_free(bs_sem *sem);
void bs_sem_post(bs_sem *sem);
void bs_sem_wait(bs_sem *sem);
/// Waits at most `milliseconds`; returns 0 when posted, -1 on timeout.
int bs_sem_wait_ms(bs_sem *sem, int milliseconds);

/// Starts a joinable pthread running fn(context). Returns an opaque handle, or NULL.
typedef struct bs_thread bs_thread;
bs_thread *bs_thread_start(void (*fn)(void *context), void *context);
/// Joins and frees the handle.
void bs_thread_join(bs_thread *thread);

/// CLOCK_MONOTONIC in nanoseconds (the clock RunLoopKit, NIO and libevent's precise mode use).
uint64_t bs_now_ns(void);

/// A non-blocking, close-on-exec AF_UNIX stream socket pair. Returns 0, or -1 with errno.
int bs_socketpair(int fds[2]);
/// A non-blocking, close-on-exec pipe. Returns 0, or -1 with errno.
int bs_pipe(int fds[2]);
/// Writes one byte; returns write(2)'s result.
long bs_write1(int fd);
/// Reads up to one byte; returns read(2)'s result.
long bs_read1(int fd);
void bs_close(int fd);
/// Bytes the process's malloc has handed out and not taken back (glibc's mallinfo2: uordblks + hblkhd).
size_t bs_heap_in_use(void);
/// Gives the allocator's free memory back to the system (malloc_trim(0)).
void bs_heap_trim(void);
/// Binds the calling thread (only it) to CPU `cpu`. Returns 0, or -1 with errno.
int bs_pin_current_thread(int cpu);

#endif
