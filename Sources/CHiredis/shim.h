// Debian's hiredis (libhiredis-dev, 0.14 on bookworm): its asynchronous context, driven by
// RunLoopRedis's adapter on the run loop, and its reply reader. No RESP parsing of our own.
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
