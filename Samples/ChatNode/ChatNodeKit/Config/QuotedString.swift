/// `text` quoted with quotes, backslashes and control characters escaped: a JSON string, and a TOML
/// basic string too (TOML took JSON's escapes), so log lines and `check-config` share it.
func quotedString(_ text: String) -> String {
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
