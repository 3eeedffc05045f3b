import Testing

@testable import RunLoopIM

/// What every idle logged-in connection's session asks of malloc (issue 22): glibc hands out chunks in
/// 16-byte steps with an 8-byte header, so a session of at most 248 bytes takes a 256-byte chunk, one
/// byte more a 272-byte one.
@Suite("The server session's size")
struct SessionObjectFootprintTests {
    @Test("a session fits a 256-byte heap chunk: no inbox retry timer of its own, a deadline slot of three words")
    func sessionFitsItsChunk() {
        #expect(instanceSize(of: IMServerSession.self) <= 248)
    }
}

/// The bytes an instance of `type` asks of the allocator: the class metadata's instance size (Swift's
/// stable ABI, docs/ABI/TypeMetadata.rst: after the isa, superclass, flags and instance address point
/// words on a platform without Objective-C interoperability).
private func instanceSize(of type: AnyClass) -> Int {
    let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
    return Int(metadata.load(fromByteOffset: 24, as: UInt32.self))
}
