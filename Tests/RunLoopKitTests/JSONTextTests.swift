import RunLoopKit
import Testing

@Suite("JSON text for the exports and JSON log lines")
struct JSONTextTests {
    @Test("quotes, backslashes, control characters and DEL are escaped; other text, non-ASCII included, is kept")
    func escapes() {
        #expect(JSONText.quoted("plain é ✓") == "\"plain é ✓\"")
        #expect(JSONText.quoted("a\"b\\c") == #""a\"b\\c""#)
        #expect(JSONText.quoted("\n\r\t") == #""\n\r\t""#)
        #expect(JSONText.quoted("\u{1}\u{1F}\u{7F}") == #""\u0001\u001f\u007f""#)
        #expect(JSONText.quoted("") == "\"\"")
    }
}
