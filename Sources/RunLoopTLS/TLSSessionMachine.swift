import RunLoopKit
import RunLoopNet

/// The decisions of a ``TLSConnection``, as one value: where the session is, what a handshake step,
/// a close_notify, the owner's close or the end of the TCP connection leads to, and which
/// ``TLSCloseReason`` it ends with. No I/O: the connection carries out the actions it returns.
struct TLSSessionMachine: Equatable {
    /// How a session that is no longer open is ending.
    enum Ending: Equatable {
        /// The owner closed it once open: close_notify sent, then TCP closed in good order.
        case closedByOwner
        /// The owner gave it up before it was open (connecting or handshaking).
        case abandoned
        /// The owner dropped it at once.
        case aborted
        /// The peer's close_notify arrived; ours answered it.
        case closedByPeer
        /// It failed; what OpenSSL had to say (an alert) goes out before TCP closes.
        case failed(TLSError)
    }

    enum Phase: Equatable {
        /// A client's TCP connection is being made.
        case connecting
        case handshaking
        case open
        case ending(Ending)
        case closed(TLSCloseReason)
    }

    /// What the connection does next.
    enum Action: Equatable {
        case nothing
        /// Start the handshake (and its timer).
        case startHandshake
        /// The handshake is done: tell the owner, send what it wrote meanwhile, read on.
        case established
        /// Send close_notify (after everything written), then close TCP gracefully.
        case sendCloseNotifyThenClose
        /// Send what OpenSSL queued (an alert), then close TCP gracefully.
        case flushThenClose
        /// Close TCP gracefully, nothing more to send.
        case closeTransport
        /// Reset the TCP connection.
        case abortTransport
    }

    /// What a handshake step came to.
    enum HandshakeStep: Equatable {
        case finished
        case needsMoreInput
        case failed(TLSError)
    }

    private(set) var phase: Phase

    init(connecting: Bool) {
        phase = connecting ? .connecting : .handshaking
    }

    var isOpen: Bool { phase == .open }
    /// Whether the owner may still write: output waits for the handshake, and stops at any ending.
    var acceptsWrites: Bool {
        switch phase {
        case .connecting, .handshaking, .open: return true
        case .ending, .closed: return false
        }
    }
    var closeReason: TLSCloseReason? {
        if case .closed(let reason) = phase { return reason }
        return nil
    }

    // MARK: Events

    /// The client's TCP connection is open.
    mutating func transportConnected() -> Action {
        guard phase == .connecting else { return .nothing }
        phase = .handshaking
        return .startHandshake
    }

    mutating func handshake(_ step: HandshakeStep) -> Action {
        guard phase == .handshaking else { return .nothing }
        switch step {
        case .needsMoreInput: return .nothing
        case .finished:
            phase = .open
            return .established
        case .failed(let error): return fail(error)
        }
    }

    /// The handshake's time ran out: a peer that stalls is not waited for, not even to flush an alert.
    mutating func handshakeTimedOut() -> Action {
        switch phase {
        case .connecting, .handshaking:
            phase = .ending(.failed(.handshakeTimedOut))
            return .abortTransport
        case .open, .ending, .closed:
            return .nothing
        }
    }

    /// The peer's close_notify.
    mutating func closeNotifyReceived() -> Action {
        guard phase == .open else { return .nothing }
        phase = .ending(.closedByPeer)
        return .sendCloseNotifyThenClose
    }

    /// OpenSSL refused what the peer sent, or the transport refused a write.
    mutating func fail(_ error: TLSError) -> Action {
        switch phase {
        case .connecting, .handshaking, .open:
            phase = .ending(.failed(error))
            return .flushThenClose
        case .ending, .closed:
            return .nothing
        }
    }

    /// The owner's ``TLSConnection/close(immediately:)``.
    mutating func closeAsked(immediately: Bool) -> Action {
        switch phase {
        case .connecting, .handshaking:
            phase = .ending(immediately ? .aborted : .abandoned)
            return immediately ? .abortTransport : .closeTransport
        case .open:
            phase = .ending(immediately ? .aborted : .closedByOwner)
            return immediately ? .abortTransport : .sendCloseNotifyThenClose
        case .ending(let ending):
            guard immediately, ending != .aborted else { return .nothing }
            phase = .ending(.aborted)
            return .abortTransport
        case .closed:
            return .nothing
        }
    }

    /// The TCP connection closed with `reason`; returns the session's reason (nil: closed already).
    mutating func transportClosed(_ reason: CloseReason) -> TLSCloseReason? {
        let inOrder = reason == .closed || reason == .peerClosed
        let result: TLSCloseReason
        switch phase {
        case .closed:
            return nil
        case .connecting:
            result = reason.error.map { .failed(.transport($0)) } ?? .closed
        case .handshaking:
            result = .failed(reason.error.map { .transport($0) } ?? .closedDuringHandshake)
        case .open:
            // An end without close_notify: the peer may have been cut short.
            result = .failed(reason.error.map { .transport($0) } ?? .truncated)
        case .ending(let ending):
            switch ending {
            case .failed(let error): result = .failed(error)
            case .aborted: result = .aborted
            case .abandoned: result = .closed
            case .closedByOwner: result = inOrder ? .closed : .failed(.transport(reason.error ?? .connectionReset))
            case .closedByPeer: result = inOrder ? .peerClosed : .failed(.transport(reason.error ?? .connectionReset))
            }
        }
        phase = .closed(result)
        return result
    }
}
