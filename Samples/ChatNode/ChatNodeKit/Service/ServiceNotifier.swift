public import Logging
public import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the node is doing (`Type=notify`): ready, stopping, reloading, status lines and
/// watchdog pings, as datagrams to the socket `NOTIFY_SOCKET` names — libsystemd's protocol without
/// libsystemd. A send never blocks: a notification systemd cannot take at once is dropped and logged.
///
/// Loop thread only: create it on the node's loop thread and call it there.
public final class ServiceNotifier {
    private let socket: Int32
    private let address: UnixSocketAddress
    private let logger: Logger
    private var watchdog: RunLoopTimer?

    /// The notifier of the socket `NOTIFY_SOCKET` names, pinging the watchdog on `loop` when
    /// `WATCHDOG_USEC` asks for it (``ServiceWatchdog``); `nil` when `NOTIFY_SOCKET` is unset (not
    /// started by systemd, or not as `Type=notify`): then the node tells nothing to anyone.
    /// `variable` reads the environment (a non-empty value, else `nil`).
    public static func fromEnvironment(_ variable: (String) -> String?, loop: RunLoop, logger: Logger) -> ServiceNotifier? {
        guard let name = variable("NOTIFY_SOCKET") else { return nil }
        guard let notifier = ServiceNotifier(socketName: name, logger: logger) else {
            logger.warning("NOTIFY_SOCKET=\(name) is no unix socket address: systemd is not told anything")
            return nil
        }
        let interval = ServiceWatchdog.pingInterval(microseconds: variable("WATCHDOG_USEC"), pid: variable("WATCHDOG_PID"), ourPID: getpid())
        if let interval { notifier.startWatchdog(every: interval, on: loop) }
        return notifier
    }

    /// A notifier for the unix datagram socket `socketName` names (``UnixSocketAddress``); `nil` when
    /// it names none or no socket can be made.
    public init?(socketName: String, logger: Logger) {
        guard let address = UnixSocketAddress(socketName) else { return nil }
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else { return nil }
        self.address = address
        self.logger = logger
    }

    deinit {
        watchdog?.invalidate()
        close(socket)
    }

    /// The node serves: both ports listen and the store is open (or, after ``reloading()``, the
    /// reload is done). `status` is what `systemctl status` shows.
    public func ready(status: String? = nil) { send(.ready(status: status)) }

    /// A line for `systemctl status`.
    public func status(_ line: String) { send(.status(line)) }

    /// A graceful stop began (SIGTERM): call it before the drain, which may take the grace period.
    public func stopping(status: String? = nil) { send(.stopping(status: status)) }

    /// A reload (SIGHUP, `systemctl reload`) begins; call ``reloaded(status:)`` when it is done.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send(.reloading(monotonicMicroseconds: UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000))
    }

    /// The reload ``reloading()`` announced is done (applied or refused: the node serves either way).
    public func reloaded(status: String? = nil) { send(.ready(status: status)) }

    /// Pings the watchdog now and then every `interval` from a timer on `loop`, in all common modes: a
    /// loop that is stuck stops pinging, and systemd kills and restarts the node. Replaces an earlier
    /// schedule.
    public func startWatchdog(every interval: Duration, on loop: RunLoop) {
        watchdog?.invalidate()
        // The timer holds the notifier: it pings as long as the loop runs, whoever else let go of it.
        let timer = RunLoopTimer(after: interval, repeating: interval, label: "chat-node.watchdog") { _ in self.send(.watchdog) }
        loop.add(timer, forMode: .common)
        watchdog = timer
        send(.watchdog)
    }

    private func send(_ notification: ServiceNotification) {
        let sent = notification.datagram.withCString { text in
            address.withSocketAddress { address, length in
                sendto(socket, text, strlen(text), Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), address, length)
            }
        }
        if sent < 0 { logger.warning("systemd notification \(notification.datagram.debugDescription) not sent: \(String(cString: strerror(errno)))") }
    }
}
