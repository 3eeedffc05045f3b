import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopWebSocket
import Testing

@testable import RunLoopIMWebSocket

@Suite("WebSocket frame link: close reasons in the IM layer's words")
struct LinkCloseReasonTests {
    @Test("the peer's close frame is peerClosed; a violation keeps its close code and text; a TCP failure is its link failure")
    func closingCauses() {
        #expect(WebSocketFrameLink.closeReason(.peerClosed(code: .normalClosure, reason: "bye")) == .peerClosed)
        #expect(
            WebSocketFrameLink.closeReason(.failed(.invalidUTF8))
                == .failed(.protocolViolation(code: 1007, reason: "invalid UTF-8 in text")))
        #expect(
            WebSocketFrameLink.closeReason(.failed(.protocolViolation("masked frame from the server")))
                == .failed(.protocolViolation(code: 1002, reason: "protocol violation: masked frame from the server")))
        #expect(WebSocketFrameLink.closeReason(.failed(.transport(.connectionReset))) == .failed(.reset))
    }
}
