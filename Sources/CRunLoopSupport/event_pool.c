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
// reserved region: no header per block, the class of a block is its run's. A run whose blocks are all
// free again (a crowd's events, after it left) gives its pages back to the kernel. Larger blocks are mappings
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

// One 64 KiB run of one size class. A run with a free or uncarved block is on its class's list of
// open runs; a run whose blocks are all free again gives its pages back (madvise) and waits, with
// no class, on the list of empty runs, for whichever class needs a run next.
struct run {
    struct free_block *free;
    uint16_t class_plus_one;  // 0: not in use by a class
    uint16_t in_use;
    uint16_t carved;
    uint16_t capacity;
    int32_t next;  // open runs of the class, or empty runs; -1 ends a list
    int32_t previous;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static char *region;
static size_t runs_used;  // runs ever carved out of the region, from its start
static struct run runs[run_count];
static int32_t open_runs[class_count];
static int32_t empty_runs = -1;
static struct large_block *large_blocks;
static struct rlk_event_pool_stats stats;

static inline size_t class_of_size(size_t size) { return size == 0 ? 0 : (size - 1) / granule; }

static inline int in_region(const void *pointer) {
    return region != NULL && (const char *)pointer >= region && (const char *)pointer < region + region_size;
}

static inline int32_t run_of(const void *pointer) { return (int32_t)(((const char *)pointer - region) / run_size); }

static inline size_t class_of_block(const void *pointer) { return (size_t)runs[run_of(pointer)].class_plus_one - 1; }

static void open_run(int32_t index, size_t class_index) {
    runs[index].previous = -1;
    runs[index].next = open_runs[class_index];
    if (open_runs[class_index] >= 0) runs[open_runs[class_index]].previous = index;
    open_runs[class_index] = index;
}

static void close_run(int32_t index, size_t class_index) {
    struct run *run = &runs[index];
    if (run->previous >= 0) runs[run->previous].next = run->next; else open_runs[class_index] = run->next;
    if (run->next >= 0) runs[run->next].previous = run->previous;
}

// Caller holds pool_lock. -1 when the region is full.
static int32_t new_run(size_t class_index) {
    int32_t index = empty_runs;
    if (index >= 0) {
        empty_runs = runs[index].next;
        stats.empty_runs -= 1;
    } else {
        if (runs_used == run_count) return -1;
        index = (int32_t)runs_used;
        if (mprotect(region + (size_t)index * run_size, run_size, PROT_READ | PROT_WRITE) != 0) return -1;
        runs_used += 1;
        stats.runs = runs_used;
    }
    struct run *run = &runs[index];
    run->free = NULL;
    run->class_plus_one = (uint16_t)(class_index + 1);
    run->in_use = 0;
    run->carved = 0;
    // Whole blocks only: a run's tail shorter than a block stays unused.
    run->capacity = (uint16_t)(run_size / ((class_index + 1) * granule));
    open_run(index, class_index);
    return index;
}

// Caller holds pool_lock. NULL when the region is full; the block then becomes a large one.
static void *small_alloc(size_t class_index) {
    int32_t index = open_runs[class_index];
    if (index < 0 && (index = new_run(class_index)) < 0) return NULL;
    struct run *run = &runs[index];
    size_t block_size = (class_index + 1) * granule;
    struct free_block *block = run->free;
    if (block != NULL) {
        run->free = block->next;
    } else {
        block = (struct free_block *)(region + (size_t)index * run_size + (size_t)run->carved * block_size);
        run->carved += 1;
    }
    run->in_use += 1;
    if (run->in_use == run->capacity) close_run(index, class_index);
    stats.small_blocks += 1;
    stats.small_bytes += block_size;
    return block;
}

// Caller holds pool_lock.
static void small_free(void *pointer) {
    int32_t index = run_of(pointer);
    struct run *run = &runs[index];
    size_t class_index = (size_t)run->class_plus_one - 1;
    struct free_block *block = pointer;
    block->next = run->free;
    run->free = block;
    if (run->in_use == run->capacity) open_run(index, class_index);
    run->in_use -= 1;
    stats.small_blocks -= 1;
    stats.small_bytes -= (class_index + 1) * granule;
    // The class's last open run stays, so that one block freed and allocated again costs no syscalls.
    if (run->in_use == 0 && (run->previous >= 0 || run->next >= 0)) {
        close_run(index, class_index);
        madvise(region + (size_t)index * run_size, run_size, MADV_DONTNEED);
        run->class_plus_one = 0;
        run->next = empty_runs;
        empty_runs = index;
        stats.empty_runs += 1;
    }
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
    // One run more than the region, so that runs start at multiples of their size (a block's run is
    // then its address rounded down, which tools and tests can see too).
    size_t reserved_size = region_size + run_size;
    char *reserved = mmap(NULL, reserved_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) return;  // libevent keeps malloc
    region = (char *)(((uintptr_t)reserved + run_size - 1) & ~(uintptr_t)(run_size - 1));
    for (size_t index = 0; index < class_count; index++) open_runs[index] = -1;
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
