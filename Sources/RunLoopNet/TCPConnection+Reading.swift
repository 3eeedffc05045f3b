import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

extension TCPConnection {
    /// Reads exactly `count` bytes, then calls `completion` with them on the loop's thread.
    ///
    /// Requests are served in the order made, ahead of ``onData``. If the connection closes (or the
    /// peer ends its input) first, the request is dropped without a call: ``onClose`` (or
    /// ``onInputClosed``) says why. A request made while connecting waits for the connection.
    /// - Parameter timeout: how long this request may wait, from when it becomes the first in line;
    ///   `nil` uses ``readTimeout``. Expiry asks ``shouldTimeoutRead``, then closes with
    ///   ``NetError/timedOut(_:)`` `.read`.
    public func read(exactly count: Int, timeout: Duration? = nil, _ completion: @escaping (TCPConnection, [UInt8]) -> Void) {
        precondition(count >= 0, "read(exactly:) needs a count of at least zero")
        enqueue(ReadRequest(kind: .exactly(count), timeout: timeout, completion: completion))
    }

    /// Reads up to and including the first `delimiter`, then calls `completion` with those bytes
    /// (delimiter included) on the loop's thread.
    ///
    /// If `maximumLength` bytes arrive without the delimiter, the connection closes with
    /// ``NetError/delimiterNotFound(limit:)``: a peer cannot make it buffer without bound. Otherwise as
    /// ``read(exactly:timeout:_:)``.
    /// - Parameter onOverflow: runs instead, when `maximumLength` is passed, with the request already
    ///   withdrawn — to answer before closing (an HTTP server's 431). It should close the
    ///   connection; if it is still open when the handler returns, it closes with
    ///   ``NetError/delimiterNotFound(limit:)`` as without a handler.
    public func read(
        upTo delimiter: [UInt8],
        maximumLength: Int = 64 * 1024,
        timeout: Duration? = nil,
        onOverflow: ((TCPConnection) -> Void)? = nil,
        _ completion: @escaping (TCPConnection, [UInt8]) -> Void
    ) {
        precondition(!delimiter.isEmpty, "read(upTo:) needs a delimiter")
        enqueue(
            ReadRequest(
                kind: .delimiter(delimiter, maximumLength: max(1, maximumLength)), timeout: timeout,
                completion: completion, onOverflow: onOverflow))
    }

    /// Stops taking input from the socket and delivering buffered input, until ``resumeReading()``.
    /// The kernel's receive window then fills and the peer is slowed down — backpressure towards the
    /// sender. The read timeout does not run while paused.
    public func pauseReading() {
        checkThread()
        guard !isReadingPaused else { return }
        isReadingPaused = true
        ownerCall {
            updateReadInterest()
            armReadTimer()
        }
    }

    /// Resumes reading after ``pauseReading()``; buffered input is delivered on the loop's next pass.
    public func resumeReading() {
        checkThread()
        guard isReadingPaused else { return }
        isReadingPaused = false
        ownerCall {
            restartReadWait()
            updateReadInterest()
            if !input.isEmpty { scheduleDeferredPass() }
        }
    }

    /// Whether reading is paused by ``pauseReading()``.
    public var isReadingPausedByOwner: Bool { isReadingPaused }

    /// Whether bytes from the peer wait in the kernel, not read yet. Loop thread only.
    ///
    /// A deadline that fires while they do fired late: the loop was busy, the peer was not silent (a
    /// stalled loop services timers before ports, so the answer is read just after). Timeouts that
    /// judge a peer's silence check this first and give the loop a moment to read: the read timeout
    /// here, RunLoopIM's answer timeout, a WebSocket server's pings.
    ///
    /// False while the connection is not taking input (not connected, reading paused, input ended):
    /// bytes left waiting on purpose say nothing about the loop being late.
    public var hasUnreadInput: Bool {
        checkThread()
        guard state == .connected, !isReadingPaused, !isInputClosed, fd >= 0 else { return false }
        return Socket.unreadBytes(fd) > 0
    }

    private func enqueue(_ request: ReadRequest) {
        checkThread()
        guard state != .closed, state != .closing, !isInputClosed else { return }
        readRequests.append(request)
        ownerCall {
            if readRequests.count == 1 { restartReadWait() }
            guard state == .connected else { return }
            updateReadInterest()
            if !isDelivering && !input.isEmpty { scheduleDeferredPass() }
        }
    }

    /// Buffered input at which reading pauses: the input limit, or more if the first request needs it.
    var inputThreshold: Int {
        // The first request's need read in place: `readRequests.first` copied the request, a retain and
        // release of each closure it holds, on every read.
        readRequests.isEmpty ? limits.inputLimit : max(limits.inputLimit, readRequests[0].need)
    }

    /// The read source fired: take what the socket has (a few chunks at most, so one busy connection
    /// cannot starve the others; readiness is level-triggered and the rest waits for the next pass).
    func handleReadable() {
        if state == .closing { return discardInputWhileClosing() }
        guard state == .connected, fd >= 0 else { return }
        var received = 0
        var endOfInput = false
        var failure: Int32 = 0
        let chunk = limits.readChunkSize
        ReadScratch.withBuffer(byteCount: chunk) { buffer in
            for _ in 0..<4 {
                let count = Socket.receive(fd, buffer)
                if count > 0 {
                    input.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                    received += count
                    if count < chunk || input.count >= inputThreshold { break }
                } else if count == 0 {
                    endOfInput = true
                    break
                } else {
                    let code = Int32(-count)
                    if code != EAGAIN && code != EWOULDBLOCK { failure = code }
                    break
                }
            }
        }
        if received > 0 {
            // An idle timeout counts from the last arrival; the timer catches up lazily (it fires at
            // the deadline it was armed for and re-dates itself from this stamp). Without an idle
            // timeout the stamp is never read — setting one starts a new wait — so a connection
            // without one (an IM link: its heartbeat judges the peer) reads no clock per read.
            if readRequests.isEmpty, let rare = rareState, rare.readTimeout != nil {
                readWaitStart = loop.now
                rare.readExtension = .zero
            }
            deliverInput()
            guard state == .connected else { return }
        }
        if failure != 0 {
            return finish(.failed(.from(errno: failure, operation: "recv")))
        }
        if endOfInput {
            handleEndOfInput()
        } else {
            updateReadInterest()
        }
    }

