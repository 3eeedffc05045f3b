import Glibc
import RunLoopChat
import RunLoopIMCore

/// Who shares what in a `cluster-bench logins` run, the one rule both the database's seed
/// (`cluster-bench seed`) and each client process's presence check follow: users LABEL0…LABEL(N−1);
/// user i is a member of room i mod R; every D-th user (i mod D = 0, D ≥ 2) has a direct conversation with
/// the next one (i + 1), who is in another room (R > 1), so it adds one contact to each.
struct LoginsLayout {
    let label: String
    let total: Int
    let rooms: Int
    let directEvery: Int
    /// The label's bytes, made once: every notice's user is compared with them.
    private let labelUTF8: [UInt8]

    init(label: String, total: Int, rooms: Int, directEvery: Int) {
        self.label = label
        self.total = total
        self.rooms = rooms
        self.directEvery = directEvery
        labelUTF8 = Array(label.utf8)
    }

    /// Every account's password.
    static let password = "cluster"

    func user(_ index: Int) -> String { "\(label)\(index)" }

    func room(of index: Int) -> String { "\(label)-room\(index % rooms)" }

    /// The index of a user of this run's name, or `nil`.
    func index(of user: String) -> Int? {
        // Every notice a client process receives is looked up here: the name's bytes read in place
        // (a short name is held inline in the String, copied to the stack by `withUTF8`), where walking
        // String.UTF8View index by index cost some 400 instructions a notice.
        var user = user
        return user.withUTF8 { name in labelUTF8.withUnsafeBufferPointer { label in index(ofUTF8: name, label: label) } }
    }

    private func index(ofUTF8 name: UnsafeBufferPointer<UInt8>, label: UnsafeBufferPointer<UInt8>) -> Int? {
        let digits = name.count - label.count
        guard digits > 0, digits <= 18, label.isEmpty || memcmp(name.baseAddress!, label.baseAddress!, label.count) == 0 else {
            return nil
        }
        var index = 0
        for byte in name[label.count...] {
            guard byte &- 0x30 < 10 else { return nil }
            index = index &* 10 &+ Int(byte &- 0x30)
        }
        return index < total ? index : nil
    }

    /// The user `index` has a direct conversation with, if any.
    func directPartner(of index: Int) -> Int? {
        guard directEvery >= 2 else { return nil }
        if index % directEvery == 0, index + 1 < total { return index + 1 }
        return index % directEvery == 1 ? index - 1 : nil
    }

    /// Whether users `other` and `index` share a room that is not large or a direct conversation.
    func isContact(_ other: Int, of index: Int) -> Bool {
        other != index && ((other % rooms == index % rooms && !isRoomLarge(of: index)) || directPartner(of: index) == other)
    }

    /// Whether user `index`'s room has more members than the node's large-room size (the chat
    /// service's default): its members are not each other's contacts (docs/PROTOCOL.md §8).
    func isRoomLarge(of index: Int) -> Bool { membersOfRoom(of: index) > ChatService.Settings().largeRoomMembers }

    func membersOfRoom(of index: Int) -> Int {
        let room = index % rooms
        return total / rooms + (room < total % rooms ? 1 : 0)
    }

    /// How many users share a room or a direct conversation with user `index`: what it should know
    /// online once everyone is.
    func contacts(of index: Int) -> Int {
        guard !isRoomLarge(of: index) else { return directPartner(of: index) == nil ? 0 : 1 }
        let partner = directPartner(of: index).map { $0 % rooms == index % rooms ? 0 : 1 } ?? 0
        return membersOfRoom(of: index) - 1 + partner
    }

    /// SQL for `sqlite3` on a node's database (schema made, no users yet): every account with
    /// `passwordHash`, its room memberships and the direct conversations, in one transaction. The
    /// direct conversations are memberships without a message: contacts all the same, and no
    /// inbox to deliver at login.
    func seedSQL(passwordHash: String) -> String {
        var sql = "BEGIN;\n"
        for index in 0..<total {
            sql += "INSERT INTO accounts(name, password_hash) VALUES ('\(user(index))', '\(passwordHash)');\n"
            sql += "INSERT INTO users(name) VALUES ('\(user(index))');\n"
        }
        for number in 0..<min(rooms, total) {
            let name = room(of: number)
            sql += "INSERT INTO conversations(key, room, last_seq) VALUES ('\(IMConversation.room(name).storageKey)', '\(name)', 0);\n"
        }
        for index in 0..<total {
            sql += membership(user(index), IMConversation.room(room(of: index)).storageKey)
            if let partner = directPartner(of: index), partner > index {
                let key = IMConversation.direct(between: user(index), and: user(partner)).storageKey
                sql += "INSERT INTO conversations(key, room, last_seq) VALUES ('\(key)', NULL, 0);\n"
                sql += membership(user(index), key) + membership(user(partner), key)
            }
        }
        return sql + "COMMIT;\n"
    }

    private func membership(_ user: String, _ key: String) -> String {
        "INSERT INTO members(user, conversation_id, acked_through) SELECT '\(user)', id, 0 FROM conversations WHERE key = '\(key)';\n"
    }

    /// One scrypt hash of `password` at `cost` (log2 of N) that every account shares: a login's check
    /// costs the same whatever the salt, and 19,000 hashes would take the seed as long as the run.
    static func sharedHash(of password: String, cost: Int) -> String {
        PasswordHasher(rounds: 1 << cost).hash(password)
    }
}
