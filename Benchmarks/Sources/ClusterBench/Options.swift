import ChatBenchKit

/// `cluster-bench traffic …`, `idle …`, `seed …` and `logins …`: see ``usage``.
struct Options {
    enum Mode: String { case traffic, idle, seed, logins }
    /// Who receives a traffic run's messages.
    enum Target: String { case user, room }
    /// Where a traffic run's recipients log in.
    enum Spread: String {
        /// On every node but the sender's (all on the one node when there is one): latency across nodes.
        case others
        /// Round-robin over every node, the sender's too: a room with members on all nodes.
        case all
    }

    var mode = Mode.traffic
    /// The nodes' ports on 127.0.0.1, in node order (the sender logs in at the first).
    var ports: [UInt16] = []
    /// The nodes' process ids, read from /proc for CPU (and RSS).
    var pids: [Int32] = []
    /// Processes the nodes need (the PostgreSQL postmaster, redis-server), with their children.
    var servicePids: [Int32] = []
    /// Names this run's users and room, so runs against one database never share them.
    var label = "run"
    // traffic
    var target = Target.user
    var recipients = 1
    var spread = Spread.others
    var messages = 200
    /// Messages sent and not yet acknowledged (SEND_ACK): 1 times each message alone.
    var window = 1
    var payload = 64
    var timeout = 120
    // idle
    var count = 1_000
    /// The first user number, so several idle processes on one cluster have users of their own.
    var first = 0
    var heartbeat = 10
    /// Idle: clients are opened at an even pace over one heartbeat period (`--paced 1`), so their
    /// heartbeats are spread evenly over it whatever the server's login speed; 0: all at once, as logins
    /// allow.
    var paced = false
    /// The idle run reports and exits once this file exists (the script makes it after its window).
    var stopFile = ""
    // seed and logins (and idle's --count, --first, --heartbeat, --stop-file for logins)
    var total = 19_000
    var rooms = 8
    var directEvery = 10
    var scryptCost = 10
    var layout: LoginsLayout { LoginsLayout(label: label, total: total, rooms: rooms, directEvery: directEvery) }
    // all but seed
    var loginsInFlight = 4
    var readyTimeout = 60

    static let usage = """
        usage: cluster-bench traffic --ports P1,P2,… --pids PID1,… [--service-pids PID,…] [--label NAME]
                                     [--to user|room] [--recipients R] [--spread others|all]
                                     [--messages M] [--window W] [--payload BYTES] [--timeout S]
               cluster-bench idle --ports P1,… --pids PID1,… --stop-file PATH [--label NAME] [--count N]
                                  [--first K] [--heartbeat S] [--paced 0|1]
               cluster-bench seed [--label NAME] [--total N] [--rooms R] [--direct-every D] [--scrypt-cost C]
               cluster-bench logins --ports P --pids PID --stop-file PATH [--label NAME] [--total N] [--rooms R]
                                    [--direct-every D] [--count N] [--first K] [--heartbeat S]
               all but seed: [--logins-in-flight L] [--ready-timeout S]
          traffic: one sender on the first node sends M messages (at most W unacknowledged) to one user
            or a room of R recipients spread over the other nodes (or all); prints `cluster.<figure>`
            lines: counts, SEND→DELIVER latency, deliveries per second, node CPU per delivery.
          idle: N clients (users LABEL<K>…) spread over the nodes log in and heartbeat every S seconds;
            prints `idle.online` when all are online, then `idle.<figure>` lines once the stop file
            exists. Clients log in at most L at a time per node (the node's limit per address); with
            --paced 1, client i is opened no earlier than i × S ÷ N seconds after the start, so the
            crowd's heartbeats arrive evenly spread over each period, the same on any server.
          seed: prints SQL for sqlite3 that makes a chat-node database's accounts (users LABEL0…, one
            shared scrypt hash at cost C), rooms (user i in room i mod R) and direct conversations
            (user i with i + 1 when i mod D = 0).
          logins: users K…K+N−1 of that layout log in and stay; `logins.online` once all are; once
            the stop file exists, whether each knows exactly its contacts online (`logins.<figure>`).
        """

    init(_ arguments: [String]) throws(UsageError) {
        var rest = arguments[...]
        guard let first = rest.popFirst(), let mode = Mode(rawValue: first) else { throw UsageError("mode") }
        self.mode = mode
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst() else { throw UsageError(flag) }
            switch flag {
            case "--ports": ports = try Self.list(text, flag)
            case "--pids": pids = try Self.list(text, flag)
            case "--service-pids": servicePids = try Self.list(text, flag)
            case "--label": label = text
            case "--to": target = try Self.value(Target(rawValue: text), flag)
            case "--spread": spread = try Self.value(Spread(rawValue: text), flag)
            case "--stop-file": stopFile = text
            default:
                let value = try Self.value(Int(text).flatMap { $0 >= 0 ? $0 : nil }, flag)
                switch flag {
                case "--recipients": recipients = max(1, value)
                case "--messages": messages = max(1, value)
                case "--window": window = max(1, value)
                case "--payload": payload = max(Payload.digits, value)
                case "--timeout": timeout = max(1, value)
                case "--count": count = max(1, value)
                case "--first": self.first = value
                case "--heartbeat": heartbeat = max(1, value)
                case "--paced": paced = value != 0
                case "--logins-in-flight": loginsInFlight = max(1, value)
                case "--ready-timeout": readyTimeout = max(1, value)
                case "--total": total = max(1, value)
                case "--rooms": rooms = max(1, value)
                case "--direct-every": directEvery = value
                case "--scrypt-cost": scryptCost = min(20, max(4, value))
                default: throw UsageError(flag)
                }
            }
        }
        if mode == .seed { return }
        if ports.isEmpty { throw UsageError("--ports") }
        if pids.count != ports.count { throw UsageError("--pids (one per port)") }
        if mode == .idle || mode == .logins, stopFile.isEmpty { throw UsageError("--stop-file") }
    }

    private static func list<T: FixedWidthInteger>(_ text: String, _ flag: String) throws(UsageError) -> [T] {
        var values: [T] = []
        for item in text.split(separator: ",") {
            guard let value = T(item), value > 0 else { throw UsageError(flag) }
            values.append(value)
        }
        return values
    }

    private static func value<T>(_ value: T?, _ flag: String) throws(UsageError) -> T {
        guard let value else { throw UsageError(flag) }
        return value
    }
}

struct UsageError: Error {
    let flag: String
    init(_ flag: String) { self.flag = flag }
}
