#define _GNU_SOURCE
// libevent's allocations, kept out of malloc's heap.
//
// libevent allocates one small slot per descriptor number the first time the number is watched
// (evmap_io, 16 bytes) and frees it only with the event base. In a server those slots are made one per
// new connection, between the connections' own blocks, and after the connections leave they keep
// nearly every page of the heap resident (Benchmarks/IM-RESULTS.md, "RSS after all left"). Served
// from a region of their own they sit side by side, a few hundred per page, and the heap's pages can
// go back to the kernel.
//
// Small blocks (up to 1 KiB) come from size classes of 16 bytes, each class carving 64 KiB runs of a
// reserved region: no header per block, the class of a block is its run's. Larger blocks are mappings
// of their own, listed so that a block can be recognised as ours. A pointer that is neither (one that
// libevent got from malloc before the pool was installed) goes back to malloc. One mutex: libevent is
// used from every loop's thread, and it allocates rarely (a base, an event, a new descriptor number).
#include "CRunLoopSupport.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <event2/event.h>

enum {
    granule = 16,
    small_limit = 1024,
    class_count = small_limit / granule,
    run_size = 64 * 1024,
    // Reserved, not committed: only pages a block was carved from are ever touched.
    region_size = 256 * 1024 * 1024,
    run_count = region_size / run_size,
};

struct free_block { struct free_block *next; };

struct large_block {
    struct large_block *next;
    struct large_block *previous;
    size_t mapped;     // bytes mapped, header included
    size_t requested;  // bytes the caller asked for
};
// The header keeps the caller's block 16-byte aligned, as malloc's are.
_Static_assert(sizeof(struct large_block) % granule == 0, "large block header breaks alignment");

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static char *region;
static size_t runs_used;
static uint8_t run_class[run_count];  // class index + 1 of each carved run; 0 = not carved
static struct free_block *free_lists[class_count];
static char *carve_next[class_count];  // next uncarved block of the class's newest run
static char *carve_end[class_count];
static struct large_block *large_blocks;
static struct rlk_event_pool_stats stats;

static inline size_t class_of_size(size_t size) { return size == 0 ? 0 : (size - 1) / granule; }

static inline int in_region(const void *pointer) {
    return region != NULL && (const char *)pointer >= region && (const char *)pointer < region + region_size;
}

static inline size_t class_of_block(const void *pointer) {
    return (size_t)run_class[((const char *)pointer - region) / run_size] - 1;
}

// Caller holds pool_lock. NULL when the region is full; the block then becomes a large one.
static void *small_alloc(size_t class_index) {
    struct free_block *block = free_lists[class_index];
    size_t block_size = (class_index + 1) * granule;
    if (block != NULL) {
        free_lists[class_index] = block->next;
    } else {
        if (carve_next[class_index] == carve_end[class_index]) {
            if (runs_used == run_count) return NULL;
            char *run = region + runs_used * run_size;
            if (mprotect(run, run_size, PROT_READ | PROT_WRITE) != 0) return NULL;
            run_class[runs_used] = (uint8_t)(class_index + 1);
            runs_used += 1;
            stats.runs = runs_used;
            carve_next[class_index] = run;
            // Whole blocks only: a run's tail shorter than a block stays unused.
            carve_end[class_index] = run + (run_size / block_size) * block_size;
        }
        block = (struct free_block *)carve_next[class_index];
        carve_next[class_index] += block_size;
    }
    stats.small_blocks += 1;
    stats.small_bytes += block_size;
    return block;
}

// Caller holds pool_lock.
static void *large_alloc(size_t size) {
    size_t page = 4096;
    size_t mapped = (sizeof(struct large_block) + size + page - 1) / page * page;
    void *mapping = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return NULL;
    struct large_block *header = mapping;
    header->mapped = mapped;
    header->requested = size;
    header->previous = NULL;
    header->next = large_blocks;
    if (large_blocks != NULL) large_blocks->previous = header;
    large_blocks = header;
    stats.large_blocks += 1;
    stats.large_bytes += mapped;
    return header + 1;
}

