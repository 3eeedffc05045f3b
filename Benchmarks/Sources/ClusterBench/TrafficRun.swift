import BenchSupport
import ChatBenchKit
import Glibc

/// `cluster-bench traffic`: log everyone in, send, wait for every delivery, print the figures and the
/// counts. Returns whether the counts are right: every message acknowledged, every recipient shown
/// each of its messages once.
func runTraffic(_ options: Options) -> Bool {
    let traffic = Traffic(options: options)
    let loop = traffic.crowd.loop
    let rampStart = bs_now_ns()
    traffic.crowd.start()
    let ready = runLoop(loop, seconds: options.readyTimeout) { traffic.isReady || traffic.crowd.disconnects > 0 }
    let rampSeconds = Double(bs_now_ns() - rampStart) / 1e9
    guard ready, traffic.crowd.disconnects == 0 else {
        print("cluster-bench: not ready: \(traffic.crowd.online) of \(options.recipients + 1) online in \(Int(rampSeconds)) s")
        for failure in traffic.crowd.failures { print("  \(failure)") }
        return false
    }
    // The logins' presence fan-out settles before the window.
    runLoop(loop, seconds: 1) { false }

    let before = CPUSnapshot(options)
    let windowStart = bs_now_ns()
    traffic.go()
    runLoop(loop, seconds: options.timeout) { traffic.isFinished }
    let windowEnd = bs_now_ns()
    let after = CPUSnapshot(options)

    let latencies = traffic.latencies.sorted()
    let deliveries = latencies.count
    let wall = Double((traffic.lastDelivery > traffic.firstSend ? traffic.lastDelivery : windowEnd) - traffic.firstSend) / 1e9
    let nodeCPU = zip(after.nodes, before.nodes).map { Double($0 - $1) / 1e6 }
    let nodeCPUTotal = nodeCPU.reduce(0, +)
    let serviceCPU = Double(after.services - before.services) / 1e6
    let perDelivery = { (milliseconds: Double) in milliseconds * 1e3 / Double(max(1, deliveries)) }

    let p = "cluster"
    emit(p, "label", options.label)
    emit(p, "nodes", options.ports.count)
    emit(p, "to", options.target.rawValue)
    emit(p, "recipients", options.recipients)
    emit(p, "spread", options.spread.rawValue)
    emit(p, "messages", options.messages)
    emit(p, "window", options.window)
    emit(p, "ramp_s", rampSeconds)
    emit(p, "login_retries", traffic.crowd.loginRetries)
    emit(p, "presence_notices", traffic.crowd.presenceNotices)
    emit(p, "sent", traffic.sent)
    emit(p, "acknowledged", traffic.acknowledged)
    emit(p, "failed", traffic.failed)
    emit(p, "deliveries_expected", traffic.expectedDeliveries)
    emit(p, "deliveries", deliveries)
    emit(p, "recipients_complete", traffic.recipientsComplete)
    emit(p, "duplicates_shown", traffic.duplicatesShown)
    emit(p, "duplicates_dropped", traffic.crowd.duplicatesDropped)
    emit(p, "foreign", traffic.foreign)
    emit(p, "disconnects", traffic.crowd.disconnects)
    emit(p, "wall_s", wall)
    emit(p, "deliveries_per_s", Double(deliveries) / max(wall, 1e-9))
    emit(p, "latency_p50_us", percentileMicroseconds(latencies, 50))
    emit(p, "latency_p99_us", percentileMicroseconds(latencies, 99))
    emit(p, "latency_max_us", latencies.last.map { Double($0) / 1e3 } ?? 0)
    emit(p, "node_cpu_ms", nodeCPUTotal)
    emit(p, "node_cpu_ms_each", nodeCPU.map { String(Int($0.rounded())) }.joined(separator: ","))
    emit(p, "node_cpu_per_delivery_us", perDelivery(nodeCPUTotal))
    emit(p, "service_cpu_ms", serviceCPU)
    emit(p, "service_cpu_per_delivery_us", perDelivery(serviceCPU))
    emit(p, "client_cpu_ms", Double(after.client - before.client) / 1e6)
    emit(p, "window_s", Double(windowEnd - windowStart) / 1e9)
    for failure in traffic.crowd.failures { print("cluster-bench: \(failure)") }
    let complete =
        traffic.acknowledged == options.messages && traffic.failed == 0 && deliveries == traffic.expectedDeliveries
        && traffic.recipientsComplete == options.recipients && traffic.duplicatesShown == 0 && traffic.foreign == 0
    if !complete {
        print(
            "cluster-bench: incomplete: \(deliveries) of \(traffic.expectedDeliveries) deliveries, \(traffic.acknowledged) of \(options.messages) acknowledged"
        )
    }
    fflush(nil)
    return complete
}
