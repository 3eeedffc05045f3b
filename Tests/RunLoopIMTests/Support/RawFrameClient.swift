import RunLoopKit
import RunLoopNet

@testable import RunLoopIM
@testable import RunLoopIMCore

/// A client that speaks frames over a real TCP connection and decides nothing: the test reads what
/// arrives and writes what it likes — a client written from the spec, or a hostile one.
final class RawFrameClient {
    let connection = TCPConnection()
    private var decoder: FrameDecoder
    private(set) var frames: [IMFrame] = []
    private(set) var isClosed = false
    private(set) var isOpen = false
    /// Called for each frame instead of keeping it in ``frames`` (for streams of 100 MB).
    var onFrame: ((IMFrame) -> Void)?

    init(maximumBodyLength: Int = 64 * 1024) {
        decoder = FrameDecoder(maximumBodyLength: maximumBodyLength)
    }

    func connect(port: UInt16) {
        connection.onConnect = { [weak self] _ in self?.isOpen = true }
        connection.onData = { [weak self] _, bytes in
            guard let self else { return }
            self.decoder.append(bytes)
            while let frame = try? self.decoder.next() {
                if let onFrame = self.onFrame { onFrame(frame) } else { self.frames.append(frame) }
            }
        }
        connection.onClose = { [weak self] _, _ in self?.isClosed = true }
        connection.connect(to: .ipv4Loopback(port: port))
    }

    func send(_ frame: IMFrame) { try? connection.write(frame.encoded()) }

    func send(_ bytes: [UInt8]) { try? connection.write(bytes) }

    func logIn(_ user: String, serial: UInt32 = 1, instance: String = "") {
        var login = IMLoginRequest()
        login.user = user
        login.password = "pw"
        login.keepaliveSeconds = 60
        login.clientInstance = instance
        send(IMFrame(command: .login, serial: serial, message: login))
    }

    func frames(_ command: IMCommand) -> [IMFrame] { frames.filter { $0.command == command } }
}
