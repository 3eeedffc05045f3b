#if canImport(Glibc)
import Glibc
#endif

/// Detached pthreads with every signal blocked, for blocking work that must stay off a loop's thread.
enum WorkerThread {
    private final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread; false if the thread could not be created.
    static func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        // Allocated rather than `pthread_attr_t()`: the importer gives that zero initializer to
        // CLibevent (whose shim reads glibc's headers first), and MemberImportVisibility would then
        // want libevent imported here.
        let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
        defer { attributes.deallocate() }
        pthread_attr_init(attributes)
        defer { pthread_attr_destroy(attributes) }
        pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED))
        // The new thread inherits the creator's mask: block everything around creation so no signal can
        // land on the worker before it starts.
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let status = pthread_create(
            &thread, attributes,
            { context in
                Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        if status != 0 {
            Unmanaged<Box>.fromOpaque(context).release()
            return false
        }
        return true
    }
}