    /// Hands buffered input to the first read request, or to ``onData`` when none is pending, until
    /// neither can take more. Runs from loop callouts only; a callback that makes a new request (say,
    /// the body after a header) is served by the same pass without recursion.
    func deliverInput() {
        guard !isDelivering else { return }
        isDelivering = true
        defer { isDelivering = false }
        while state == .connected, !isReadingPaused {
            if var request = readRequests.first {
                switch take(for: &request) {
                case .complete(var bytes):
                    readRequests.removeFirst()
                    restartReadWait()
                    request.completion(self, bytes)
                    input.recycle(&bytes)
                case .incomplete:
                    readRequests[0].scanned = request.scanned
                    return finishDelivery()
                case .overflow(let limit):
                    if let onOverflow = request.onOverflow {
                        readRequests.removeFirst()
                        onOverflow(self)
                        guard state == .connected else { return }
                    }
                    return finish(.failed(.delimiterNotFound(limit: limit)))
                }
            } else if let onData, !input.isEmpty {
                var bytes = input.takeAll()
                onData(self, bytes)
                input.recycle(&bytes)
            } else {
                break
            }
        }
        finishDelivery()
    }

    private func finishDelivery() {
        guard state == .connected else { return }
        updateReadInterest()
        armReadTimer()
    }

    private enum Take {
        case complete([UInt8])
        case incomplete
        case overflow(Int)
    }

    private func take(for request: inout ReadRequest) -> Take {
        switch request.kind {
        case .exactly(let count):
            return input.count >= count ? .complete(input.take(count)) : .incomplete
        case .delimiter(let delimiter, let maximumLength):
            if let end = input.end(of: delimiter, from: request.scanned) {
                if end - delimiter.count > maximumLength { return .overflow(maximumLength) }
                return .complete(input.take(end))
            }
            if input.count > maximumLength + delimiter.count - 1 { return .overflow(maximumLength) }
            // The delimiter may straddle the next arrival: rescan its possible start.
            request.scanned = max(0, input.count - delimiter.count + 1)
            return .incomplete
        }
    }

    /// The peer finished sending.
    private func handleEndOfInput() {
        let verdict = lifecycle.inputEnded(allowsHalfClosure: allowsHalfClosure, outputEmpty: output.isEmpty)
        readRequests.removeAll()
        if verdict == .finish { return finish(.peerClosed) }
        // End of input stays readable for ever (level-triggered): stop watching it.
        updateReadInterest()
        armReadTimer()
        guard state == .connected else { return }
        switch verdict {
        case .keepWriting: rareState?.onInputClosed?(self)
        case .closeGracefully: beginGracefulClose(.peerClosed)
        case .finish: break
        }
    }

    // MARK: read timeout

    /// A new wait starts: a request became first in line, the timeout changed, reading resumed.
    func restartReadWait() {
        readWaitStart = loop.now
        rareState?.readExtension = .zero
        rareState?.readSilence.startOver()
        armReadTimer()
    }

    /// The instant the current wait for input times out, or nil when nothing is being waited for.
    private var readDeadline: LoopInstant? {
        guard state == .connected, !isInputClosed, !isReadingPaused else { return nil }
        let timeout: Duration?
        if readRequests.isEmpty {
            // No request and no idle timeout (no rare state: none was ever set): nothing is waited for.
            guard onData != nil, let rare = rareState else { return nil }
            timeout = rare.readTimeout
        } else {
            timeout = readRequests[0].timeout ?? readTimeout
        }
        guard let timeout else { return nil }
        return readWaitStart + timeout + (rareState?.readExtension ?? .zero)
    }

    func armReadTimer() {
        if let deadline = readDeadline {
            timer(&rare.readTimer, "read timeout") { $0.readTimerFired() }.arm(at: deadline)
        } else {
            rareState?.readTimer?.disarm()
        }
    }

    func readTimerFired() {
        guard let deadline = readDeadline else { return }
        let now = loop.now
        // Late, not silent: asked before `shouldTimeoutRead`, whose answer may be a refusal (a
        // server's 408). Once per wait, so a peer that drips bytes cannot keep a request alive this way.
        switch rare.readSilence.judge(deadline, now: now, peerBytesWaiting: { hasUnreadInput }) {
        case .fine:
            return armReadTimer()
        case .extend(let until):
            rare.readExtension += until - deadline
            return armReadTimer()
        case .expired:
            break
        }
        if let ask = rareState?.shouldTimeoutRead, let more = ask(self, now - readWaitStart), more > .zero {
            guard state == .connected else { return }
            rare.readExtension += (now - deadline) + more
            return armReadTimer()
        }
        guard state == .connected, readDeadline != nil else { return }
        finish(.failed(.timedOut(.read)))
    }
}
