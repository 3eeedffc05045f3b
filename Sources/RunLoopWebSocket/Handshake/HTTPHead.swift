/// The head of an HTTP/1.1 message (request or response), as the opening handshake needs it: the
/// start line split in three and the header fields in order. Parsing is strict about structure and
/// lenient about case, as RFC 9112 allows.
public struct HTTPHead: Sendable, Equatable {
    /// The three parts of the start line: method, target, version for a request; version, status,
    /// reason phrase for a response.
    public var startLine: (String, String, String) { (parts[0], parts[1], parts[2]) }
    private var parts: [String]
    /// Header fields in the order received, names as sent.
    public var fields: [(name: String, value: String)]

    public static func == (lhs: HTTPHead, rhs: HTTPHead) -> Bool {
        lhs.parts == rhs.parts && lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Parses `bytes`, which end with the blank line ("\r\n\r\n"). Returns `nil` for anything that
    /// is not a well-formed head (the caller refuses it with 400).
    public static func parse(_ bytes: [UInt8]) -> HTTPHead? {
        guard UTF8Validator.isValid(bytes) else { return nil }
        // "\r\n" is one Character in Swift, so this splits on CRLF only.
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        while lines.last == "" { lines.removeLast() }
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            // A space before the colon or an empty name is a smuggling vector; refuse it.
            guard !name.isEmpty, !name.contains(" "), !name.contains("\t") else { return nil }
            let value = trimmed(line[line.index(after: colon)...])
            fields.append((name, value))
        }
        return HTTPHead(parts: parts, fields: fields)
    }

    init(parts: [String], fields: [(name: String, value: String)]) {
        self.parts = parts
        self.fields = fields
    }

    /// Every value of the field `name` (case-insensitive), comma-joined as RFC 9110 §5.3 allows.
    public func value(of name: String) -> String? {
        let values = fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// Whether the comma-separated field `name` holds `token` (case-insensitive), e.g. `Connection:
    /// keep-alive, Upgrade`.
    public func field(_ name: String, containsToken token: String) -> Bool {
        guard let value = value(of: name) else { return false }
        return value.split(separator: ",").contains { trimmed($0).lowercased() == token.lowercased() }
    }
}

/// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
func trimmed(_ text: Substring) -> String {
    var slice = text
    while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
    while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
    return String(slice)
}
