import RunLoopKit
import Synchronization

/// A socket owner of this module that keeps itself alive while open and learns of its loop's end from
/// its port source's cancel callout — so, while it has no source in the loop, from nothing.
protocol LoopTeardownSubject: AnyObject {
    var loop: RunLoop { get }
    /// Whether ``LoopTeardownWatch`` lists it now; kept by the watch.
    var isListedForTeardown: Bool { get set }
    /// Its loop's thread ended while it was listed: close, as its source's cancel callout would have.
    func loopTornDown()
}

/// An open connection or listener learns that its loop's thread ended from its port sources' cancel
/// callouts. One with no source in the loop at that moment would never learn it: a connection whose
/// reading is paused with nothing to write, or that read its peer's half-close to the end; a listener
/// whose accepting is paused because descriptors ran out. It keeps itself alive (`keepAlive`), its
/// socket stays open, and both leak for the life of the process. Such objects are listed here, per
/// loop, and a never-signalled source of the loop's, whose cancel callout runs at the loop's
/// teardown, closes them (connections with ``NetError/loopTornDown``), as their sources' callouts
/// would have.
///
/// Only objects without a watched source are listed, and only while so: an idle connection that
/// waits for input is not (it pays nothing for this).
///
/// Threads: a watch is used on its loop's thread only; the process-wide table hands each thread only
/// the watch of its own loop (the caller's objects are confined to that thread), hence unchecked.
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
    private var unwatched: [ObjectIdentifier: any LoopTeardownSubject] = [:]
    private var isTornDown = false

    private init(loop: RunLoop) { self.loop = loop }

    /// The watch of `loop`, made (and added to its own mode) on first use. The loop's thread only.
    private static func watch(for loop: RunLoop) -> LoopTeardownWatch {
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

    /// Lists `subject` while it is open with no source in its loop; unlists it otherwise.
    static func update(_ subject: some LoopTeardownSubject, open: Bool, inLoop: Bool) {
        let listed = open && !inLoop
        guard listed != subject.isListedForTeardown else { return }
        let watch = watch(for: subject.loop)
        watch.unwatched[ObjectIdentifier(subject)] = listed ? subject : nil
        subject.isListedForTeardown = listed
    }

    /// The loop's thread ended (its sources are being cancelled): close everything listed.
    private func loopEnded() {
        guard !isTornDown else { return }
        isTornDown = true
        Self.watches.withLock { $0[ObjectIdentifier(loop)] = nil }
        let subjects = unwatched.values
        unwatched.removeAll()
        source = nil
        for subject in subjects {
            subject.isListedForTeardown = false
            subject.loopTornDown()
        }
    }
}

extension TCPConnection: LoopTeardownSubject {
    func loopTornDown() { finish(.failed(.loopTornDown)) }
}

extension TCPListener: LoopTeardownSubject {
    func loopTornDown() { stopAtLoopEnd() }
}
