import Testing

@testable import RunLoopKit

/// `OptionalInstant`: a deadline that may be none, in one word (issue 22's per-session slots).
@Suite("Optional instant")
struct OptionalInstantTests {
    @Test("none, an instant, and distantFuture (read back as none) round-trip")
    func roundTrip() {
        var instant = OptionalInstant()
        #expect(instant.value == nil)
        instant.value = LoopInstant(nanoseconds: 42)
        #expect(instant.value == LoopInstant(nanoseconds: 42))
        #expect(OptionalInstant(LoopInstant(nanoseconds: 0)).value == LoopInstant(nanoseconds: 0))
        instant.value = nil
        #expect(instant == OptionalInstant())
        #expect(OptionalInstant(.distantFuture).value == nil)
        #expect(MemoryLayout<OptionalInstant>.size == 8)
    }
}
