import ChatNodeKit
import Foundation
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// Foundation has a RunLoop too; these tests mean RunLoopKit's.
private typealias RunLoop = RunLoopKit.RunLoop

/// What a terminal client printed, in order.
final class Transcript {
    var lines: [String] = []

    func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }
    func count(_ text: String) -> Int { lines.filter { $0.contains(text) }.count }
    /// The lines starting with `prefix`, in order.
    func lines(startingWith prefix: String) -> [String] { lines.filter { $0.hasPrefix(prefix) } }
    /// Index of the first line containing `text` at or after `start`.
    func index(of text: String, from start: Int = 0) -> Int? {
        lines.indices.first { $0 >= start && lines[$0].contains(text) }
    }
    var dump: String { lines.joined(separator: "\n") }
}

/// A test terminal's settings: password "pw", a 5 s heartbeat, quick reconnects.
func terminalConfiguration(_ user: String, drain: Duration = .seconds(5)) -> TerminalClient.Configuration {
    var configuration = TerminalClient.Configuration(user: user, password: "pw")
    configuration.heartbeat = .seconds(5)
    configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(300))
    configuration.drainTimeout = drain
    return configuration
}

/// A terminal client of the node listening on `port` over TCP, not started; `adjust` changes the rest
/// of its configuration.
func terminal(
    _ user: String, port: UInt16, drain: Duration = .seconds(5), into transcript: Transcript,
    adjust: (inout TerminalClient.Configuration) -> Void = { _ in }
) -> TerminalClient {
    var configuration = terminalConfiguration(user, drain: drain)
    configuration.port = port
    adjust(&configuration)
    return TerminalClient(configuration: configuration, connector: TCPFrameLink.connector(host: configuration.host, port: port)) {
        transcript.lines.append($0)
    }
}

/// Feeds lines as a script would: all at once, before anything is connected.
func type(_ lines: String..., into client: TerminalClient) {
    for line in lines { client.receive(line: line) }
}

@Suite("Terminal client: parsing, editing, input")
struct TerminalClientParsingTests {
    @Test("commands parse; text keeps its spacing; // escapes a slash; bad commands say why")
    func commands() {
        #expect(TerminalCommand.parse("   ") == nil)
        #expect(TerminalCommand.parse("hello  world") == .say("hello  world"))
        #expect(TerminalCommand.parse("//join is a command") == .say("/join is a command"))
        #expect(TerminalCommand.parse("/join the lounge") == .join("the lounge"))
        #expect(TerminalCommand.parse("/leave") == .leave(nil))
        #expect(TerminalCommand.parse("/msg @bob  hi  there") == .direct(user: "bob", text: "hi  there"))
        #expect(TerminalCommand.parse("/room #lobby hey") == .room("lobby", text: "hey"))
        #expect(TerminalCommand.parse("/history") == .history(nil, limit: nil))
        #expect(TerminalCommand.parse("/history @bob 5") == .history(.user("bob"), limit: 5))
        #expect(TerminalCommand.parse("/history 5 #lobby") == .history(.room("lobby"), limit: 5))
        #expect(TerminalCommand.parse("/HELP") == .help)
        #expect(TerminalCommand.parse("/msg bob") == .invalid("usage: /msg USER TEXT"))
        #expect(TerminalCommand.parse("/history 0") == .invalid("/history: the count must be positive"))
        #expect(TerminalCommand.parse("/frobnicate") == .invalid("unknown command /frobnicate (try /help)"))
        #expect(TerminalCommand.parse("hi\r") == .say("hi"))
    }

    @Test("line splitting: CRLF, partial lines across reads, a last line without newline, bad UTF-8 repaired")
    func lines() {
        var splitter = LineSplitter()
        #expect(splitter.append(Array("one\r\ntw".utf8)) == ["one"])
        #expect(splitter.append(Array("o\n\nthr".utf8)) == ["two", ""])
        #expect(splitter.append([0xFF, 0x0A]) == ["thr\u{FFFD}"])
        #expect(splitter.append(Array("ee".utf8)) == [])
        #expect(splitter.finish() == "ee")
        #expect(splitter.finish() == nil)
    }

