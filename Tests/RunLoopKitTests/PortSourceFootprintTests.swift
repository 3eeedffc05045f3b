import Glibc
import RunLoopTesting
import Testing

@testable import RunLoopKit

/// What a server pays per connection for its read source (issue 22): the source is one heap block of
/// at most 144 bytes even with a cancel callout, and the loop's set of common port sources holds one
/// reference per source. And the callouts and descriptor identity that the layout moved still behave.
@Suite struct PortSourceFootprintTests {
    @Test func aPortSourceWithACancelCalloutIsOneHeapBlockOfAt144Bytes() throws {
        let pair = SocketPair()
        let owner = Trace()
        // As a connection makes its read source: each callout captures one reference, so no context.
        let source = try RunLoopPortSource(
            fileDescriptor: pair.right, label: "tcp read \(pair.right)",
            cancel: { [owner] _, _ in owner.append("cancel") },
            perform: { [owner] _, _ in owner.append("perform") })
        // A request of at most 136 bytes is a 144-byte chunk; one field more, or the identity's
        // optional tag back, takes the source to the next chunk. The request, not the block's usable
        // size: malloc may hand out a larger free block whole.
        #expect((100...136).contains(instanceSize(of: RunLoopPortSource.self)))  // its fields alone pass 100
        #expect(mallocUsableSize(Unmanaged.passUnretained(source).toOpaque()) >= instanceSize(of: RunLoopPortSource.self))
        // The base's callout box stays unmade: it was a second block, 64 bytes of heap.
        let base = Mirror(reflecting: source).superclassMirror
        let box = base?.children.first { $0.label == "callouts" }?.value
        #expect(box.map { Mirror(reflecting: $0).children.isEmpty } == true, "the callout box was made")
        source.invalidate()
    }

    @Test func aPortSourcesScheduleAndCancelCalloutsRunOncePerModeItJoinsAndLeaves() async throws {
        let events = try await onManualClockLoop { loop, _ in
            let pair = SocketPair()
            let log = Trace()
            let other = RunLoop.Mode("other")
            let source = try RunLoopPortSource(
                fileDescriptor: pair.right,
                schedule: { _, mode in log.append("schedule(\(modeName(mode)))") },
                cancel: { _, mode in log.append("cancel(\(modeName(mode)))") },
                perform: { _, _ in })
            try loop.add(source, forMode: .default)
            try loop.add(source, forMode: other)
            try loop.add(source, forMode: other)  // already there: no callout
            loop.remove(source, forMode: .default)
            source.invalidate()  // leaves `other`
            source.invalidate()
            return log.events
        }
        #expect(events == ["schedule(default)", "schedule(other)", "cancel(default)", "cancel(other)"])
    }

    @Test func aPortSourceWithOnlyACancelCalloutIsToldWhenItsLoopsThreadEnds() async throws {
        let log = Trace()
        let pair = SocketPair()
        try await onLoopThread {
            let source = try RunLoopPortSource(
                fileDescriptor: pair.right,
                cancel: { _, mode in log.append("cancel(\(modeName(mode)))") },
                perform: { _, _ in })
            try RunLoop.current.add(source, forMode: .common)
        }
        #expect(log.events == ["cancel(default)"])
    }

    @Test func commonPortSourcesAreKeptOneReferenceASlot() async throws {
        #expect(MemoryLayout<PortByIdentity>.stride == MemoryLayout<AnyObject>.stride)
        let (inCommon, inNewMode, afterRemoval) = try await onLoopThread {
            let loop = RunLoop.current
            let pairs = (0..<3).map { _ in SocketPair() }
            let sources = try pairs.map { pair in try RunLoopPortSource(fileDescriptor: pair.right) { _, _ in } }
            for source in sources { try loop.add(source, forMode: .common) }
            try loop.add(sources[0], forMode: .common)  // twice: still one member
            loop.remove(sources[1], forMode: .common)
            let later = RunLoop.Mode("later")
            loop.addCommonMode(later)
            let inCommon = sources.map { loop.contains($0, forMode: .common) }
            let inNewMode = sources.map { loop.contains($0, forMode: later) }
            loop.remove(sources[0], forMode: .common)
            let afterRemoval = sources.map { loop.contains($0, forMode: later) }
            for source in sources { source.invalidate() }
            return (inCommon, inNewMode, afterRemoval)
        }
        #expect(inCommon == [true, false, true])
        #expect(inNewMode == [true, false, true])
        #expect(afterRemoval == [false, false, true])
    }

    @Test func aDescriptorThatNamesNoFileHasTheUnknownIdentity() throws {
        let pair = SocketPair()
        let open = DescriptorIdentity(of: pair.right)
        #expect(open != .unknown)
        #expect(open == DescriptorIdentity(of: pair.right))
        #expect(open != DescriptorIdentity(of: pair.left))
        // Above the process's open-file limit (20,000 here), so no other test can open it meanwhile.
        let neverOpen: Int32 = 1_000_000_000
        #expect(DescriptorIdentity(of: neverOpen) == .unknown)
        #expect(DescriptorIdentity(of: -1) == DescriptorIdentity(of: neverOpen))
    }
}

/// The bytes an instance of `type` asks of the allocator: the class metadata's instance size (Swift's
/// stable ABI, docs/ABI/TypeMetadata.rst: after the isa, superclass, flags and instance address point
/// words on a platform without Objective-C interoperability).
private func instanceSize(of type: AnyClass) -> Int {
    let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
    return Int(metadata.load(fromByteOffset: 24, as: UInt32.self))
}

/// glibc's `malloc_usable_size` (in malloc.h, which the Glibc module leaves out).
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int
