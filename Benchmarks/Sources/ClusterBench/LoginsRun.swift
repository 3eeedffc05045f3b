import BenchSupport
import ChatBenchKit
import Glibc
import RunLoopChat
import RunLoopKit

/// `cluster-bench logins`: this process's share of a ``LoginsLayout`` (users `first`…`first`+`count`−1
/// of `total`) logs in to one node, `loginsInFlight` at a time, and stays. Prints `logins.online`
/// once all are (or the ready timeout passed), then waits for the stop file, gives the node up to
/// 30 s more to finish its presence snapshots and announcements, and prints whether each user knows
/// exactly its contacts online — no more, no fewer; stays online until the file STOP.leave exists
/// (every process has checked), then exits without logging out: the node sees every connection
/// close at once. Returns whether all logged in and all presence was right.
func runLogins(_ options: Options) -> Bool {
    let layout = options.layout
    let files = FileLimit.raise(wanted: options.count + 64)
    guard files >= options.count + 64 else {
        print("cluster-bench: the open-file limit (\(files)) is too low for \(options.count) connections in one process")
        return false
    }
    let crowd = Crowd(ports: options.ports, loginsInFlight: options.loginsInFlight, password: LoginsLayout.password, countsHeartbeats: false) {
        configuration in
        configuration.heartbeat = .fixed(.seconds(Int64(options.heartbeat)))
        configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
    }
    for index in 0..<options.count { crowd.add(user: layout.user(options.first + index), node: 0) }
    let known = KnownOnline(members: options.count, total: layout.total)
    var strangers = 0
    crowd.onPresence = { member, change in
        guard let other = layout.index(of: change.user) else { return strangers += 1 }
        known.set(member, other, online: change.isOnline)
    }
    let loop = crowd.loop
    let start = bs_now_ns()
    let progress = RunLoopTimer(after: .seconds(5), repeating: .seconds(5)) { _ in
        print("logins.progress \((bs_now_ns() - start) / 1_000_000_000) s: \(crowd.online) online, \(crowd.presenceNotices) presence notices")
        fflush(nil)
    }
    loop.add(progress, forMode: .default)
    crowd.start()
    let allOnline = runLoop(loop, seconds: options.readyTimeout) { crowd.online == options.count }
    let p = "logins"
    emit(p, "online", crowd.online)
    emit(p, "ramp_s", Double(bs_now_ns() - start) / 1e9)
    emit(p, "login_retries", crowd.loginRetries)
    fflush(nil)
    runLoop(loop, seconds: 3_600) { access(options.stopFile, F_OK) == 0 }
    progress.invalidate()
    let settleStart = bs_now_ns()
    func right() -> Int {
        (0..<options.count).count { known.isExactly(options.first + $0, member: $0, layout: layout) }
    }
    // Checked twice a second: a check reads every member's bits.
    var exact = right()
    var checked = bs_now_ns()
    while exact < options.count, bs_now_ns() - settleStart < 30_000_000_000 {
        _ = try? loop.run(.default, timeout: .milliseconds(100))
        if bs_now_ns() - checked > 500_000_000 {
            exact = right()
            checked = bs_now_ns()
        }
    }
    emit(p, "presence_settle_s", Double(bs_now_ns() - settleStart) / 1e9)
    emit(p, "presence_notices", crowd.presenceNotices)
    emit(p, "presence_expected", (0..<options.count).reduce(0) { $0 + layout.contacts(of: options.first + $1) })
    emit(p, "presence_known", known.count)
    emit(p, "presence_exact_users", exact)
    emit(p, "presence_strangers", strangers)
    emit(p, "disconnects", crowd.disconnects)
    emit(p, "client_cpu_ms", ProcessStats.ownCPUNanoseconds() / 1_000_000)
    for failure in crowd.failures { print("cluster-bench: \(failure)") }
    fflush(nil)
    // Online until every process has checked (the script makes STOP.leave then): users leaving
    // early would be departures the others' checks see.
    runLoop(loop, seconds: 120) { access(options.stopFile + ".leave", F_OK) == 0 }
    return allOnline && exact == options.count && strangers == 0 && crowd.disconnects == 0
}

/// Which users each member was last told are online: one bit per user of the run per member.
final class KnownOnline {
    private let words: Int
    // Set once per notice received: the runtime's exclusivity check on each access cost more than the
    // bit (one loop thread, no access overlaps another).
    @exclusivity(unchecked) private var bits: [UInt64]

    init(members: Int, total: Int) {
        words = (total + 63) / 64
        bits = Array(repeating: 0, count: members * words)
    }

    func set(_ member: Int, _ other: Int, online: Bool) {
        let word = member * words + other / 64
        let bit = UInt64(1) << UInt64(other % 64)
        if online { bits[word] |= bit } else { bits[word] &= ~bit }
    }

    /// Online users known, over all members.
    var count: Int { bits.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// Whether `member` (user `index` of the layout) knows exactly its contacts online.
    func isExactly(_ index: Int, member: Int, layout: LoginsLayout) -> Bool {
        var known = 0
        for word in 0..<words {
            var rest = bits[member * words + word]
            while rest != 0 {
                let other = word * 64 + rest.trailingZeroBitCount
                guard layout.isContact(other, of: index) else { return false }
                known += 1
                rest &= rest - 1
            }
        }
        return known == layout.contacts(of: index)
    }
}
