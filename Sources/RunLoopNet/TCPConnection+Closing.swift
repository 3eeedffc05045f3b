import RunLoopKit

#if canImport(Glibc)
import Glibc
import Logging
#endif

extension TCPConnection {
    /// Closes the connection. Loop thread only; ``onClose`` runs on a later pass of the loop, never
    /// inside this call. Idempotent; a graceful close may be upgraded to an immediate one.
    ///
    /// Gracefully (the default) — a lingering close, so that everything already written reaches the
    /// peer: pending read requests are dropped and input is no longer delivered; queued output is
    /// flushed (bounded by ``writeTimeout``); the output is shut down, so the peer reads end of stream
    /// after the last byte; then the connection keeps reading, and discarding, until the peer ends its
    /// input too (bounded by ``lingerTimeout``), and only then closes the socket. Closing earlier
    /// would let input that arrives later make the kernel answer with a reset, which throws away
    /// whatever of our output the peer has not read yet.
    ///
    /// ``onClose`` then gets ``CloseReason/closed`` (or ``CloseReason/peerClosed`` when the peer's end
    /// of input started the close). If delivery cannot be confirmed, the reason says so and is never
    /// `closed`: ``NetError/timedOut(_:)`` `.write` (the flush made no progress),
    /// ``NetError/timedOut(_:)`` `.linger` (the peer neither ended its input nor read more),
    /// ``NetError/connectionReset`` (the peer reset the connection).
    ///
    /// Immediately: discards queued output and resets the connection (SO_LINGER 0, the peer sees a
    /// reset); ``onClose`` gets ``CloseReason/aborted``. A connection still resolving or connecting is
    /// abandoned either way.
    public func close(immediately: Bool = false) {
        checkThread()
        ownerCall {
            switch lifecycle.closeAsked(immediately: immediately) {
            case .nothing: break
            case .finish(let reason): finish(reason)
            case .closeGracefully: beginGracefulClose(.closed)
            }
        }
    }

    /// Starts the lingering close: no more input for the owner, output flushed, then
    /// ``outputDrained()`` shuts the output down and waits for the peer.
    func beginGracefulClose(_ reason: CloseReason) {
        lifecycle.beginClosing(reason)
        readRequests.removeAll()
        // Nobody will consume it: the owner asked to close, or the peer already ended its input.
        input.removeAll()
        armReadTimer()
        // Keep watching input (if still open) so arriving bytes are discarded rather than left unread.
        updateReadInterest()
        guard state == .closing else { return }
        flushOutput()
    }

    /// The output queue is empty: a half-close asked for or a graceful close moves on, as
    /// ``TCPLifecycle/outputDrained()`` decides — FIN after the last byte, then the close, or the
    /// linger until the peer's end of input.
    func outputDrained() {
        guard output.isEmpty, fd >= 0 else { return }
        let closing = state == .closing
        let next = lifecycle.outputDrained()
        if next.shutDownOutput, Glibc.shutdown(fd, Int32(SHUT_WR)) != 0 {
            let code = errno
            // ENOTCONN: the peer reset the connection. A graceful close then cannot say its output
            // arrived; a half-close has nothing more to send anyway.
            if closing {
                return finish(.failed(code == ENOTCONN ? .connectionReset : .from(errno: code, operation: "shutdown")))
            }
            if code != ENOTCONN { return finish(.failed(.from(errno: code, operation: "shutdown"))) }
        }
        if let reason = next.finish { return finish(reason) }
        guard next.linger else { return }
        if rare.lingerStart == nil {
            rare.lingerStart = loop.now
            rare.lingerUnacknowledged = Socket.unacknowledgedBytes(fd)
        }
        armLingerTimer()
    }

