import RunLoopKit
import RunLoopNet
import Testing

@testable import RunLoopTLS

/// The session's decisions on their own: no OpenSSL, no socket. (`#expect` cannot call a mutating
/// method, hence the locals.)
@Suite struct TLSSessionMachineTests {
    typealias Machine = TLSSessionMachine

    static func open() -> Machine {
        var machine = Machine(connecting: false)
        _ = machine.handshake(.finished)
        return machine
    }

    @Test("a client handshakes once its TCP connection is open, and is open once the handshake finishes")
    func clientLifecycle() {
        var machine = Machine(connecting: true)
        let early = machine.handshake(.finished)
        let connected = machine.transportConnected()
        let waiting = machine.handshake(.needsMoreInput)
        let done = machine.handshake(.finished)
        #expect(early == .nothing && connected == .startHandshake && waiting == .nothing && done == .established)
        #expect(machine.isOpen && machine.acceptsWrites)
    }

    @Test("the owner's close: close_notify when open, given up before, a reset when immediate, once")
    func ownerClose() {
        var open = Self.open()
        let graceful = open.closeAsked(immediately: false)
        let again = open.closeAsked(immediately: false)
        let upgraded = open.closeAsked(immediately: true)
        #expect(graceful == .sendCloseNotifyThenClose && again == .nothing && upgraded == .abortTransport)
        #expect(!open.acceptsWrites)
        #expect(open.transportClosed(.closed) == .aborted)

        var handshaking = Machine(connecting: false)
        #expect(handshaking.closeAsked(immediately: false) == .closeTransport)
        #expect(handshaking.transportClosed(.closed) == .closed)
    }

    @Test("a close started by either side ends closed or peerClosed only when TCP ended in order")
    func orderlyEnds() {
        var ours = Self.open()
        _ = ours.closeAsked(immediately: false)
        #expect(ours.transportClosed(.peerClosed) == .closed)
        #expect(ours.transportClosed(.closed) == nil)

        var theirs = Self.open()
        #expect(theirs.closeNotifyReceived() == .sendCloseNotifyThenClose)
        #expect(theirs.transportClosed(.closed) == .peerClosed)

        var cut = Self.open()
        _ = cut.closeAsked(immediately: false)
        #expect(cut.transportClosed(.failed(.timedOut(.linger))) == .failed(.transport(.timedOut(.linger))))
    }

    @Test("the end of TCP without close_notify: truncated when open, cut short while handshaking")
    func endsWithoutCloseNotify() {
        var open = Self.open()
        #expect(open.transportClosed(.peerClosed) == .failed(.truncated))
        var handshaking = Machine(connecting: false)
        #expect(handshaking.transportClosed(.peerClosed) == .failed(.closedDuringHandshake))
        var connecting = Machine(connecting: true)
        #expect(connecting.transportClosed(.failed(.connectionRefused)) == .failed(.transport(.connectionRefused)))
    }

    @Test("a failure flushes its alert and is what the session ends with, whatever TCP says")
    func failures() {
        var machine = Machine(connecting: false)
        let failed = machine.handshake(.failed(.notTLS("http request")))
        let again = machine.fail(.truncated)
        #expect(failed == .flushThenClose && again == .nothing)
        #expect(machine.transportClosed(.closed) == .failed(.notTLS("http request")))
    }

    @Test("the handshake timeout drops a session still handshaking, and nothing once open")
    func handshakeTimeout() {
        var handshaking = Machine(connecting: false)
        #expect(handshaking.handshakeTimedOut() == .abortTransport)
        #expect(handshaking.transportClosed(.aborted) == .failed(.handshakeTimedOut))
        var open = Self.open()
        #expect(open.handshakeTimedOut() == .nothing && open.isOpen)
    }

    @Test("OpenSSL's reasons become the causes a person acts on")
    func failureCauses() {
        func cause(_ reason: Int32, verify: Int = 0, handshaking: Bool = true) -> TLSError {
            TLSFailureCause.error(reason: reason, reasonText: "r", verifyResult: verify, verifyText: "v", handshaking: handshaking)
        }
        #expect(cause(134, verify: 10) == .certificateRejected(TLSCertificateProblem(kind: .expired, code: 10, detail: "v")))
        #expect(cause(258) == .protocolVersion("r"))
        #expect(cause(1070) == .protocolVersion("r"))
        #expect(cause(156) == .notTLS("r"))
        #expect(cause(267, handshaking: false) == .protocolError("r"))
        #expect(cause(1048) == .alertReceived("r"))
        #expect(cause(42) == .handshakeFailed("r"))
        #expect(TLSFailureCause.problem(verifyResult: 62, detail: "").kind == .wrongHostName)
        #expect(TLSFailureCause.problem(verifyResult: 64, detail: "").kind == .wrongHostName)
        #expect(TLSFailureCause.problem(verifyResult: 18, detail: "").kind == .selfSigned)
        #expect(TLSFailureCause.problem(verifyResult: 20, detail: "").kind == .untrustedIssuer)
        #expect(TLSFailureCause.problem(verifyResult: 23, detail: "").kind == .other)
    }
}
