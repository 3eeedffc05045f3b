// An LD_PRELOAD shim that finds descriptors closed twice (see Scripts/close-check.sh, which builds and
// uses it; SwiftPM never builds this file).
//
// A double close whose number nobody reused yet fails with EBADF; one whose number was reused closes
// someone else's descriptor, silently. So every close that fails with EBADF is reported, with the
// closer's backtrace and the backtrace of the close that last succeeded on that number (in a double
// close, the first of the two: together they name the owner and the culprit).
//
// With CLOSE_CHECK_QUARANTINE=N, the last N numbers closed by a process whose executable path contains
// CLOSE_CHECK_QUARANTINE_IN (default "xctest": the test runner, not the servers it spawns) are not
// handed back at once: the close replaces the file with a private placeholder (`dup3`), so the file is
// released as by a close but the number stays taken until N later closes. A second close of such a
// number is then caught too (it finds the placeholder), instead of closing whatever reused it.
// Numbers 0-2 are never held back. Caveat: held numbers count against RLIMIT_NOFILE.
//
// Also reported: epoll_ctl(ADD) of an epoll instance into itself (EINVAL), the crash that led here: a
// loop's wake-up or timer descriptor number closed by someone else and reused by a new epoll instance.
//
// Reports go to the file CLOSE_CHECK_LOG (appended) or else to standard error; each starts with
// "close-check:" and ends with "--". Backtrace lines are `object(symbol+off) [address]`; Swift symbols of
// an executable that exports none print as `object(+offset)`: Scripts/close-check.sh symbolizes those.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { traceDepth = 24, trackedNumbers = 1 << 16, maximumQuarantine = 1 << 14 };

typedef int (*CloseFunction)(int);
typedef int (*EpollControlFunction)(int, int, int, struct epoll_event *);

static CloseFunction realClose;
static EpollControlFunction realEpollControl;

// The last successful close of each number below trackedNumbers: who, from where. Written without a
// lock (a report may show a torn trace when two threads close the same number at once: that is a
// report worth reading anyway).
struct LastClose {
    void *frames[traceDepth];
    int depth;
    pid_t thread;
};
static struct LastClose *lastCloses;

static pthread_mutex_t quarantineLock = PTHREAD_MUTEX_INITIALIZER;
static int quarantineCapacity;
static int quarantine[maximumQuarantine];
static int quarantineCount;
static int quarantineHead;
static int placeholder = -1;
static dev_t placeholderDevice;
static ino_t placeholderInode;

static void loadRealFunctions(void) {
    if (!realClose) realClose = (CloseFunction)dlsym(RTLD_NEXT, "close");
    if (!realEpollControl) realEpollControl = (EpollControlFunction)dlsym(RTLD_NEXT, "epoll_ctl");
}

static pid_t currentThread(void) { return (pid_t)syscall(SYS_gettid); }

static void writeText(int fd, const char *text) {
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t written = write(fd, text, length);
        if (written <= 0) return;
        text += written;
        length -= (size_t)written;
    }
}

static int openReport(void) {
    const char *path = getenv("CLOSE_CHECK_LOG");
    if (!path || !*path) return STDERR_FILENO;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    return fd >= 0 ? fd : STDERR_FILENO;
}

static void closeReport(int fd) {
    if (fd != STDERR_FILENO) realClose(fd);
}

static void writeHeader(int report, const char *what, int fd) {
    char executable[512];
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    executable[length > 0 ? length : 0] = 0;
    char line[1024];
    snprintf(line, sizeof line, "close-check: %s %d in pid %d thread %d (%s)\n", what, fd, (int)getpid(), (int)currentThread(),
        executable);
    writeText(report, line);
}

static void writeTrace(int report, const char *title, void *const *frames, int depth) {
    writeText(report, title);
    backtrace_symbols_fd(frames, depth, report);
}

static void reportMisuse(int fd, const char *what, const char *here) {
    int savedErrno = errno;
    void *frames[traceDepth];
    int depth = backtrace(frames, traceDepth);
    int report = openReport();
    writeHeader(report, what, fd);
    writeTrace(report, here, frames, depth);
    if (lastCloses && fd >= 0 && fd < trackedNumbers && lastCloses[fd].depth > 0) {
        char line[128];
        snprintf(line, sizeof line, "the last close of %d that succeeded (thread %d):\n", fd, (int)lastCloses[fd].thread);
        writeTrace(report, line, lastCloses[fd].frames, lastCloses[fd].depth);
    } else {
        writeText(report, "no earlier close of this number was seen\n");
    }
    writeText(report, "--\n");
    closeReport(report);
    errno = savedErrno;
}

