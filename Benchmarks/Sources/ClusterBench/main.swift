// cluster-bench: chat nodes measured from the outside (issue 20). The nodes — one on SQLite, or a
// cluster on PostgreSQL + Redis — are other processes started by Scripts/cluster.sh; this process holds
// the clients, all on its main thread's loop, and reads the nodes' CPU and RSS from /proc.
//
//   cluster-bench traffic --ports P1,P2,P3 --pids … --to room --recipients 1000 --spread all --window 50
//   cluster-bench idle --ports P --pids PID --count 2000 --first 0 --stop-file F
//   cluster-bench seed --total 19000 --rooms 8 | sqlite3 chat.db; cluster-bench logins --ports P --pids PID …
//
// Prints `cluster.<figure> <value>` (traffic) or `idle.<figure> <value>` lines for
// Scripts/cluster_table.py. Loopback only; every wait is bounded; it exits without logging out.
import ChatBenchKit
import Glibc

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    print("cluster-bench: bad or missing value for \(error.flag)\n\(Options.usage)")
    exit(2)
}
for pid in options.pids where ProcessStats.residentBytes(of: pid) == 0 {
    print("cluster-bench: cannot read /proc/\(pid)/status")
    exit(1)
}
switch options.mode {
case .traffic: exit(runTraffic(options) ? 0 : 1)
case .idle: exit(runIdle(options) ? 0 : 1)
case .seed: print(options.layout.seedSQL(passwordHash: LoginsLayout.sharedHash(of: LoginsLayout.password, cost: options.scryptCost)))
case .logins: exit(runLogins(options) ? 0 : 1)
}
