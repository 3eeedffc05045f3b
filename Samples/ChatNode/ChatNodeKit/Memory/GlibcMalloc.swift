import Glibc

/// glibc's malloc controls, which its Swift module does not show (they are declared in malloc.h):
/// looked up by name once; `nil` on a C library without them.
enum GlibcMalloc {
    /// `malloc_trim(pad)`: gives back the free pages of every arena and the main heap's free top.
    static let trim: (@convention(c) (Int) -> Int32)? = function("malloc_trim")
    /// `mallopt(option, value)`: 1 when glibc took the setting.
    static let setOption: (@convention(c) (Int32, Int32) -> Int32)? = function("mallopt")

    /// Makes every thread that has not allocated yet allocate from the main arena (`M_ARENA_MAX` 1),
    /// so `trim` gives their freed memory back too: it returns the free top of the main heap only,
    /// not of a thread's own arena. Without it each password thread keeps its last scrypt buffer (1 MiB
    /// at cost 10, 16 MiB at the default 14) at its arena's top for good, since glibc raises its trim
    /// threshold above the buffer's size once one was freed. Keeping the buffers in the heap, not a
    /// mapping of their own, keeps the hashes as fast: no page faults for a fresh buffer per hash.
    /// Call it before other threads start: one that allocated already keeps its arena.
    @discardableResult
    static func shareMainArena() -> Bool {
        setOption?(-8, 1) == 1  // M_ARENA_MAX
    }

    private static func function<Function>(_ name: String) -> Function? {
        dlsym(nil, name).map { unsafeBitCast($0, to: Function.self) }
    }
}