    @Test("the line editor: typing, editing keys, UTF-8 split across reads, history, Ctrl-D")
    func editor() {
        var editor = TerminalLineEditor()
        #expect(editor.feed(Array("helo".utf8)) == [.changed])
        #expect(editor.feed([0x1B, 0x5B, 0x44]) == [.changed])  // ←
        #expect(editor.feed(Array("l".utf8)) == [.changed])
        #expect(editor.text == "hello" && editor.cursor == 4)
        #expect(editor.render(prompt: "> ") == "\r\u{1B}[K> hello\u{1B}[1D")
        #expect(editor.feed([0x05, 0x20, 0xC3]) == [.changed])  // Ctrl-E, space, half an é
        #expect(editor.feed([0xA9, 0x0A]) == [.line("hello é")])
        #expect(editor.feed(Array("two words".utf8) + [0x17]) == [.changed])  // Ctrl-W
        #expect(editor.text == "two ")
        #expect(editor.feed([0x15, 0x1B, 0x5B, 0x41]) == [.changed])  // Ctrl-U, ↑
        #expect(editor.text == "hello é")
        #expect(editor.feed([0x1B, 0x5B, 0x42]) == [.changed])  // ↓ back to the (empty) draft
        #expect(editor.text == "")
        #expect(editor.feed([0x04]) == [.endOfInput])
    }

    @Test("standard input from a pipe, a regular file and /dev/null: every line, the last one without a newline, then the end")
    func inputKinds() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let text = "/join lobby\r\nhello\nlast"
            let file = "/tmp/chat-node-input-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
            defer { unlink(file) }
            try #require(FileManager.default.createFile(atPath: file, contents: Data(text.utf8)))
            var pipeEnds: [Int32] = [0, 0]
            try #require(pipe(&pipeEnds) == 0)
            defer { close(pipeEnds[0]) }
            _ = Array(text.utf8).withUnsafeBytes { write(pipeEnds[1], $0.baseAddress, $0.count) }
            close(pipeEnds[1])
            let regular = open(file, O_RDONLY)
            let null = open("/dev/null", O_RDONLY)
            defer { close(regular); close(null) }
            for (name, descriptor, expected) in [
                ("pipe", pipeEnds[0], ["/join lobby", "hello", "last"]),
                ("file", regular, ["/join lobby", "hello", "last"]), ("null", null, [])
            ] {
                var splitter = LineSplitter()
                var lines: [String] = []
                var ended = 0
                let input = try TerminalInput(
                    fileDescriptor: descriptor, loop: loop, onBytes: { lines += splitter.append($0) },
                    onEnd: {
                        if let last = splitter.finish() { lines.append(last) }
                        ended += 1
                    })
                try #require(try spin(loop, for: .seconds(5)) { ended == 1 }, "\(name)")
                #expect(lines == expected, "\(name)")
                #expect(!input.isValid)
            }
        }
    }
}

