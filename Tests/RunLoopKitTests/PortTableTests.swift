import Glibc
import Testing

@testable import RunLoopKit

/// The mode's port table on its own: every registration found by its source, a descriptor's
/// registrations chained in the order they came, removal of any one (head, middle, end of a chain)
/// leaving exactly the others, across the table's growth.
@Suite struct PortTableTests {
    @Test func findsIteratesAndRemovesAcrossGrowthAndSharedDescriptors() throws {
        let store = try ModeStore(mode: "table", wakePort: WakeUpPort(), loopID: ObjectIdentifier(Self.self))
        var pipes: [Int32] = []
        defer { pipes.forEach { close($0) } }
        var registrations: [PortRegistration] = []
        var table = PortTable()
        var sequence: UInt64 = 0
        for _ in 0..<150 {
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            pipes += ends
            // Three sources on every read end: chains with more than one descriptor's entries too.
            for _ in 0..<3 {
                let source = try RunLoopPortSource(fileDescriptor: ends[0]) { _, _ in }
                sequence += 1
                let registration = PortRegistration(source: source, store: store, sequence: sequence)
                table.insert(registration)
                registrations.append(registration)
            }
        }
        #expect(table.count == 450)
        #expect(registrations.allSatisfy { table.registration(for: $0.source) === $0 })
        #expect(Set(table.map(ObjectIdentifier.init)) == Set(registrations.map(ObjectIdentifier.init)))
        // Per descriptor, in the order registered.
        for fd in Set(registrations.map(\.source.fileDescriptor)) {
            #expect(chained(fd, in: table) == registrations.filter { $0.source.fileDescriptor == fd }.map(\.sequence))
        }

        var random: UInt64 = 7
        var remaining = registrations
        while remaining.count > 100 {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            let removed = remaining.remove(at: Int((random >> 33) % UInt64(remaining.count)))
            let first = table.remove(removed)
            let second = table.remove(removed)
            #expect(first && !second, "removed once; a second removal finds nothing")
            #expect(removed.nextInBucket == nil)
        }
        #expect(table.count == 100)
        // Issue 22: the buckets of the 450 went back once a quarter of them held the rest.
        #expect(table.bucketCount <= 256, "buckets kept: \(table.bucketCount)")
        for fd in Set(remaining.map(\.source.fileDescriptor)) {
            #expect(chained(fd, in: table) == remaining.filter { $0.source.fileDescriptor == fd }.map(\.sequence))
        }
        #expect(Set(table.map(ObjectIdentifier.init)) == Set(remaining.map(ObjectIdentifier.init)))
        #expect(remaining.allSatisfy { table.registration(for: $0.source) === $0 })

        table.removeAll()
        #expect(table.isEmpty && table.map { $0 }.isEmpty)
        #expect(registrations.allSatisfy { $0.nextInBucket == nil && table.registration(for: $0.source) == nil })
    }

    /// The sequences of `fd`'s registrations, in the order its chain holds them.
    private func chained(_ fd: Int32, in table: PortTable) -> [UInt64] {
        var sequences: [UInt64] = []
        var current = table.chain(for: fd)
        while let registration = current {
            if registration.source.fileDescriptor == fd { sequences.append(registration.sequence) }
            current = registration.nextInBucket
        }
        return sequences
    }
}
