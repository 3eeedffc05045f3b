#ifndef RLK_EVENT_POOL_H
#define RLK_EVENT_POOL_H
// libevent's allocator (event_pool.c): libevent's small long-lived blocks — above all its slot per
// descriptor number — from a region of their own instead of malloc's heap.
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/// Makes the pool libevent's allocator (event_set_mem_functions). Idempotent and thread-safe; call
/// it before the first event base. libevent keeps malloc if the region cannot be reserved, or if the
/// environment has RUNLOOPKIT_LIBEVENT_MALLOC=1 (to measure one binary both ways).
void rlk_event_pool_install(void);

/// The pool's allocation functions, as libevent calls them (malloc, realloc and free semantics; 16-byte
/// aligned). Any thread. A pointer the pool did not make (malloc's, from before the install) goes
/// to malloc's free and realloc.
void *rlk_event_pool_malloc(size_t size);
void *rlk_event_pool_realloc(void *pointer, size_t size);
void rlk_event_pool_free(void *pointer);

/// Whether `pointer` is a block the pool made and has not freed (small blocks: made, freed or not).
bool rlk_event_pool_owns(const void *pointer);

/// What the pool holds now.
struct rlk_event_pool_stats {
    bool installed;
    /// Blocks of up to 1 KiB in use, and their bytes rounded to their size class.
    size_t small_blocks;
    size_t small_bytes;
    /// 64 KiB runs carved for small blocks so far, and how many of them are empty now, their pages
    /// given back to the kernel (madvise) until a class needs a run again.
    size_t runs;
    size_t empty_runs;
    /// Larger blocks in use (a mapping each), and the bytes mapped for them.
    size_t large_blocks;
    size_t large_bytes;
};
struct rlk_event_pool_stats rlk_event_pool_stats(void);
#endif
