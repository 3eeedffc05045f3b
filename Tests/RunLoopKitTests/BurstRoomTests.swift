import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// Issue 22: the loop's per-pass lists keep their room for the next pass, but not a crowd's: a pass
/// that ran a block per closed connection of 19,000 kept ~760 KB for as long as the process ran.
@Suite struct BurstRoomTests {
    @Test func aBurstOfBlocksGivesItsRoomBackOnceItRan() async throws {
        let (afterBurst, afterNext) = try await onLoopThread {
            let loop = RunLoop.current
            for _ in 0..<5_000 { loop.perform {} }
            _ = try loop.run(.default, timeout: .milliseconds(50))
            let afterBurst = loop.blockRoom
            loop.perform {}
            _ = try loop.run(.default, timeout: .milliseconds(50))
            return (afterBurst, loop.blockRoom)
        }
        #expect(afterBurst <= 2 * 1_024, "room kept after 5,000 blocks: \(afterBurst)")
        #expect(afterNext <= 2 * 1_024)
    }

    @Test func aCrowdOfCommonPortSourcesGivesItsTableRoomBackOnceGone() async throws {
        let (full, gone) = try await onLoopThread {
            let loop = RunLoop.current
            var pipes: [Int32] = []
            defer { pipes.forEach { close($0) } }
            var sources: [RunLoopPortSource] = []
            for _ in 0..<300 {
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0 else { break }
                pipes += ends
                let source = try RunLoopPortSource(fileDescriptor: ends[0]) { _, _ in }
                try loop.add(source, forMode: .common)
                sources.append(source)
            }
            let full = loop.commonPortRoom
            for source in sources { source.invalidate() }
            return (full, loop.commonPortRoom)
        }
        #expect(full >= 300)
        #expect(gone < 64, "room kept for \(gone) port sources")
    }
}
