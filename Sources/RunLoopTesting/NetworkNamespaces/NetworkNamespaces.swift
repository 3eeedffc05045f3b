import Glibc
public import Testing

/// Network namespaces for fault tests: real links that tests can take down, without touching the
/// host's network. Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's `ip`; gate every test
/// that uses them with ``NetworkNamespaces/available``:
///
/// ```swift
/// @Test(NetworkNamespaces.available)
/// func linkDown() async throws {
///     try await withNamespacePair { pair in     // torn down (and checked gone) even if the body throws
///         try await onLoopThread(inNamespace: pair.client) {
///             // sockets made here live in pair.client; pair.serverAddress is across the veth
///             try pair.setClientLink(up: false)
///             ...
///         }
///     }
/// }
/// ```
///
/// A socket stays in the namespace it was created in, so one loop thread can hold both ends: call
/// ``enterNetworkNamespace(_:)`` with `pair.server`, listen, then with `pair.client`, connect.
///
/// Names are `rlk-<pid>-<n>-…`, unique per fixture, so parallel tests and parallel test processes
/// never meet. Namespaces left behind by a crashed test process are deleted by the next one.
public enum NetworkNamespaces {
    /// The trait for tests that need namespaces: skipped, with the reason, when they cannot be made.
    public static var available: ConditionTrait {
        .enabled(if: unavailableReason == nil, Comment(rawValue: "needs root and iproute2 (ip netns): \(unavailableReason ?? "")"))
    }

    /// Why namespaces cannot be made here, or nil. Only reads: nothing is created to find out.
    public static let unavailableReason: String? = {
        guard let ipPath else { return "no `ip` command (install Debian's iproute2)" }
        guard let capabilities = effectiveCapabilities() else { return "cannot read /proc/self/status" }
        let sysAdmin: UInt64 = 1 << 21, netAdmin: UInt64 = 1 << 12
        guard capabilities & sysAdmin != 0, capabilities & netAdmin != 0 else {
            return "not root (CAP_SYS_ADMIN and CAP_NET_ADMIN are needed)"
        }
        do throws(CommandError) {
            let result = try runCommand([ipPath, "netns", "list"])
            if result.status != 0 { return "`ip netns list` failed: \(result.errorOutput)" }
        } catch {
            return error.description
        }
        return nil
    }()

    /// Where `ip` is: root's PATH has /usr/sbin, a test runner's may not.
    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { access($0, X_OK) == 0 }

    /// Runs `ip arguments…`; throws with the command, its status and its stderr unless it succeeds.
    @discardableResult
    public static func ip(_ arguments: String...) throws(CommandError) -> String {
        try ip(arguments)
    }

    @discardableResult
    public static func ip(_ arguments: [String]) throws(CommandError) -> String {
        guard let ipPath else { throw CommandError(command: ["ip"] + arguments, detail: "cannot run: no ip command") }
        let result = try runCommand([ipPath] + arguments)
        guard result.status == 0 else {
            let stderr = result.errorOutput.trimmingTrailingNewlines
            throw CommandError(command: ["ip"] + arguments, detail: "exited with status \(result.status): \(stderr)")
        }
        return result.output
    }

    /// The names `ip netns list` shows.
    public static func list() throws(CommandError) -> [String] {
        // Lines look like "rlk-12-0-a (id: 3)" or just "rlk-12-0-a".
        try ip("netns", "list").split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    private static let counter = LockedBox(0)
    private static let staleRemoved = LockedBox(false)

    /// A number no other fixture of this process has.
    public static func nextIndex() -> Int {
        var index = 0
        counter.update {
            index = $0; $0 += 1
        }
        return index
    }

    /// Deletes `rlk-<pid>-…` namespaces whose process is gone (a test process that crashed or was
    /// killed before its teardown ran). Once per process.
    static func removeStale() {
        var first = false
        staleRemoved.update {
            first = !$0; $0 = true
        }
        guard first, let names = try? list() else { return }
        for name in names where name.hasPrefix("rlk-") {
            let parts = name.split(separator: "-")
            guard parts.count >= 3, let pid = pid_t(parts[1]), pid != getpid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH { _ = try? ip("netns", "delete", name) }
        }
    }

    private static func effectiveCapabilities() -> UInt64? {
        guard let file = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            if text.hasPrefix("CapEff:") {
                return UInt64(text.dropFirst("CapEff:".count).trimmingCharacters, radix: 16)
            }
        }
        return nil
    }
}

/// One empty network namespace: only `lo`, down — no route to anywhere.
public final class TestNamespace: Sendable {
    /// The name `ip netns` knows it by.
    public let name: String
    private let deleted = LockedBox(false)

    /// Creates `rlk-<pid>-<n>-<suffix>`.
    public init(suffix: String = "x", index: Int = NetworkNamespaces.nextIndex()) throws(CommandError) {
        NetworkNamespaces.removeStale()
        name = "rlk-\(getpid())-\(index)-\(suffix)"
        try NetworkNamespaces.ip("netns", "add", name)
    }

