import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

extension TCPConnection {
    /// Queues `bytes` for sending. Loop thread only; never blocks.
    ///
    /// With nothing queued the bytes go to the kernel at once (no copy when it takes them all); the
    /// rest waits in the output queue and is sent as the socket becomes writable. Writes made while
    /// connecting wait for the connection.
    ///
    /// Backpressure: past ``TCPBufferLimits/writeHighWaterMark`` queued bytes, ``isWritable`` turns
    /// false (and ``onWritabilityChanged`` reports it on the loop's next pass); stop producing until it
    /// turns true again.
    ///
    /// A send failure (reset, broken pipe) is not thrown: it closes the connection and ``onClose``
    /// reports it on the loop's next pass. Sending never raises SIGPIPE.
    /// - Throws: ``NetError/writeBufferFull(limit:)`` if the queue would pass
    ///   ``TCPBufferLimits/writeLimit`` (nothing is queued); ``NetError/outputClosed`` after
    ///   ``shutdownOutput()`` or ``close(immediately:)``, or once closed.
    public func write(_ bytes: [UInt8]) throws(NetError) {
        checkThread()
        try ownerCall { () throws(NetError) in try queue(bytes) }
    }

    /// Queues a copy of `bytes` for sending, as ``write(_:)`` does: with nothing queued, what the kernel
    /// takes at once is never copied, and no array is made for it. A server answers a heartbeat this
    /// way from the stack (the array and its release were ~700 instructions of each answer, issue 22).
    /// Loop thread only.
    /// - Throws: as ``write(_:)``.
    package func write(copying bytes: UnsafeRawBufferPointer) throws(NetError) {
        checkThread()
        try ownerCall { () throws(NetError) in
            guard try mayQueue(bytes.count) else { return }
            if output.isEmpty {
                guard let sent = sendFirst(bytes), sent < bytes.count else { return }
                output.append(Array(UnsafeRawBufferPointer(rebasing: bytes[sent...])))
            } else {
                output.append(Array(bytes))
            }
            settleAfterQueueing()
        }
    }

    private func queue(_ bytes: [UInt8]) throws(NetError) {
        guard try mayQueue(bytes.count) else { return }
        if output.isEmpty {
            guard let sent = bytes.withUnsafeBytes({ sendFirst($0) }), sent < bytes.count else { return }
            output.append(sent == 0 ? bytes : Array(bytes[sent...]))
        } else {
            output.append(bytes)
        }
        settleAfterQueueing()
    }

    /// Whether `count` bytes are to be queued (false: none); throws when the connection takes no more.
    private func mayQueue(_ count: Int) throws(NetError) -> Bool {
        guard state != .closed, state != .closing, !lifecycle.isShutdownAsked else { throw .outputClosed }
        guard count > 0 else { return false }
        guard output.count + count <= limits.writeLimit else { throw .writeBufferFull(limit: limits.writeLimit) }
        return true
    }

    /// With nothing queued: a write starts now, and goes to the kernel at once if connected. Returns
    /// how many bytes it took (0 while connecting, or when the socket's buffer is full), or `nil` when
    /// the send failed and the connection finished.
    private func sendFirst(_ bytes: UnsafeRawBufferPointer) -> Int? {
        lastWriteProgress = loop.now
        rareState?.writeExtension = .zero
        guard state == .connected && fd >= 0 else { return 0 }
        let sent = Socket.send(fd, bytes)
        if sent >= 0 { return sent }
        let code = Int32(-sent)
        if code == EAGAIN || code == EWOULDBLOCK { return 0 }
        finish(.failed(.from(errno: code, operation: "send")))
        return nil
    }

    /// Output now waits: watch for writability, time the write, apply the water marks.
    private func settleAfterQueueing() {
        updateWriteInterest()
        armWriteTimer()
        updateWritability()
    }

    /// Queues the bytes of any sequence (a string's `utf8`, a slice). See ``write(_:)``.
    public func write<Bytes: Sequence>(_ bytes: Bytes) throws(NetError) where Bytes.Element == UInt8 {
        try write(Array(bytes))
    }

    /// Half-closes: once queued output is flushed, shuts down this side's output (the peer reads end
    /// of input) while input keeps flowing. Later writes throw ``NetError/outputClosed``. If the peer
    /// has already finished too, the connection then closes with ``CloseReason/closed``. Idempotent.
    public func shutdownOutput() {
        checkThread()
        guard lifecycle.askShutdown() else { return }
        guard state == .connected && output.isEmpty && readSource != nil else { return }
        ownerCall { outputDrained() }
    }

    /// Sends what the socket takes, then settles interest, timers, writability and pending closes.
    func flushOutput() {
        guard isOpen, fd >= 0 else { return }
        if !output.isEmpty {
            let (sent, outcome) = output.flush(to: fd)
            if sent > 0 {
                lastWriteProgress = loop.now
                rareState?.writeExtension = .zero
            }
            if case .failed(let code) = outcome {
                return finish(.failed(.from(errno: code, operation: "send")))
            }
        }
        updateWriteInterest()
        guard isOpen else { return }
        armWriteTimer()
        // Closing: nobody produces any more, so writability is not reported; the close moves on.
        if state == .closing { return outputDrained() }
        guard output.isEmpty else { return updateWritability() }
        outputDrained()
        guard isOpen else { return }
        updateWritability()
    }

    /// Applies the water marks; reports a change now (from a callout) or on the next pass (from a
    /// call the owner made).
    func updateWritability() {
        guard writability.update(queuedBytes: output.count, limits: limits) else { return }
        if isInsideOwnerCall { scheduleDeferredPass() } else { reportWritability() }
    }

    /// Tells the owner about writability changes, one call per change, until it settles.
    func reportWritability() {
        guard !isReportingWritability else { return }
        isReportingWritability = true
        defer { isReportingWritability = false }
        while isOpen, let writable = writability.nextReport() {
            rareState?.onWritabilityChanged?(self, writable)
        }
    }

    // MARK: write timeout

    private var writeDeadline: LoopInstant? {
        guard isOpen, !output.isEmpty, let writeTimeout else { return nil }
        return lastWriteProgress + writeTimeout + (rareState?.writeExtension ?? .zero)
    }

    func armWriteTimer() {
        if let deadline = writeDeadline {
            timer(&rare.writeTimer, "write timeout") { $0.writeTimerFired() }.arm(at: deadline)
        } else {
            rareState?.writeTimer?.disarm()
        }
    }

    func writeTimerFired() {
        guard let deadline = writeDeadline else { return }
        let now = loop.now
        if now < deadline { return armWriteTimer() }
        if let ask = rareState?.shouldTimeoutWrite, let more = ask(self, now - lastWriteProgress), more > .zero {
            guard isOpen else { return }
            rare.writeExtension += (now - deadline) + more
            return armWriteTimer()
        }
        guard isOpen, writeDeadline != nil else { return }
        finish(.failed(.timedOut(.write)))
    }
}
