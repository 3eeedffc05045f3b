import RunLoopIMCore

extension IMServerSession {
    /// Writes PRESENCE `frames` (a snapshot page, or what one announcement owes this session) in
    /// their order: as they are, or — when the session's login asked for them — in PRESENCE_BATCH
    /// frames of at most ``IMFrame/mostPresenceBatchBody`` bytes each (never over the session's frame
    /// limit). A client pays a wake-up, a read and a decode per frame, whatever it carries: a login
    /// in a room of a thousand is a thousand notices to its snapshot and to the room, and one or two
    /// frames this way. Loop thread.
    func writePresence(_ frames: [IMFrame]) {
        guard machine.sendsPresenceBatches, !frames.isEmpty else { return write(frames) }
        let frameLimit = Int(machine.settings.limits.maxFrameBody)
        let limit = frameLimit > 0 ? min(IMFrame.mostPresenceBatchBody, frameLimit) : IMFrame.mostPresenceBatchBody
        write(IMFrame.presenceBatches(of: frames, bodyLimit: limit))
    }
}
