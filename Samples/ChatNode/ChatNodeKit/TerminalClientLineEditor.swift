/// A small line editor for an interactive session, fed raw key bytes (the terminal in non-canonical
/// mode without echo). It exists so that a message arriving while the user types can be printed above
/// the line being typed and the line drawn again — with the kernel's canonical mode the half-typed
/// line would be cut in two by the output and could not be redrawn.
///
/// Keys: printable text inserts at the cursor; Backspace, Delete, ←/→, Home/End (and Ctrl-A/E/B/F),
/// Ctrl-U (erase to start), Ctrl-K (erase to end), Ctrl-W (erase a word), ↑/↓ (and Ctrl-P/N) walk the
/// lines entered before, Ctrl-L redraws, Enter ends the line, Ctrl-D on an empty line ends the input,
/// Ctrl-C (when it reaches us as a byte) interrupts. Other escape sequences are ignored.
///
/// Pure value: no descriptor, no terminal; ``render(prompt:)`` says what to write.
public struct TerminalLineEditor: Sendable {
    /// What a burst of key bytes meant, in order.
    public enum Event: Equatable, Sendable {
        /// Enter: the line typed (it is cleared and added to the history).
        case line(String)
        /// The line or the cursor changed: draw it again.
        case changed
        /// Ctrl-D on an empty line.
        case endOfInput
        /// Ctrl-C.
        case interrupt
    }

    private enum Escape: Sendable {
        case none
        case started  // ESC
        case csi(String)  // ESC [ parameters
        case ss3  // ESC O
    }

    /// The line being typed.
    public private(set) var scalars: [Unicode.Scalar] = []
    /// The cursor, as an index into ``scalars``.
    public private(set) var cursor = 0
    /// Lines entered before, oldest first (consecutive duplicates once).
    public private(set) var history: [String] = []
    private var historyIndex: Int?
    private var draft: [Unicode.Scalar] = []
    private var utf8: [UInt8] = []
    private var escape = Escape.none
    /// Lines kept for ↑.
    public var historyLimit = 500

    public init() {}

    /// The line being typed, as text.
    public var text: String {
        var string = ""
        string.unicodeScalars.append(contentsOf: scalars)
        return string
    }

