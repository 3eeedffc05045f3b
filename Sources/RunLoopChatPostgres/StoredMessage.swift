import RunLoopIMCore
import RunLoopPostgres

/// How a message row reads back: the columns every query of a message selects, and the message
/// they make.
enum StoredMessage {
    /// The select list of a message row from the table aliased `m`.
    static let columns = "m.seq, m.sender, m.client_id, m.to_user, m.to_room, m.text, m.sent_at_ms, m.conversation_seq"

    /// The message in `row`, read by column name; `nil` when the row has none (an outer join's
    /// empty side).
    static func message(_ rows: PostgresRows, _ row: Int) -> IMMessage? {
        guard let seq = rows[row, "seq"].flatMap({ UInt64($0) }), let sender = rows[row, "sender"], let id = rows[row, "client_id"] else {
            return nil
        }
        // Every row has one of to_user and to_room (a message without a recipient is never stored).
        let recipient: IMRecipient = rows[row, "to_user"].map { .user($0) } ?? .room(rows[row, "to_room"] ?? "")
        return IMMessage(
            id: id, from: sender, recipient: recipient, text: rows[row, "text"] ?? "", seq: seq,
            sentAtMilliseconds: rows[row, "sent_at_ms"].flatMap { UInt64($0) } ?? 0,
            conversationSeq: rows[row, "conversation_seq"].flatMap { UInt64($0) } ?? 0)
    }

    /// Every message in `rows`, in order.
    static func messages(_ rows: PostgresRows) -> [IMMessage] { (0..<rows.count).compactMap { message(rows, $0) } }
}
