public import RunLoopIMCore

/// What became of every message of a demo or a chaos test, counted per message: each acknowledged one
/// should reach each of its recipients exactly once; a failed one was reported to its sender, so it is
/// not lost; an unsettled one is neither. Pure: built from what the clients recorded, on any thread.
public struct DeliveryTally: Sendable, Equatable, CustomStringConvertible {
    /// One recipient's share of the acknowledged messages.
    public struct Recipient: Sendable, Equatable {
        /// Acknowledged messages addressed to them (directly or through a room they are in).
        public var expected = 0
        /// Of those, how many their client showed (at least once).
        public var received = 0
    }

    /// One own message as its sender's client saw it.
    public struct Sent: Sendable {
        public var id: String
        public var recipient: IMRecipient
        /// `nil` while the client still waits for its outcome.
        public var final: IMDeliveryState?

        public init(id: String, recipient: IMRecipient, final: IMDeliveryState?) {
            self.id = id
            self.recipient = recipient
            self.final = final
        }
    }

    public var sent = 0
    /// Stored by a node (SEND_ACK after the commit).
    public var acknowledged = 0
    /// Reported to the sender as never to be delivered.
    public var failed = 0
    /// Neither acknowledged nor failed yet.
    public var unsettled = 0
    /// Each acknowledged message × its recipients.
    public var expectedDeliveries = 0
    public var receivedDeliveries = 0
    /// Acknowledged deliveries no recipient's client showed.
    public var lost = 0
    /// Copies a client showed beyond the first.
    public var duplicatesShown = 0
    /// Copies the clients received and dropped by id (a redelivery is allowed; showing it twice is not).
    public var duplicatesDropped = 0
    public var perRecipient: [String: Recipient] = [:]
    /// The first few lost deliveries, as `sender → recipient: id`, to look for.
    public var lostExamples: [String] = []

    /// Every message delivered exactly once or reported failed; none left hanging.
    public var isClean: Bool { lost == 0 && duplicatesShown == 0 && unsettled == 0 }

    public init() {}

    /// Counts `sent` (by sender) against `received` (by recipient, `(from, id)` in the order shown).
    /// - Parameter members: a room's members; its messages are expected at each member but the sender.
    public init(
        sent: [String: [Sent]], received: [String: [(from: String, id: String)]], members: (_ room: String) -> [String]
    ) {
        var copies: [String: [String: Int]] = [:]  // recipient → "from\u{0}id" → copies shown
        for (recipient, messages) in received {
            for message in messages { copies[recipient, default: [:]][message.from + "\u{0}" + message.id, default: 0] += 1 }
        }
        for (sender, messages) in sent {
            for message in messages {
                self.sent += 1
                switch message.final {
                case .stored?: acknowledged += 1
                case .failed?:
                    failed += 1
                    continue
                default:
                    unsettled += 1
                    continue
                }
                let recipients: [String]
                switch message.recipient {
                case .room(let room): recipients = members(room).filter { $0 != sender }
                case .user(let user): recipients = [user]
                }
                for recipient in recipients {
                    let shown = copies[recipient]?[sender + "\u{0}" + message.id] ?? 0
                    expectedDeliveries += 1
                    perRecipient[recipient, default: Recipient()].expected += 1
                    if shown == 0 {
                        lost += 1
                        if lostExamples.count < 5 { lostExamples.append("\(sender) → \(recipient): \(message.id)") }
                    } else {
                        receivedDeliveries += 1
                        perRecipient[recipient, default: Recipient()].received += 1
                        duplicatesShown += shown - 1
                    }
                }
            }
        }
    }

    public var description: String {
        let recipients = perRecipient.keys.sorted().map { "\($0) \(perRecipient[$0]!.received)/\(perRecipient[$0]!.expected)" }
        return """
            messages sent              \(sent)
              acknowledged (stored)    \(acknowledged)
              failed                   \(failed)
              unsettled                \(unsettled)
            deliveries expected        \(expectedDeliveries)   (each acknowledged message × its recipients)
              received                 \(receivedDeliveries)
              per recipient            \(recipients.joined(separator: ", "))
              lost                     \(lost)\(lostExamples.isEmpty ? "" : "   (" + lostExamples.joined(separator: ", ") + ")")
              duplicates shown         \(duplicatesShown)
              duplicates dropped       \(duplicatesDropped)   (delivered again, de-duplicated by id)
            """
    }
}

extension DeliveryTally {
    /// What one demo client recorded (``DemoParticipant/record``).
    typealias ClientRecord = (sent: [Sent], received: [(from: String, id: String)], duplicatesDropped: Int)

    /// Counts the records of a demo's clients, by user name.
    init(records: [String: ClientRecord], members: (_ room: String) -> [String]) {
        self.init(sent: records.mapValues(\.sent), received: records.mapValues(\.received), members: members)
        duplicatesDropped = records.values.map(\.duplicatesDropped).reduce(0, +)
    }
}
