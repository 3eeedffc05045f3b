import RunLoopKit
import RunLoopNet

/// The byte stream under a ``WebSocketConnection`` or an upgrade the ``WebSocketServer`` is reading,
/// its type set aside, so the connection and the handshake are written once for TCP and for TLS.
/// It also reads the opening handshake's HTTP head, which must come before any frame.
///
/// Loop thread only, like the stream. The stream's callbacks hold this object until the stream has
/// closed, as the loop holds an open stream.
final class WebSocketTransport {
    /// The TCP connection underneath (addresses, limits, timeouts).
    let tcp: TCPConnection
    /// Receives what the peer sent; bytes that came behind a head arrive on the loop's next pass.
    var onData: (([UInt8]) -> Void)? {
        didSet { if onData != nil, !leftover.isEmpty { deliverLeftoverLater() } }
    }
    var onConnect: (() -> Void)?
    var onWritabilityChanged: ((Bool) -> Void)?
    /// How the stream closed, and its failure in the WebSocket's words (`nil` if it did not fail).
    var onClose: ((CloseReason, WebSocketError?) -> Void)?

    private let writeBytes: ([UInt8]) throws(WebSocketError) -> Void
    private let closeStream: (Bool) -> Void
    private let pause: () -> Void
    private let resume: () -> Void
    private let outputBytes: () -> Int
    private let unreadInput: () -> Bool
    private var headReader: HeadReader?
    private var leftover: [UInt8] = []
    private var leftoverScheduled = false

    /// A head on its way in: where it goes, and its deadline.
    private struct HeadReader {
        var buffer: HTTPHeadBuffer
        var deadline: LoopInstant
        var silence = SilenceDeadline(renewal: .perWait)
        let timer: DeadlineTimer
        let onOverflow: () -> Void
        let onTimeout: () -> Void
        let completion: ([UInt8]) -> Void
    }

    init<Stream: WebSocketByteStream>(_ stream: Stream) {
        tcp = stream.underlyingTCP
        writeBytes = { bytes throws(WebSocketError) in
            do throws(Stream.Failure) { try stream.write(bytes) } catch { throw Stream.webSocketError(error) }
        }
        closeStream = { stream.close(immediately: $0) }
        pause = { stream.pauseReading() }
        resume = { stream.resumeReading() }
        outputBytes = { stream.bufferedOutputBytes }
        unreadInput = { stream.hasUnreadInput }
        stream.onConnect = { [self] _ in onConnect?() }
        stream.onData = { [self] _, bytes in received(bytes) }
        stream.onWritabilityChanged = { [self] _, writable in onWritabilityChanged?(writable) }
        stream.onClose = { [self] _, reason in
            headReader?.timer.cancel()
            headReader = nil
            let callback = onClose
            onClose = nil
            onData = nil
            onConnect = nil
            onWritabilityChanged = nil
            callback?(Stream.transportReason(reason), reason.failure.map(Stream.webSocketError))
        }
    }

    var loop: RunLoop { tcp.loop }
    var modes: [RunLoop.Mode] { tcp.modes }
    var isWritable: Bool { tcp.isWritable }
    var hasUnreadInput: Bool { unreadInput() }
    var bufferedOutputBytes: Int { outputBytes() }

    func write(_ bytes: [UInt8]) throws(WebSocketError) { try writeBytes(bytes) }
    func close(immediately: Bool = false) { closeStream(immediately) }
    func pauseReading() { pause() }
    func resumeReading() { resume() }

    /// Reads an HTTP head, up to its blank line: `completion` gets it, and what came behind it waits
    /// for ``onData``. `onOverflow` runs instead when `maximumLength` bytes carry no blank line,
    /// `onTimeout` when the head is not in within `timeout` — unless the peer's bytes then wait
    /// unread (this loop was late, not the peer), which buys one short grace.
    func readHead(
        maximumLength: Int, timeout: Duration, onOverflow: @escaping () -> Void, onTimeout: @escaping () -> Void,
        _ completion: @escaping ([UInt8]) -> Void
    ) {
        precondition(headReader == nil, "one head at a time")
        let timer = DeadlineTimer(loop: loop, modes: modes, label: "websocket handshake") { [weak self] in self?.headDeadlinePassed() }
        let deadline = loop.now + timeout
        headReader = HeadReader(
            buffer: HTTPHeadBuffer(maximumLength: maximumLength), deadline: deadline, timer: timer,
            onOverflow: onOverflow, onTimeout: onTimeout, completion: completion)
        timer.arm(at: deadline)
    }

    private func received(_ bytes: [UInt8]) {
        guard var reader = headReader else {
            // Bytes that came behind the head go first.
            if let onData, leftover.isEmpty { return onData(bytes) }
            leftover += bytes
            if onData != nil { deliverLeftoverLater() }
            return
        }
        let outcome = reader.buffer.append(bytes)
        headReader = reader
        switch outcome {
        case .incomplete:
            return
        case .overflow:
            reader.timer.cancel()
            headReader = nil
            reader.onOverflow()
        case .head(let head, let rest):
            reader.timer.cancel()
            headReader = nil
            leftover += rest
            reader.completion(head)
        }
    }

    private func headDeadlinePassed() {
        guard var reader = headReader else { return }
        let verdict = reader.silence.judge(reader.deadline, now: loop.now, peerBytesWaiting: unreadInput)
        headReader = reader
        switch verdict {
        case .fine:
            reader.timer.arm(at: reader.silence.due(reader.deadline))
        case .extend(let until):
            reader.timer.arm(at: until)
        case .expired:
            headReader = nil
            reader.onTimeout()
        }
    }

    private func deliverLeftoverLater() {
        guard !leftoverScheduled else { return }
        leftoverScheduled = true
        try? loop.performFromLoopThread(inModes: modes, label: "websocket first frames") { [weak self] in
            guard let self else { return }
            self.leftoverScheduled = false
            guard let onData = self.onData, !self.leftover.isEmpty else { return }
            let bytes = self.leftover
            self.leftover = []
            onData(bytes)
        }
    }
}
