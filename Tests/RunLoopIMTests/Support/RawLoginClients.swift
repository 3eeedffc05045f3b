import Glibc
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

/// A bare client on the test's loop: one LOGIN per connection, every frame kept. With `retries`, a
/// refusal for now (LOGIN_ACK rateLimited or tooManyConnections, ERROR tooManyConnections) closes the
/// connection and logs in again on a new one after the refusal's `retry_after_ms` — what a client
/// library does, without its backoff, so a test sees the server's spacing alone.
final class LoopLoginClient {
    let user: String
    let password: String
    let instance: String
    let port: UInt16
    let retries: Bool
    private(set) var connection: TCPConnection?
    private var decoder = FrameDecoder()
    /// Frames of the current connection.
    private(set) var frames: [IMFrame] = []
    /// Every refusal for now: its code and retry time.
    private(set) var refusals: [(code: IMStatusCode, retryAfterMs: UInt32)] = []
    private(set) var isOnline = false
    private(set) var isClosed = false
    private(set) var onlineUser: String?
    private var retryTimer: RunLoopTimer?

    init(_ user: String, password: String = "pw", instance: String = "", port: UInt16, retries: Bool = false) {
        self.user = user
        self.password = password
        self.instance = instance
        self.port = port
        self.retries = retries
    }

    func start() {
        let connection = TCPConnection()
        self.connection = connection
        frames = []
        isClosed = false
        decoder = FrameDecoder()
        connection.onConnect = { [weak self] connection in
            guard let self else { return }
            try? connection.write(loginFrame(self.user, password: self.password, instance: self.instance).encoded())
        }
        connection.onData = { [weak self] _, bytes in self?.received(bytes) }
        connection.onClose = { [weak self, weak connection] _, _ in
            guard let self, connection === self.connection else { return }
            self.isClosed = true
            // Closed without a word (a reset under load): try again soon.
            if self.retries, !self.isOnline, self.retryTimer == nil { self.retry(afterMilliseconds: 50) }
        }
        connection.connect(to: .ipv4Loopback(port: port), timeout: .seconds(30))
    }

    private func received(_ bytes: [UInt8]) {
        decoder.append(bytes)
        while let frame = try? decoder.next() {
            frames.append(frame)
            if frame.command == .loginAck, frame.code == .ok {
                isOnline = true
                onlineUser = (try? frame.decode(IMLoginResponse.self))?.user
                continue
            }
            guard let code = frame.code, frame.command == .loginAck || frame.command == .error,
                  code == .rateLimited || code == .tooManyConnections else { continue }
            let wait = retryAfterMilliseconds(frame)
            refusals.append((code, wait))
            if retries {
                connection?.close()
                retry(afterMilliseconds: Int(wait))
            }
        }
    }

    private func retry(afterMilliseconds wait: Int) {
        let timer = RunLoopTimer(after: .milliseconds(max(1, wait)), label: "test.retry") { [weak self] _ in
            self?.retryTimer = nil
            self?.start()
        }
        retryTimer = timer
        RunLoop.current.add(timer, forMode: .common)
    }

    func close() {
        retryTimer?.invalidate()
        connection?.close(immediately: true)
    }
}

/// A blocking client socket bound to a chosen loopback source address (127.0.0.2 …), for helper
/// threads that play other hosts. Frames are written whole and read whole, with a receive timeout.
final class BlockingIMSocket {
    let fd: Int32
    private var decoder = FrameDecoder()

    /// Connects from `source` to 127.0.0.1:`port`; nil if that failed.
    init?(from source: String, port: UInt16, receiveTimeout: Duration = .seconds(20)) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        self.fd = fd
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        var timeout = timeval(tv_sec: Int(receiveTimeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        let connected = bound == 0 && withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) }
        } == 0
        guard connected else {
            Glibc.close(fd)
            return nil
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ frame: IMFrame) -> Bool {
        let bytes = frame.encoded()
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// The next frame; nil after the timeout or the peer's close.
    func receive() -> IMFrame? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let frame = try? decoder.next() { return frame }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            decoder.append(Array(buffer[..<count]))
        }
    }
}
