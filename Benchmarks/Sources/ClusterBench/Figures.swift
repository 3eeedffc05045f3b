import ChatBenchKit
import Glibc
import RunLoopKit

/// Prints one figure for the table script: `<prefix>.<figure> <value>`.
func emit(_ prefix: String, _ figure: String, _ value: some CustomStringConvertible) {
    print("\(prefix).\(figure) \(value)")
}

/// The value at percentile `p` of sorted nanoseconds, in microseconds (0 when empty).
func percentileMicroseconds(_ sorted: [UInt64], _ p: Int) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return Double(sorted[min(sorted.count - 1, sorted.count * p / 100)]) / 1e3
}

/// CPU used so far by each node and by the services together (each with its children), to subtract.
struct CPUSnapshot {
    let nodes: [UInt64]
    let services: UInt64
    let client: UInt64

    init(_ options: Options) {
        nodes = options.pids.map { ProcessStats.cpuNanoseconds(of: $0) }
        services = options.servicePids.reduce(0) { $0 + ProcessStats.treeCPUNanoseconds(of: $1) }
        client = ProcessStats.ownCPUNanoseconds()
    }
}

/// Runs the loop until `done` holds or `seconds` pass; returns whether `done` holds.
@discardableResult
func runLoop(_ loop: RunLoop, seconds: Int, until done: () -> Bool) -> Bool {
    let deadline = loop.now + .seconds(Int64(seconds))
    while !done(), loop.now < deadline {
        _ = try? loop.run(.default, timeout: .milliseconds(20))
    }
    return done()
}