@Suite("Terminal client (memory node, manual clock)")
struct TerminalClientTests {
    @Test("a wrong password: the script's end waits for the verdict; closed: login refused; status 1")
    func refusedLogin() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock, accounts: ["alice": "right"])
            let seen = Transcript()
            let impostor = node.terminal("alice", into: seen)  // password "pw"
            impostor.start()
            impostor.endOfInput()
            try #require(try node.runUntil { impostor.exitStatus != nil })
            #expect(
                seen.lines == [
                    "* connecting to 127.0.0.1:\(impostor.configuration.port) as alice",
                    "* closed: login refused (authentication failed): unknown user or wrong password"
                ])
            #expect(impostor.exitStatus == 1)
        }
    }

    @Test("a sender's control characters are shown, not obeyed")
    func hostileText() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let bobSees = Transcript()
            let bob = node.terminal("bob", into: bobSees)
            bob.start()
            try #require(try node.runUntil { bobSees.contains("* connected") })
            let mallory = node.client("mallory")
            mallory.start()
            try mallory.send("\u{1B}[2Jgotcha\nsecond line", to: .user("bob"))
            try #require(try node.runUntil { bobSees.contains("second line") }, "\(bobSees.dump)")
            #expect(bobSees.contains("[@mallory] mallory: \\e[2Jgotcha"))
            #expect(!bobSees.lines.contains { $0.unicodeScalars.contains { $0.value < 0x20 } })
            mallory.close()
            bob.quit()
            try #require(try node.runUntil { bob.exitStatus != nil })
        }
    }

    @Test("two clients: a script's lines run in order; join, room messages both ways, a direct message, presence, /rooms, the other's join and leave")
    func conversation() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let aliceSees = Transcript()
            let bobSees = Transcript()
            let alice = node.terminal("alice", into: aliceSees)
            let bob = node.terminal("bob", into: bobSees)
            // Given before the client is even connected: /join must hold "hello?" until it is answered.
            type("/join lobby", "hello?", into: alice)
            alice.start()
            try #require(try node.runUntil { aliceSees.contains("→ m1 stored") }, "\(aliceSees.dump)")
            #expect(!aliceSees.contains("!"), "\(aliceSees.dump)")
            #expect(alice.currentRoom == "lobby" && alice.prompt == "alice@lobby> ")

            bob.start()
            type("/join lobby", into: bob)
            try #require(try node.runUntil { bobSees.contains("* joined lobby (2 members)") }, "\(bobSees.dump)")
            try #require(try node.runUntil { aliceSees.contains("* bob is online") }, "\(aliceSees.dump)")
            try #require(try node.runUntil { aliceSees.contains("* bob joined lobby (2 members)") }, "\(aliceSees.dump)")
            #expect(!bobSees.contains("* bob joined"), "bob's own join is his answer, not a notice")

            type("hello bob", into: alice)
            try #require(try node.runUntil { bobSees.contains("[lobby] alice: hello bob") }, "\(bobSees.dump)")
            type("hi alice", into: bob)
            try #require(try node.runUntil { aliceSees.contains("[lobby] bob: hi alice") }, "\(aliceSees.dump)")
            type("/msg alice psst", into: bob)
            try #require(try node.runUntil { aliceSees.contains("[@bob] bob: psst") }, "\(aliceSees.dump)")
            #expect(!bobSees.contains("[lobby] alice: hello?"), "sent before bob joined: not his")

            // Own states, each message in order: queued (with its text), sent, delivered.
            try #require(try node.runUntil { aliceSees.contains("→ m2 stored") })
            let m2 = aliceSees.lines(startingWith: "→ m2 ")
            #expect(
                m2.count == 3 && m2[0] == "→ m2 queued [lobby]: hello bob" && m2[1] == "→ m2 sent"
                    && m2[2].hasPrefix("→ m2 stored (seq "), "\(m2)")
            try #require(try node.runUntil { bobSees.contains("→ m2 stored") })
            #expect(bobSees.lines(startingWith: "→ m2 ").first == "→ m2 queued [@alice]: psst")

            type("/rooms", into: bob)
            try #require(try node.runUntil { bobSees.contains("  lobby — 2 members, joined") }, "\(bobSees.dump)")
            type("/status", into: alice)
            try #require(try node.runUntil { aliceSees.contains("* no messages pending") })
            #expect(aliceSees.contains("* connected — alice at 127.0.0.1:\(alice.configuration.port), room lobby"), "\(aliceSees.dump)")
            type("/leave lobby", into: bob)
            try #require(try node.runUntil { aliceSees.contains("* bob left lobby (1 member)") }, "\(aliceSees.dump)")

            type("/quit", into: alice)
            try #require(try node.runUntil { alice.exitStatus != nil })
            #expect(alice.exitStatus == 0)
            #expect(aliceSees.lines.last == "* closed: closed by the user")
            try #require(try node.runUntil { bobSees.contains("* alice is offline") })
            bob.endOfInput()
            try #require(try node.runUntil { bob.exitStatus == 0 })
        }
    }

    @Test("/rooms lists every room when the node sends the list in several pages (250 rooms, 100 a page)")
    func roomsArePaged() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let names = (0..<250).map { String(format: "room-%03d", $0) }
            for name in names { _ = node.store.join(room: name, user: "someone", maximumRooms: nil) }
            let sees = Transcript()
            let ann = node.terminal("ann", into: sees)
            type("/rooms", into: ann)
            ann.start()
            try #require(try node.runUntil { sees.contains("  room-249 — 1 member") }, "\(sees.dump)")
            #expect(sees.lines(startingWith: "  room-").count == 250 && sees.count("rooms:") == 1, "\(sees.dump)")
            ann.endOfInput()
            try #require(try node.runUntil { ann.exitStatus != nil })
        }
    }

    @Test("history pages come newest first, each shown oldest first; /more goes on with before_seq until the start; direct history too")
    func historyPaging() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let bobSees = Transcript()
            let bob = node.terminal("bob", into: bobSees)
            bob.start()
            try #require(try node.runUntil { bobSees.contains("* connected") })
            let aliceSees = Transcript()
            let alice = node.terminal("alice", into: aliceSees)
            type("/join lobby", "one", "two", "three", "four", "five", "/msg bob direct", into: alice)
            alice.start()
            try #require(try node.runUntil { aliceSees.contains("→ m6 stored") }, "\(aliceSees.dump)")

            type("/history 2", into: alice)
            try #require(try node.runUntil { aliceSees.contains("(older: /more)") }, "\(aliceSees.dump)")
            type("/more", into: alice)
            try #require(try node.runUntil { aliceSees.count("(older: /more)") == 2 }, "\(aliceSees.dump)")
            type("/more", into: alice)
            try #require(try node.runUntil { aliceSees.contains("(start of the conversation)") }, "\(aliceSees.dump)")
            let start = try #require(aliceSees.index(of: "[lobby] history, oldest first:"))
            let entries = aliceSees.lines[start...].filter { $0.hasPrefix("  #") }.map { $0.split(separator: " ").last.map(String.init) ?? "" }
            #expect(entries == ["four", "five", "two", "three", "one"], "\(aliceSees.dump)")
            #expect(aliceSees.count("[lobby] older history, oldest first:") == 2)
            type("/more", into: alice)
            try #require(try node.runUntil { aliceSees.contains("! /more: no older messages in [lobby]") })

            type("/history @alice", into: bob)
            try #require(try node.runUntil { bobSees.contains("[@alice] history, oldest first:") }, "\(bobSees.dump)")
            try #require(try node.runUntil { bobSees.contains("  (start of the conversation)") })
            #expect(bobSees.lines.contains { $0.hasPrefix("  #") && $0.hasSuffix(" alice: direct") }, "\(bobSees.dump)")
            type("/history #lobby", into: bob)
            try #require(try node.runUntil { bobSees.contains("! /history [lobby]: refused (not a member)") }, "\(bobSees.dump)")

            alice.endOfInput()
            bob.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil && bob.exitStatus != nil })
            #expect(alice.exitStatus == 1, "the failed /more counts")
            #expect(bob.exitStatus == 1, "the refused /history counts")
        }
    }

    @Test("a message to an unknown user fails as refused; text without a room is an error; the exit status is 1")
    func failures() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let seen = Transcript()
            let alice = node.terminal("alice", into: seen)
            type("hello?", "/msg ghost boo", "/nonsense", into: alice)
            alice.start()
            alice.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil }, "\(seen.dump)")
            #expect(seen.contains("! no current room: /join ROOM first (or /msg USER TEXT)"))
            #expect(seen.contains("→ m1 failed: refused by the server (unknown recipient)"), "\(seen.dump)")
            #expect(seen.contains("! unknown command /nonsense (try /help)"))
            #expect(alice.exitStatus == 1 && alice.failureCount == 3)
        }
    }

    @Test("the node stops and comes back: disconnected, reconnecting …, connected; a message sent meanwhile is delivered")
    func reconnect() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let seen = Transcript()
            let alice = node.terminal("alice", into: seen)
            type("/join lobby", into: alice)
            alice.start()
            try #require(try node.runUntil { seen.contains("* joined lobby") })
            var stopped = false
            node.stop { stopped = true }
            try #require(try node.runUntil { stopped })
            try #require(try node.runUntil { seen.contains("* reconnecting in ") })
            #expect(seen.contains("* disconnected: server error (server shutting down)"), "\(seen.dump)")
            type("while you were away", "/history", into: alice)
            try #require(try node.runUntil { seen.contains("→ m1 queued [lobby]: while you were away") })
            #expect(!seen.contains("→ m1 sent"), "nowhere to send it yet")
            // Down long enough for several refused attempts.
            try #require(try node.runUntil { seen.count("* cannot connect to ") >= 2 }, "\(seen.dump)")

            node.restart()
            try #require(try node.runUntil { seen.contains("→ m1 stored") }, "\(seen.dump)")
            // The held /history ran once the connection was back, after the message went out.
            try #require(try node.runUntil { seen.contains("  (start of the conversation)") }, "\(seen.dump)")
            let down = try #require(seen.index(of: "* disconnected:"))
            let back = try #require(seen.index(of: "* connected", from: down))
            let retrying = seen.lines[down..<back].filter { $0.hasPrefix("* reconnecting in ") || $0.hasPrefix("* cannot connect to ") }
            #expect(retrying.count >= 3 && retrying.dropFirst().allSatisfy { $0.contains(" s (attempt ") }, "\(retrying)")
            #expect(try #require(seen.index(of: "→ m1 sent")) > back)
            #expect(seen.contains("  #") && seen.contains("alice: while you were away"))
            alice.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil })
            #expect(alice.exitStatus == 0, "\(seen.dump)")
        }
    }

    @Test("/retry, and Enter on an empty line at a terminal, connect at once during a 10-20 s reconnect wait; the help says so")
    func retryNow() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let seen = Transcript()
            let alice = node.terminal("alice", into: seen) {
                $0.isInteractive = true
                $0.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(20), maximumDelay: .seconds(20))
            }
            alice.start()
            try #require(try node.runUntil { seen.contains("* connected") })
            type("/retry", "/help", into: alice)
            try #require(try node.runUntil { seen.contains("* not waiting to reconnect") }, "\(seen.dump)")
            #expect(seen.lines.contains { $0.hasPrefix("  /retry") && $0.contains("try now") }, "\(seen.dump)")

            for (round, key) in ["/retry", ""].enumerated() {
                var stopped = false
                node.stop { stopped = true }
                try #require(try node.runUntil { stopped && seen.count("* reconnecting in ") == round + 1 }, "\(seen.dump)")
                node.restart()
                let asked = clock.now
                alice.receive(line: key)
                try #require(try node.runUntil { seen.count("* connected") == round + 2 }, "\(seen.dump)")
                #expect(clock.now - asked < .seconds(1), "connected \(clock.now - asked) after the key, not after the wait")
                #expect(seen.count("* retrying now") == round + 1, "\(seen.dump)")
            }
            alice.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil })
            #expect(alice.exitStatus == 0, "\(seen.dump)")
        }
    }

    @Test("end of input while the node is down: waits the drain time, then the message fails and the status is 1")
    func drainTimeout() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let seen = Transcript()
            let alice = node.terminal("alice", drain: .milliseconds(300), into: seen)
            type("/join lobby", into: alice)
            alice.start()
            try #require(try node.runUntil { seen.contains("* joined lobby") })
            var stopped = false
            node.stop { stopped = true }
            try #require(try node.runUntil { stopped })
            type("into the void", into: alice)
            let ended = loop.now
            alice.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil })
            #expect(loop.now - ended == .milliseconds(300), "the drain time from the end of input, then a close with no node to wait for")
            #expect(seen.contains("! gave up waiting after 0.3 s: 1 message not settled"), "\(seen.dump)")
            #expect(seen.contains("→ m1 failed: client closed before sending"), "\(seen.dump)")
            #expect(alice.exitStatus == 1)
        }
    }
}

