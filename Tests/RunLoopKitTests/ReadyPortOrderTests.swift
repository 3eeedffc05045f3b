import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// The dispatch order of many ports ready in one iteration: ascending `order`, ties in the order
/// the sources were added — whatever order epoll reported their readiness in. A burst is taken off
/// the ready queue by sorting plain keys, and one that is already in order is not sorted at all
/// (issue 22): both must keep this order.
@Suite struct ReadyPortOrderTests {
    /// Adds `orders.count` ports (port i with `orders[i]`, added in index order), makes them ready in
    /// `readiness` order, runs one iteration and returns the indices in the order they were performed.
    private func performedOrder(orders: [Int], readiness: [Int]) async throws -> [Int] {
        try await onManualClockLoop { loop, _ in
            let mode = RunLoop.Mode("burst")
            let pairs = orders.map { _ in SocketPair() }
            var performed: [Int] = []
            var sources: [RunLoopPortSource] = []
            for (index, order) in orders.enumerated() {
                let source = try RunLoopPortSource(fileDescriptor: pairs[index].right, order: order) { source, _ in
                    _ = readAvailable(source.fileDescriptor)
                    performed.append(index)
                }
                try loop.add(source, forMode: mode)
                sources.append(source)
            }
            // Each becomes ready before the loop waits: one wait reports them all, in this order.
            for index in readiness { pairs[index].send("x") }
            var passes = 0
            loop.add(
                RunLoopObserver(activities: .beforeWaiting, repeats: true) { _, _ in passes += 1 }, forMode: mode)
            try loop.run(mode, timeout: .milliseconds(10))
            sources.forEach { $0.invalidate() }
            #expect(passes == 2, "all were performed in one iteration (the second waits out the run)")
            return performed
        }
    }

    private func dispatchOrder(_ orders: [Int]) -> [Int] {
        orders.indices.sorted { orders[$0] < orders[$1] || (orders[$0] == orders[$1] && $0 < $1) }
    }

    @Test func equalOrdersArePerformedInTheOrderTheyWereAddedWhateverTheReadiness() async throws {
        let orders = [Int](repeating: 0, count: 30)
        let reversed = try await performedOrder(orders: orders, readiness: Array((0..<30).reversed()))
        #expect(reversed == Array(0..<30))
        let interleaved = (0..<30).map { ($0 * 17) % 30 }
        #expect(Set(interleaved).count == 30)
        #expect(try await performedOrder(orders: orders, readiness: interleaved) == Array(0..<30))
    }

    @Test func mixedOrdersAreSortedByOrderThenByAddition() async throws {
        // More than the standard library's insertion-sort run (20), so the sort merges too; fewer than
        // libevent's first epoll batch (32), so one wait reports them all.
        let orders = (0..<30).map { [2, 0, -1, 1, 0, 3, 0][$0 % 7] }
        let readiness = (0..<30).map { ($0 * 23) % 30 }
        #expect(Set(readiness).count == 30)
        #expect(try await performedOrder(orders: orders, readiness: readiness) == dispatchOrder(orders))
        #expect(try await performedOrder(orders: orders, readiness: Array(0..<30)) == dispatchOrder(orders))
    }

    @Test func aBurstReadyInDispatchOrderIsPerformedInIt() async throws {
        let orders = [-3, -3, 0, 0, 0, 4, 9, 9]
        #expect(try await performedOrder(orders: orders, readiness: Array(0..<8)) == Array(0..<8))
    }
}
