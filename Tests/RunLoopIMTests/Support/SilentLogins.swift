import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting

/// A client by hand that sends its LOGIN announcing `keepalive` seconds, then nothing: its session's
/// deadlines are the server's alone to keep.
func logInSilently(_ user: String, keepalive: Int, to server: IMServer, on loop: RunLoop) -> MemoryLinkPeer {
    let peer = MemoryLinkPeer(loop: loop)
    server.adopt(peer.serverEnd)
    var login = IMLoginRequest()
    login.user = user
    login.keepaliveSeconds = UInt32(keepalive)
    peer.send(IMFrame(command: .login, serial: 1, message: login))
    return peer
}

/// Runs the loop until the manual clock reads `instant` (timers on the way fire at their times).
func runManualClock(_ loop: RunLoop, _ clock: ManualClock, to instant: LoopInstant) throws {
    while clock.now < instant {
        if try loop.run(.default, until: instant) == .finished { clock.advance(to: instant) }
    }
}
