import RunLoopIMCore
import RunLoopKit

/// Holds a room message from the bus back from this node's sessions until the node has seen every
/// JOIN and LEAVE of the room that committed before the message. A pure value: the node feeds it and
/// asks it, with the loop's `now`.
///
/// Why: two nodes' entries reach the bus in publish order, not commit order. A message committed on
/// node C just after a user's LEAVE on node B can reach this node before B's LEAVE does, and the
/// node would pass it to the user, who is still a member here. So a room message's entry carries the
/// room's membership number at its commit (``ClusterEvent/message(_:membershipSeq:)``): every change
/// numbered at or below it committed before it. The gate keeps, per room whose members it routes to,
/// the number `through` up to which it has seen every change — from a read of the store (a member's
/// rooms loaded, a check), which holds every change up to the room's number then, and from the
/// changes seen since — and lets a message pass only when its number is at or below it. A message
/// whose number is higher waits, with those after it, until the missing changes arrive, in number
/// order; past ``maximumWait`` it is given up (``Expiry``): the node has the room's members read their
/// inboxes (the store reads by membership, so the message reaches exactly the members) and reads each
/// one's standing in the room again, since the change that never came may be a LEAVE of theirs.
///
/// A message is weighed against the highest number the node has heard on a message of its room — its
/// own, or a later message's that came first (a message filling a gap, read from the store, carries
/// none, and is older than the one that showed the gap) — so an entry without a number (a node from
/// before messages carried it) passes as today unless a message with one waits.
struct RoomMessageGate: Sendable {
    /// How long a message waits for the changes before it: they are committed and their node publishes
    /// them within milliseconds, unless it cannot reach Redis (then only once it can again, or never,
    /// if it died).
    let maximumWait: Duration

    /// Messages given up on in one room: their recipients must read their inboxes, and the room's
    /// standings be read again before its messages pass here.
    struct Expiry: Equatable, Sendable {
        var room: String
        var messages: [IMMessage]
    }

    private struct Held: Sendable {
        var message: IMMessage
        var seq: UInt64
        var deadline: LoopInstant
    }

    private struct Order: Sendable {
        /// Every change numbered at or below it is known here; `nil` until a read answers.
        var through: UInt64?
        /// Changes numbered above `through` seen since.
        var seen: Set<UInt64> = []
        /// The highest number heard on a message of the room.
        var highest: UInt64 = 0
        /// Messages waiting, in the order they came.
        var held: [Held] = []

        /// Moves `through` over the changes seen right after it.
        mutating func advance() {
            guard var through else { return }
            while seen.remove(through + 1) != nil { through += 1 }
            self.through = through
        }
    }

    private var orders: [String: Order] = [:]

    init(maximumWait: Duration) { self.maximumWait = maximumWait }

    /// When ``expire(now:)`` has something to give up: the oldest held message's deadline.
    var nextDeadline: LoopInstant? { orders.values.compactMap { $0.held.first?.deadline }.min() }

    /// Whether messages of `room` are waiting.
    func isHolding(_ room: String) -> Bool { orders[room]?.held.isEmpty == false }

    /// A read of the store held every change of `room` numbered at or below `seq` (a member's rooms
    /// loaded, or a check of a user's standing answered). Returns the messages that may pass now.
    mutating func read(_ room: String, at seq: UInt64) -> [IMMessage] {
        var order = orders[room] ?? Order()
        // A later read holds more, but what the earlier one did not see since must still come: the
        // lower number stands (reads on one connection answer in order, so a lower one is rare).
        order.through = min(order.through ?? seq, seq)
        order.seen = order.seen.filter { $0 > order.through! }
        order.advance()
        orders[room] = order
        return release(room)
    }

    /// A read of `room` was asked for: the changes seen until it answers are kept for it, since it
    /// may have read before they committed.
    mutating func awaitRead(_ room: String) {
        if orders[room] == nil { orders[room] = Order() }
    }

    /// A JOIN or LEAVE of `room` numbered `seq`, of any user, on any node (this one's too). Returns the
    /// messages that may pass now.
    mutating func changed(_ room: String, seq: UInt64) -> [IMMessage] {
        guard var order = orders[room] else { return [] }
        if seq > order.through ?? 0 { order.seen.insert(seq) }
        order.advance()
        orders[room] = order
        return release(room)
    }

    /// The bus brought a message of `room` numbered `seq`: the number a message of the room must wait
    /// for is at least that from now on.
    mutating func heard(_ room: String, seq: UInt64) {
        guard var order = orders[room] else { return }
        order.highest = max(order.highest, seq)
        orders[room] = order
    }

    /// Whether `message`, for `room`'s members here, may pass now; if not, it is held and comes out of
    /// ``read(_:at:)``, ``changed(_:seq:)`` or ``expire(now:)``.
    mutating func admit(_ message: IMMessage, room: String, now: LoopInstant) -> Bool {
        // A room never read here has no members here either, but one who rejoined after their last
        // member left: its standings must be read before it passes.
        var order = orders[room] ?? Order()
        if order.held.isEmpty, let through = order.through, order.highest <= through { return true }
        order.held.append(Held(message: message, seq: order.highest, deadline: now + maximumWait))
        orders[room] = order
        return false
    }

    /// Gives up the messages whose wait ended, with every message of their room held after them (they
    /// keep their order). The room's `through` is forgotten: the node reads its members' standings
    /// again, and each read answers through ``read(_:at:)``.
    mutating func expire(now: LoopInstant) -> [Expiry] {
        var expired: [Expiry] = []
        for (room, order) in orders {
            guard let first = order.held.first, first.deadline <= now else { continue }
            expired.append(Expiry(room: room, messages: order.held.map(\.message)))
            orders[room] = Order(highest: order.highest)
        }
        return expired.sorted { $0.room < $1.room }
    }

    /// No member of `room` is here any more: nothing of it is kept, unless a read of it is awaited.
    mutating func forget(_ room: String) {
        if orders[room]?.through != nil, orders[room]?.held.isEmpty == true { orders[room] = nil }
    }

    private mutating func release(_ room: String) -> [IMMessage] {
        guard var order = orders[room], let through = order.through else { return [] }
        var passed: [IMMessage] = []
        while let first = order.held.first, first.seq <= through {
            passed.append(first.message)
            order.held.removeFirst()
        }
        orders[room] = order
        return passed
    }
}
