#ifndef CRUNLOOPSUPPORT_H
#define CRUNLOOPSUPPORT_H
// Small C helpers RunLoopKit needs but cannot write safely in Swift: variadic syscalls,
// a load-time hook on the main thread, and an async-signal-safe signal handler; and the rtnetlink
// values and layouts RunLoopNet's reachability uses (rlk_netlink.h).
// Only compiler headers here: including glibc headers would make this module and CLibevent both
// define glibc's types, which clang's module system rejects.
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "rlk_netlink.h"
#include "rlk_event_pool.h"

/// The kernel thread id of the calling thread.
int rlk_gettid(void);
/// True on the process's main thread (the one that loaded the program).
bool rlk_is_main_thread(void);
/// The main thread's pthread handle.
unsigned long rlk_main_pthread(void);

/// The main dispatch queue's wake-up descriptor (an eventfd, readable when `DispatchQueue.main` has
/// work for a run loop to do). Made on first use. main_queue.c says which libdispatch entry it uses.
int rlk_main_queue_handle(void);
/// Acknowledges the handle's readiness and runs the main queue's pending blocks. Main thread only,
/// and never after `dispatch_main()` (libdispatch then drains the queue itself).
void rlk_main_queue_drain(int handle);

/// Sleeps while *word still holds `expected` (futex FUTEX_WAIT_PRIVATE); returns at once if it does not,
/// and may return spuriously (a signal, a wake meant for an earlier sleeper): the caller checks again.
void rlk_futex_wait(uint32_t *word, uint32_t expected);
/// Wakes at most one thread sleeping in rlk_futex_wait on `word`.
void rlk_futex_wake_one(uint32_t *word);

/// A non-blocking, close-on-exec eventfd; -1 and errno on failure.
int rlk_eventfd_create(void);
/// Adds 1 to the counter. Returns 0, or errno (EAGAIN means the counter is saturated, still readable).
int rlk_eventfd_signal(int fd);
/// Reads and resets the counter; 0 if it was already zero.
uint64_t rlk_eventfd_drain(int fd);

/// A non-blocking, close-on-exec CLOCK_MONOTONIC timerfd; -1 and errno on failure.
int rlk_timerfd_create(void);
/// Arms the timer at an absolute CLOCK_MONOTONIC time in nanoseconds; 0 disarms. Returns 0 or errno.
int rlk_timerfd_arm(int fd, uint64_t deadline_ns);
/// Reads the expiration count (consumes readiness); 0 when not expired.
uint64_t rlk_timerfd_drain(int fd);

/// accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC): the accepted descriptor, or -1 and errno.
/// `address` points to a sockaddr_storage and `length` to its size (a socklen_t); Swift's Glibc
/// module does not export accept4, a GNU extension.
int rlk_accept_nonblocking(int fd, void *address, uint32_t *length);

/// Bytes of a TCP socket's send queue the peer has not acknowledged yet (ioctl SIOCOUTQ, variadic in C):
/// sent-but-unacknowledged plus not-yet-sent. -1 and errno on failure.
int rlk_unacknowledged_bytes(int fd);

/// How many descriptors the process has open (entries of /proc/self/fd, less the one listing them);
/// -1 if it cannot be read. In C because a `struct dirent` from readdir is only `d_reclen` bytes long:
/// Swift's `entry.pointee` copies all 280, reading past the last record of glibc's buffer (which can
/// end at an unmapped page: a crash seen with ~1,400 descriptors open).
int rlk_open_descriptor_count(void);

/// Bytes received on a socket and not read yet (ioctl FIONREAD, variadic in C). -1 and errno on failure.
int rlk_unread_bytes(int fd);

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t rlk_monotonic_now(void);

/// 0 if fd is an open descriptor epoll can watch; otherwise an errno value
/// (EBADF: not open; EPERM: a regular file or directory, which epoll refuses).
int rlk_check_pollable_fd(int fd);

/// Claims a delivery slot for signal `signo`: installs the process-wide handler on first use and
/// returns an eventfd the handler writes on each delivery (stored in *fd). Returns the slot index,
/// or -1 with errno (EINVAL: bad or uncatchable signal; EMFILE: no free slot or no eventfd).
int rlk_signal_slot_acquire(int signo, int *fd);
/// Releases a slot; the previous disposition of the signal returns when no slot remains.
void rlk_signal_slot_release(int signo, int slot);

#endif
