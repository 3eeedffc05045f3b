public import RunLoopIM
public import RunLoopIMCore

/// The memory store's rooms and history: its `rooms` (which the IM layer reads to address a room's
/// messages) and its log of every stored message.
extension InMemoryIMStore: SynchronousChatStore {
    public func join(room: String, user: String, maximumRooms: Int?) -> Result<Room, IMStatusCode> {
        guard RoomName.isValid(room) else { return .failure(.badRequest) }
        if let maximumRooms, rooms[room]?.contains(user) != true, rooms.values.count(where: { $0.contains(user) }) >= maximumRooms {
            return .failure(.tooManyRooms)
        }
        rooms[room, default: []].insert(user)
        return .success(Room(name: room, members: rooms[room]?.count ?? 0, isMember: true))
    }

    public func leave(room: String, user: String) -> Result<Room, IMStatusCode> {
        guard rooms[room]?.remove(user) != nil else { return .failure(.notAMember) }
        return .success(Room(name: room, members: rooms[room]?.count ?? 0, isMember: false))
    }

    public func rooms(for user: String, after: String, limit: Int) -> Result<[Room], IMStatusCode> {
        .success(
            rooms.keys.filter { roomNameOrder(after, $0) }.sorted(by: roomNameOrder).prefix(max(0, limit))
                .map { Room(name: $0, members: rooms[$0]?.count ?? 0, isMember: rooms[$0]?.contains(user) == true) })
    }

    public func history(_ query: HistoryQuery, for user: String, limit: Int) -> Result<HistoryPage, IMStatusCode> {
        let matches: (ChatMessage) -> Bool
        switch query.conversation {
        case .room(let room):
            guard rooms[room]?.contains(user) == true else { return .failure(.notAMember) }
            matches = { $0.recipient == .room(room) }
        case .user(let other):
            matches = { ($0.from == user && $0.recipient == .user(other)) || ($0.from == other && $0.recipient == .user(user)) }
        }
        let before = query.before == 0 ? UInt64.max : query.before
        var messages: [ChatMessage] = []
        var more = false
        for message in log.reversed() where message.seq < before && matches(message) {
            if messages.count == limit {
                more = true
                break
            }
            messages.append(message)
        }
        return .success(HistoryPage(messages: messages, moreAvailable: more))
    }
}
