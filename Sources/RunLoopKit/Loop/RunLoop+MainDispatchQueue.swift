import CRunLoopSupport
import Logging
import Synchronization

extension RunLoop {
    /// Whether the first run of the main loop on the main thread made the main queue's source (or
    /// tried: a failure is logged once, not at every run).
    private static let mainDispatchQueueWatched = Mutex(false)

    /// Services `DispatchQueue.main` — and so the main actor, whose jobs go there — from the main
    /// loop's common modes, as CFRunLoop's main loop does: blocks run in a run of any common mode on
    /// the main thread, and such a mode is never empty (a run in it does not return `finished`).
    ///
    /// Made on the first run, not when ``RunLoop/main`` is first touched: only a program whose main
    /// thread runs this loop may drain the queue. One whose main thread is in `dispatch_main()` (an
    /// `async` main) has libdispatch draining it, which must not be done twice.
    ///
    /// Main thread only (the caller checked ownership of the main loop).
    func serviceMainDispatchQueue() {
        Self.mainDispatchQueueWatched.withLock { watched in
            guard !watched else { return }
            watched = true
            let handle = rlk_main_queue_handle()
            do {
                let made = try RunLoopPortSource(fileDescriptor: handle, label: "main dispatch queue") { _, _ in
                    rlk_main_queue_drain(handle)
                }
                try add(made, forMode: .common)
            } catch {
                Self.logger.error("cannot watch the main dispatch queue (descriptor \(handle)): \(error)")
            }
        }
    }
}
