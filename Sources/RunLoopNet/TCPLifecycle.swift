import RunLoopKit

/// Where a ``TCPConnection`` is in its life, as one value: each stage carries only what can be true
/// in it — before the handshake no side has ended (only a shutdown can have been asked for); a close
/// reason exists only while closing and once closed. The connection asks it what the peer's end of
/// input means and moves it on; the I/O stays with the connection.
enum TCPLifecycle: Equatable {
    /// This side's output: open, a half-close asked for (sent once the queue is flushed), shut down.
    enum Output: Equatable {
        case open
        case shutdownAsked
        case shutDown
    }

    /// The two directions of an open connection.
    struct Sides: Equatable {
        /// The peer's end of input has been read.
        var inputEnded = false
        var output = Output.open
    }

    /// What an empty output queue leads to, in this order.
    struct AfterDrain: Equatable {
        /// Shut the output down now (FIN after the last byte); the lifecycle counts it as done.
        var shutDownOutput = false
        /// Then close with this reason: both directions are done.
        var finish: CloseReason?
        /// Then wait for the peer's end of input (a graceful close lingers).
        var linger = false
    }

    /// What the owner's ``TCPConnection/close(immediately:)`` leads to.
    enum CloseStep: Equatable {
        /// Nothing to do: closed already, or closing gracefully already.
        case nothing
        /// Close now with this reason (a reset for ``CloseReason/aborted``).
        case finish(CloseReason)
        /// Start the lingering close.
        case closeGracefully
    }

    /// What the peer's end of input leads to.
    enum EndOfInputVerdict: Equatable {
        /// Nothing is left to do: close with ``CloseReason/peerClosed``.
        case finish
        /// Half-closed: keep the connection for writing and tell the owner.
        case keepWriting
        /// Flush what is queued, then close (lingering) with ``CloseReason/peerClosed``.
        case closeGracefully
    }

    case idle(shutdownAsked: Bool)
    case resolving(shutdownAsked: Bool)
    case connecting(shutdownAsked: Bool)
    case connected(Sides)
    /// A graceful close: output flushed, then shut down, then lingering for the peer's end of input.
    case closing(CloseReason, Sides)
    case closed(CloseReason, Sides)

    // MARK: What it says

    var state: TCPConnection.State {
        switch self {
        case .idle: return .idle
        case .resolving: return .resolving
        case .connecting: return .connecting
        case .connected: return .connected
        case .closing: return .closing
        case .closed: return .closed
        }
    }

    var closeReason: CloseReason? {
        if case .closed(let reason, _) = self { return reason }
        return nil
    }

    /// The reason a graceful close will end with, while closing.
    var gracefulCloseReason: CloseReason? {
        if case .closing(let reason, _) = self { return reason }
        return nil
    }

    var sides: Sides {
        switch self {
        case .idle(let asked), .resolving(let asked), .connecting(let asked):
            return Sides(inputEnded: false, output: asked ? .shutdownAsked : .open)
        case .connected(let sides), .closing(_, let sides), .closed(_, let sides):
            return sides
        }
    }

    var isInputClosed: Bool { sides.inputEnded }
    var isOutputClosed: Bool { sides.output == .shutDown }
    /// ``TCPConnection/shutdownOutput()`` was called (whether or not the shutdown happened yet).
    var isShutdownAsked: Bool { sides.output != .open }

    /// Whether input is to be watched: while open and reading, unless the owner paused it or the
    /// buffer is full — and while a graceful close waits for the peer's end of input, whatever the
    /// owner had paused (arriving bytes are read and dropped, never left to turn the close into a reset).
    func watchesInput(ownerPaused: Bool, bufferFull: Bool) -> Bool {
        switch self {
        case .connected(let sides): return !sides.inputEnded && !ownerPaused && !bufferFull
        case .closing(_, let sides): return !sides.inputEnded
        case .idle, .resolving, .connecting, .closed: return false
        }
    }

