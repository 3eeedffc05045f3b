import BenchSupport
import ChatBenchKit
import Glibc

/// `im-idle server`: listens, says its port, measures once every client is online, then serves on
/// until the clients' process has gone (at most 60 s more), so their window never sees it stop.
func runServer(_ options: Options) -> Int32 {
    let files = FileLimit.raise(wanted: options.count + 64)
    let role: ServerRole
    do {
        role = try ServerRole(options: options)
    } catch {
        print("im-idle: cannot listen: \(error)")
        return 1
    }
    print("port \(role.port) (pid \(getpid()), open-file limit \(files))")
    Measure.flush()
    let finished = role.run()
    Table.server(role.report, options)
    Measure.flush()
    role.serve(until: { role.server.sessions.isEmpty }, limit: .seconds(60))
    // What stays once every client has gone (issue 22: the presence broadcast's queued frames once
    // took 60 MB to 1.45 GB): measured after a second of serving on.
    role.serve(until: { false }, limit: .seconds(1))
    Table.row("RSS after every client left", Table.mib(Measure.residentBytes()))
    // What the server still holds, against what malloc keeps for reuse (freed, not given back).
    let heapAfter = Measure.heapInUseBytes()
    Table.row("malloc in use before accepting / after every client left", "\(Table.mib(role.report.heapBeforeAccepting)) / \(Table.mib(heapAfter))")
    bs_heap_trim()
    Table.row("RSS after every client left, after malloc_trim(0)", Table.mib(Measure.residentBytes()))
    Measure.flush()
    return finished ? 0 : 1
}

/// `im-idle clients`: connects, measures, exits (the kernel closes every connection).
func runClients(_ options: Options) -> Int32 {
    FileLimit.raise(wanted: options.count + 64)
    let role = ClientRole(options: options)
    let finished = role.run(port: options.port)
    Table.clients(role.report, options)
    return finished ? 0 : 1
}

/// What the clients' thread hands back to the server's in `im-idle both`.
private final class ClientsThread: @unchecked Sendable {
    let options: Options
    let port: UInt16
    let done = bs_sem_new()!
    // Written by the clients' thread before it posts `done`; read by the main thread after.
    var report = ClientRole.Report()
    var finished = false

    init(options: Options, port: UInt16) {
        self.options = options
        self.port = port
    }
}

/// `im-idle both`: the server on this thread, the clients on a second thread with its own loop.
/// RSS is then the two together; the server's CPU is still its thread's alone.
func runBoth(_ options: Options) -> Int32 {
    var options = options
    // Two descriptors per connection here (both ends), plus the listener and each loop's own. A
    // hard limit too low for that (20,000 is common; raising it needs CAP_SYS_RESOURCE) caps the
    // count rather than failing accepts half-way.
    let files = FileLimit.raise(wanted: 2 * options.count + 128)
    let fitting = (files - 128) / 2
    if fitting < options.count {
        print("im-idle: the open-file limit (\(files)) allows \(fitting) connections in one process, not \(options.count): measuring \(fitting)")
        options.count = fitting
    }
    let server: ServerRole
    do {
        server = try ServerRole(options: options)
    } catch {
        print("im-idle: cannot listen: \(error)")
        return 1
    }
    let clients = ClientsThread(options: options, port: server.port)
    _ = bs_thread_start(
        { context in
            let clients = Unmanaged<ClientsThread>.fromOpaque(context!).takeUnretainedValue()
            let role = ClientRole(options: clients.options)
            clients.finished = role.run(port: clients.port)
            clients.report = role.report
            bs_sem_post(clients.done)
            // Parks with its clients alive (and still heartbeating) until the process exits.
            while true { _ = try? role.loop.run(.default, timeout: .seconds(1)) }
        }, Unmanaged.passRetained(clients).toOpaque())
    let finished = server.run()
    // Keep answering until the clients' window has closed too.
    server.serve(until: { bs_sem_wait_ms(clients.done, 0) == 0 }, limit: options.readyTimeout)
    Table.server(server.report, options)
    Table.clients(clients.report, options)
    Table.cpuPerHeartbeat(server.report, clients.report)
    print("(one process: the RSS figures include the clients' side)")
    return finished && clients.finished ? 0 : 1
}