// Caller holds pool_lock. The header of `pointer` if it is one of ours, else NULL.
static struct large_block *large_header(void *pointer) {
    struct large_block *candidate = (struct large_block *)pointer - 1;
    for (struct large_block *block = large_blocks; block != NULL; block = block->next) {
        if (block == candidate) return block;
    }
    return NULL;
}

// Caller holds pool_lock.
static void large_free(struct large_block *header) {
    if (header->previous != NULL) header->previous->next = header->next; else large_blocks = header->next;
    if (header->next != NULL) header->next->previous = header->previous;
    stats.large_blocks -= 1;
    stats.large_bytes -= header->mapped;
    munmap(header, header->mapped);
}

// Caller holds pool_lock.
static void small_free(void *pointer) {
    size_t class_index = class_of_block(pointer);
    struct free_block *block = pointer;
    block->next = free_lists[class_index];
    free_lists[class_index] = block;
    stats.small_blocks -= 1;
    stats.small_bytes -= (class_index + 1) * granule;
}

void *rlk_event_pool_malloc(size_t size) {
    pthread_mutex_lock(&pool_lock);
    void *block = NULL;
    if (region != NULL && size <= small_limit) block = small_alloc(class_of_size(size));
    if (block == NULL) block = large_alloc(size);
    pthread_mutex_unlock(&pool_lock);
    return block;
}

void rlk_event_pool_free(void *pointer) {
    if (pointer == NULL) return;
    pthread_mutex_lock(&pool_lock);
    if (in_region(pointer)) {
        small_free(pointer);
        pthread_mutex_unlock(&pool_lock);
        return;
    }
    struct large_block *header = large_header(pointer);
    if (header != NULL) large_free(header);
    pthread_mutex_unlock(&pool_lock);
    if (header == NULL) free(pointer);  // malloc's, from before the pool was installed
}

void *rlk_event_pool_realloc(void *pointer, size_t size) {
    if (pointer == NULL) return rlk_event_pool_malloc(size);
    size_t capacity;
    pthread_mutex_lock(&pool_lock);
    if (in_region(pointer)) {
        capacity = (class_of_block(pointer) + 1) * granule;
    } else {
        struct large_block *header = large_header(pointer);
        if (header == NULL) {
            pthread_mutex_unlock(&pool_lock);
            return realloc(pointer, size);  // malloc's: it stays malloc's
        }
        capacity = header->mapped - sizeof(struct large_block);
        if (size <= capacity) header->requested = size;
    }
    pthread_mutex_unlock(&pool_lock);
    // A block that shrinks keeps its place: libevent's shrinking blocks are few and short-lived.
    if (size <= capacity) return pointer;
    void *grown = rlk_event_pool_malloc(size);
    if (grown == NULL) return NULL;
    memcpy(grown, pointer, capacity);
    rlk_event_pool_free(pointer);
    return grown;
}

bool rlk_event_pool_owns(const void *pointer) {
    if (pointer == NULL) return false;
    pthread_mutex_lock(&pool_lock);
    bool owned = in_region(pointer) || large_header((void *)pointer) != NULL;
    pthread_mutex_unlock(&pool_lock);
    return owned;
}

static void install_pool(void) {
    // For side-by-side measurements of one binary (Benchmarks/IM-RESULTS.md).
    const char *keep_malloc = getenv("RUNLOOPKIT_LIBEVENT_MALLOC");
    if (keep_malloc != NULL && strcmp(keep_malloc, "1") == 0) return;
    void *reserved = mmap(NULL, region_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) return;  // libevent keeps malloc
    region = reserved;
    event_set_mem_functions(rlk_event_pool_malloc, rlk_event_pool_realloc, rlk_event_pool_free);
    stats.installed = true;
}

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

void rlk_event_pool_install(void) { pthread_once(&install_once, install_pool); }

struct rlk_event_pool_stats rlk_event_pool_stats(void) {
    pthread_mutex_lock(&pool_lock);
    struct rlk_event_pool_stats copy = stats;
    pthread_mutex_unlock(&pool_lock);
    return copy;
}
