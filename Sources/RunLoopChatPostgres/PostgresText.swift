/// Values as libpq's text parameters carry them.
enum PostgresText {
    /// Whether PostgreSQL can store all of `texts`: its text type cannot hold NUL, and libpq would
    /// cut a parameter at the first one, silently storing a different value.
    static func isStorable(_ texts: String...) -> Bool { isStorable(texts) }

    static func isStorable(_ texts: [String]) -> Bool { !texts.contains { $0.utf8.contains(0) } }

    /// A `text[]` literal: every element double-quoted, with `"` and `\` escaped.
    static func array(_ values: [String]) -> String {
        let elements = values.map { value in
            "\"" + value.replacingAll(of: "\\", with: "\\\\").replacingAll(of: "\"", with: "\\\"") + "\""
        }
        return "{" + elements.joined(separator: ",") + "}"
    }

    /// A `bigint[]` literal.
    static func array(_ values: [Int64]) -> String { "{" + values.map(String.init).joined(separator: ",") + "}" }

    /// A boolean parameter.
    static func bool(_ value: Bool) -> String { value ? "t" : "f" }
}

extension String {
    /// Without Foundation: every `target` character replaced by `replacement`.
    fileprivate func replacingAll(of target: Character, with replacement: String) -> String {
        var result = ""
        result.reserveCapacity(utf8.count)
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}
