// The floor of issue 22's "Idle CPU": what answering an idle crowd's heartbeats costs on this machine when
// the server does nothing but the system calls. One thread, one level-triggered epoll instance, one
// `recv` per readiness and one `send` of the replies — no timers, no keepalive rule, no store, no
// allocation per heartbeat. It speaks just enough of docs/PROTOCOL.md for `cluster-bench idle` to log in
// and heartbeat exactly as it does against chat-node: a LOGIN gets a LOGIN_ACK 0 laid out as the node's
// (user, a session id of the node's length, server time, the keepalive granted, the node's default
// limits, account_created), a HEARTBEAT gets the 16-byte HEARTBEAT_ACK with its serial. So the bytes on
// the wire are the node's and only the server differs. Nothing else is answered (counted as `other`).
//
//   idle-floor [--port P] [--batch-ms M]
//       listens on 127.0.0.1:P (0: any free port), prints "listening on 127.0.0.1:PORT" as chat-node
//       does; on SIGINT or SIGTERM prints its counts ("floor.<name> <value>" lines) and exits 0.
//       --batch-ms M: not the floor but a lever measured on it — after a wake-up that found work, the
//       next epoll_wait comes no sooner than M ms after that wake-up (a nanosleep for the rest), so one
//       wake-up answers every heartbeat that arrived meanwhile: fewer sleeps and wakes per heartbeat, at
//       the price of up to M ms more before an answer.
//
// Built by Benchmarks/Scripts/node-idle-floor.sh with the system's C compiler (-O2). Linux only.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { HEADER = 16, MAX_BODY = 65536, READ_SIZE = 65536, EVENTS = 256 };
// The replies of one read, and the longest reply (a LOGIN_ACK with a 64-byte user) with room to spare.
enum { REPLIES = 65536, MAX_REPLY = 512 };
enum { HEARTBEAT = 1, HEARTBEAT_ACK = 2, LOGIN = 3, LOGIN_ACK = 4 };

// A connection's state lives only while it has a partial frame to keep or output the kernel refused;
// an idle connection costs one null pointer in `connections`.
typedef struct {
    uint8_t *input;  // the start of a frame not yet whole
    size_t input_length;
    uint8_t *output;  // replies the socket had no room for
    size_t output_length;
} Pending;

static Pending **connections;  // by descriptor
static size_t connection_slots;
static volatile sig_atomic_t stopping;
static uint64_t accepted, closed, logins, heartbeats, other_frames, short_writes, batched_sleeps;
static uint64_t session_counter;
static uint8_t limits[64];  // LoginResponse.limits (field 7), encoded once
static size_t limits_length;

static void stop(int signal) {
    (void)signal;
    stopping = 1;
}

static size_t put_varint(uint8_t *out, uint64_t value) {
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (uint8_t)value;
    return n;
}

