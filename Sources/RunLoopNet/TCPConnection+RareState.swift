import RunLoopKit

extension TCPConnection {
    /// What few connections ever use, in a box the connection makes on first use: connecting
    /// (resolution, candidates, its timer), the read, write and linger timeouts with their timers and
    /// the time they granted, and the callbacks most owners leave unset. An accepted connection that
    /// stays idle never makes it (some 110 bytes of read and write timeout state moved here from the
    /// connection, which every connection carried).
    final class RareState {
        static let defaultWriteTimeout: Duration? = .seconds(60)
        static let defaultLingerTimeout: Duration? = .seconds(10)

        var onConnect: ((TCPConnection) -> Void)?
        /// This side's address, for a connection that connected (an accepted one asks its socket).
        var connectedLocalAddress: SocketAddress?
        var onInputClosed: ((TCPConnection) -> Void)?
        var onWritabilityChanged: ((TCPConnection, Bool) -> Void)?
        var shouldTimeoutRead: ((TCPConnection, Duration) -> Duration?)?
        var shouldTimeoutWrite: ((TCPConnection, Duration) -> Duration?)?
        // What every read looks at has its exclusivity unchecked (a runtime check each, issue 22): loop
        // thread only, and no callback runs inside an access.
        @exclusivity(unchecked) var readTimeout: Duration?
        var writeTimeout = RareState.defaultWriteTimeout
        var lingerTimeout = RareState.defaultLingerTimeout
        var label: String?

        var candidates: [SocketAddress] = []
        var lastConnectError: NetError?
        var resolutionGeneration = 0
        var connectTimer: DeadlineTimer?
        var writeTimer: DeadlineTimer?
        @exclusivity(unchecked) var readTimer: DeadlineTimer?
        /// Time granted past the read and write deadlines in the current wait (a grace, `shouldTimeout…`).
        @exclusivity(unchecked) var readExtension = Duration.zero
        var writeExtension = Duration.zero
        /// Late, not silent: one grace per read wait for bytes that were waiting unread.
        var readSilence = SilenceDeadline(renewal: .perWait)
        var lingerTimer: DeadlineTimer?
        /// When the current linger wait started (the shutdown, or the peer's last acknowledgement).
        var lingerStart: LoopInstant?
        /// The unacknowledged send-queue bytes at `lingerStart`.
        var lingerUnacknowledged = 0
        /// What runs after the owner's call that caused it (``TCPConnection/callbacks``): made when
        /// something is first deferred, a writability report or a close inside an owner call — most
        /// connections defer only their close, and a field in the connection cost each 8 bytes.
        private var deferral: CallbackDeferral?

        func callbacks(loop: RunLoop, modes: [RunLoop.Mode]) -> CallbackDeferral {
            if let deferral { return deferral }
            let made = CallbackDeferral(loop: loop, modes: modes, label: "tcp callbacks")
            deferral = made
            return made
        }

        /// Lets go of the callbacks once the close is reported (they may capture the connection).
        func dropCallbacks() {
            onConnect = nil
            onInputClosed = nil
            onWritabilityChanged = nil
            shouldTimeoutRead = nil
            shouldTimeoutWrite = nil
        }
    }
}
