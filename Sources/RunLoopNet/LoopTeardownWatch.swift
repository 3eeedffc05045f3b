import RunLoopKit
import Synchronization

/// An open connection learns that its loop's thread ended from its port sources' cancel callouts. One
/// with no source in the loop at that moment — reading paused with nothing to write, or the peer's
/// half-close read to its end — would never learn it: it keeps itself alive (`keepAlive`), its socket
/// stays open, and both leak for the life of the process. Such connections are listed here, per loop,
/// and a never-signalled source of the loop's, whose cancel callout runs at the loop's teardown, closes
/// them with ``NetError/loopTornDown``, as their sources' callouts would have.
///
/// Only connections without a watched source are listed, and only while so: an idle connection that
/// waits for input is not (it pays nothing for this).
///
/// Threads: a watch is used on its loop's thread only; the process-wide table hands each thread only
/// the watch of its own loop (the caller's connection is confined to that thread), hence unchecked.
final class LoopTeardownWatch: @unchecked Sendable {
    /// Keyed by the loop's identity; an entry is removed at the loop's teardown.
    private static let watches = Mutex<[ObjectIdentifier: LoopTeardownWatch]>([:])
    /// The watch's source lives in a mode of its own, which nobody runs: teardown cancels the sources
    /// of every mode, and a source in a mode the owner runs would keep that mode from ever being empty,
    /// so `run` would stop returning `finished` there (Autobahn's client, which runs its mode until
    /// empty between cases, waited out its one-second timeout on every case).
    static let mode = RunLoop.Mode("RunLoopNet.loopTeardownWatch")

    private let loop: RunLoop
    private var source: RunLoopSource?
    private var unwatched: [ObjectIdentifier: TCPConnection] = [:]
    private var isTornDown = false

    private init(loop: RunLoop) { self.loop = loop }

    /// The watch of `connection`'s loop, made (and added to its own mode) on first use.
    /// The loop's thread only.
    private static func watch(for connection: TCPConnection) -> LoopTeardownWatch {
        let loop = connection.loop
        let key = ObjectIdentifier(loop)
        if let existing = watches.withLock({ $0[key] }) { return existing }
        let watch = LoopTeardownWatch(loop: loop)
        let source = RunLoopSource(label: "tcp teardown watch", cancel: { [weak watch] _, _ in watch?.loopEnded() }) { _ in }
        loop.add(source, forMode: mode)
        watch.source = source
        watches.withLock { $0[key] = watch }
        return watch
    }

    /// The source of `loop`'s watch, if it has one (for tests).
    static func source(of loop: RunLoop) -> RunLoopSource? { watches.withLock { $0[ObjectIdentifier(loop)]?.source } }

    /// Lists `connection` while it is open with no source in its loop; unlists it otherwise.
    static func update(_ connection: TCPConnection, open: Bool, inLoop: Bool) {
        let listed = open && !inLoop
        guard listed || connection.isListedForTeardown else { return }
        let watch = watch(for: connection)
        if listed {
            watch.unwatched[ObjectIdentifier(connection)] = connection
        } else {
            watch.unwatched[ObjectIdentifier(connection)] = nil
        }
        connection.isListedForTeardown = listed
    }

    /// The loop's thread ended (its sources are being cancelled): close every listed connection.
    private func loopEnded() {
        guard !isTornDown else { return }
        isTornDown = true
        Self.watches.withLock { $0[ObjectIdentifier(loop)] = nil }
        let connections = unwatched.values
        unwatched.removeAll()
        source = nil
        for connection in connections {
            connection.isListedForTeardown = false
            connection.finish(.failed(.loopTornDown))
        }
    }
}
