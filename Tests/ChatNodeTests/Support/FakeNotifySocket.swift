import ChatNodeKit
import Glibc
import RunLoopTesting

/// What systemd listens on for a `Type=notify` service: a unix datagram socket whose name a test gives
/// the node as `NOTIFY_SOCKET`, a path in the temporary directory or an abstract name (`@…`).
/// `@unchecked Sendable`: a descriptor read by one thread at a time (the test's, or its loop thread's).
final class FakeNotifySocket: @unchecked Sendable {
    /// The value for `NOTIFY_SOCKET`.
    let name: String
    private let descriptor: Int32
    private let path: String?

    enum Failure: Error { case cannotBind(String, Int32) }

    init(abstract: Bool) throws {
        path = abstract ? nil : temporaryPath("notify")
        name = path ?? "@rlk-notify-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let bound = UnixSocketAddress(name)?.withSocketAddress { bind(descriptor, $0, $1) }
        guard descriptor >= 0, bound == 0 else { throw Failure.cannotBind(name, errno) }
    }

    deinit {
        close(descriptor)
        if let path { unlink(path) }
    }

    /// The next datagram, waiting up to `milliseconds`; `nil` when none came.
    func next(withinMilliseconds milliseconds: Int32) -> String? {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count < 0 ? nil : String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// The datagrams until one `matching` came (the last of them), or `nil` when none did in `seconds`.
    func messages(until matching: (String) -> Bool, withinSeconds seconds: Int = 10) -> [String]? {
        var seen: [String] = []
        let deadline = ContinuousClock.now + .seconds(seconds)
        while case let left = ContinuousClock.now.duration(to: deadline), left > .zero {
            guard let message = next(withinMilliseconds: Int32((left / .milliseconds(1)).rounded(.up))) else { return nil }
            seen.append(message)
            if matching(message) { return seen }
        }
        return nil
    }

    /// Every datagram that arrives within `milliseconds`.
    func drain(forMilliseconds milliseconds: Int32) -> [String] {
        var seen: [String] = []
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while case let left = ContinuousClock.now.duration(to: deadline), left > .zero {
            if let message = next(withinMilliseconds: Int32((left / .milliseconds(1)).rounded(.up))) { seen.append(message) }
        }
        return seen
    }
}
