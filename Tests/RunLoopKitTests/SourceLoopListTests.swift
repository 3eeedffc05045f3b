import Glibc
import RunLoopTesting
import Testing

@testable import RunLoopKit

/// A source's list of the loops it is on holds them unretained (so a loop never gets the side table a
/// weak reference would give it): it must name a loop exactly while that loop holds the source.
@Suite struct SourceLoopListTests {
    /// Whether the Swift runtime moved `object`'s reference counts to a side table (which a weak
    /// reference to it does): the inline count word, after the metadata pointer, then has its two top
    /// bits set (UseSlowRC and the side-table mark), and every retain and release takes the slow path.
    private static func usesSideTable(_ object: AnyObject) -> Bool {
        let word = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
            .load(fromByteOffset: MemoryLayout<UInt>.size, as: UInt.self)
        return word >> 62 == 0b11
    }

    private final class Probe {}

    @Test("the side-table check tells an object a weak reference points to")
    func sideTableCheckSeesAWeakReference() {
        let probe = Probe()
        #expect(!Self.usesSideTable(probe))
        weak let weakProbe = probe
        #expect(Self.usesSideTable(probe))
        _ = weakProbe
    }

    /// What the cross-thread hand-offs touch: custom sources (the executor's own included), a port
    /// source, blocks from another thread, tasks on the loop. Timers and observers hold their loop
    /// unretained too, but debug builds keep a weak check beside that claim (LoopAttachment), so they
    /// are left out here.
    @Test("a loop with sources, blocks and tasks gets no side table")
    func loopWithSourcesGetsNoSideTable() async throws {
        let usedSideTable = try await onLoopThread { () -> Bool in
            let loop = RunLoop.current
            let pair = SocketPair()
            let source = RunLoopSource { _ in }
            let port = try RunLoopPortSource(fileDescriptor: pair.right) { _, _ in }
            loop.add(source, forMode: .default)
            loop.add(source, forMode: "M")
            loop.add(source, forMode: .common)
            try loop.add(port, forMode: .common)
            loop.addCommonMode("C")
            let ran = LockedBox(0)
            JoinableThread {
                loop.perform { ran.update { $0 += 1 } }
                Task(executorPreference: loop) { ran.update { $0 += 1 } }
            }.join()
            // Not runUntil: its observer is a loop claim, which debug builds check through a weak reference.
            for _ in 0..<100 where ran.get() < 2 { _ = try loop.run(.default, timeout: .milliseconds(100)) }
            #expect(ran.get() == 2)
            let used = Self.usesSideTable(loop)
            loop.remove(source, forMode: "M")
            source.invalidate()
            port.invalidate()
            return used
        }
        #expect(!usedSideTable)
    }

    @Test("the list follows the source's membership: adds, removals, common modes, invalidation")
    func listFollowsMembership() async throws {
        let (counts, cancelled, stillInC) = try await onLoopThread { () -> ([Int], [String], Bool) in
            let loop = RunLoop.current
            let cancelled = LockedBox<[String]>([])
            let source = RunLoopSource(cancel: { _, mode in cancelled.update { $0.append(mode.rawValue) } }) { _ in }
            var counts: [Int] = []
            loop.add(source, forMode: .default)
            loop.add(source, forMode: "M")
            counts.append(source.attachedLoopCount)  // 1: one loop, two modes
            loop.remove(source, forMode: .default)
            counts.append(source.attachedLoopCount)  // 1: still in M
            loop.remove(source, forMode: "M")
            counts.append(source.attachedLoopCount)  // 0
            // A common item taken out of its only mode, then into a mode made common later: on the loop
            // again, so invalidation finds it there.
            loop.add(source, forMode: .common)
            loop.remove(source, forMode: .default)
            counts.append(source.attachedLoopCount)  // 0
            loop.addCommonMode("C")
            counts.append(source.attachedLoopCount)  // 1
            cancelled.set([])
            source.invalidate()
            counts.append(source.attachedLoopCount)  // 0
            return (counts, cancelled.get(), loop.contains(source, forMode: "C"))
        }
        #expect(counts == [1, 1, 0, 0, 1, 0])
        #expect(cancelled == ["C"])
        #expect(!stillInC)
    }

    @Test("a loop leaves its sources' lists when its thread ends; invalidating them later touches no loop")
    func teardownLeavesTheLists() async throws {
        let cancelled = LockedBox(0)
        let source = RunLoopSource(cancel: { _, _ in cancelled.update { $0 += 1 } }) { _ in }
        let pair = SocketPair()
        let port = try RunLoopPortSource(fileDescriptor: pair.right) { _, _ in }
        @Sendable func addBoth() throws {
            let loop = RunLoop.current
            loop.add(source, forMode: .default)
            try loop.add(port, forMode: "M")
        }
        _ = try await onLoopThreads([addBoth, addBoth])
        #expect(source.attachedLoopCount == 0)
        #expect(port.attachedLoopCount == 0)
        #expect(cancelled.get() == 2)
        // The loops are gone (nothing else held them): an entry left behind would be a freed loop.
        source.invalidate()
        port.invalidate()
        #expect(cancelled.get() == 2)
    }

    /// An add from another thread while the loop's thread ends either lands before teardown (which
    /// takes the source off again) or is refused; either way no list names the loop afterwards. The race
    /// is narrow, so a regression shows often, not always.
    @Test("an add racing the loop's teardown leaves no entry behind")
    func addRacingTeardownLeavesNoEntry() {
        for _ in 0..<200 {
            let source = RunLoopSource { _ in }
            let published = LockedBox<RunLoop?>(nil)
            let go = Latch()
            let worker = JoinableThread {
                published.set(RunLoop.current)
                go.wait()
            }
            var loop = published.get()
            while loop == nil {
                sched_yield()
                loop = published.get()
            }
            published.set(nil)
            go.open()
            loop?.add(source, forMode: .default)
            loop = nil
            worker.join()
            #expect(source.attachedLoopCount == 0)
            source.invalidate()
        }
    }
}
