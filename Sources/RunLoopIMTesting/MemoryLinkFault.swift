import RunLoopKit

/// Which end of a ``MemoryLinkPair``.
public enum MemoryLinkSide: Sendable, Equatable {
    /// The connecting end (an ``IMClient``'s): it reports `opened` when opened.
    case client
    /// The accepted end (an ``IMServer``'s session's), open from the start.
    case server

    /// The other end.
    public var peer: MemoryLinkSide { self == .client ? .server : .client }
}

/// One direction of a ``MemoryLinkPair``.
public enum MemoryLinkDirection: Sendable, Equatable {
    /// What the client end sends.
    case toServer
    /// What the server end sends.
    case toClient

    /// The end that receives in this direction.
    var receiver: MemoryLinkSide { self == .toServer ? .server : .client }
}

/// One step of a ``MemoryLinkPair``'s fault script, applied at once (``MemoryLinkPair/apply(_:)``)
/// or after a while on the loop's clock (``MemoryLinkPair/apply(_:after:)``).
public enum MemoryLinkFault: Sendable, Equatable {
    /// The link vanishes silently: nothing more is delivered either way, sends still succeed, and no
    /// end is told — a half-open peer, as a dead NAT mapping looks. Only the IM heartbeat and
    /// keepalive can find out.
    case drop
    /// Stops delivering in one direction until ``resume(_:)``; what is sent meanwhile waits (and
    /// counts as the sender's buffered output).
    case stall(MemoryLinkDirection)
    /// Delivers what a ``stall(_:)`` held, in order, and carries on.
    case resume(MemoryLinkDirection)
    /// Both ends fail with ``IMLinkFailure/reset`` on a later pass; what was in flight is lost.
    case reset
    /// Each frame sent from now on is delivered this long after it was sent, on the loop's clock
    /// (so on a ``ManualClock`` too); `.zero`: on the next pass.
    case delay(Duration)
    /// Frames sent from now on go through the real encoder and the receiver's frame decoder one
    /// byte per loop pass (`true`), or a read at a time (`false`).
    case byteByByte(Bool)
    /// What is sent in one direction from now on is thrown away at once, unencoded: a peer that reads
    /// everything and keeps nothing — for volume tests, where thousands of sessions would otherwise
    /// encode and decode every broadcast.
    case discard(MemoryLinkDirection)
    /// The end's sends throw ``IMLinkFailure/outputFull(limit:)`` (`true`), or work again (`false`).
    case outputFull(MemoryLinkSide, Bool)
}
