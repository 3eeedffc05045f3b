import RunLoopKit
import RunLoopNet

@testable import RunLoopIM
@testable import RunLoopIMCore

/// A byte stream that keeps every write instead of sending it: a link's writes counted, not timed.
/// Input is fed by the test (``feed(_:)``). Loop thread only.
final class CountingByteStream: IMByteStream {
    let loop: RunLoop
    let modes: [RunLoop.Mode] = [.common]
    var remoteAddress: SocketAddress? { nil }
    var hasUnreadInput: Bool { false }
    var bufferedOutputBytes: Int { 0 }
    var isWritable: Bool { true }
    var onConnect: ((CountingByteStream) -> Void)?
    var onData: ((CountingByteStream, [UInt8]) -> Void)?
    var onWritabilityChanged: ((CountingByteStream, Bool) -> Void)?
    var onClose: ((CountingByteStream, CloseReason) -> Void)?
    /// Each write's bytes, in order.
    private(set) var writes: [[UInt8]] = []
    /// Each close: `true` for an immediate one.
    private(set) var closes: [Bool] = []
    /// What the next writes throw, when set.
    var refusal: NetError?

    /// Lets the callbacks go when the loop's thread ends, as a real stream does when it reports its
    /// close: a link's callbacks hold the link strongly, and the link holds its stream, so a test that
    /// ends with its links open would otherwise leave each pair alive (LeakSanitizer reports them).
    init(loop: RunLoop) {
        self.loop = loop
        let teardown = RunLoopSource(label: "counting stream teardown", cancel: { [weak self] _, _ in self?.letCallbacksGo() }) { _ in }
        loop.add(teardown, forMode: Self.teardownMode)
    }

    /// A mode nobody runs: the source only waits for the loop's teardown, which cancels every mode's
    /// sources, and keeps no mode a test runs from being empty.
    private static let teardownMode = RunLoop.Mode("CountingByteStream.teardown")

    private func letCallbacksGo() {
        onConnect = nil
        onData = nil
        onWritabilityChanged = nil
        onClose = nil
    }

    static func linkFailure(_ failure: NetError) -> IMLinkFailure { IMLinkFailure(failure) }

    func write(_ bytes: [UInt8]) throws(NetError) {
        if let refusal { throw refusal }
        writes.append(bytes)
    }

    func close(immediately: Bool) { closes.append(immediately) }
    func pauseReading() {}
    func resumeReading() {}

    /// Hands `frames` to the link as one read.
    func feed(_ frames: [IMFrame]) {
        onData?(self, frames.flatMap { $0.encoded() })
    }

    /// The frames written so far, decoded, per write.
    func writtenFrames() throws -> [[IMFrame]] {
        try writes.map { bytes in
            var decoder = FrameDecoder(maximumBodyLength: 1 << 20)
            decoder.append(bytes)
            var frames: [IMFrame] = []
            while let frame = try decoder.next() { frames.append(frame) }
            return frames
        }
    }
}