    /// Whether writability is to be watched: during the handshake (its outcome), and while open with
    /// output waiting — never otherwise, or a level-triggered writable socket would spin the loop.
    func watchesOutput(outputWaiting: Bool) -> Bool {
        switch self {
        case .connecting: return true
        case .connected, .closing: return outputWaiting
        case .idle, .resolving, .closed: return false
        }
    }

    /// What a close the owner asked for does here: a connection not open yet is abandoned, an open
    /// one closes gracefully unless `immediately`, a graceful close may be upgraded to a reset.
    func closeAsked(immediately: Bool) -> CloseStep {
        switch self {
        case .closed: return .nothing
        case .idle, .resolving, .connecting: return .finish(immediately ? .aborted : .closed)
        case .closing: return immediately ? .finish(.aborted) : .nothing
        case .connected: return immediately ? .finish(.aborted) : .closeGracefully
        }
    }

    // MARK: Moving on

    /// `connect` started: resolving a name, or connecting to addresses at once.
    mutating func startConnecting(resolving: Bool) {
        guard case .idle(let asked) = self else { preconditionFailure("connect on a connection that is not idle") }
        self = resolving ? .resolving(shutdownAsked: asked) : .connecting(shutdownAsked: asked)
    }

    /// The resolver answered: on to connecting.
    mutating func resolved() {
        guard case .resolving(let asked) = self else { return }
        self = .connecting(shutdownAsked: asked)
    }

    /// The handshake completed (or the listener accepted).
    mutating func established() {
        self = .connected(sides)
    }

    /// The owner asked for a half-close; false if it was asked already or it is too late.
    mutating func askShutdown() -> Bool {
        switch self {
        case .idle(false): self = .idle(shutdownAsked: true)
        case .resolving(false): self = .resolving(shutdownAsked: true)
        case .connecting(false): self = .connecting(shutdownAsked: true)
        case .connected(var sides) where sides.output == .open:
            sides.output = .shutdownAsked
            self = .connected(sides)
        default: return false
        }
        return true
    }

    /// This side's output was shut down (the FIN went out).
    mutating func outputShutDown() {
        changeSides { $0.output = .shutDown }
    }

    /// The peer's end of input was read; what it leads to, given the owner's choice and the queue.
    mutating func inputEnded(allowsHalfClosure: Bool, outputEmpty: Bool) -> EndOfInputVerdict {
        markInputEnded()
        if isOutputClosed || (!allowsHalfClosure && outputEmpty) { return .finish }
        return allowsHalfClosure ? .keepWriting : .closeGracefully
    }

    /// The peer's end of input was read while closing (the close then completes, or lingers no more).
    mutating func markInputEnded() {
        changeSides { $0.inputEnded = true }
    }

    /// Nothing waits to be sent: a half-close asked for shuts the output down (closing for good when
    /// the peer has finished too); a graceful close shuts it down, then closes or lingers.
    mutating func outputDrained() -> AfterDrain {
        switch self {
        case .connected(let sides) where sides.output == .shutdownAsked:
            outputShutDown()
            return AfterDrain(shutDownOutput: true, finish: sides.inputEnded ? .closed : nil)
        case .closing(let reason, let sides):
            let shutDown = sides.output != .shutDown
            if shutDown { outputShutDown() }
            return AfterDrain(shutDownOutput: shutDown, finish: sides.inputEnded ? reason : nil, linger: !sides.inputEnded)
        case .idle, .resolving, .connecting, .connected, .closed:
            return AfterDrain()
        }
    }

    /// A graceful close starts, to end with `reason`.
    mutating func beginClosing(_ reason: CloseReason) {
        self = .closing(reason, sides)
    }

    /// Closed for good with `reason`; false if it already was.
    mutating func close(_ reason: CloseReason) -> Bool {
        if case .closed = self { return false }
        self = .closed(reason, sides)
        return true
    }

    private mutating func changeSides(_ change: (inout Sides) -> Void) {
        switch self {
        case .connected(var sides):
            change(&sides)
            self = .connected(sides)
        case .closing(let reason, var sides):
            change(&sides)
            self = .closing(reason, sides)
        case .idle, .resolving, .connecting, .closed:
            preconditionFailure("a side of a connection that is not open changed (\(state))")
        }
    }
}
