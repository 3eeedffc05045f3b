import RunLoopKit

/// A demo's clients, each a ``DemoParticipant`` on a ``HostedLoop`` of its own; the script (on
/// another thread) reaches one through ``on(_:_:)``, which runs on that client's loop and waits.
final class DemoCast {
    private var members: [(name: String, host: HostedLoop, person: LoopBound<DemoParticipant>)] = []

    var names: [String] { members.map(\.name) }
    var indices: Range<Int> { members.indices }

    /// Starts a loop named `name` and makes its participant there.
    func add(_ name: String, _ make: @escaping () throws -> DemoParticipant) throws {
        let host = HostedLoop(name: name)
        let person = try host.sync { LoopBound(try make()) }
        members.append((name, host, person))
    }

    func on<T>(_ index: Int, _ body: @escaping (DemoParticipant) throws -> T) throws -> T {
        let member = members[index]
        return try member.host.sync { try body(member.person.value) }
    }

    func all(_ condition: @escaping (DemoParticipant) -> Bool) throws -> Bool {
        try members.indices.allSatisfy { index in try on(index) { condition($0) } }
    }

    /// Every client's record, by name, for a ``DeliveryTally``.
    func records() throws -> [String: DeliveryTally.ClientRecord] {
        var records: [String: DeliveryTally.ClientRecord] = [:]
        for (index, name) in names.enumerated() { records[name] = try on(index) { $0.record } }
        return records
    }

    /// Ends every client's loop (the clients go with them, unannounced).
    func stop() {
        for member in members { member.host.stop() }
    }
}
