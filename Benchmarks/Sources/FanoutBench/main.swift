// fanout-bench: messages per second through one chat node, one room, N receiving clients (issue 10).
// The node runs in its own process, started by Scripts/fanout.sh (which also runs the same workload
// on mosquitto with Scripts/mqtt_fanout.py); this process holds the clients: N subscribers on the
// main thread's loop, the publisher on a second thread with its own loop.
//
//   fanout-bench --port P --pid PID [--subscribers 50] [--messages 5000] [--window 100] [--payload 64]
//                [--logins-in-flight 4]
//
// Prints `fanout.<figure> <value>` lines for Scripts/fanout_table.py. Loopback only; it ends by itself
// (ready timeout, then the fan-out timeout) and exits without logging out.
import BenchSupport
import ChatBenchKit
import Glibc
import RunLoopKit

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    print("fanout-bench: bad or missing value for \(error.flag)\n\(Options.usage)")
    exit(2)
}

func emit(_ figure: String, _ value: some CustomStringConvertible) { print("fanout.\(figure) \(value)") }

/// The node's RSS before any client connected: the baseline of RSS per client.
let rssIdle = ProcessStats.residentBytes(of: options.pid)
guard rssIdle > 0 else {
    print("fanout-bench: cannot read /proc/\(options.pid)/status")
    exit(1)
}

// A descriptor per client: a room of 10,000 needs more than the usual 1,024.
FileLimit.raise(wanted: options.subscribers + 64)
let loop = RunLoop.current
let subscribers = Subscribers(options: options)
let publisher = PublisherThread(options: options)
let rampStart = bs_now_ns()

// The publisher first, alone: the node's one-off costs of a first client (its password-hashing
// threads, SQLite's caches warming) land between the idle RSS and this one, so the RSS the
// subscribers add after it is the marginal cost of a connected client.
publisher.start()
guard bs_sem_wait_ms(publisher.ready, Int32(options.readyTimeout * 1000)) == 0, publisher.isReady else {
    print("fanout-bench: the publisher did not come online and join within \(options.readyTimeout) s")
    exit(1)
}
// (This loop holds nothing yet, so it cannot be run to wait: sleep instead.)
usleep(300_000)
let rssOneClient = ProcessStats.residentBytes(of: options.pid)

subscribers.connect()
let readyBy = loop.now + .seconds(Int64(options.readyTimeout))
while loop.now < readyBy, subscribers.failures.isEmpty, subscribers.joined < options.subscribers {
    _ = try? loop.run(.default, timeout: .milliseconds(5))
}
guard subscribers.joined == options.subscribers else {
    print("fanout-bench: not ready: \(subscribers.joined) of \(options.subscribers) subscribers joined")
    for failure in subscribers.failures.prefix(10) { print("  \(failure)") }
    exit(1)
}
let rampSeconds = Double(bs_now_ns() - rampStart) / 1e9
// Let the login fan-out settle (each login sends PRESENCE to every session) before measuring RSS.
_ = try? loop.run(.default, timeout: .milliseconds(500))
let rssOnline = ProcessStats.residentBytes(of: options.pid)

// The measured window: from "go" until the last of M × N deliveries (or the timeout).
let expected = options.messages * options.subscribers
subscribers.expected = expected
let windowStart = bs_now_ns()
let serverCPUStart = ProcessStats.cpuNanoseconds(of: options.pid)
let serverWaitStart = ProcessStats.runQueueWaitNanoseconds(of: options.pid)
let ownCPUStart = ProcessStats.ownCPUNanoseconds()
publisher.go()
let deadline = loop.now + .seconds(Int64(options.timeout))
while subscribers.received < expected, loop.now < deadline {
    _ = try? loop.run(.default, timeout: .milliseconds(100))
}
let windowEnd = bs_now_ns()
let serverCPU = ProcessStats.cpuNanoseconds(of: options.pid) - serverCPUStart
let serverWait = ProcessStats.runQueueWaitNanoseconds(of: options.pid) - serverWaitStart
let ownCPU = ProcessStats.ownCPUNanoseconds() - ownCPUStart
let rssAfter = ProcessStats.residentBytes(of: options.pid)
// The publisher's last acknowledgements come with the last deliveries; wait for its report (asked for
// at once when deliveries are missing: the window closed on a timeout).
if subscribers.received < expected { publisher.stop() }
_ = bs_sem_wait_ms(publisher.done, 10_000)
let sent = publisher.report

let latencies = subscribers.latencies.sorted()
func percentile(_ p: Int) -> Double {
    guard !latencies.isEmpty else { return 0 }
    return Double(latencies[min(latencies.count - 1, latencies.count * p / 100)]) / 1e3
}
let firstSend = sent.firstSend > 0 ? sent.firstSend : windowStart
let wall = Double((subscribers.lastDelivery > firstSend ? subscribers.lastDelivery : windowEnd) - firstSend) / 1e9
let window = Double(windowEnd - windowStart) / 1e9
let clients = options.subscribers + 1

emit("system", "chat-node")
emit("subscribers", options.subscribers)
emit("messages", options.messages)
emit("window", options.window)
emit("payload_bytes", options.payload)
emit("ramp_s", rampSeconds)
emit("logins_in_flight", options.loginsInFlight)
emit("login_retries", subscribers.loginRetries)
emit("published", sent.acknowledged)
emit("publish_failed", sent.failed)
emit("deliveries_expected", expected)
emit("deliveries", subscribers.received)
emit("subscribers_complete", subscribers.receivedBy.filter { $0 == options.messages }.count)
emit("duplicates_dropped", subscribers.duplicatesDropped)
emit("unreadable", subscribers.unreadable)
emit("wall_s", wall)
emit("deliveries_per_s", Double(subscribers.received) / max(wall, 1e-9))
emit("messages_per_s", Double(sent.acknowledged) / max(wall, 1e-9))
emit("latency_p50_us", percentile(50))
emit("latency_p99_us", percentile(99))
emit("latency_max_us", latencies.last.map { Double($0) / 1e3 } ?? 0)
emit("rss_idle_kib", rssIdle / 1024)
emit("rss_online_kib", rssOnline / 1024)
emit("rss_per_client_kib", Double(rssOnline - rssIdle) / 1024 / Double(clients))
emit("rss_one_client_kib", rssOneClient / 1024)
emit("rss_per_subscriber_kib", Double(rssOnline - rssOneClient) / 1024 / Double(options.subscribers))
emit("rss_after_kib", rssAfter / 1024)
emit("window_s", window)
emit("server_cpu_ms", Double(serverCPU) / 1e6)
emit("server_cpu_per_delivery_us", Double(serverCPU) / 1e3 / Double(max(1, subscribers.received)))
emit("server_runqueue_wait_ms", Double(serverWait) / 1e6)
emit("client_cpu_ms", Double(ownCPU) / 1e6)
emit("client_threads", 2)
for failure in (subscribers.failures + sent.failures).prefix(10) { print("fanout-bench: \(failure)") }
fflush(nil)
let complete = subscribers.received == expected && sent.acknowledged == options.messages
if !complete {
    print("fanout-bench: incomplete: \(subscribers.received) of \(expected) deliveries, \(sent.acknowledged) of \(options.messages) acknowledged")
}
exit(complete ? 0 : 1)
