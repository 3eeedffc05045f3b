import RunLoopIMCore

extension IMServerSession {
    /// Writes PRESENCE `frames` (what one announcement to everyone owes this session) in their
    /// order: as they are, or — when the session's login asked for them — in PRESENCE_BATCH frames of
    /// at most ``IMFrame/mostPresenceBatchBody`` bytes each (never over the session's frame limit). A
    /// client pays a wake-up, a read and a decode per frame, whatever it carries: a login in a room
    /// of a thousand is a thousand notices to its snapshot and to the room, and one or two frames
    /// this way. Loop thread.
    func writePresence(_ frames: [IMFrame]) {
        guard let bodyLimit = presenceBatchBodyLimit, !frames.isEmpty else { return write(frames) }
        write(IMFrame.presenceBatches(of: frames, bodyLimit: bodyLimit))
    }

    /// Writes a snapshot page: "online" for each of `users`, in their order, as
    /// ``writePresence(_:)`` would write their PRESENCE frames — a batch's notices encoded straight
    /// from the names, with no frame made per contact. Loop thread.
    func writePresence(online users: [String]) {
        guard !users.isEmpty else { return }
        guard let bodyLimit = presenceBatchBodyLimit else { return write(users.map { IMFrame.presence(of: $0, online: true) }) }
        var batches = PresenceBatchWriter(bodyLimit: bodyLimit, notices: users.count)
        for user in users { batches.append(user: user, online: true) }
        write(batches.finish())
    }

    /// Writes what one announcement told this session: `frames[i]` for each `i` of `told`, in that
    /// order. One at a time to a session that reads single frames (the link gathers a pass's frames
    /// into one write), and alone as well when it is the only one: a batch of one would cost the
    /// node an array and a copy, and the client the same read; in batches to the others. Loop thread.
    func writePresence(_ frames: [IMFrame], told: ArraySlice<Int32>) {
        guard told.count > 1, let bodyLimit = presenceBatchBodyLimit else {
            for index in told { write(frames[Int(index)]) }
            return
        }
        var batches = PresenceBatchWriter(bodyLimit: bodyLimit, notices: told.count)
        for index in told { batches.append(frames[Int(index)]) }
        write(batches.finish())
    }

    /// The most bytes of a PRESENCE_BATCH body to this session (never over its frame limit), or
    /// `nil` when its login did not ask for batches.
    private var presenceBatchBodyLimit: Int? {
        guard machine.sendsPresenceBatches else { return nil }
        let frameLimit = Int(machine.settings.limits.maxFrameBody)
        return frameLimit > 0 ? min(IMFrame.mostPresenceBatchBody, frameLimit) : IMFrame.mostPresenceBatchBody
    }
}
