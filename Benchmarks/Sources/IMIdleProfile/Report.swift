/// The table `im-idle` prints: markdown rows, one figure each (Scripts/im-idle.sh keeps them).
enum Table {
    static func header(_ title: String) {
        print("\n\(title)\n\n| figure | value |\n| --- | --- |")
    }

    static func row(_ figure: String, _ value: String) {
        print("| \(figure) | \(value) |")
    }

    static func server(_ report: ServerRole.Report, _ options: Options) {
        let perConnection = Double(report.rssAllOnline - report.rssBeforeAccepting) / Double(max(1, report.connections))
        let afterWindow = Double(report.rssAfterWindow - report.rssBeforeAccepting) / Double(max(1, report.connections))
        let seconds = Double(report.window) / 1e9
        header("server: \(report.connections) of \(options.count) clients online, window \(fixed(seconds, 1)) s")
        row("RSS before accepting", mib(report.rssBeforeAccepting))
        row("RSS with all online", mib(report.rssAllOnline))
        row("RSS per connection (all online)", "\(fixed(perConnection / 1024, 2)) KiB")
        row("RSS per connection (end of window)", "\(fixed(afterWindow / 1024, 2)) KiB")
        row(
            "server thread CPU in window",
            "\(fixed(Double(report.threadCPU) / 1e6, 0)) ms = \(fixed(Double(report.threadCPU) / Double(max(1, report.window)) * 100, 2)) % of one core"
        )
        row("process CPU in window", "\(fixed(Double(report.processCPU) / 1e6, 0)) ms")
        row("sessions ended in window", "\(report.sessionsEnded)")
        row("online at end of window", "\(report.online)")
    }

    static func clients(_ report: ClientRole.Report, _ options: Options) {
        let seconds = Double(report.window) / 1e9
        header(
            "clients: \(report.online) of \(options.count) online after a \(fixed(report.rampSeconds, 1)) s ramp, heartbeat \(options.heartbeat), window \(fixed(seconds, 1)) s"
        )
        row("heartbeats sent", "\(report.heartbeatsSent) = \(fixed(Double(report.heartbeatsSent) / max(seconds, 1e-9), 0))/s")
        row("heartbeats answered", "\(report.heartbeatsAnswered) = \(fixed(Double(report.heartbeatsAnswered) / max(seconds, 1e-9), 0))/s")
        row("disconnects in window", "\(report.disconnects)")
    }

    static func cpuPerHeartbeat(_ server: ServerRole.Report, _ clients: ClientRole.Report) {
        let perHeartbeat = Double(server.threadCPU) / Double(max(1, clients.heartbeatsAnswered)) / 1e3
        row("server thread CPU per heartbeat answered", "\(fixed(perHeartbeat, 1)) µs")
    }

    static func mib(_ bytes: Int) -> String { "\(fixed(Double(bytes) / 1_048_576, 1)) MiB" }

    /// `value` with `digits` decimals (no Foundation for String(format:)).
    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        guard digits > 0 else { return "\(Int(rounded))" }
        let whole = Int(rounded.magnitude)
        let fraction = Int(((rounded.magnitude - Double(whole)) * scale).rounded())
        let padded = String(repeating: "0", count: max(0, digits - "\(fraction)".count)) + "\(fraction)"
        return (rounded < 0 ? "-" : "") + "\(whole).\(padded)"
    }
}
