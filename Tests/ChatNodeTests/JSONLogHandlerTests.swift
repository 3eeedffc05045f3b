import ChatNodeKit
import Foundation
import Glibc
import Logging
import RunLoopTesting
import Testing

/// `--log-format json`'s handler: one JSON object per line with time, level, label, message and
/// metadata; and the live level a reload changes for every logger at once.
@Suite("JSON log lines and the live log level")
struct JSONLogHandlerTests {
    @Test("a record is one line, one JSON object: time, level, label, message and metadata")
    func oneObject() throws {
        let lines = LockedBox<[String]>([])
        let fixed = timespec(tv_sec: 1_795_000_000, tv_nsec: 45_000_000)
        var logger = Logger(label: "chat-node") { label in
            JSONLogHandler(label: label, clock: { fixed }) { line in lines.update { $0.append(line) } }
        }
        logger[metadataKey: "node"] = "a"
        logger.info(
            "login failed from 127.0.0.1 \"quoted\"\nsecond line", metadata: ["peer": .dictionary(["port": "4000"]), "tries": .array(["1", "2"])])
        let line = try #require(lines.get().first)
        #expect(lines.get().count == 1)
        #expect(line.hasSuffix("}\n"))
        #expect(line.dropLast().contains("\n") == false, "one line: \(line)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["time"] as? String == "2026-11-18T11:06:40.045Z")
        #expect(object["level"] as? String == "info")
        #expect(object["label"] as? String == "chat-node")
        #expect(object["message"] as? String == "login failed from 127.0.0.1 \"quoted\"\nsecond line")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["node"] as? String == "a")
        #expect((metadata["peer"] as? [String: String]) == ["port": "4000"])
        #expect((metadata["tries"] as? [String]) == ["1", "2"])
    }

    @Test("a record without metadata has no metadata member; control characters are escaped")
    func noMetadata() throws {
        let lines = LockedBox<[String]>([])
        let logger = Logger(label: "x") { label in JSONLogHandler(label: label, clock: { timespec() }) { line in lines.update { $0.append(line) } } }
        logger.error("bell \u{7}")
        let line = try #require(lines.get().first)
        #expect(line == "{\"time\":\"1970-01-01T00:00:00.000Z\",\"level\":\"error\",\"label\":\"x\",\"message\":\"bell \\u0007\"}\n")
    }

    @Test("a live level changes what loggers made earlier let through; a logger's own level still wins")
    func liveLevel() {
        let capture = CapturingLogHandler()
        let level = LiveLogLevel(.info)
        let logger = Logger(label: "t") { _ in LiveLevelLogHandler(capture, level: level) }
        var quiet = logger
        quiet.logLevel = .error
        logger.debug("hidden")
        level.level = .debug
        logger.debug("shown")
        quiet.debug("quiet stays quiet")
        level.level = .warning
        logger.info("hidden again")
        #expect(capture.records.get().map(\.message) == ["shown"])
        #expect(logger.logLevel == .warning)
    }
}
