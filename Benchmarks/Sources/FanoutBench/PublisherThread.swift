import BenchSupport
import RunLoopKit

/// The publisher's thread and what it shares with the main (subscribers') thread. Fields are written
/// on one side before a semaphore post and read on the other after the wait, which orders them.
final class PublisherThread: @unchecked Sendable {
    let options: Options
    /// Posted once the publisher is online and in the room (or failed to be).
    let ready = bs_sem_new()!
    /// Posted once every message is settled (acknowledged or failed), ``stop()`` came, or the timeout
    /// passed.
    let done = bs_sem_new()!
    // Set by the publisher's thread before it posts `ready`.
    var loop: RunLoop?
    var publisher: Publisher?
    var isReady = false
    // Set by the publisher's thread before it posts `done`.
    var report = (sent: 0, acknowledged: 0, failed: 0, firstSend: UInt64(0), lastAck: UInt64(0), failures: [String]())

    init(options: Options) {
        self.options = options
    }

    func start() {
        _ = bs_thread_start(
            { context in
                Unmanaged<PublisherThread>.fromOpaque(context!).takeRetainedValue().main()
            }, Unmanaged.passRetained(self).toOpaque())
    }

    /// Tells the publisher, on its own loop, to start sending.
    func go() {
        loop?.perform(inModes: [.common]) { [self] in publisher?.go() }
    }

    /// Tells the publisher, on its own loop, that the window closed: it reports what was acknowledged
    /// so far and posts `done`, so a run that timed out still reports its acknowledgements.
    func stop() {
        loop?.perform(inModes: [.common]) { [self] in publisher?.isStopped = true }
    }

    private func main() {
        let publisher = Publisher(options: options)
        let loop = publisher.loop
        self.loop = loop
        self.publisher = publisher
        publisher.start()
        let readyBy = loop.now + .seconds(Int64(options.readyTimeout))
        while !publisher.isReady, publisher.failures.isEmpty, loop.now < readyBy {
            _ = try? loop.run(.default, timeout: .milliseconds(5))
        }
        isReady = publisher.isReady
        bs_sem_post(ready)
        // Sending starts when the main thread's go() arrives; bounded by the run's timeout after that.
        let deadline = loop.now + .seconds(Int64(options.readyTimeout + options.timeout))
        while !publisher.isFinished, loop.now < deadline {
            _ = try? loop.run(.default, timeout: .milliseconds(100))
        }
        report = (publisher.sent, publisher.acknowledged, publisher.failed, publisher.firstSend, publisher.lastAck, publisher.failures)
        bs_sem_post(done)
        // Parks with the connection open until the process exits, so the node sees no logout mid-report.
        while true { _ = try? loop.run(.default, timeout: .seconds(1)) }
    }
}
