import Glibc
public import RunLoopKit

/// Runs `body` on a new thread (so it gets a fresh `RunLoop.current`) and returns its result to the
/// async test once that thread has ended — and so once its loop has been torn down.
///
/// Swift Testing runs tests in parallel on a shared pool; giving each test its own thread gives it its
/// own loop, so tests never see each other's items.
///
/// The result is handed over only after the thread is joined: the loop's teardown runs in a
/// thread-specific-data destructor after `body` returns, and a test that goes on to use that loop's
/// items (moving a timer to another loop, expecting `loopTornDown`) would otherwise race with it. Under
/// load or the thread sanitizer it lost that race.
public func onLoopThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let result = LockedBox<Result<T, any Error>?>(nil)
        let worker = JoinableThread { result.set(Result { try body() }) }
        JoinableThread.detach {
            worker.join()
            continuation.resume(with: result.get()!)
        }
    }
}

/// Runs each body on a new thread of its own, all started at once, and returns their results in order
/// once every thread has ended. For tests whose loops must run at the same time: two `async let`
/// ``onLoopThread(_:)`` calls start their threads only when the concurrency pool gets to each child
/// task, and a pool held up by other tests (CI once showed 30 s) starts the second loop after the first
/// has given up waiting for it.
public func onLoopThreads<T: Sendable>(_ bodies: [@Sendable () throws -> T]) async throws -> [T] {
    try await withCheckedThrowingContinuation { continuation in
        let results = bodies.map { _ in LockedBox<Result<T, any Error>?>(nil) }
        let workers = zip(bodies, results).map { body, result in
            JoinableThread { result.set(Result { try body() }) }
        }
        JoinableThread.detach {
            for worker in workers { worker.join() }
            continuation.resume(with: Result { try results.map { try $0.get()!.get() } })
        }
    }
}

/// Runs `body` on a new thread whose loop already uses a fresh ``ManualClock``.
public func onManualClockLoop<T: Sendable>(
    autoAdvances: Bool = true,
    _ body: @escaping @Sendable (RunLoop, ManualClock) throws -> T
) async throws -> T {
    try await onLoopThread {
        let loop = RunLoop.current
        let clock = ManualClock(autoAdvances: autoAdvances)
        try loop.setClock(.manual(clock))
        return try body(loop, clock)
    }
}

/// Starts a detached thread running `body`, with no signal blocked — like a daemon's own thread
/// (``JoinableThread/detach(_:)``, under the name the tests have always used).
public func startThread(_ body: @escaping @Sendable () -> Void) {
    JoinableThread.detach(body)
}

/// Sleeps the calling helper thread; for cross-thread tests that need real time to pass.
/// Never call it on a loop's thread in a test that could use a ``ManualClock`` instead.
public func sleep(milliseconds: Int) {
    usleep(useconds_t(milliseconds * 1000))
}
