public import RunLoopIMCore
public import RunLoopKit

/// Puts the messages a node gets from the bus into each conversation's order before local delivery,
/// and says what to fetch from the store when the bus skipped some. A pure state machine: no I/O,
/// no clock of its own (every input carries the loop's `now`); the node performs its ``Action``s and
/// arms one timer for ``nextDeadline``, calling ``tick(now:)`` when it fires.
///
/// Per conversation it keeps the last ``IMMessage/conversationSeq`` passed on:
/// - the next number passes, with any held messages it makes consecutive;
/// - a number at or below it, or already held, is a duplicate and is dropped;
/// - a number further ahead is held, and the missing range is asked for from the store
///   (``Action/fetch(_:after:before:)``); the store's answer (``fetched(_:in:now:)``) or late bus
///   entries fill it. A gap still open ``Configuration/gapDeadline`` after the ask is asked for
///   again, up to ``Configuration/maxFetchAttempts`` fetches in a row that narrow nothing;
/// - a conversation not seen before (or forgotten) starts at the first number it sees, and a number
///   below that first one passes whenever it comes: commits are numbered in order, but the bus brings
///   different nodes' commits in any order, so a lower number may still have been on its way when the
///   conversation started here (this node's own commit 9 can come before another node's 8). Dropping
///   it would leave the members here without it until something later in the conversation sent their
///   sessions back to the store. A repeat of such a number passes again: each session's
///   ``DeliveryWindow`` sends a message at most once and reads from the store what does not follow on.
///
/// Memory is bounded: a conversation with nothing held is forgotten after
/// ``Configuration/idleTimeout`` without messages (checked every `idleTimeout`, so it goes between
/// one and two timeouts after its last message), and past ``Configuration/maxHeldMessages`` held in
/// all, or a gap that stays open through every attempt, the conversation holding most is dropped with
/// ``Action/reread(_:)``: the node re-reads its sessions' inboxes from the store instead.
///
/// Give it every message the node passes on locally, its own store's commits too (in order they
/// pass at once): a number it never saw looks like a gap and costs a fetch.
///
/// A value; use it from one thread at a time (the loop's).
public struct ConversationSequencer: Sendable {
    /// The sequencer's limits.
    public struct Configuration: Sendable, Equatable {
        /// How long a fetch may take to close its gap before it is asked again.
        public var gapDeadline: Duration
        /// How many fetches in a row may leave a gap as it was before its conversation is handed to
        /// the store.
        public var maxFetchAttempts: Int
        /// How long a conversation with nothing held is remembered after its last message.
        public var idleTimeout: Duration
        /// At most this many messages held, over all conversations.
        public var maxHeldMessages: Int

        public init(
            gapDeadline: Duration = .seconds(2), maxFetchAttempts: Int = 5, idleTimeout: Duration = .seconds(600),
            maxHeldMessages: Int = 10_000
        ) {
            precondition(maxFetchAttempts > 0 && maxHeldMessages > 0 && idleTimeout > .zero, "sequencer limits are positive")
            self.gapDeadline = gapDeadline
            self.maxFetchAttempts = maxFetchAttempts
            self.idleTimeout = idleTimeout
            self.maxHeldMessages = maxHeldMessages
        }
    }

    /// What the node does, in order.
    public enum Action: Equatable, Sendable {
        /// Pass the message on to the local sessions: its conversation's next.
        case deliver(IMMessage)
        /// Read the conversation's messages numbered strictly between `after` and `before` from the
        /// store, and hand them to ``ConversationSequencer/fetched(_:in:now:)``.
        case fetch(IMConversation, after: UInt64, before: UInt64)
        /// The conversation is no longer sequenced (its held messages are dropped): re-read the local
        /// sessions' inboxes from the store for it.
        case reread(IMConversation)
    }

    private struct Track: Sendable {
        /// The first conversationSeq seen: below it nothing passed here, so nothing is a duplicate.
        let firstSeen: UInt64
        /// The last conversationSeq passed on.
        var delivered: UInt64
        var held: [UInt64: IMMessage] = [:]
        var lastMessage: LoopInstant
        /// When the open gap is asked for again; `nil` while nothing is held.
        var gapDeadline: LoopInstant?
        var fetchAttempts = 0
    }

    public let configuration: Configuration
    private var tracks: [IMConversation: Track] = [:]
    /// The conversations holding messages: the only ones with a gap deadline.
    private var gaps: Set<IMConversation> = []
    private var heldCount = 0
    private var nextSweep: LoopInstant?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The number of messages held, waiting for a gap to close.
    public var heldMessages: Int { heldCount }
    /// The number of conversations remembered.
    public var conversationCount: Int { tracks.count }
    /// The last conversationSeq passed on in `conversation`; `nil` for one not remembered.
    public func lastDelivered(in conversation: IMConversation) -> UInt64? { tracks[conversation]?.delivered }

