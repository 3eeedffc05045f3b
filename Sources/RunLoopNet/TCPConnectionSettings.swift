import Logging

/// A connection's options, buffer limits and logger in one box: a listener's accepted connections
/// share its box, and a connection copies it before its first change of a limit or the logger. The
/// three together are some 200 bytes that would otherwise be repeated in every idle connection.
///
/// Loop thread only, like the connections that hold it.
final class TCPConnectionSettings {
    let options: TCPOptions
    /// Read several times a read (the chunk size, the input limit): its exclusivity unchecked, as the
    /// connection's own hot fields (loop thread only; no callback runs inside an access).
    @exclusivity(unchecked) var limits: TCPBufferLimits
    var logger: Logger

    init(options: TCPOptions, limits: TCPBufferLimits, logger: Logger) {
        self.options = options
        self.limits = limits
        self.logger = logger
    }

    func copy() -> TCPConnectionSettings {
        TCPConnectionSettings(options: options, limits: limits, logger: logger)
    }
}
