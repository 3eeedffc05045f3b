import RunLoopKit

#if canImport(Glibc)
import Glibc
import Logging
#endif

/// Running out of descriptors without leaving clients in the dark: the connection limit fitted to the
/// descriptor limit, a reserved descriptor to refuse with, and one warning instead of a flood.
extension TCPListener {
    /// Descriptors left free beyond the connections: the reserve, and room for the process's own
    /// files, resolver sockets and the like.
    static let descriptorHeadroom = 8

    enum SpareOutcome {
        /// A waiting client was accepted and refused.
        case refused
        /// No client was waiting after all.
        case nonePending
        /// No reserve, or the accept failed anyway: fall back to pausing.
        case failed
    }

    /// Measures how many connections the descriptor limit leaves room for, and says so if that is
    /// fewer than ``maximumConnections``.
    func measureDescriptorBudget() {
        let usage = descriptorUsage()
        descriptorBudget = max(1, usage.limit - usage.open - Self.descriptorHeadroom)
        fitLimitToDescriptors()
    }

    /// Warns when ``maximumConnections`` cannot be honoured under the descriptor limit.
    func fitLimitToDescriptors() {
        guard let maximumConnections, let descriptorBudget, descriptorBudget < maximumConnections else { return }
        let usage = descriptorUsage()
        logger.warning(
            """
            listener on \(localAddress?.description ?? "?"): maximumConnections \(maximumConnections) exceeds what the \
            descriptor limit allows (RLIMIT_NOFILE \(usage.limit), \(usage.open) open); at most \(descriptorBudget) \
            connections are accepted, the next ones are refused. Raise the limit (ulimit -n, or \
            DescriptorLimit.raiseSoftLimitToHard()) to serve more.
            """)
    }

    func reserveSpareDescriptor() {
        guard spareDescriptor < 0 else { return }
        spareDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    func releaseSpareDescriptor() {
        guard spareDescriptor >= 0 else { return }
        Glibc.close(spareDescriptor)
        spareDescriptor = -1
    }

    /// Out of descriptors with a client waiting: give the reserve up, accept the client, refuse it
    /// (refusal message, close), take the reserve back.
    func refuseWithSpareDescriptor(errno code: Int32) -> SpareOutcome {
        guard spareDescriptor >= 0 else { return .failed }
        releaseSpareDescriptor()
        let (accepted, remote) = acceptCall(fd)
        let outcome: SpareOutcome
        if accepted >= 0 {
            let error = NetError.system(errno: code, operation: "accept")
            refuse(accepted, remote, because: error)
            noteExhaustion(error, outcome: "clients are refused until descriptors free up")
            outcome = .refused
        } else if -accepted == EAGAIN || -accepted == EWOULDBLOCK {
            outcome = .nonePending
        } else {
            if -accepted == EMFILE || -accepted == ENFILE { acceptFailures += 1 }
            outcome = .failed
        }
        reserveSpareDescriptor()
        return outcome
    }

    /// Logs the first exhaustion, then counts; one summary line per ``exhaustionLogInterval``.
    func noteExhaustion(_ error: NetError, outcome: String) {
        let now = loop.now
        if let last = lastExhaustionWarning, now < last + exhaustionLogInterval {
            unreportedExhaustion += 1
            return
        }
        let repeats = unreportedExhaustion > 0 ? " (\(unreportedExhaustion) more since the last warning)" : ""
        logger.warning("accept on \(localAddress?.description ?? "?") failed: \(error); \(outcome)\(repeats)")
        lastExhaustionWarning = now
        unreportedExhaustion = 0
    }

    /// An accept succeeded: if failures went unreported since the last warning, say it is over.
    func noteAcceptRecovered() {
        guard lastExhaustionWarning != nil else { return }
        if unreportedExhaustion > 0 {
            logger.notice(
                "accept on \(localAddress?.description ?? "?") works again after \(unreportedExhaustion) more failures")
        }
        lastExhaustionWarning = nil
        unreportedExhaustion = 0
    }
}