static size_t put_header(uint8_t *out, uint32_t length, uint16_t command, uint32_t serial) {
    const uint8_t header[HEADER] = {
        length >> 24, length >> 16, length >> 8, length, 0, 1, command >> 8, command,
        serial >> 24, serial >> 16, serial >> 8, serial, 0, 0, 0, 0,
    };
    memcpy(out, header, HEADER);
    return HEADER;
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// SessionLimits as chat-node serve announces them by default (proto/runloopim.proto; docs/PROTOCOL.md
// section 14): the same LOGIN_ACK length on the wire.
static void encode_limits(void) {
    const uint32_t values[] = {
        65536,   // 1 max_frame_body
        65408,   // 2 max_send_body
        128,     // 3 max_message_id_bytes
        100,     // 4 delivery_window_messages
        262144,  // 5 delivery_window_bytes
        100,     // 6 max_rooms_per_user
        1000,    // 7 large_room_members
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        limits[limits_length++] = (uint8_t)((i + 1) << 3);
        limits_length += put_varint(limits + limits_length, values[i]);
    }
}

// Reads a LoginRequest's `user` (1) and `keepalive_seconds` (3); other fields are skipped. Returns 0
// when the body is not a well-formed message.
static int read_login(const uint8_t *body, size_t length, const uint8_t **user, size_t *user_length,
                      uint64_t *keepalive) {
    size_t i = 0;
    while (i < length) {
        uint64_t key = 0, value = 0;
        for (int shift = 0;; shift += 7) {
            if (i >= length || shift > 63) return 0;
            key |= (uint64_t)(body[i] & 0x7f) << shift;
            if (!(body[i++] & 0x80)) break;
        }
        if ((key & 7) == 0 || (key & 7) == 2) {
            for (int shift = 0;; shift += 7) {
                if (i >= length || shift > 63) return 0;
                value |= (uint64_t)(body[i] & 0x7f) << shift;
                if (!(body[i++] & 0x80)) break;
            }
        } else {
            return 0;
        }
        if ((key & 7) == 2) {
            if (value > length - i) return 0;
            if (key >> 3 == 1) {
                *user = body + i;
                *user_length = value;
            }
            i += value;
        } else if (key >> 3 == 3) {
            *keepalive = value;
        }
    }
    return 1;
}

// LOGIN_ACK 0 in the field order chat-node writes: user, session_id (36 characters, as its UUIDs),
// server_time_ms, keepalive_seconds (the client's, clamped to 1…900; 0 asks for 900), limits,
// account_created. Returns its length, 0 if the LOGIN is not one.
static size_t login_ack(uint8_t *out, uint32_t serial, const uint8_t *body, size_t length) {
    const uint8_t *user = NULL;
    size_t user_length = 0;
    uint64_t keepalive = 0;
    if (!read_login(body, length, &user, &user_length, &keepalive) || user_length == 0 || user_length > 64)
        return 0;
    keepalive = keepalive == 0 ? 900 : keepalive > 900 ? 900 : keepalive;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint8_t *p = out + HEADER;
    *p++ = 1 << 3 | 2;
    *p++ = (uint8_t)user_length;
    memcpy(p, user, user_length);
    p += user_length;
    *p++ = 2 << 3 | 2;
    *p++ = 36;
    uint64_t id = ++session_counter;
    p += sprintf((char *)p, "00000000-0000-4000-8000-%012llx", (unsigned long long)id);
    *p++ = 3 << 3;
    p += put_varint(p, (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000);
    *p++ = 5 << 3;
    p += put_varint(p, keepalive);
    *p++ = 7 << 3 | 2;
    *p++ = (uint8_t)limits_length;
    memcpy(p, limits, limits_length);
    p += limits_length;
    *p++ = 8 << 3;
    *p++ = 1;
    size_t body_length = (size_t)(p - out - HEADER);
    put_header(out, (uint32_t)body_length, LOGIN_ACK, serial);
    return HEADER + body_length;
}

static Pending *pending_of(int fd, int make) {
    if ((size_t)fd >= connection_slots) return NULL;
    if (!connections[fd] && make) connections[fd] = calloc(1, sizeof(Pending));
    return connections[fd];
}

static void close_connection(int fd) {
    Pending *pending = pending_of(fd, 0);
    if (pending) {
        free(pending->input);
        free(pending->output);
        free(pending);
        connections[fd] = NULL;
    }
    close(fd);  // also leaves the epoll set: nothing else holds the descriptor
    closed++;
}

static int keep(uint8_t **buffer, size_t *length, const uint8_t *bytes, size_t count) {
    uint8_t *grown = realloc(*buffer, *length + count);
    if (!grown) return 0;
    memcpy(grown + *length, bytes, count);
    *buffer = grown;
    *length += count;
    return 1;
}

// Writes what the socket takes; keeps the rest and asks for writability. Returns 0 when the connection
// failed and was closed.
static int write_replies(int epoll, int fd, const uint8_t *bytes, size_t count) {
    Pending *pending = pending_of(fd, 0);
    if (pending && pending->output_length) {  // earlier replies first
        if (!keep(&pending->output, &pending->output_length, bytes, count)) return close_connection(fd), 0;
        return 1;
    }
    ssize_t written = send(fd, bytes, count, MSG_NOSIGNAL);
    if (written == (ssize_t)count) return 1;
    if (written < 0 && errno != EAGAIN) return close_connection(fd), 0;
    if (written < 0) written = 0;
    short_writes++;
    pending = pending_of(fd, 1);
    if (!pending || !keep(&pending->output, &pending->output_length, bytes + written, count - (size_t)written))
        return close_connection(fd), 0;
    struct epoll_event event = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
    epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event);
    return 1;
}

// Returns 0 when the connection failed and was closed.
static int flush_output(int epoll, int fd) {
    Pending *pending = pending_of(fd, 0);
    if (!pending || !pending->output_length) return 1;
    ssize_t written = send(fd, pending->output, pending->output_length, MSG_NOSIGNAL);
    if (written < 0) {
        if (errno != EAGAIN) return close_connection(fd), 0;
        return 1;
    }
    memmove(pending->output, pending->output + written, pending->output_length - (size_t)written);
    pending->output_length -= (size_t)written;
    if (pending->output_length == 0) {
        struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event);
    }
    return 1;
}

