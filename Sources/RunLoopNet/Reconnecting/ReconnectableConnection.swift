/// A loop-driven connection that a ``ReconnectingLink`` can own: connected once, reporting once that it
/// is up and exactly once that it ended. RunLoopRedis's and RunLoopPostgres's connections conform.
///
/// Loop thread only, like the connections themselves.
public protocol ReconnectableConnection: AnyObject {
    /// Why a connection ended.
    associatedtype Failure: Error

    /// Runs once when the connection is up.
    var onConnect: ((Self) -> Void)? { get set }
    /// Runs exactly once when the connection ends, with why; its pending work has completed by then.
    var onClose: ((Self, Failure) -> Void)? { get set }

    /// Starts connecting; the outcome comes through ``onConnect`` or ``onClose``.
    func connect()
    /// Ends the connection at once; ``onClose`` follows on the loop's next pass.
    func close()
}
