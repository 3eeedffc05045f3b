import ArgumentParser
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// A chat bot written against the async API alone (`AsyncChatClient`): it logs in to a chat node,
/// joins a room, says hello there and answers every message it gets — in the room or directly —
/// with a numbered echo. SIGINT closes the client (settling its own messages with the node); the
/// message loop then ends and the bot exits with status 0.
@main
struct AsyncChatBot: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "async-chat-bot",
        abstract: "An echo bot for a chat node, on RunLoopChat's async API."
    )

    @Option(help: "The chat node's address.")
    var host = "127.0.0.1"

    @Option(help: "The chat node's IM port.")
    var port: UInt16 = 7100

    @Option(help: "The bot's user name.")
    var user = "echo-bot"

    @Option(help: "The bot's password (a node that registers on first login creates the account).")
    var password = "echo-bot"

    @Option(help: "The room to join and answer in.")
    var room = "lobby"

    func run() throws {
        let loop = RunLoop.current
        let answered = try loop.run { [host, port, user, password, room] in
            let chat = AsyncChatClient(
                configuration: IMClientConfiguration(user: user, password: password),
                loop: loop, connector: TCPFrameLink.connector(host: host, port: port))
            // Subscribed before the start, so no message of the session is missed.
            let messages = chat.connection.messages
            let interrupt = try RunLoopSignalSource(signal: SIGINT) { _, _ in Task { await chat.connection.close() } }
            try loop.add(interrupt, forMode: .common)
            defer { interrupt.invalidate() }

            await chat.connection.start()
            try await chat.connection.waitUntilOnline()
            let joined = try await chat.join(room: room)
            print("joined #\(joined.name) (\(joined.members) members)")
            try await chat.connection.send("\(user) here: I echo what you say", to: .room(room))

            var answered = 0
            // Ends when the client is closed for good (SIGINT, or a refused login).
            for await message in messages where message.from != user {
                answered += 1
                let answer = "echo #\(answered): \(message.text)"
                do {
                    try await chat.connection.send(answer, to: replyAddress(of: message))
                } catch {
                    print("could not answer \(message.from): \(error)")
                }
            }
            return answered
        }
        print("bye: answered \(answered)")
    }
}

/// Where an answer to `message` goes: the room it came from, or back to its sender.
func replyAddress(of message: ChatMessage) -> Recipient {
    switch message.recipient {
    case .room: return message.recipient
    case .user: return .user(message.from)
    }
}