@Suite("Terminal client: the process")
struct TerminalClientProcessTests {
    @Test("`chat-node client` as a process: lines from a pipe, end of input, exit 0, the delivered lines on stdout")
    func process() async throws {
        let binary = ChatNodeBinary.path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "chat-node not built at \(binary): run `swift build` first")
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            let bobSees = Transcript()
            let bob = terminal("bob", port: node.port, into: bobSees)
            type("/join lobby", into: bob)
            bob.start()
            try #require(try spin(loop) { bobSees.contains("* joined lobby") })

            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["client", "--user", "carol", "--port", "\(node.port)", "--log-level", "error", "--drain-seconds", "10"]
            process.environment = ["CHAT_NODE_PASSWORD": "pw"]
            let input = Pipe()
            let output = Pipe()
            let errors = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = errors
            try process.runWithNoSignalBlocked()
            input.fileHandleForWriting.write(Data("/join lobby\nhello from a script\n/msg bob psst\n".utf8))
            try input.fileHandleForWriting.close()
            let finished = try spin(loop, for: .seconds(30)) { process.exitIfEnded() != nil }
            if !finished { process.terminate() }
            let exit = try process.waitForExit()
            let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(finished)
            #expect(exit == .exited(0), "stdout:\n\(stdout)\nstderr:\n\(stderr)")
            let lines = stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "* connecting to 127.0.0.1:\(node.port) as carol")
            #expect(lines.contains("→ m1 queued [lobby]: hello from a script"))
            #expect(lines.contains { $0.hasPrefix("→ m1 stored (seq ") }, "\(stdout)")
            #expect(lines.contains { $0.hasPrefix("→ m2 stored (seq ") }, "\(stdout)")
            #expect(lines.last == "* closed: closed by the user")
            #expect(!stdout.contains("\u{1B}") && !stdout.contains("> "), "line mode: no escape codes, no prompt")
            try #require(try spin(loop) { bobSees.contains("[@carol] carol: psst") })
            #expect(bobSees.contains("[lobby] carol: hello from a script"))
            bob.endOfInput()
            try #require(try spin(loop) { bob.exitStatus != nil })
            node.stop()
        }
    }
}
