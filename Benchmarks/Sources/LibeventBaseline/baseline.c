#define _GNU_SOURCE
#include "LibeventBaseline.h"
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct lev_loop { struct event_base *base; };

lev_loop *lev_loop_new(int precise) { return lev_loop_new_with(precise, 0); }

lev_loop *lev_loop_new_with(int precise, int thread_safe) {
    // Turning libevent's locking on is process-wide; it then applies to every base created without
    // EVENT_BASE_FLAG_NOLOCK. So every base but the thread-safe variant's asks for no lock: the default
    // rows keep measuring libevent as they always have, whichever workload ran first in this process.
    if (thread_safe && evthread_use_pthreads() != 0) return NULL;
    struct event_config *config = event_config_new();
    if (!config) return NULL;
    if (precise) event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    if (!thread_safe) event_config_set_flag(config, EVENT_BASE_FLAG_NOLOCK);
    struct event_base *base = event_base_new_with_config(config);
    event_config_free(config);
    if (!base) return NULL;
    lev_loop *loop = malloc(sizeof *loop);
    loop->base = base;
    return loop;
}

void lev_loop_free(lev_loop *loop) {
    if (!loop) return;
    event_base_free(loop->base);
    free(loop);
}

const char *lev_loop_method(lev_loop *loop) { return event_base_get_method(loop->base); }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timeval tv_from_ns(uint64_t ns) {
    struct timeval tv = { (time_t)(ns / 1000000000ull), (suseconds_t)((ns % 1000000000ull) / 1000ull) };
    return tv;
}

// The workload being run on this thread (callbacks have a single argument: the event itself).
struct run {
    struct event_base *base;
    int fired;
    int n;
    uint64_t last;
};
static __thread struct run *current_run;

// MARK: timers

static void oneshot_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    current_run->fired++;
    event_free((struct event *)arg);
}

int lev_timer_batch(lev_loop *loop, int n) {
    struct run run = { loop->base, 0, n, 0 };
    current_run = &run;
    const struct timeval zero = { 0, 0 };
    for (int i = 0; i < n; i++) {
        struct event *ev = event_new(loop->base, -1, 0, oneshot_cb, event_self_cbarg());
        event_add(ev, &zero);
    }
    event_base_dispatch(loop->base);
    current_run = NULL;
    return run.fired;
}

static void chain_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    struct run *run = current_run;
    run->fired++;
    event_free((struct event *)arg);
    if (run->fired < run->n) {
        const struct timeval zero = { 0, 0 };
        struct event *ev = event_new(run->base, -1, 0, chain_cb, event_self_cbarg());
        event_add(ev, &zero);
    }
}

int lev_timer_chain(lev_loop *loop, int n) {
    struct run run = { loop->base, 0, n, 0 };
    current_run = &run;
    const struct timeval zero = { 0, 0 };
    struct event *ev = event_new(loop->base, -1, 0, chain_cb, event_self_cbarg());
    event_add(ev, &zero);
    event_base_dispatch(loop->base);
    current_run = NULL;
    return run.fired;
}

static void spread_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    current_run->fired++;
    current_run->last = now_ns();
    event_free((struct event *)arg);
}

uint64_t lev_timer_spread(lev_loop *loop, int n, uint64_t span_ns) {
    struct run run = { loop->base, 0, n, 0 };
    current_run = &run;
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        uint64_t deadline = t0 + (uint64_t)i * span_ns / (uint64_t)n;
        uint64_t now = now_ns();
        struct timeval tv = tv_from_ns(deadline > now ? deadline - now : 0);
        struct event *ev = event_new(loop->base, -1, 0, spread_cb, event_self_cbarg());
        event_add(ev, &tv);
    }
    event_base_dispatch(loop->base);
    current_run = NULL;
    return run.last - t0;
}

// libevent does not reschedule an EV_PERSIST timer whose interval is zero, so the repeating timer
// re-adds itself (no allocation) with a zero timeout: due again on the next pass.
static void tick_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    static const struct timeval zero = { 0, 0 };
    if (++current_run->fired < current_run->n) event_add((struct event *)arg, &zero);
}

