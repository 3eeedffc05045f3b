/// Text for machine-read observability output: the timeline and trace exports here, and log
/// handlers that write JSON lines.
public enum JSONText {
    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped (RFC 8259),
    /// and DEL too, which JSON allows unescaped but TOML does not, so the result is also a TOML basic
    /// string. A pure function; any thread.
    public static func quoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
