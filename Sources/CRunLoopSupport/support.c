#define _GNU_SOURCE
#include "CRunLoopSupport.h"
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <linux/futex.h>
#include <linux/sockios.h>
#include <sys/eventfd.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int rlk_gettid(void) { return (int)syscall(SYS_gettid); }

bool rlk_is_main_thread(void) { return rlk_gettid() == getpid(); }

// Recorded at load time, which happens on the main thread, so RunLoop.main can name the main
// thread even when another thread touches it first.
static pthread_t main_pthread;
unsigned long rlk_main_pthread(void) { return (unsigned long)main_pthread; }

void rlk_futex_wait(uint32_t *word, uint32_t expected) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void rlk_futex_wake_one(uint32_t *word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

int rlk_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int rlk_eventfd_signal(int fd) {
    uint64_t one = 1;
    for (;;) {
        if (write(fd, &one, sizeof one) == (ssize_t)sizeof one) return 0;
        if (errno != EINTR) return errno;
    }
}

uint64_t rlk_eventfd_drain(int fd) {
    uint64_t value = 0;
    for (;;) {
        if (read(fd, &value, sizeof value) == (ssize_t)sizeof value) return value;
        if (errno != EINTR) return 0;
    }
}

int rlk_timerfd_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }

int rlk_timerfd_arm(int fd, uint64_t deadline_ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    // An absolute deadline of exactly 0 would disarm; the clock is far past 1 ns, so 1 ns fires at once.
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL) == 0 ? 0 : errno;
}

uint64_t rlk_timerfd_drain(int fd) { return rlk_eventfd_drain(fd); }

int rlk_accept_nonblocking(int fd, void *address, uint32_t *length) {
    socklen_t size = (socklen_t)*length;
    int accepted = accept4(fd, (struct sockaddr *)address, &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
    *length = (uint32_t)size;
    return accepted;
}

int rlk_unacknowledged_bytes(int fd) {
    int count = 0;
    if (ioctl(fd, SIOCOUTQ, &count) != 0) return -1;
    return count;
}

int rlk_open_descriptor_count(void) {
    DIR *directory = opendir("/proc/self/fd");
    if (directory == NULL) return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] != '.') count++;
    }
    closedir(directory);
    return count > 0 ? count - 1 : 0;
}

int rlk_unread_bytes(int fd) {
    int count = 0;
    if (ioctl(fd, FIONREAD, &count) != 0) return -1;
    return count;
}

uint64_t rlk_monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rlk_check_pollable_fd(int fd) {
    if (fd < 0 || fcntl(fd, F_GETFD) == -1) return EBADF;
    struct stat st;
    if (fstat(fd, &st) != 0) return errno;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return EPERM;
    return 0;
}

// ---- Signals -------------------------------------------------------------------------------
// The handler may run on any thread at any time, so it only reads atomics and calls write(2).
// A slot's eventfd is created once and never closed: a handler that loaded it just before the
// slot was released still writes to a descriptor we own, never to a reused number.

#define RLK_SIGNALS 65
#define RLK_SLOTS 32

static int slot_fd[RLK_SIGNALS][RLK_SLOTS];
static atomic_int slot_armed[RLK_SIGNALS][RLK_SLOTS];
static int armed_count[RLK_SIGNALS];
static struct sigaction saved_action[RLK_SIGNALS];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void rlk_support_init(void) {
    main_pthread = pthread_self();
    for (int s = 0; s < RLK_SIGNALS; s++)
        for (int i = 0; i < RLK_SLOTS; i++) slot_fd[s][i] = -1;
}

static void rlk_signal_handler(int signo) {
    int saved_errno = errno;
    if (signo > 0 && signo < RLK_SIGNALS) {
        for (int i = 0; i < RLK_SLOTS; i++) {
            if (atomic_load_explicit(&slot_armed[signo][i], memory_order_acquire)) {
                uint64_t one = 1;
                ssize_t ignored = write(slot_fd[signo][i], &one, sizeof one);
                (void)ignored;
            }
        }
    }
    errno = saved_errno;
}

int rlk_signal_slot_acquire(int signo, int *fd) {
    if (signo <= 0 || signo >= RLK_SIGNALS || signo == SIGKILL || signo == SIGSTOP) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&slot_lock);
    int slot = -1;
    for (int i = 0; i < RLK_SLOTS; i++) {
        if (!atomic_load(&slot_armed[signo][i])) { slot = i; break; }
    }
    if (slot < 0) {
        pthread_mutex_unlock(&slot_lock);
        errno = EMFILE;
        return -1;
    }
    if (slot_fd[signo][slot] < 0) {
        int made = rlk_eventfd_create();
        if (made < 0) {
            pthread_mutex_unlock(&slot_lock);
            errno = EMFILE;
            return -1;
        }
        slot_fd[signo][slot] = made;
    } else {
        rlk_eventfd_drain(slot_fd[signo][slot]);
    }
    atomic_store_explicit(&slot_armed[signo][slot], 1, memory_order_release);
    if (armed_count[signo]++ == 0) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = rlk_signal_handler;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        if (sigaction(signo, &action, &saved_action[signo]) != 0) {
            int err = errno;
            armed_count[signo]--;
            atomic_store(&slot_armed[signo][slot], 0);
            pthread_mutex_unlock(&slot_lock);
            errno = err;
            return -1;
        }
    }
    *fd = slot_fd[signo][slot];
    pthread_mutex_unlock(&slot_lock);
    return slot;
}

void rlk_signal_slot_release(int signo, int slot) {
    if (signo <= 0 || signo >= RLK_SIGNALS || slot < 0 || slot >= RLK_SLOTS) return;
    pthread_mutex_lock(&slot_lock);
    if (atomic_exchange(&slot_armed[signo][slot], 0)) {
        if (--armed_count[signo] == 0) sigaction(signo, &saved_action[signo], NULL);
    }
    pthread_mutex_unlock(&slot_lock);
}
