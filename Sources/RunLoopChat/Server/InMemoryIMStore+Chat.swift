public import RunLoopIM
public import RunLoopIMCore

/// The memory store's rooms and history: a room is a conversation, its members the conversation's.
extension InMemoryIMStore: SynchronousChatStore {
    public func join(room: String, user: String, maximumRooms: Int?) -> Result<MembershipCommit, IMStatusCode> {
        guard RoomName.isValid(room) else { return .failure(.badRequest) }
        let place = IMConversation.room(room)
        if let maximumRooms, !isMember(user, of: place), conversations(of: user).count(where: \.isRoom) >= maximumRooms {
            return .failure(.tooManyRooms)
        }
        let seq = nextMembershipSeq(of: place)
        // From now on: older messages are history, not deliveries.
        addMember(user, to: place, ackedThrough: UInt64(messages(of: place).count), joinedSeq: seq)
        return .success(MembershipCommit(room: Room(name: room, members: members(of: place), isMember: true), seq: seq))
    }

    public func leave(room: String, user: String) -> Result<MembershipCommit, IMStatusCode> {
        guard removeMember(user, from: .room(room)) else { return .failure(.notAMember) }
        let seq = nextMembershipSeq(of: .room(room))
        return .success(MembershipCommit(room: Room(name: room, members: members(of: .room(room)), isMember: false), seq: seq))
    }

    public func rooms(for user: String, after: String, limit: Int) -> Result<[Room], IMStatusCode> {
        let names = allConversations.compactMap { place -> String? in
            guard case .room(let name) = place.kind, members(of: place) > 0, roomNameOrder(after, name) else { return nil }
            return name
        }
        return .success(
            names.sorted(by: roomNameOrder).prefix(max(0, limit))
                .map { Room(name: $0, members: members(of: .room($0)), isMember: isMember(user, of: .room($0))) })
    }

    public func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int) -> Result<[String], IMStatusCode> {
        var found: Set<String> = []
        for place in conversations(of: user) where !place.isRoom || members(of: place) <= maximumRoomMembers {
            found.formUnion(memberNames(of: place))
        }
        found.remove(user)
        return .success(found.sorted())
    }

    public func members(ofRoom room: String) -> Result<[RoomMember], IMStatusCode> {
        let place = IMConversation.room(room)
        return .success(memberNames(of: place).sorted().map { RoomMember(name: $0, joinedSeq: joinedSeq(of: $0, in: place) ?? 0) })
    }

    public func history(_ query: HistoryQuery, for user: String, limit: Int) -> Result<HistoryPage, IMStatusCode> {
        let place: IMConversation
        switch query.conversation {
        case .room(let room):
            guard isMember(user, of: .room(room)) else { return .failure(.notAMember) }
            place = .room(room)
        case .user(let other):
            place = .direct(between: user, and: other)
        }
        let before = query.before == 0 ? UInt64.max : query.before
        var page: [ChatMessage] = []
        var more = false
        for message in messages(of: place).reversed() where message.seq < before {
            if page.count == limit {
                more = true
                break
            }
            page.append(message)
        }
        return .success(HistoryPage(messages: page, moreAvailable: more))
    }
}

extension IMConversation {
    /// Whether it is a room's.
    var isRoom: Bool {
        if case .room = kind { return true }
        return false
    }
}
