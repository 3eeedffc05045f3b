import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting

@testable import RunLoopIM
@testable import RunLoopIMCore

func loginFrame(_ user: String, password: String = "pw", instance: String = "", keepalive: UInt32 = 300, serial: UInt32 = 1) -> IMFrame {
    var request = IMLoginRequest()
    request.user = user
    request.password = password
    request.keepaliveSeconds = keepalive
    request.clientInstance = instance
    return IMFrame(command: .login, serial: serial, message: request)
}

/// The retry time a refusal carries (LOGIN_ACK or ERROR), in milliseconds.
func retryAfterMilliseconds(_ frame: IMFrame) -> UInt32 {
    switch frame.command {
    case .loginAck: return (try? frame.decode(IMLoginResponse.self))?.retryAfterMs ?? 0
    case .error: return (try? frame.decode(IMErrorNotice.self))?.retryAfterMs ?? 0
    default: return 0
    }
}

/// A bare client on the test's loop, connected to a server through in-memory links: one LOGIN per
/// link, every frame kept. With `retries`, a refusal for now (LOGIN_ACK rateLimited or
/// tooManyConnections, ERROR tooManyConnections) closes the link and logs in again on a new one after
/// the refusal's `retry_after_ms` — what a client library does, without its backoff, so a test sees
/// the server's spacing alone. Each link reports `address` as its peer's, as a socket from that host
/// would: the server's per-address login limits key on it.
final class LoopLoginClient {
    let user: String
    let password: String
    let instance: String
    let server: IMServer
    let address: SocketAddress
    let retries: Bool
    private(set) var link: MemoryFrameLink?
    /// Frames of the current link.
    private(set) var frames: [IMFrame] = []
    /// Every refusal for now: its code and retry time.
    private(set) var refusals: [(code: IMStatusCode, retryAfterMs: UInt32)] = []
    private(set) var isOnline = false
    private(set) var isClosed = false
    private(set) var onlineUser: String?
    private var retryTimer: RunLoopTimer?

    init(
        _ user: String, password: String = "pw", instance: String = "", server: IMServer,
        address: SocketAddress = .ipv4Loopback(port: 40_000), retries: Bool = false
    ) {
        self.user = user
        self.password = password
        self.instance = instance
        self.server = server
        self.address = address
        self.retries = retries
    }

    func start() {
        let pair = MemoryLinkPair(loop: server.loop, serverFrameLimit: server.settings.maximumFrameBody)
        pair.server.remoteAddress = address
        let link = pair.client
        self.link = link
        frames = []
        isClosed = false
        server.adopt(pair.server)
        link.open(
            IMFrameLinkEvents(
                opened: { [weak self, weak link] in
                    guard let self, let link else { return }
                    try? link.send(loginFrame(self.user, password: self.password, instance: self.instance))
                },
                received: { [weak self] frame in self?.received(frame) },
                failed: { _, _ in },
                closed: { [weak self, weak link] _ in
                    guard let self, link === self.link else { return }
                    self.isClosed = true
                    if self.retries, !self.isOnline, self.retryTimer == nil { self.retry(afterMilliseconds: 50) }
                }
            ))
    }

    private func received(_ frame: IMFrame) {
        frames.append(frame)
        if frame.command == .loginAck, frame.code == .ok {
            isOnline = true
            onlineUser = (try? frame.decode(IMLoginResponse.self))?.user
            return
        }
        guard let code = frame.code, frame.command == .loginAck || frame.command == .error,
            code == .rateLimited || code == .tooManyConnections
        else { return }
        let wait = retryAfterMilliseconds(frame)
        refusals.append((code, wait))
        if retries {
            link?.close(for: nil)
            retry(afterMilliseconds: Int(wait))
        }
    }

    private func retry(afterMilliseconds wait: Int) {
        let timer = RunLoopTimer(after: .milliseconds(max(1, wait)), label: "test.retry") { [weak self] _ in
            self?.retryTimer = nil
            self?.start()
        }
        retryTimer = timer
        server.loop.add(timer, forMode: .common)
    }

    func close() {
        retryTimer?.invalidate()
        link?.abort()
    }
}
