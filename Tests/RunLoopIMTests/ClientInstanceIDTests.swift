import Testing

@testable import RunLoopIM

/// Issue 22: a client instance is kept for every online session; a UUID's text in 16 bytes.
@Suite("Client instance IDs")
struct ClientInstanceIDTests {
    @Test("a lowercase UUID is kept as 16 bytes and comes back as the same text; any other text is kept as it is")
    func uuidsAreCompactAndExact() {
        let uuid = "0f1e2d3c-4b5a-4697-a8b9-cadbecfd0e1f"
        #expect(ClientInstanceID(uuid).isCompact && ClientInstanceID(uuid).text == uuid)
        for text in [
            "0F1E2D3C-4B5A-4697-A8B9-CADBECFD0E1F",  // uppercase: kept as text, so it comes back as sent
            "0f1e2d3c-4b5a-4697-a8b9-cadbecfd0e1",  // one digit short
            "0f1e2d3c4b5a-4697-a8b9-cadbecfd0e1f-", "0f1e2d3c-4b5a-4697-a8b9-cadbecfd0e1g", "laptop", ""
        ] {
            let id = ClientInstanceID(text)
            #expect(!id.isCompact && id.text == text)
        }
        #expect(ClientInstanceID(uuid) == ClientInstanceID(uuid))
        #expect(ClientInstanceID(uuid) != ClientInstanceID(uuid.uppercased()))
        #expect(ClientInstanceID("00000000-0000-0000-0000-000000000000").text == "00000000-0000-0000-0000-000000000000")
        #expect(ClientInstanceID("ffffffff-ffff-ffff-ffff-ffffffffffff").text == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }
}
