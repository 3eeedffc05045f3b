/// One message of systemd's notification protocol (`sd_notify(3)`): newline-separated `KEY=VALUE`
/// fields in one datagram. Pure: ``ServiceNotifier`` sends what ``datagram`` says.
public enum ServiceNotification: Equatable, Sendable {
    /// Start-up (or a reload) is finished: systemd starts what waits for the node.
    case ready(status: String?)
    /// A line for `systemctl status`.
    case status(String)
    /// A graceful stop began: systemd does not mistake the drain for a hang.
    case stopping(status: String?)
    /// A reload began at this `CLOCK_MONOTONIC` time; systemd waits for the next ``ready(status:)``.
    case reloading(monotonicMicroseconds: UInt64)
    /// The loop is alive: a ping of the service watchdog.
    case watchdog

    /// The datagram's text.
    public var datagram: String {
        switch self {
        case .ready(let status): return Self.fields(["READY=1"], status: status)
        case .status(let status): return Self.fields([], status: status)
        case .stopping(let status): return Self.fields(["STOPPING=1"], status: status)
        case .reloading(let microseconds): return "RELOADING=1\nMONOTONIC_USEC=\(microseconds)"
        case .watchdog: return "WATCHDOG=1"
        }
    }

    /// A status with a line break would end its field early and make the rest a field of its own.
    private static func fields(_ fields: [String], status: String?) -> String {
        let line = status.map { "STATUS=" + $0.split(whereSeparator: \.isNewline).joined(separator: " ") }
        return (fields + (line.map { [$0] } ?? [])).joined(separator: "\n")
    }
}

/// When the node pings systemd's watchdog, from the variables systemd sets when `WatchdogSec=` is.
public enum ServiceWatchdog {
    /// Half of `WATCHDOG_USEC` (sd_watchdog_enabled(3) advises pinging at half the timeout, so one
    /// late ping is no failure); `nil` when it is unset, not a positive number, or `WATCHDOG_PID`
    /// names another process (the variables were inherited from a parent the watchdog watches).
    public static func pingInterval(microseconds: String?, pid: String?, ourPID: Int32) -> Duration? {
        guard let microseconds, let timeout = UInt64(microseconds), timeout > 0 else { return nil }
        if let pid, Int32(pid) != ourPID { return nil }
        return .microseconds(timeout / 2)
    }
}