    /// Deletes the namespace (its links go with it once no thread or socket is left inside). Idempotent;
    /// never throws, so it fits in `defer`. Failures are printed: a leak should be visible.
    public func delete() {
        var first = false
        deleted.update {
            first = !$0; $0 = true
        }
        guard first else { return }
        do {
            try NetworkNamespaces.ip("netns", "delete", name)
        } catch {
            print("warning: could not delete network namespace \(name): \(error)")
        }
    }

    deinit { delete() }
}

/// Two namespaces, `client` and `server`, joined by a veth pair with addresses in a /30 of
/// 10.213.0.0/16 unique to this fixture, both links and both `lo` up. The client has no default
/// route until ``addClientDefaultRoute()``.
///
/// Kernel behaviour worth knowing (Linux 6.x):
/// - `ip link set DEV down` keeps the IPv4 address but removes the link's routes — the connected
///   /30 *and any default route through it*. `up` brings the connected route back, not the default
///   route: ``setClientLink(up:)`` re-adds it if this fixture had added it, as DHCP/NetworkManager
///   would (pass `restoringDefaultRoute: false` to see the bare kernel).
/// - Taking the *server's* end down only removes the client's carrier: the client's routes stay
///   (flagged `linkdown`) and a route lookup still succeeds.
/// - IPv6 link-local addresses go away on down and come back (after DAD) on up.
/// - Carrier changes (IFF_LOWER_UP, IFF_RUNNING, operstate) reach netlink through the kernel's linkwatch.
///   For most devices it batches them at most once a second, system-wide, so with other links changing
///   (parallel tests) "carrier back" can come up to a second after `up`. veth events skip that queue
///   when the two ends have different interface indexes, which this fixture ensures (10 and 20).
public final class NamespacePair: Sendable {
    /// Namespace names, for `ip -n` and ``onLoopThread(inNamespace:_:)``.
    public let client: String
    public let server: String
    /// The veth ends: `clientDevice` lives in `client`, `serverDevice` in `server`.
    public let clientDevice: String
    public let serverDevice: String
    /// 10.213.x.(4k+1) and 10.213.x.(4k+2).
    public let clientAddress: String
    public let serverAddress: String
    /// The length of the subnet both addresses are in.
    public let prefixLength = 30

    private let namespaces: [TestNamespace]
    private let hasDefaultRoute = LockedBox(false)

    /// Creates both namespaces, the veth pair, the addresses, and brings everything up. On a failure
    /// part way, whatever was made is deleted before the error is thrown.
    public init() throws(CommandError) {
        let index = NetworkNamespaces.nextIndex()
        let clientNamespace = try TestNamespace(suffix: "a", index: index)
        let serverNamespace: TestNamespace
        do { serverNamespace = try TestNamespace(suffix: "b", index: index) } catch {
            clientNamespace.delete()
            throw error
        }
        namespaces = [clientNamespace, serverNamespace]
        client = clientNamespace.name
        server = serverNamespace.name
        // Device names are at most 15 bytes; unique per process and fixture even though they live in
        // private namespaces, so that a failure message names exactly one.
        clientDevice = "r\(getpid() % 10_000_000)x\(index % 1000)c"
        serverDevice = "r\(getpid() % 10_000_000)x\(index % 1000)s"
        let subnet = (index % 16_384) * 4
        clientAddress = "10.213.\(subnet / 256).\(subnet % 256 + 1)"
        serverAddress = "10.213.\(subnet / 256).\(subnet % 256 + 2)"
        do {
            // Distinct interface indexes: in two fresh namespaces both ends would be index 2, and a veth
            // whose index equals its peer's looks like a plain device to the kernel's linkwatch, which
            // then delays carrier changes by up to a second (rate-limited system-wide) instead of
            // applying them at once.
            try NetworkNamespaces.ip(
                "link", "add", clientDevice, "index", "10", "netns", client, "type", "veth",
                "peer", "name", serverDevice, "index", "20", "netns", server)
            try NetworkNamespaces.ip("-n", client, "addr", "add", "\(clientAddress)/\(prefixLength)", "dev", clientDevice)
            try NetworkNamespaces.ip("-n", server, "addr", "add", "\(serverAddress)/\(prefixLength)", "dev", serverDevice)
            for (namespace, device) in [(client, clientDevice), (server, serverDevice)] {
                try NetworkNamespaces.ip("-n", namespace, "link", "set", "lo", "up")
                try NetworkNamespaces.ip("-n", namespace, "link", "set", device, "up")
            }
            try waitForCarrier()
        } catch {
            tearDown()
            throw error
        }
    }

