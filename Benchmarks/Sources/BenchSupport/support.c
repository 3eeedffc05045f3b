#define _GNU_SOURCE
#include "BenchSupport.h"
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct bs_sem { sem_t sem; };

bs_sem *bs_sem_new(void) {
    bs_sem *sem = malloc(sizeof *sem);
    if (sem) sem_init(&sem->sem, 0, 0);
    return sem;
}

void bs_sem_free(bs_sem *sem) {
    if (!sem) return;
    sem_destroy(&sem->sem);
    free(sem);
}

void bs_sem_post(bs_sem *sem) { sem_post(&sem->sem); }

void bs_sem_wait(bs_sem *sem) {
    while (sem_wait(&sem->sem) != 0 && errno == EINTR) {}
}

int bs_sem_wait_ms(bs_sem *sem, int milliseconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += milliseconds / 1000;
    deadline.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    for (;;) {
        if (sem_timedwait(&sem->sem, &deadline) == 0) return 0;
        if (errno != EINTR) return -1;
    }
}

struct bs_thread {
    pthread_t thread;
    void (*fn)(void *);
    void *context;
};

static void *bs_thread_main(void *arg) {
    struct bs_thread *t = arg;
    t->fn(t->context);
    return NULL;
}

bs_thread *bs_thread_start(void (*fn)(void *), void *context) {
    struct bs_thread *t = malloc(sizeof *t);
    if (!t) return NULL;
    t->fn = fn;
    t->context = context;
    if (pthread_create(&t->thread, NULL, bs_thread_main, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

void bs_thread_join(bs_thread *t) {
    if (!t) return;
    pthread_join(t->thread, NULL);
    free(t);
}

uint64_t bs_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int bs_socketpair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds);
}

int bs_pipe(int fds[2]) { return pipe2(fds, O_NONBLOCK | O_CLOEXEC); }

long bs_write1(int fd) {
    static const char byte = 'x';
    return (long)write(fd, &byte, 1);
}

long bs_read1(int fd) {
    char byte;
    return (long)read(fd, &byte, 1);
}

void bs_close(int fd) { close(fd); }

size_t bs_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;  // hblkhd: large blocks, which malloc maps separately
}

void bs_heap_trim(void) { malloc_trim(0); }

int bs_pin_current_thread(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    // pid 0: the calling thread, not the process (Linux's affinity is per thread).
    return sched_setaffinity(0, sizeof set, &set);
}
