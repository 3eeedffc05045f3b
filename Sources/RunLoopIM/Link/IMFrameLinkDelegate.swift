package import RunLoopIMCore

/// An owner that takes a link's events as methods (``IMFrameLinkEvents/init(owner:)``): the link keeps
/// one unowned reference to it, 16 bytes, where six closures cost 96 — a server keeps one link per idle
/// connection. Each method is the ``IMFrameLinkEvents`` member of the same meaning; loop thread.
package protocol IMFrameLinkDelegate: AnyObject {
    func linkOpened()
    func linkReceived(_ frame: IMFrame)
    func linkReadEnded()
    func linkReceivedOversized(_ header: FrameHeader, bodyPrefix: [UInt8], limit: Int)
    func linkFailed(_ error: IMFrameError, serial: UInt32)
    func linkClosed(_ reason: IMLinkCloseReason)
}

extension IMFrameLinkDelegate {
    package func linkOpened() {}
    package func linkReadEnded() {}
    package func linkReceivedOversized(_ header: FrameHeader, bodyPrefix: [UInt8], limit: Int) {}
}

/// The closures of ``IMFrameLinkEvents/init(opened:received:readEnded:oversized:failed:closed:)``,
/// boxed once per link opened with them.
final class IMFrameLinkClosures: IMFrameLinkDelegate {
    let opened: () -> Void
    let received: (IMFrame) -> Void
    let readEnded: () -> Void
    let oversized: (_ header: FrameHeader, _ bodyPrefix: [UInt8], _ limit: Int) -> Void
    let failed: (_ error: IMFrameError, _ serial: UInt32) -> Void
    let closed: (IMLinkCloseReason) -> Void

    init(
        opened: @escaping () -> Void, received: @escaping (IMFrame) -> Void, readEnded: @escaping () -> Void,
        oversized: @escaping (_ header: FrameHeader, _ bodyPrefix: [UInt8], _ limit: Int) -> Void,
        failed: @escaping (_ error: IMFrameError, _ serial: UInt32) -> Void, closed: @escaping (IMLinkCloseReason) -> Void
    ) {
        self.opened = opened
        self.received = received
        self.readEnded = readEnded
        self.oversized = oversized
        self.failed = failed
        self.closed = closed
    }

    func linkOpened() { opened() }
    func linkReceived(_ frame: IMFrame) { received(frame) }
    func linkReadEnded() { readEnded() }
    func linkReceivedOversized(_ header: FrameHeader, bodyPrefix: [UInt8], limit: Int) { oversized(header, bodyPrefix, limit) }
    func linkFailed(_ error: IMFrameError, serial: UInt32) { failed(error, serial) }
    func linkClosed(_ reason: IMLinkCloseReason) { closed(reason) }
}
