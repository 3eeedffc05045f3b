#ifndef LIBEVENTBASELINE_H
#define LIBEVENTBASELINE_H
// The benchmark workloads written in C directly on libevent 2.1 (libevent_core), the baseline RunLoopKit
// is measured against. Each function runs a whole batch of operations; the Swift harness times the call
// and divides by the operation count. Only compiler headers here (the Swift side imports this module).
#include <stdint.h>

/// An event_base. `precise` = 0 is libevent's default configuration (`event_base_new()`: epoll, coarse
/// monotonic clock); 1 adds EVENT_BASE_FLAG_PRECISE_TIMER (timerfd-backed, re-armed on every pass).
typedef struct lev_loop lev_loop;
lev_loop *lev_loop_new(int precise);
/// The same; `thread_safe` = 1 turns libevent's locking on (evthread_use_pthreads) and gives the base its
/// lock, so that event_active and event_add may be called from any thread, as RunLoopKit's signal() and
/// add may. Every other base is made with EVENT_BASE_FLAG_NOLOCK, so the default rows stay lock-free.
lev_loop *lev_loop_new_with(int precise, int thread_safe);
void lev_loop_free(lev_loop *loop);
/// The backend libevent chose ("epoll").
const char *lev_loop_method(lev_loop *loop);

/// Schedules `n` zero-delay one-shot timers (event_new + event_add each), then dispatches until all have
/// fired (each callback frees its event). Returns the number fired.
int lev_timer_batch(lev_loop *loop, int n);
/// A chain of `n` zero-delay one-shot timers, each scheduled (event_new + event_add) by the previous
/// one's callback. Returns the number fired.
int lev_timer_chain(lev_loop *loop, int n);
/// `n` one-shot timers due at t0 + i * span_ns / n (t0 = now at entry), dispatched until all fired.
/// Returns the nanoseconds from t0 to the last callback.
uint64_t lev_timer_spread(lev_loop *loop, int n, uint64_t span_ns);
/// One timer with a zero interval (due on every pass; it re-adds itself from its callback, as libevent
/// does not repeat a zero-interval EV_PERSIST timer) ticking `n` times. Returns ticks.
int lev_timer_ticks(lev_loop *loop, int n);

/// `n` pending far-future timers (timer i due at 1 h + i/n h, added in that order), plus a probe event.
typedef struct lev_pending lev_pending;
lev_pending *lev_pending_new(lev_loop *loop, int n);
/// `ops` times: event_add(probe, 1.5 h) then event_del(probe).
void lev_pending_insert_cancel(lev_pending *pending, int ops);
void lev_pending_free(lev_pending *pending);

/// A user event whose callback re-activates it (event_active), `n` callbacks in all. Returns callbacks.
int lev_source0(lev_loop *loop, int n);

/// A loop on its own thread watching an eventfd; a round trip writes the eventfd from the caller's
/// thread and waits on a semaphore the loop's callback posts.
typedef struct lev_xthread lev_xthread;
lev_xthread *lev_xthread_start(int precise);
void lev_xthread_roundtrip(lev_xthread *x);
void lev_xthread_stop(lev_xthread *x);

/// Two EV_PERSIST read events on the two ends of a socket pair; one round trip = a byte written on
/// end A, read and echoed by B's callback, read by A's callback.
typedef struct lev_pingpong lev_pingpong;
lev_pingpong *lev_pingpong_new(lev_loop *loop);
/// Runs `n` round trips; returns the number completed.
int lev_pingpong_run(lev_pingpong *pp, int n);
void lev_pingpong_free(lev_pingpong *pp);

/// A preallocated array of `n` event slots, for memory measurements (the array itself is not counted).
typedef struct lev_group lev_group;
lev_group *lev_group_new(int n);
/// Fills the group with pending far-future timers (event_new + event_add).
void lev_group_add_timers(lev_group *group, lev_loop *loop);
/// Fills the group with user events (event_new on fd -1, no fd: libevent's custom-source equivalent).
void lev_group_add_sources(lev_group *group, lev_loop *loop);
/// Fills the group with EV_READ|EV_PERSIST events on `fds` (event_new + event_add).
void lev_group_add_ports(lev_group *group, lev_loop *loop, const int *fds);
/// Deletes and frees every event in the group.
void lev_group_clear(lev_group *group);
void lev_group_free(lev_group *group);

/// TCP echo on bufferevents: an evconnlistener on 127.0.0.1 port 0 whose accepted bufferevents echo
/// their input, and `connections` client bufferevents, all on `loop`, connected (and TCP_NODELAY on
/// both ends) before this returns. NULL on failure.
typedef struct lev_tcpecho lev_tcpecho;
lev_tcpecho *lev_tcpecho_new(lev_loop *loop, int connections, int message_size);
/// Each client sends one message, waits for its whole echo, sends the next: `round_trips` each.
/// Returns the number of messages echoed.
int lev_tcpecho_run(lev_tcpecho *echo, int round_trips);
void lev_tcpecho_free(lev_tcpecho *echo);

#endif