    /// Takes the bytes the terminal sent and returns what they meant.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Event] {
        var events: [Event] = []
        var changed = false
        func flushChange() {
            if changed { events.append(.changed) }
            changed = false
        }
        for byte in bytes {
            if case .none = escape {
            } else {
                changed = handleEscape(byte) || changed
                continue
            }
            if !utf8.isEmpty || byte >= 0x80 {
                utf8.append(byte)
                guard let scalar = decodeUTF8() else { continue }
                insert(scalar)
                changed = true
                continue
            }
            switch byte {
            case 0x0D, 0x0A:
                let line = text
                if !line.isEmpty, history.last != line {
                    history.append(line)
                    if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
                }
                scalars.removeAll()
                cursor = 0
                historyIndex = nil
                changed = false
                events.append(.line(line))
            case 0x04:
                if scalars.isEmpty {
                    flushChange()
                    events.append(.endOfInput)
                } else if cursor < scalars.count {
                    scalars.remove(at: cursor)
                    changed = true
                }
            case 0x03:
                flushChange()
                events.append(.interrupt)
            case 0x7F, 0x08:
                if cursor > 0 {
                    cursor -= 1
                    scalars.remove(at: cursor)
                    changed = true
                }
            case 0x01: cursor = 0; changed = true
            case 0x05: cursor = scalars.count; changed = true
            case 0x02: cursor = max(0, cursor - 1); changed = true
            case 0x06: cursor = min(scalars.count, cursor + 1); changed = true
            case 0x15:
                scalars.removeSubrange(0..<cursor)
                cursor = 0
                changed = true
            case 0x0B:
                scalars.removeSubrange(cursor...)
                changed = true
            case 0x17:
                var start = cursor
                while start > 0, scalars[start - 1] == " " { start -= 1 }
                while start > 0, scalars[start - 1] != " " { start -= 1 }
                scalars.removeSubrange(start..<cursor)
                cursor = start
                changed = true
            case 0x0C: changed = true
            case 0x10: recall(older: true); changed = true
            case 0x0E: recall(older: false); changed = true
            case 0x1B: escape = .started
            case 0x09: insert(" "); changed = true
            case 0x20...0x7E:
                insert(Unicode.Scalar(byte))
                changed = true
            default:
                break  // other control bytes mean nothing here
            }
        }
        flushChange()
        return events
    }

    /// What to write to show the line: back to the start of the row, clear it, the prompt and the
    /// line, and the cursor moved back to its place.
    public func render(prompt: String) -> String {
        let back = scalars.count - cursor
        return "\r\u{1B}[K" + prompt + text + (back > 0 ? "\u{1B}[\(back)D" : "")
    }

    /// What to write to remove the line before printing something else on its row.
    public static let clearRow = "\r\u{1B}[K"

    private mutating func insert(_ scalar: Unicode.Scalar) {
        scalars.insert(scalar, at: cursor)
        cursor += 1
    }

    /// Returns whether the line changed.
    private mutating func handleEscape(_ byte: UInt8) -> Bool {
        switch escape {
        case .none:
            return false
        case .started:
            switch byte {
            case UInt8(ascii: "["): escape = .csi("")
            case UInt8(ascii: "O"): escape = .ss3
            default: escape = .none
            }
            return false
        case .ss3:
            escape = .none
            return key(final: byte, parameters: "")
        case .csi(let parameters):
            if (0x40...0x7E).contains(byte) {
                escape = .none
                return key(final: byte, parameters: parameters)
            }
            escape = .csi(parameters + String(UnicodeScalar(byte)))
            return false
        }
    }

    private mutating func key(final: UInt8, parameters: String) -> Bool {
        switch (final, parameters) {
        case (UInt8(ascii: "A"), _): recall(older: true)
        case (UInt8(ascii: "B"), _): recall(older: false)
        case (UInt8(ascii: "C"), _): cursor = min(scalars.count, cursor + 1)
        case (UInt8(ascii: "D"), _): cursor = max(0, cursor - 1)
        case (UInt8(ascii: "H"), _), (UInt8(ascii: "~"), "1"), (UInt8(ascii: "~"), "7"): cursor = 0
        case (UInt8(ascii: "F"), _), (UInt8(ascii: "~"), "4"), (UInt8(ascii: "~"), "8"): cursor = scalars.count
        case (UInt8(ascii: "~"), "3"):
            guard cursor < scalars.count else { return false }
            scalars.remove(at: cursor)
        default:
            return false
        }
        return true
    }

    private mutating func recall(older: Bool) {
        guard !history.isEmpty else { return }
        let index: Int?
        switch (historyIndex, older) {
        case (nil, true):
            draft = scalars
            index = history.count - 1
        case (nil, false):
            return
        case (let current?, true):
            index = max(0, current - 1)
        case (let current?, false):
            index = current + 1 < history.count ? current + 1 : nil
        }
        historyIndex = index
        scalars = index.map { Array(history[$0].unicodeScalars) } ?? draft
        cursor = scalars.count
    }

    /// Decodes the collected bytes once they form one scalar; drops a malformed sequence.
    private mutating func decodeUTF8() -> Unicode.Scalar? {
        let lead = utf8[0]
        let length: Int
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default:
            utf8.removeAll()
            return nil
        }
        if utf8.count > 1, utf8.last! & 0xC0 != 0x80 {
            utf8.removeAll()  // a broken sequence: forget it rather than insert garbage
            return nil
        }
        guard utf8.count == length else { return nil }
        defer { utf8.removeAll() }
        var iterator = utf8.makeIterator()
        var decoder = UTF8()
        if case .scalarValue(let scalar) = decoder.decode(&iterator) { return scalar }
        return nil
    }
}