    /// When ``tick(now:)`` has something to do: the earliest gap deadline, or the next idle sweep.
    public var nextDeadline: LoopInstant? {
        let earliestGap = gaps.compactMap { tracks[$0]?.gapDeadline }.min()
        guard let nextSweep, !tracks.isEmpty else { return earliestGap }
        return min(earliestGap ?? nextSweep, nextSweep)
    }

    /// A message from the bus. A message without a number (``IMMessage/conversationSeq`` 0, from a
    /// store that does not number conversations) cannot be sequenced and passes at once.
    public mutating func receive(_ message: IMMessage, now: LoopInstant) -> [Action] {
        guard message.conversationSeq > 0 else { return [.deliver(message)] }
        let conversation = message.conversation
        if tracks[conversation] == nil {
            tracks[conversation] = Track(firstSeen: message.conversationSeq, delivered: message.conversationSeq - 1, lastMessage: now)
            if nextSweep == nil { nextSweep = now + configuration.idleTimeout }
        }
        tracks[conversation]!.lastMessage = now
        var actions = accept(message, in: conversation)
        if let track = tracks[conversation], track.gapDeadline == nil, !track.held.isEmpty {
            actions.append(ask(conversation, now: now))
        }
        return actions + enforceCap()
    }

    /// The store's answer to a ``Action/fetch(_:after:before:)`` of `conversation`: the messages it has
    /// in the range, in any order (an empty answer is fine). A gap this closes only partly is asked
    /// for again at once; one it did not narrow waits for its deadline.
    public mutating func fetched(_ messages: [IMMessage], in conversation: IMConversation, now: LoopInstant) -> [Action] {
        guard let before = tracks[conversation]?.delivered else { return [] }
        var actions: [Action] = []
        for message in messages.sorted(by: { $0.conversationSeq < $1.conversationSeq }) where message.conversation == conversation {
            actions += accept(message, in: conversation)
        }
        if let track = tracks[conversation], !track.held.isEmpty, track.delivered > before {
            // Progress: the attempts count fetches that narrowed nothing.
            tracks[conversation]!.fetchAttempts = 0
            actions.append(ask(conversation, now: now))
        }
        return actions + enforceCap()
    }

    /// The clock reached ``nextDeadline`` (or later): gaps past their deadline are asked for again
    /// (or handed to the store after their last attempt), idle conversations forgotten.
    public mutating func tick(now: LoopInstant) -> [Action] {
        var actions: [Action] = []
        for conversation in gaps.sorted(by: { $0.storageKey < $1.storageKey }) {
            guard let track = tracks[conversation], let deadline = track.gapDeadline, deadline <= now else { continue }
            if track.fetchAttempts >= configuration.maxFetchAttempts {
                actions.append(drop(conversation))
            } else {
                actions.append(ask(conversation, now: now))
            }
        }
        if let sweep = nextSweep, sweep <= now {
            tracks = tracks.filter { !$0.value.held.isEmpty || now - $0.value.lastMessage < configuration.idleTimeout }
            nextSweep = tracks.isEmpty ? nil : now + configuration.idleTimeout
        }
        return actions
    }

    // MARK: rules

    /// Passes, drops or holds one message of a remembered conversation; never asks.
    private mutating func accept(_ message: IMMessage, in conversation: IMConversation) -> [Action] {
        guard var track = tracks[conversation] else { return [] }
        let number = message.conversationSeq
        guard number > track.delivered else { return number < track.firstSeen ? [.deliver(message)] : [] }
        guard track.held[number] == nil else { return [] }
        guard number == track.delivered + 1 else {
            track.held[number] = message
            heldCount += 1
            tracks[conversation] = track
            return []
        }
        var actions: [Action] = [.deliver(message)]
        track.delivered = number
        while let next = track.held.removeValue(forKey: track.delivered + 1) {
            actions.append(.deliver(next))
            track.delivered += 1
            heldCount -= 1
        }
        if track.held.isEmpty {
            track.gapDeadline = nil
            track.fetchAttempts = 0
            gaps.remove(conversation)
        }
        tracks[conversation] = track
        return actions
    }

    /// Asks for everything between the last passed and the highest held (the held ones come back
    /// too and are dropped: one fetch closes every gap of the conversation).
    private mutating func ask(_ conversation: IMConversation, now: LoopInstant) -> Action {
        var track = tracks[conversation]!
        let highest = track.held.keys.max()!
        track.gapDeadline = now + configuration.gapDeadline
        track.fetchAttempts += 1
        tracks[conversation] = track
        gaps.insert(conversation)
        return .fetch(conversation, after: track.delivered, before: highest)
    }

    private mutating func enforceCap() -> [Action] {
        var actions: [Action] = []
        while heldCount > configuration.maxHeldMessages,
            let largest = gaps.max(by: { (tracks[$0]?.held.count ?? 0) < (tracks[$1]?.held.count ?? 0) })
        {
            actions.append(drop(largest))
        }
        return actions
    }

    /// Forgets a conversation and its held messages; the store takes over.
    private mutating func drop(_ conversation: IMConversation) -> Action {
        heldCount -= tracks.removeValue(forKey: conversation)?.held.count ?? 0
        gaps.remove(conversation)
        return .reread(conversation)
    }
}