    /// Input readiness while closing: read and drop what arrived, so the socket is never closed with
    /// unread input; the peer's end of input completes the close.
    func discardInputWhileClosing() {
        guard fd >= 0, !isInputClosed else { return }
        var endOfInput = false
        var failure: Int32 = 0
        // A few chunks per pass, like a normal read, so one closing connection cannot starve others.
        withUnsafeTemporaryAllocation(byteCount: limits.readChunkSize, alignment: 16) { buffer in
            for _ in 0..<4 {
                let count = Socket.receive(fd, buffer)
                if count == buffer.count { continue }
                if count == 0 {
                    endOfInput = true
                } else if count < 0 {
                    let code = Int32(-count)
                    if code != EAGAIN && code != EWOULDBLOCK { failure = code }
                }
                break
            }
        }
        if failure != 0 { return finish(.failed(.from(errno: failure, operation: "recv"))) }
        guard endOfInput else { return }
        lifecycle.markInputEnded()
        updateReadInterest()
        armLingerTimer()
        outputDrained()
    }

    // MARK: linger timeout

    private var lingerDeadline: LoopInstant? {
        guard state == .closing, isOutputClosed, !isInputClosed, let lingerStart = rareState?.lingerStart, let lingerTimeout else {
            return nil
        }
        return lingerStart + lingerTimeout
    }

    func armLingerTimer() {
        if let deadline = lingerDeadline {
            timer(&rare.lingerTimer, "linger timeout") { $0.lingerTimerFired() }.arm(at: deadline)
        } else {
            rareState?.lingerTimer?.disarm()
        }
    }

    private func lingerTimerFired() {
        guard let deadline = lingerDeadline else { return }
        let now = loop.now
        if now < deadline { return armLingerTimer() }
        // A slow reader still draining what the kernel holds for it is making progress: more time.
        let unacknowledged = Socket.unacknowledgedBytes(fd)
        if unacknowledged > 0 && unacknowledged < rare.lingerUnacknowledged {
            rare.lingerUnacknowledged = unacknowledged
            rare.lingerStart = now
            return armLingerTimer()
        }
        finish(.failed(.timedOut(.linger)))
    }

    // MARK: the end

    /// Closes for good: everything off the loop, the descriptor closed, the listener told, the owner
    /// told once (now or on the next pass).
    func finish(_ reason: CloseReason) {
        guard lifecycle.close(reason) else { return }
        rareState?.connectTimer?.cancel()
        rareState?.readTimer?.cancel()
        rareState?.writeTimer?.cancel()
        rareState?.lingerTimer?.cancel()
        releaseSocket(reset: reason == .aborted)
        readRequests.removeAll()
        input.removeAll()
        output.removeAll()
        rareState?.candidates.removeAll()
        listener?.connectionDidClose(self)
        listener = nil
        switch reason {
        case .failed(let error): logger.debug("connection \(remoteAddress?.description ?? "?") failed: \(error)")
        default: logger.trace("connection \(remoteAddress?.description ?? "?") closed: \(reason)")
        }
        if isInsideOwnerCall {
            // Holds the connection until then, so a close is reported to a released one too.
            callbacks.runLater { self.notifyClose(reason) }
        } else {
            notifyClose(reason)
        }
        releaseHoldWhileOpen()
    }

    func notifyClose(_ reason: CloseReason) {
        let handler = onClose
        onClose = nil
        onData = nil
        rareState?.dropCallbacks()
        handler?(self, reason)
    }

    /// Takes the sources off the loop (which must stop watching before the number can be reused), then
    /// closes the descriptor. Every graceful path gets here only after the peer's end of input, so no
    /// unread input can turn this close into a reset.
    func releaseSocket(reset: Bool = false) {
        isChangingInterest = true
        readSource?.invalidate()
        writeSource?.invalidate()
        isChangingInterest = false
        readSource = nil
        writeSource = nil
        isReadWatched = false
        isWriteWatched = false
        guard fd >= 0 else { return }
        if reset { Socket.setResetOnClose(fd) }
        Glibc.close(fd)
        fd = -1
        noteLoopPresence()
    }
}
