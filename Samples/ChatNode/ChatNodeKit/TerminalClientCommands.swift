import RunLoopChat
import RunLoopIMCore

/// A conversation the terminal client can show or page: a room, or the direct messages with a user.
public enum TerminalConversation: Hashable, Sendable, CustomStringConvertible {
    case room(String)
    case user(String)

    /// How output lines tag the conversation: `[lobby]` for a room, `[@bob]` for a direct conversation.
    public var description: String {
        switch self {
        case .room(let name): return "[\(name)]"
        case .user(let name): return "[@\(name)]"
        }
    }

    /// The conversation as the chat protocol names it.
    var recipient: Recipient {
        switch self {
        case .room(let name): return .room(name)
        case .user(let name): return .user(name)
        }
    }
}

/// One line of input to ``TerminalClient``, parsed. Pure: no state, no side effects.
public enum TerminalCommand: Equatable, Sendable {
    /// Plain text: a message to the current room. A line starting with `//` sends the rest with one `/`.
    case say(String)
    /// `/join ROOM`: enter the room (created if new) and make it the current room.
    case join(String)
    /// `/leave [ROOM]`: leave the room (default: the current one).
    case leave(String?)
    /// `/rooms`: list every room on the node.
    case rooms
    /// `/msg USER TEXT`: a direct message.
    case direct(user: String, text: String)
    /// `/room ROOM TEXT`: a message to a room without changing the current room.
    case room(String, text: String)
    /// `/history [#ROOM|@USER] [N]`: the newest page of a conversation (default: the current room),
    /// shown oldest first.
    case history(TerminalConversation?, limit: Int?)
    /// `/more`: the next (older) page of the last `/history`.
    case more
    /// `/status`: connection state and pending messages.
    case status
    /// `/retry` (or, at a terminal, Enter on an empty line): while waiting to reconnect, try now.
    case retry
    /// `/quit`: settle own messages, then close.
    case quit
    /// `/help`.
    case help
    /// A line that is not a valid command; the associated text says why, for people.
    case invalid(String)

    /// Parses one line (without its newline). Returns `nil` for a blank line, which does nothing.
    public static func parse(_ line: String) -> TerminalCommand? {
        var text = Substring(line)
        while let last = text.last, last == "\r" || last == "\n" { text.removeLast() }
        guard !text.allSatisfy(\.isWhitespace) else { return nil }
        guard text.first == "/" else { return .say(String(text)) }
        if text.hasPrefix("//") { return .say(String(text.dropFirst())) }

        let body = text.dropFirst()
        let name = body.prefix { !$0.isWhitespace }.lowercased()
        let rest = body.drop { !$0.isWhitespace }.drop(while: \.isWhitespace)
        let argument = String(rest.reversed().drop(while: \.isWhitespace).reversed())
        let words = argument.split(whereSeparator: \.isWhitespace).map(String.init)
        // The first word and the raw remainder after it (the text of a message keeps its spacing).
        let first = words.first
        let afterFirst = String(rest.drop { !$0.isWhitespace }.drop(while: \.isWhitespace))

        switch name {
        case "join", "j":
            // Room names may contain inner spaces (PROTOCOL.md §8), so the whole rest is the name.
            guard !argument.isEmpty else { return .invalid("usage: /join ROOM") }
            return .join(argument)
        case "leave", "part":
            return .leave(argument.isEmpty ? nil : argument)
        case "rooms", "list":
            return words.isEmpty ? .rooms : .invalid("usage: /rooms")
        case "msg", "m", "dm":
            guard let user = first, !afterFirst.isEmpty else { return .invalid("usage: /msg USER TEXT") }
            return .direct(user: user.hasPrefix("@") ? String(user.dropFirst()) : user, text: afterFirst)
        case "room", "r":
            guard let room = first, !afterFirst.isEmpty else { return .invalid("usage: /room ROOM TEXT") }
            return .room(room.hasPrefix("#") ? String(room.dropFirst()) : room, text: afterFirst)
        case "history", "h":
            var conversation: TerminalConversation?
            var limit: Int?
            for word in words {
                if let number = Int(word), limit == nil {
                    guard number > 0 else { return .invalid("/history: the count must be positive") }
                    limit = number
                } else if conversation == nil, word.count > 1, word.hasPrefix("@") {
                    conversation = .user(String(word.dropFirst()))
                } else if conversation == nil, word.count > 1, word.hasPrefix("#") {
                    conversation = .room(String(word.dropFirst()))
                } else if conversation == nil, Int(word) == nil {
                    conversation = .room(word)
                } else {
                    return .invalid("usage: /history [#ROOM|@USER] [N]")
                }
            }
            return .history(conversation, limit: limit)
        case "more":
            return .more
        case "status", "s":
            return .status
        case "retry":
            return words.isEmpty ? .retry : .invalid("usage: /retry")
        case "quit", "q", "exit":
            return .quit
        case "help", "?":
            return .help
        default:
            return .invalid("unknown command /\(name) (try /help)")
        }
    }

    /// Commands that only read or end the client's own state: in an interactive session they run at
    /// once even while an earlier line waits for the connection or an answer, so a person is never
    /// stuck behind a request.
    var isLocal: Bool {
        switch self {
        case .status, .retry, .quit, .help: return true
        default: return false
        }
    }

    /// A message to send (plain text, `/msg`, `/room`).
    var isMessage: Bool {
        switch self {
        case .say, .direct, .room: return true
        default: return false
        }
    }

    /// Whether running it may change the current room, where plain text after it goes.
    var changesCurrentRoom: Bool {
        switch self {
        case .join, .leave: return true
        default: return false
        }
    }

    /// The help text, one line per entry.
    public static let helpLines = [
        "commands:",
        "  TEXT                    message the current room (the last one joined)",
        "  /join ROOM              enter a room (created if new); it becomes the current room",
        "  /leave [ROOM]           leave a room (default: the current one)",
        "  /rooms                  list the rooms",
        "  /msg USER TEXT          direct message",
        "  /room ROOM TEXT         message a room without switching to it",
        "  /history [#ROOM|@USER] [N]  the newest N messages (default 20), oldest first",
        "  /more                   the next older page of the last /history",
        "  /status                 connection state and messages not yet delivered",
        "  /retry  (or Enter)      while waiting to reconnect: try now",
        "  /quit                   wait for own messages to settle, then leave",
        "  //TEXT                  send TEXT starting with one /"
    ]
}
