import BenchSupport
import CRunLoopSupport
import Glibc
import RunLoopKit

/// Heap bytes held per item after adding `count` items to a mode: glibc's bytes in use
/// (`mallinfo2()` uordblks + hblkhd, so allocated chunk sizes, a little above the requested sizes the harness
/// counts) before and after, plus the bytes in use in RunLoopKit's pool for libevent (libevent's events and
/// per-descriptor slots are there, not in malloc's heap), divided by the count. The loop keeps the items alive.
enum MemoryProbe {
    static func bytesPerItem(_ workload: String, count: Int, loop: RunLoop, mode: RunLoop.Mode) -> Double {
        var descriptors: [Int32] = []
        if workload == "memport" || workload == "memconn" {
            for _ in 0...count {
                var ends: [Int32] = [-1, -1]
                precondition(pipe(&ends) == 0)
                descriptors.append(ends[0])
            }
        }
        // One item first, so the mode's own first-use allocations are not counted.
        add(workload, index: 0, descriptors: descriptors, loop: loop, mode: mode)
        let before = heapAndPoolBytes()
        for index in 1...count { add(workload, index: index, descriptors: descriptors, loop: loop, mode: mode) }
        return Double(heapAndPoolBytes() - before) / Double(count)
    }

    private static func heapAndPoolBytes() -> Int {
        let pool = rlk_event_pool_stats()
        return bs_heap_in_use() + pool.small_bytes + pool.large_bytes
    }

    private static func add(_ workload: String, index: Int, descriptors: [Int32], loop: RunLoop, mode: RunLoop.Mode) {
        switch workload {
        case "memtimer":
            loop.add(RunLoopTimer(after: .seconds(3_600) + .nanoseconds(index)) { _ in }, forMode: mode)
        case "memsource":
            loop.add(RunLoopSource { _ in }, forMode: mode)
        case "memconn":
            // As RunLoopNet's TCPConnection makes its read source: both callouts hold their owner (one
            // reference, so no closure context), and the source goes to the common modes. One owner for
            // all, so that only the sources' own bytes are counted.
            let owner = ConnectionStandIn.shared
            try! loop.add(
                RunLoopPortSource(
                    fileDescriptor: descriptors[index], interest: .readable, label: "tcp read \(descriptors[index])",
                    cancel: { [owner] _, _ in owner.cancelled += 1 },
                    perform: { [owner] _, _ in owner.performed += 1 }),
                forMode: .common)
        default:
            try! loop.add(RunLoopPortSource(fileDescriptor: descriptors[index]) { _, _ in }, forMode: mode)
        }
    }
}

/// What a connection's callouts capture: one object.
private final class ConnectionStandIn: @unchecked Sendable {
    static let shared = ConnectionStandIn()
    var cancelled = 0
    var performed = 0
}
