import RunLoopKit

/// `text` quoted as a JSON string, which is a TOML basic string too (TOML took JSON's escapes), so log
/// lines and `check-config` share RunLoopKit's rule.
func quotedString(_ text: String) -> String { JSONText.quoted(text) }