    /// Returns once both ends report a carrier (LOWER_UP): `link set up` returns before the kernel has
    /// applied it, and a test that judges the link at once would race it (seen under parallel load).
    private func waitForCarrier() throws(CommandError) {
        for _ in 0..<400 {
            let client = try NetworkNamespaces.ip("-n", self.client, "link", "show", clientDevice)
            let server = try NetworkNamespaces.ip("-n", self.server, "link", "show", serverDevice)
            if client.contains("LOWER_UP"), server.contains("LOWER_UP") { return }
            usleep(5_000)
        }
    }

    /// Deletes both namespaces (and so the veth pair). Idempotent, never throws; also runs on deinit.
    /// Call it in a `defer` right after creating the pair so a failing test cleans up too.
    public func tearDown() {
        for namespace in namespaces { namespace.delete() }
    }

    deinit { tearDown() }

    /// `ip -n client link set clientDevice up|down`. Bringing it up re-adds the default route the
    /// kernel removed on the way down, if ``addClientDefaultRoute()`` had added one and
    /// `restoringDefaultRoute` is true.
    public func setClientLink(up: Bool, restoringDefaultRoute: Bool = true) throws(CommandError) {
        try NetworkNamespaces.ip("-n", client, "link", "set", clientDevice, up ? "up" : "down")
        if up, restoringDefaultRoute, hasDefaultRoute.get() {
            // `replace`: fine whether or not the kernel kept it.
            try NetworkNamespaces.ip("-n", client, "route", "replace", "default", "via", serverAddress, "dev", clientDevice)
        }
    }

    /// `ip -n server link set serverDevice up|down`: for the client, its carrier goes and comes back.
    public func setServerLink(up: Bool) throws(CommandError) {
        try NetworkNamespaces.ip("-n", server, "link", "set", serverDevice, up ? "up" : "down")
    }

    /// A default route in `client` via the server's address.
    public func addClientDefaultRoute() throws(CommandError) {
        try NetworkNamespaces.ip("-n", client, "route", "replace", "default", "via", serverAddress, "dev", clientDevice)
        hasDefaultRoute.set(true)
    }

    /// Removes the client's default route (and stops ``setClientLink(up:restoringDefaultRoute:)``
    /// from restoring it).
    public func removeClientDefaultRoute() throws(CommandError) {
        hasDefaultRoute.set(false)
        try NetworkNamespaces.ip("-n", client, "route", "del", "default")
    }

    /// Runs `ip -n client arguments…`.
    @discardableResult
    public func inClient(_ arguments: String...) throws(CommandError) -> String {
        try NetworkNamespaces.ip(["-n", client] + arguments)
    }

    /// Runs `ip -n server arguments…`.
    @discardableResult
    public func inServer(_ arguments: String...) throws(CommandError) -> String {
        try NetworkNamespaces.ip(["-n", server] + arguments)
    }
}

/// Runs `body` with a fresh ``NamespacePair`` and tears it down afterwards whether `body` succeeds or
/// throws, then checks `ip netns list` no longer shows it.
public func withNamespacePair<T: Sendable>(_ body: (NamespacePair) async throws -> T) async throws -> T {
    let pair = try NamespacePair()
    let result: T
    do {
        result = try await body(pair)
    } catch {
        pair.tearDown()
        throw error
    }
    pair.tearDown()
    let left = try NetworkNamespaces.list().filter { $0 == pair.client || $0 == pair.server }
    #expect(left.isEmpty, "namespaces left behind: \(left)")
    return result
}

/// Moves the calling thread into the network namespace `name` (from `ip netns add`): sockets it
/// creates from now on live there. Linux keeps the network namespace per thread, so only this thread
/// moves — use it on a thread of your own (``onLoopThread(inNamespace:_:)``, `startThread`), never on a
/// Swift concurrency worker, which would carry the namespace into unrelated tasks.
public func enterNetworkNamespace(_ name: String) throws(CommandError) {
    let path = "/var/run/netns/\(name)"
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw CommandError(command: ["setns", name], detail: "open \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    // Glibc's Swift module does not import setns (it is behind _GNU_SOURCE); the C library has it.
    typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
    guard let symbol = dlsym(nil, "setns") else { throw CommandError(command: ["setns", name], detail: "no setns in libc") }
    let setns = unsafeBitCast(symbol, to: SetNamespace.self)
    let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET
    guard setns(fd, cloneNewNet) == 0 else {
        throw CommandError(command: ["setns", name], detail: "setns: \(String(cString: strerror(errno)))")
    }
}

/// ``onLoopThread(_:)`` on a thread that first enters the network namespace `name`: the loop and
/// every socket `body` makes live in that namespace. The thread (and its hold on the namespace) ends
/// when `body` returns.
public func onLoopThread<T: Sendable>(inNamespace name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onLoopThread {
        try enterNetworkNamespace(name)
        return try body()
    }
}

extension StringProtocol {
    fileprivate var trimmingTrailingNewlines: String {
        var text = String(self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    fileprivate var trimmingCharacters: String {
        String(self.drop { $0 == " " || $0 == "\t" }.prefix { $0 != "\n" && $0 != " " })
    }
}