int lev_timer_ticks(lev_loop *loop, int n) {
    struct run run = { loop->base, 0, n, 0 };
    current_run = &run;
    const struct timeval zero = { 0, 0 };
    struct event *ev = event_new(loop->base, -1, 0, tick_cb, event_self_cbarg());
    event_add(ev, &zero);
    event_base_dispatch(loop->base);
    event_free(ev);
    current_run = NULL;
    return run.fired;
}

// MARK: pending timers

struct lev_pending {
    struct event **events;
    int n;
    struct event *probe;
};

static void never_cb(evutil_socket_t fd, short what, void *arg) { (void)fd; (void)what; (void)arg; }

// Pending timer i of n is due 1 h + i/n h from now: an even spread, inserted in ascending order (every
// system gets the same schedule; ascending order keeps Foundation's sorted-array setup affordable).
static uint64_t far_deadline_offset(int i, int n) {
    const uint64_t hour = 3600ull * 1000000000ull;
    return hour + (uint64_t)i * hour / (uint64_t)n;
}

lev_pending *lev_pending_new(lev_loop *loop, int n) {
    lev_pending *p = malloc(sizeof *p);
    p->events = malloc(sizeof(struct event *) * (size_t)(n > 0 ? n : 1));
    p->n = n;
    for (int i = 0; i < n; i++) {
        struct timeval tv = tv_from_ns(far_deadline_offset(i, n));
        p->events[i] = event_new(loop->base, -1, 0, never_cb, NULL);
        event_add(p->events[i], &tv);
    }
    p->probe = event_new(loop->base, -1, 0, never_cb, NULL);
    return p;
}

void lev_pending_insert_cancel(lev_pending *p, int ops) {
    const struct timeval tv = tv_from_ns(5400ull * 1000000000ull);
    for (int i = 0; i < ops; i++) {
        event_add(p->probe, &tv);
        event_del(p->probe);
    }
}

void lev_pending_free(lev_pending *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) event_free(p->events[i]);
    event_free(p->probe);
    free(p->events);
    free(p);
}

// MARK: custom source (event_active)

static void source_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    if (++current_run->fired < current_run->n) event_active((struct event *)arg, EV_READ, 0);
}

int lev_source0(lev_loop *loop, int n) {
    struct run run = { loop->base, 0, n, 0 };
    current_run = &run;
    struct event *ev = event_new(loop->base, -1, 0, source_cb, event_self_cbarg());
    event_active(ev, EV_READ, 0);
    event_base_loop(loop->base, 0);
    event_free(ev);
    current_run = NULL;
    return run.fired;
}

// MARK: cross-thread hand-off

struct lev_xthread {
    int precise;
    struct event_base *base;
    struct event *ev;
    int efd;
    volatile int stopping;
    sem_t ready;
    sem_t done;
    pthread_t thread;
};

static void xthread_cb(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    lev_xthread *x = arg;
    uint64_t value;
    (void)!read(fd, &value, sizeof value);
    if (x->stopping) {
        event_base_loopbreak(x->base);
        return;
    }
    sem_post(&x->done);
}

static void *xthread_main(void *arg) {
    lev_xthread *x = arg;
    struct event_config *config = event_config_new();
    if (x->precise) event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    // Its wake-up is an eventfd of its own, not event_active from another thread: no lock (see lev_loop_new_with).
    event_config_set_flag(config, EVENT_BASE_FLAG_NOLOCK);
    x->base = event_base_new_with_config(config);
    event_config_free(config);
    x->ev = event_new(x->base, x->efd, EV_READ | EV_PERSIST, xthread_cb, x);
    event_add(x->ev, NULL);
    sem_post(&x->ready);
    event_base_dispatch(x->base);
    event_free(x->ev);
    event_base_free(x->base);
    return NULL;
}

lev_xthread *lev_xthread_start(int precise) {
    lev_xthread *x = calloc(1, sizeof *x);
    x->precise = precise;
    x->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    sem_init(&x->ready, 0, 0);
    sem_init(&x->done, 0, 0);
    pthread_create(&x->thread, NULL, xthread_main, x);
    while (sem_wait(&x->ready) != 0 && errno == EINTR) {}
    return x;
}