static void recordClose(int fd) {
    if (!lastCloses || fd < 0 || fd >= trackedNumbers) return;
    struct LastClose *entry = &lastCloses[fd];
    entry->depth = backtrace(entry->frames, traceDepth);
    entry->thread = currentThread();
}

static int isPlaceholder(int fd) {
    if (placeholder < 0) return 0;
    struct stat info;
    return fstat(fd, &info) == 0 && info.st_dev == placeholderDevice && info.st_ino == placeholderInode;
}

__attribute__((constructor)) static void setUp(void) {
    loadRealFunctions();
    void *memory = mmap(NULL, sizeof(struct LastClose) * trackedNumbers, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory != MAP_FAILED) lastCloses = memory;
    const char *capacity = getenv("CLOSE_CHECK_QUARANTINE");
    if (!capacity || atoi(capacity) <= 0) return;
    const char *only = getenv("CLOSE_CHECK_QUARANTINE_IN");
    char executable[512];
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    executable[length > 0 ? length : 0] = 0;
    if (!strstr(executable, only && *only ? only : "xctest")) return;
    // A memfd of its own: no other descriptor in the process names this file.
    int fd = memfd_create("close-check-placeholder", MFD_CLOEXEC);
    struct stat info;
    if (fd < 0 || fstat(fd, &info) != 0) return;
    placeholder = fd;
    placeholderDevice = info.st_dev;
    placeholderInode = info.st_ino;
    quarantineCapacity = atoi(capacity) < maximumQuarantine ? atoi(capacity) : maximumQuarantine;
}

// Holds `fd` back: the placeholder takes its number (releasing its file as a close would); the oldest
// held number is handed back once more than the capacity are held. Returns 0, or -1 if `fd` must be
// closed for real instead.
static int holdBack(int fd) {
    if (fd <= STDERR_FILENO || fd == placeholder) return -1;
    // F_GETFD first: dup3 onto a number that is not open would open it, not fail with EBADF.
    if (fcntl(fd, F_GETFD) == -1) return -1;
    if (dup3(placeholder, fd, O_CLOEXEC) != fd) return -1;
    int released = -1;
    pthread_mutex_lock(&quarantineLock);
    if (quarantineCount == quarantineCapacity) {
        released = quarantine[quarantineHead];
        quarantine[quarantineHead] = fd;
        quarantineHead = (quarantineHead + 1) % quarantineCapacity;
    } else {
        quarantine[(quarantineHead + quarantineCount) % quarantineCapacity] = fd;
        quarantineCount += 1;
    }
    pthread_mutex_unlock(&quarantineLock);
    // Only if it still holds the placeholder: a dup2 onto a held number took it over meanwhile.
    if (released >= 0 && isPlaceholder(released)) realClose(released);
    return 0;
}

int close(int fd) {
    loadRealFunctions();
    if (quarantineCapacity > 0 && fd > STDERR_FILENO && fd != placeholder && isPlaceholder(fd)) {
        reportMisuse(fd, "a held-back (already closed) descriptor closed again:", "this close:\n");
        errno = EBADF;
        return -1;
    }
    if (quarantineCapacity > 0 && holdBack(fd) == 0) {
        recordClose(fd);
        return 0;
    }
    int result = realClose(fd);
    if (result == 0) {
        recordClose(fd);
    } else if (errno == EBADF) {
        reportMisuse(fd, "close(fd) failed with EBADF (not open: closed twice?), fd", "this close:\n");
    }
    return result;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event) {
    loadRealFunctions();
    int result = realEpollControl(epfd, op, fd, event);
    if (result != 0 && errno == EINVAL && op == EPOLL_CTL_ADD && epfd == fd) {
        reportMisuse(fd, "epoll_ctl(ADD) of an epoll instance into itself (a number closed and reused?), fd", "this epoll_ctl:\n");
    }
    return result;
}
