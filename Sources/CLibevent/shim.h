#ifndef CLIBEVENT_SHIM_H
#define CLIBEVENT_SHIM_H
// The only door to libevent. RunLoopKit's Backend/ folder is the only Swift code that imports it.
//
// libevent's event-config.h defines _GNU_SOURCE, which renames glibc struct members (fd_set's
// __fds_bits becomes fds_bits). Swift's Glibc module is built without it, and clang refuses two
// different definitions of one type. Including the glibc headers first, with no feature macros,
// lets their include guards keep libevent from re-reading them.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <event2/event.h>
#endif
