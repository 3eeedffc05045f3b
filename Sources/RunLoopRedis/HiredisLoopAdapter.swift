import CHiredis
import RunLoopKit

/// What hiredis's `adapters/macosx.h` is for CFRunLoop, for ours: hiredis says through its `ev` hooks
/// which readiness of the socket it waits for; the adapter watches for it with port sources and hands
/// readiness back (`redisAsyncHandleRead`, `redisAsyncHandleWrite`). A port source's interest is fixed
/// when it is made, so there are two, one per direction, each in the loop's modes only while hiredis
/// wants it (the hooks may be called repeatedly: they are idempotent).
///
/// hiredis calls the `cleanup` hook just before it frees the context, whoever asked (an error, EOF,
/// `redisAsyncFree`): from then on ``context`` is `nil` and the sources are gone, before hiredis closes
/// the descriptor.
///
/// Loop thread only. hiredis holds it unretained (`ev.data`): its owner keeps it while the context
/// lives.
final class HiredisLoopAdapter {
    /// hiredis's context while it lives.
    private(set) var context: UnsafeMutablePointer<redisAsyncContext>?
    private let loop: RunLoop
    private let modes: [RunLoop.Mode]
    private var readSource: RunLoopPortSource?
    private var writeSource: RunLoopPortSource?
    private var watchesRead = false
    private var watchesWrite = false
    /// After hiredis handled readiness (and ran the callbacks it had for it).
    private let handled: () -> Void
    /// From `cleanup`, with hiredis's error message (`nil` when the owner freed the context).
    private let ended: (String?) -> Void

    /// Attaches to `context`, which must have no adapter yet; watches nothing until hiredis asks.
    init(
        context: UnsafeMutablePointer<redisAsyncContext>, loop: RunLoop, modes: [RunLoop.Mode],
        handled: @escaping () -> Void, ended: @escaping (String?) -> Void
    ) throws(RunLoopError) {
        self.context = context
        self.loop = loop
        self.modes = modes
        self.handled = handled
        self.ended = ended
        let fd = context.pointee.c.fd
        readSource = try RunLoopPortSource(fileDescriptor: fd, interest: .readable, label: "redis read \(fd)") { [weak self] _, _ in
            guard let self, let context = self.context else { return }
            redisAsyncHandleRead(context)
            handled()
        }
        writeSource = try RunLoopPortSource(fileDescriptor: fd, interest: .writable, label: "redis write \(fd)") { [weak self] _, _ in
            self?.writable()
        }
        context.pointee.ev.data = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.ev.addRead = { HiredisLoopAdapter.from($0).setWatching(read: true) }
        context.pointee.ev.delRead = { HiredisLoopAdapter.from($0).setWatching(read: false) }
        context.pointee.ev.addWrite = { HiredisLoopAdapter.from($0).setWatching(write: true) }
        context.pointee.ev.delWrite = { HiredisLoopAdapter.from($0).setWatching(write: false) }
        context.pointee.ev.cleanup = { HiredisLoopAdapter.from($0).contextWillBeFreed() }
    }

    /// hiredis writes what it has queued (its first write also completes the connect). SIGPIPE is
    /// held off during it: hiredis's `write(2)` raises it on a connection Redis has just closed, and
    /// hiredis then ends the context with `EPIPE`, as for any broken connection.
    func writable() {
        guard let context else { return }
        withSIGPIPESuppressed { redisAsyncHandleWrite(context) }
        handled()
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> HiredisLoopAdapter {
        Unmanaged<HiredisLoopAdapter>.fromOpaque(data!).takeUnretainedValue()
    }

    private func setWatching(read wanted: Bool) {
        guard wanted != watchesRead, let readSource else { return }
        watchesRead = wanted
        setWatching(readSource, wanted)
    }

    private func setWatching(write wanted: Bool) {
        guard wanted != watchesWrite, let writeSource else { return }
        watchesWrite = wanted
        setWatching(writeSource, wanted)
    }

    private func setWatching(_ source: RunLoopPortSource, _ wanted: Bool) {
        for mode in modes {
            // Adding fails only for an invalidated source or a loop torn down: nothing to watch then.
            if wanted { try? loop.add(source, forMode: mode) } else { loop.remove(source, forMode: mode) }
        }
    }

    private func contextWillBeFreed() {
        guard let context else { return }
        let message = context.pointee.err == 0 ? nil : String(cString: context.pointee.errstr)
        self.context = nil
        readSource?.invalidate()
        writeSource?.invalidate()
        readSource = nil
        writeSource = nil
        ended(message)
    }
}
