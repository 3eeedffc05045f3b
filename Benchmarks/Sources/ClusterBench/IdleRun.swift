import BenchSupport
import ChatBenchKit
import Glibc
import RunLoopKit

/// `cluster-bench idle`: `count` clients spread over the nodes log in (users LABEL<first>…) and stay,
/// heartbeating every `heartbeat` seconds. Prints progress every 5 s while they log in, `idle.online`
/// once all are (or the ready timeout passed: then how many were), then holds them until the stop file
/// exists and prints what the window saw. Returns whether all were online and every one of them
/// heartbeated, answered, through the window without a disconnect.
func runIdle(_ options: Options) -> Bool {
    let files = FileLimit.raise(wanted: options.count + 64)
    guard files >= options.count + 64 else {
        print("cluster-bench: the open-file limit (\(files)) is too low for \(options.count) connections in one process")
        return false
    }
    let crowd = Crowd(ports: options.ports, loginsInFlight: options.loginsInFlight, password: "cluster", countsHeartbeats: true) {
        configuration in
        configuration.heartbeat = .fixed(.seconds(Int64(options.heartbeat)))
        configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
    }
    let loop = crowd.loop
    let start = bs_now_ns()
    var added = 0
    func addMembers(upTo due: Int) {
        while added < due {
            crowd.add(user: "\(options.label)\(options.first + added)", node: added % options.ports.count)
            added += 1
        }
    }
    // Paced: a client's heartbeats come every period from its login, so logins at an even pace over one
    // period spread the crowd's heartbeats evenly (a fast server's logins would otherwise bunch them into
    // a burst, and fewer wake-ups would serve more heartbeats each).
    let pacer = RunLoopTimer(after: .zero, repeating: .milliseconds(5)) { timer in
        let elapsed = Double(bs_now_ns() - start) / 1e9
        addMembers(upTo: min(options.count, Int(elapsed * Double(options.count) / Double(options.heartbeat)) + 1))
        crowd.start()
        if added == options.count { timer.invalidate() }
    }
    if options.paced {
        loop.add(pacer, forMode: .default)
    } else {
        addMembers(upTo: options.count)
    }
    let progress = RunLoopTimer(after: .seconds(5), repeating: .seconds(5)) { _ in
        let seconds = Double(bs_now_ns() - start) / 1e9
        print(
            "idle.progress \(Int(seconds)) s: \(crowd.online) online, \(crowd.presenceNotices) presence notices received, client CPU \(ProcessStats.ownCPUNanoseconds() / 1_000_000) ms"
        )
        fflush(nil)
    }
    loop.add(progress, forMode: .default)
    crowd.start()
    let allOnline = runLoop(loop, seconds: options.readyTimeout) { crowd.online == options.count }
    progress.invalidate()
    pacer.invalidate()
    // Past the ready timeout, the window measures those online: the rest stop trying.
    let givenUp = crowd.giveUpOnPending()
    let p = "idle"
    emit(p, "count", options.count)
    emit(p, "online", crowd.online)
    emit(p, "all_online", allOnline)
    emit(p, "ramp_s", Double(bs_now_ns() - start) / 1e9)
    emit(p, "ramp_presence_notices", crowd.presenceNotices)
    emit(p, "ramp_client_cpu_ms", ProcessStats.ownCPUNanoseconds() / 1_000_000)
    emit(p, "login_retries", crowd.loginRetries)
    emit(p, "given_up", givenUp)
    fflush(nil)

    let sentBefore = crowd.heartbeats.map(\.sent)
    let answeredBefore = crowd.heartbeats.map(\.answered)
    let disconnectsBefore = crowd.disconnects
    let presenceBefore = crowd.presenceNotices
    let cpuBefore = ProcessStats.ownCPUNanoseconds()
    let windowStart = bs_now_ns()
    runLoop(loop, seconds: 3_600) { access(options.stopFile, F_OK) == 0 }
    let window = Double(bs_now_ns() - windowStart) / 1e9
    let sent = zip(crowd.heartbeats, sentBefore).map { $0.sent - $1 }
    let answered = zip(crowd.heartbeats, answeredBefore).map { $0.answered - $1 }
    let heartbeating = zip(sent, answered).filter { $0 > 0 && $1 > 0 }.count
    let onlineAtEnd = crowd.clients.filter { $0?.state == .online }.count
    let online = crowd.online
    let disconnects = crowd.disconnects - disconnectsBefore

    emit(p, "window_s", window)
    emit(p, "heartbeat_s", options.heartbeat)
    emit(p, "heartbeats_sent", sent.reduce(0, +))
    emit(p, "heartbeats_answered", answered.reduce(0, +))
    emit(p, "connections_heartbeating", heartbeating)
    emit(p, "online_at_end", onlineAtEnd)
    emit(p, "window_disconnects", disconnects)
    emit(p, "window_presence_notices", crowd.presenceNotices - presenceBefore)
    emit(p, "window_client_cpu_ms", (ProcessStats.ownCPUNanoseconds() - cpuBefore) / 1_000_000)
    for failure in crowd.failures { print("cluster-bench: \(failure)") }
    fflush(nil)
    return allOnline && heartbeating == online && onlineAtEnd == online && disconnects == 0
}
