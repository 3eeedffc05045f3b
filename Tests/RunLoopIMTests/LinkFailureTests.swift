import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import Testing

@Suite("Link failures in the IM layer's words")
struct LinkFailureTests {
    @Test("socket errors map to the kinds the client tells apart; the rest keep the socket's words")
    func netErrors() {
        #expect(IMLinkFailure(.connectionRefused) == .refused)
        #expect(IMLinkFailure(.connectionReset) == .reset)
        #expect(IMLinkFailure(.timedOut(.connect)) == .timedOut && IMLinkFailure(.timedOut(.transport)) == .timedOut)
        #expect(IMLinkFailure(.hostUnreachable) == .unreachable && IMLinkFailure(.networkUnreachable) == .unreachable)
        #expect(IMLinkFailure(.writeBufferFull(limit: 512)) == .outputFull(limit: 512))
        #expect(IMLinkFailure(.outputClosed) == .outputClosed)
        #expect(IMLinkFailure(.addressInUse) == .other("address in use"))
    }

    @Test("a connection's close reason keeps who ended it; descriptions read as before")
    func closeReasons() {
        #expect(IMLinkCloseReason(CloseReason.closed) == .closed)
        #expect(IMLinkCloseReason(CloseReason.aborted) == .aborted)
        #expect(IMLinkCloseReason(CloseReason.peerClosed) == .peerClosed)
        #expect(IMLinkCloseReason(CloseReason.failed(.connectionReset)) == .failed(.reset))
        #expect("\(IMLinkCloseReason.failed(.reset))" == "failed: connection reset by peer")
        #expect("\(IMDisconnectReason.transport(.failed(.refused)))" == "connection failed: connection refused")
    }
}