// One read, the whole frames in it answered by one write.
static void readable(int epoll, int fd, uint8_t *input, uint8_t *replies) {
    Pending *pending = pending_of(fd, 0);
    size_t kept = pending ? pending->input_length : 0;
    if (kept) memcpy(input, pending->input, kept);
    ssize_t got = recv(fd, input + kept, READ_SIZE, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return close_connection(fd);
    if (got < 0) return;
    size_t length = kept + (size_t)got, at = 0, reply_length = 0;
    while (length - at >= HEADER) {
        const uint8_t *frame = input + at;
        uint32_t body = get32(frame);
        if (body > MAX_BODY || frame[4] != 0 || frame[5] != 1) return close_connection(fd);
        if (length - at < HEADER + body) break;
        uint16_t command = (uint16_t)(frame[6] << 8 | frame[7]);
        uint32_t serial = get32(frame + 8);
        if (command == HEARTBEAT) {
            reply_length += put_header(replies + reply_length, 0, HEARTBEAT_ACK, serial);
            heartbeats++;
        } else if (command == LOGIN) {
            size_t ack = login_ack(replies + reply_length, serial, frame + HEADER, body);
            if (!ack) return close_connection(fd);
            reply_length += ack;
            logins++;
        } else {
            other_frames++;
        }
        at += HEADER + body;
        // A LOGIN_ACK is longer than its LOGIN: a read full of LOGINs fills the buffer before the read
        // ends. A heartbeat's answer is as long as the heartbeat, so an idle crowd never gets here.
        if (reply_length > REPLIES - MAX_REPLY) {
            if (!write_replies(epoll, fd, replies, reply_length)) return;
            reply_length = 0;
        }
    }
    if (at < length) {
        pending = pending_of(fd, 1);
        uint8_t *rest = pending ? malloc(length - at) : NULL;
        if (!rest) return close_connection(fd);
        memcpy(rest, input + at, length - at);
        free(pending->input);
        pending->input = rest;
        pending->input_length = length - at;
    } else if (pending && pending->input_length) {
        free(pending->input);
        pending->input = NULL;
        pending->input_length = 0;
    }
    if (reply_length) write_replies(epoll, fd, replies, reply_length);
}

static void accept_all(int epoll, int listener) {
    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;  // EAGAIN, or out of descriptors: the next readiness tries again
        if ((size_t)fd >= connection_slots) {
            close(fd);
            continue;
        }
        int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // as RunLoopNet and mosquitto's run
        struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
            close(fd);
            continue;
        }
        accepted++;
    }
}

int main(int argc, char **argv) {
    int port = 0;
    long batch_ns = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--batch-ms") == 0 && i + 1 < argc) {
            batch_ns = atol(argv[++i]) * 1000000L;
        } else {
            fprintf(stderr, "usage: %s [--port P] [--batch-ms M]\n", argv[0]);
            return 2;
        }
    }
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    connection_slots = files.rlim_cur > (1 << 20) ? (1 << 20) : files.rlim_cur;
    connections = calloc(connection_slots, sizeof *connections);
    encode_limits();

    struct sigaction action = {.sa_handler = stop};  // no SA_RESTART: epoll_wait returns EINTR
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t address_length = sizeof address;
    if (!connections || listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, SOMAXCONN) != 0 || getsockname(listener, (struct sockaddr *)&address, &address_length) != 0) {
        perror("idle-floor: listen");
        return 1;
    }
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    if (epoll < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event) != 0) {
        perror("idle-floor: epoll");
        return 1;
    }
    printf("listening on 127.0.0.1:%d\n", ntohs(address.sin_port));
    fflush(stdout);

    static uint8_t input[HEADER + MAX_BODY + READ_SIZE];  // a kept partial frame + one read
    static uint8_t replies[REPLIES];
    struct epoll_event events[EVENTS];
    while (!stopping) {
        int ready = epoll_wait(epoll, events, EVENTS, -1);
        struct timespec woke;
        if (batch_ns) clock_gettime(CLOCK_MONOTONIC, &woke);
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                accept_all(epoll, listener);
                continue;
            }
            if (events[i].events & EPOLLOUT && !flush_output(epoll, fd)) continue;
            if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(epoll, fd, input, replies);
        }
        if (batch_ns && ready > 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            long rest = batch_ns - ((now.tv_sec - woke.tv_sec) * 1000000000L + (now.tv_nsec - woke.tv_nsec));
            if (rest > 0) {
                struct timespec pause = {.tv_sec = rest / 1000000000L, .tv_nsec = rest % 1000000000L};
                nanosleep(&pause, NULL);
                batched_sleeps++;
            }
        }
    }
    printf("floor.accepted %llu\nfloor.closed %llu\nfloor.logins %llu\nfloor.heartbeats %llu\n"
           "floor.other_frames %llu\nfloor.short_writes %llu\nfloor.batched_sleeps %llu\n",
           (unsigned long long)accepted, (unsigned long long)closed, (unsigned long long)logins,
           (unsigned long long)heartbeats, (unsigned long long)other_frames, (unsigned long long)short_writes,
           (unsigned long long)batched_sleeps);
    return 0;
}
