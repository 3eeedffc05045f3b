// The main dispatch queue, serviced by a run loop as swift-corelibs-foundation's CFRunLoop does.
// libdispatch exports these for CoreFoundation (the _4CF entry points). They are not in its public
// headers, but the toolchain's own Foundation cannot run without them, so they ship with every
// toolchain that has a Foundation; declared here, once, rather than in Swift.
#include "CRunLoopSupport.h"
#include <errno.h>
#include <unistd.h>

extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

int rlk_main_queue_handle(void) { return _dispatch_get_main_queue_handle_4CF(); }

void rlk_main_queue_drain(int handle) {
    // Acknowledge the wake-up first: a block enqueued while the queue drains writes the eventfd again
    // and is serviced on the next readiness.
    uint64_t value;
    ssize_t result;
    do {
        result = read(handle, &value, sizeof(value));
    } while (result == -1 && errno == EINTR);
    _dispatch_main_queue_callback_4CF(NULL);
}
