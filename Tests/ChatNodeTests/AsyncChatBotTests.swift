import ChatNodeKit
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

import class Foundation.Pipe
import class Foundation.Process
import struct Foundation.URL

/// The `async-chat-bot` sample as a process, against a chat node in this process.
@Suite("AsyncChatBot sample")
struct AsyncChatBotTests {
    @Test("the bot joins the room, greets it, echoes a message said there, and exits with status 0 on SIGINT")
    func answersThenExitsOnSIGINT() async throws {
        let (heard, status, output) = try await onLoopThread { () throws -> ([String], Int32, String) in
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            let ann = ChatClient(connection: client("ann", port: node.port))
            var heard: [String] = []
            ann.onMessage = { _, message in if message.from == "bot" { heard.append(message.text) } }
            ann.start()
            try #require(try spin(loop) { ann.state == .online })
            var joined = false
            ann.join(room: "lobby") { joined = (try? $0.get()) != nil }
            try #require(try spin(loop) { joined })

            let output = Pipe()
            let bot = Process()
            bot.executableURL = URL(fileURLWithPath: builtProductPath("async-chat-bot"))
            bot.arguments = ["--port", "\(node.port)", "--user", "bot", "--password", "pw", "--room", "lobby"]
            bot.standardOutput = output
            try bot.runWithNoSignalBlocked()
            defer { if bot.exitIfEnded() == nil { Glibc.kill(bot.processIdentifier, SIGKILL) } }
            // The greeting says the bot is in the room: what is said there now reaches it.
            try #require(try spin(loop) { !heard.isEmpty }, "the bot never greeted the room")
            try ann.send("hello bot", to: .room("lobby"))
            try #require(try spin(loop) { heard.count == 2 }, "the bot never answered")

            Glibc.kill(bot.processIdentifier, SIGINT)
            // The node's loop keeps running while the bot logs out.
            try #require(try spin(loop) { bot.exitIfEnded() != nil }, "the bot did not exit on SIGINT")
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            ann.close()
            var stopped = false
            node.stop { stopped = true }
            try spin(loop) { stopped }
            return (heard, bot.exitIfEnded()?.status ?? -1, printed)
        }
        #expect(heard == ["bot here: I echo what you say", "echo #1: hello bot"])
        #expect(status == 0)
        #expect(output.contains("joined #lobby (2 members)"))
        #expect(output.contains("bye: answered 1"))
    }
}
