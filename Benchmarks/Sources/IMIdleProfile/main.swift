// im-idle: one IMServer loop holding many idle client connections that heartbeat (issue 9): the
// server's RSS per connection and its CPU while idle, and heartbeats answered per second.
//
//   im-idle                                   server and 10,000 clients in one process, two threads
//   im-idle server --count 10000              the server alone (its RSS is then its own); prints its port
//   im-idle clients --count 10000 --port P    the clients, in a second process
//
// Scripts/im-idle.sh runs the two-process form, then the one-process form. Loopback only; every run
// ends by itself (ready timeout 120 s, then a --seconds window).
import Glibc

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    print("im-idle: bad or missing value for \(error.flag)\n\(Options.usage)")
    exit(2)
}

switch options.role {
case .server: exit(runServer(options))
case .clients: exit(runClients(options))
case .both: exit(runBoth(options))
}
