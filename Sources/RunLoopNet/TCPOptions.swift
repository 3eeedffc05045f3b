#if canImport(Glibc)
import Glibc
#endif

/// Socket options applied to a connection's socket when it is created (connect) or accepted.
public struct TCPOptions: Sendable, Equatable {
    /// Keepalive probing: how long a connection may stay silent before the kernel probes it, how often
    /// it probes, and how many unanswered probes make it give up (the connection then fails with
    /// ``NetError/timedOut(_:)`` `.transport`).
    public struct KeepAlive: Sendable, Equatable {
        /// Silence before the first probe (TCP_KEEPIDLE); whole seconds, at least one.
        public var idle: Duration
        /// Time between probes (TCP_KEEPINTVL); whole seconds, at least one.
        public var interval: Duration
        /// Unanswered probes before the connection is dropped (TCP_KEEPCNT).
        public var count: Int

        public init(idle: Duration = .seconds(60), interval: Duration = .seconds(10), count: Int = 6) {
            self.idle = idle
            self.interval = interval
            self.count = count
        }
    }

    /// TCP_NODELAY: send small writes at once instead of waiting to coalesce them (Nagle). On by default,
    /// as a request/response or chat protocol wants.
    public var noDelay: Bool = true
    /// SO_KEEPALIVE with TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT; `nil` leaves keepalive off.
    public var keepAlive: KeepAlive?
    /// TCP_USER_TIMEOUT: how long sent data may stay unacknowledged before the kernel drops the
    /// connection (milliseconds precision); `nil` keeps the system default (about 15 minutes of retries).
    public var userTimeout: Duration?
    /// SO_SNDBUF in bytes; `nil` keeps the system default (auto-tuned).
    public var sendBufferSize: Int?
    /// SO_RCVBUF in bytes; `nil` keeps the system default (auto-tuned).
    public var receiveBufferSize: Int?

    public init(
        noDelay: Bool = true,
        keepAlive: KeepAlive? = nil,
        userTimeout: Duration? = nil,
        sendBufferSize: Int? = nil,
        receiveBufferSize: Int? = nil
    ) {
        self.noDelay = noDelay
        self.keepAlive = keepAlive
        self.userTimeout = userTimeout
        self.sendBufferSize = sendBufferSize
        self.receiveBufferSize = receiveBufferSize
    }

    /// Applies the options to `fd`; throws the first option the kernel refused.
    func apply(to fd: Int32) throws(NetError) {
        let tcp = Int32(IPPROTO_TCP)
        if noDelay { try Socket.setOption(fd, tcp, TCP_NODELAY, 1, "TCP_NODELAY") }
        if let keepAlive {
            try Socket.setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE")
            try Socket.setOption(fd, tcp, TCP_KEEPIDLE, Self.seconds(keepAlive.idle), "TCP_KEEPIDLE")
            try Socket.setOption(fd, tcp, TCP_KEEPINTVL, Self.seconds(keepAlive.interval), "TCP_KEEPINTVL")
            try Socket.setOption(fd, tcp, TCP_KEEPCNT, Int32(clamping: max(1, keepAlive.count)), "TCP_KEEPCNT")
        }
        if let userTimeout {
            try Socket.setOption(fd, tcp, TCP_USER_TIMEOUT, Self.milliseconds(userTimeout), "TCP_USER_TIMEOUT")
        }
        if let sendBufferSize {
            try Socket.setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: sendBufferSize), "SO_SNDBUF")
        }
        if let receiveBufferSize {
            try Socket.setOption(fd, SOL_SOCKET, SO_RCVBUF, Int32(clamping: receiveBufferSize), "SO_RCVBUF")
        }
    }

    static func seconds(_ duration: Duration) -> Int32 {
        Int32(clamping: max(1, duration.components.seconds))
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let total = seconds.multipliedReportingOverflow(by: 1000)
        if total.overflow { return .max }
        return Int32(clamping: max(0, total.partialValue + attoseconds / 1_000_000_000_000_000))
    }
}