void lev_xthread_roundtrip(lev_xthread *x) {
    const uint64_t one = 1;
    (void)!write(x->efd, &one, sizeof one);
    while (sem_wait(&x->done) != 0 && errno == EINTR) {}
}

void lev_xthread_stop(lev_xthread *x) {
    if (!x) return;
    x->stopping = 1;
    const uint64_t one = 1;
    (void)!write(x->efd, &one, sizeof one);
    pthread_join(x->thread, NULL);
    close(x->efd);
    sem_destroy(&x->ready);
    sem_destroy(&x->done);
    free(x);
}

// MARK: fd ping-pong

struct lev_pingpong {
    struct event_base *base;
    int fds[2];
    struct event *a;
    struct event *b;
    int count;
    int n;
};

static void pp_a_cb(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    lev_pingpong *pp = arg;
    char byte;
    (void)!read(fd, &byte, 1);
    if (++pp->count < pp->n) {
        (void)!write(fd, &byte, 1);
    } else {
        event_base_loopbreak(pp->base);
    }
}

static void pp_b_cb(evutil_socket_t fd, short what, void *arg) {
    (void)what; (void)arg;
    char byte;
    (void)!read(fd, &byte, 1);
    (void)!write(fd, &byte, 1);
}

lev_pingpong *lev_pingpong_new(lev_loop *loop) {
    lev_pingpong *pp = calloc(1, sizeof *pp);
    pp->base = loop->base;
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pp->fds);
    pp->a = event_new(loop->base, pp->fds[0], EV_READ | EV_PERSIST, pp_a_cb, pp);
    pp->b = event_new(loop->base, pp->fds[1], EV_READ | EV_PERSIST, pp_b_cb, pp);
    event_add(pp->a, NULL);
    event_add(pp->b, NULL);
    return pp;
}

int lev_pingpong_run(lev_pingpong *pp, int n) {
    pp->count = 0;
    pp->n = n;
    const char byte = 'x';
    (void)!write(pp->fds[0], &byte, 1);
    event_base_dispatch(pp->base);
    return pp->count;
}

void lev_pingpong_free(lev_pingpong *pp) {
    if (!pp) return;
    event_free(pp->a);
    event_free(pp->b);
    close(pp->fds[0]);
    close(pp->fds[1]);
    free(pp);
}

// MARK: memory

struct lev_group {
    struct event **events;
    int n;
    int used;
};

lev_group *lev_group_new(int n) {
    lev_group *g = malloc(sizeof *g);
    g->events = calloc((size_t)(n > 0 ? n : 1), sizeof(struct event *));
    g->n = n;
    g->used = 0;
    return g;
}

void lev_group_add_timers(lev_group *g, lev_loop *loop) {
    for (int i = 0; i < g->n; i++) {
        struct timeval tv = tv_from_ns(far_deadline_offset(i, g->n));
        g->events[i] = event_new(loop->base, -1, 0, never_cb, NULL);
        event_add(g->events[i], &tv);
    }
    g->used = g->n;
}

void lev_group_add_sources(lev_group *g, lev_loop *loop) {
    for (int i = 0; i < g->n; i++) g->events[i] = event_new(loop->base, -1, 0, never_cb, NULL);
    g->used = g->n;
}

void lev_group_add_ports(lev_group *g, lev_loop *loop, const int *fds) {
    for (int i = 0; i < g->n; i++) {
        g->events[i] = event_new(loop->base, fds[i], EV_READ | EV_PERSIST, never_cb, NULL);
        event_add(g->events[i], NULL);
    }
    g->used = g->n;
}

void lev_group_clear(lev_group *g) {
    for (int i = 0; i < g->used; i++) event_free(g->events[i]);
    g->used = 0;
}

void lev_group_free(lev_group *g) {
    if (!g) return;
    lev_group_clear(g);
    free(g->events);
    free(g);
}

// MARK: TCP echo (bufferevents)

struct lev_tcpecho {
    struct event_base *base;
    struct evconnlistener *listener;
    struct bufferevent **clients;
    struct bufferevent **servers;
    int connections;
    int accepted;
    int connected;
    int failed;
    int size;
    char *message;
    int remaining;   // round trips still to start (all clients together)
    int echoed;
    int target;
};

