import TOMLKit

#if canImport(Glibc)
import Glibc
#endif

/// A `chat-node serve` config file: TOML, one `key = value` per setting, the keys those of
/// ``NodeSettingKey`` (no tables). Read with LebJe/TOMLKit (toml++ underneath): TOML has comments,
/// types an operator can see (`port = 7100`, `host = "::1"`), no indentation rules, and toml++ reports
/// the line and column of a syntax error. Of the listed packages, swift-configuration has no TOML
/// provider (JSON, YAML, plist) and no line numbers, and JSON has no comments. The cost: a clean
/// debug build of TOMLKit alone took 36 s of CPU, most of it toml++'s C++ (Samples/ChatNode/README.md).
///
/// A value; parse on any thread.
public struct ConfigFile: Equatable, Sendable {
    /// One `key = value` line.
    public struct Entry: Equatable, Sendable {
        public var key: String
        public var value: ConfigValue
        /// The line the key is on, found in the text (toml++ gives none for values).
        public var line: Int?
    }

    /// Where the file was read from, as errors name it.
    public let path: String
    /// The file's keys in the order it has them.
    public let entries: [Entry]

    /// Parses `text` (what `path` holds).
    /// - Throws: a syntax error, with its line as the parser gives it.
    public init(path: String, text: String) throws(ConfigErrors) {
        self.path = path
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigErrors([ConfigProblem(.file(path, line: error.source.begin.line), key: nil, error.description)])
        } catch {
            throw ConfigErrors([ConfigProblem(.file(path, line: nil), key: nil, "\(error)")])
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var entries: [Entry] = []
        for (key, value) in table {
            entries.append(Entry(key: key, value: Self.value(of: value), line: Self.line(of: key, in: lines)))
        }
        self.entries = entries.sorted { ($0.line ?? .max) < ($1.line ?? .max) }
    }

    /// Reads the file at `path`.
    /// - Throws: a file that cannot be read, or what ``init(path:text:)`` throws.
    public init(contentsOf path: String) throws(ConfigErrors) {
        guard let text = readTextFile(path) else {
            throw ConfigErrors([ConfigProblem(.file(path, line: nil), key: nil, "cannot read the file: \(lastErrorText())")])
        }
        try self.init(path: path, text: text)
    }

    private static func value(of value: any TOMLValueConvertible) -> ConfigValue {
        switch value.type {
        case .string: return value.string.map(ConfigValue.string) ?? .unsupported("a string")
        case .int: return value.int.map(ConfigValue.integer) ?? .unsupported("an integer")
        case .double: return value.double.map(ConfigValue.float) ?? .unsupported("a float")
        case .bool: return value.bool.map(ConfigValue.boolean) ?? .unsupported("a boolean")
        case .table: return .unsupported("a table")
        case .array: return .unsupported("an array")
        case .date, .time, .dateTime: return .unsupported("a date or time")
        }
    }

    /// The first line that assigns `key` (bare or quoted) or opens a table of that name.
    private static func line(of key: String, in lines: [Substring]) -> Int? {
        let spellings = [key, "\"\(key)\"", "'\(key)'"]
        for (index, line) in lines.enumerated() {
            let text = line.drop { $0 == " " || $0 == "\t" }
            for spelling in spellings where text.hasPrefix(spelling) {
                let after = text.dropFirst(spelling.count).drop { $0 == " " || $0 == "\t" }
                if after.hasPrefix("=") || after.hasPrefix(".") { return index + 1 }
            }
            if text.hasPrefix("[\(key)]") || text.hasPrefix("[[\(key)]]") || text.hasPrefix("[\(key).") { return index + 1 }
        }
        return nil
    }
}

/// The whole file as UTF-8 text; `nil` if it cannot be opened or read (errno says why).
private func readTextFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count >= 0 else { return nil }
        if count == 0 { return String(decoding: bytes, as: UTF8.self) }
        bytes += chunk[..<count]
    }
}

private func lastErrorText() -> String {
    String(cString: strerror(errno))
}