static void set_nodelay(evutil_socket_t fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void te_server_read(struct bufferevent *bev, void *arg) {
    (void)arg;
    evbuffer_add_buffer(bufferevent_get_output(bev), bufferevent_get_input(bev));
}

static void te_send(lev_tcpecho *e, struct bufferevent *bev) {
    bufferevent_write(bev, e->message, (size_t)e->size);
}

static void te_client_read(struct bufferevent *bev, void *arg) {
    lev_tcpecho *e = arg;
    struct evbuffer *input = bufferevent_get_input(bev);
    while (evbuffer_get_length(input) >= (size_t)e->size) {
        evbuffer_drain(input, (size_t)e->size);
        if (++e->echoed == e->target) { event_base_loopbreak(e->base); return; }
        if (e->remaining > 0) { e->remaining--; te_send(e, bev); }
    }
}

static void te_check_ready(lev_tcpecho *e) {
    if (e->accepted == e->connections && e->connected == e->connections) event_base_loopbreak(e->base);
}

static void te_client_event(struct bufferevent *bev, short what, void *arg) {
    lev_tcpecho *e = arg;
    if (what & BEV_EVENT_CONNECTED) {
        set_nodelay(bufferevent_getfd(bev));
        e->connected++;
        te_check_ready(e);
    } else if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
        e->failed = 1;
        event_base_loopbreak(e->base);
    }
}

static void te_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address,
                      int length, void *arg) {
    (void)listener; (void)address; (void)length;
    lev_tcpecho *e = arg;
    set_nodelay(fd);
    struct bufferevent *bev = bufferevent_socket_new(e->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, te_server_read, NULL, NULL, e);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    if (e->accepted < e->connections) e->servers[e->accepted++] = bev;
    te_check_ready(e);
}

lev_tcpecho *lev_tcpecho_new(lev_loop *loop, int connections, int message_size) {
    lev_tcpecho *e = calloc(1, sizeof *e);
    e->base = loop->base;
    e->connections = connections;
    e->size = message_size;
    e->message = malloc((size_t)message_size);
    memset(e->message, 'x', (size_t)message_size);
    e->clients = calloc((size_t)connections, sizeof *e->clients);
    e->servers = calloc((size_t)connections, sizeof *e->servers);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    e->listener = evconnlistener_new_bind(e->base, te_accept, e, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 511,
                                          (struct sockaddr *)&address, sizeof address);
    if (!e->listener) { lev_tcpecho_free(e); return NULL; }
    socklen_t length = sizeof address;
    getsockname(evconnlistener_get_fd(e->listener), (struct sockaddr *)&address, &length);
    for (int i = 0; i < connections; i++) {
        struct bufferevent *bev = bufferevent_socket_new(e->base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(bev, te_client_read, NULL, te_client_event, e);
        bufferevent_setwatermark(bev, EV_READ, (size_t)message_size, 0);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
        e->clients[i] = bev;
        if (bufferevent_socket_connect(bev, (struct sockaddr *)&address, sizeof address) != 0) e->failed = 1;
    }
    if (!e->failed) event_base_dispatch(e->base);
    if (e->failed || e->accepted != connections || e->connected != connections) { lev_tcpecho_free(e); return NULL; }
    return e;
}

int lev_tcpecho_run(lev_tcpecho *e, int round_trips) {
    e->echoed = 0;
    e->target = e->connections * round_trips;
    e->remaining = e->target - e->connections;
    for (int i = 0; i < e->connections; i++) te_send(e, e->clients[i]);
    event_base_dispatch(e->base);
    return e->failed ? -1 : e->echoed;
}

void lev_tcpecho_free(lev_tcpecho *e) {
    if (!e) return;
    for (int i = 0; i < e->connections; i++) {
        if (e->clients[i]) bufferevent_free(e->clients[i]);
        if (e->servers[i]) bufferevent_free(e->servers[i]);
    }
    if (e->listener) evconnlistener_free(e->listener);
    free(e->clients);
    free(e->servers);
    free(e->message);
    free(e);
}
