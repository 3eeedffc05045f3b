import RunLoopKit

extension IMServer {
    /// Reads `session`'s inbox again at `instant`, should no acknowledgement read it first; a retry
    /// asked for again is re-dated. The timer is the session's until it ends.
    func retryInboxRead(of session: IMServerSession, at instant: LoopInstant) {
        let key = ObjectIdentifier(session)
        let timer =
            inboxRetries[key]
            ?? {
                let made = ProtocolTimer(loop: loop, modes: session.link.modes, label: "im.session inbox retry") {
                    [weak self, session] in
                    self?.inboxRetries[ObjectIdentifier(session)]?.schedule(at: nil)
                    session.refill()
                }
                inboxRetries[key] = made
                return made
            }()
        timer.schedule(at: instant)
    }

    /// The session ended: its retry, if it had one, is taken off the loop.
    func cancelInboxRetry(of session: IMServerSession) {
        guard !inboxRetries.isEmpty, let timer = inboxRetries.removeValue(forKey: ObjectIdentifier(session)) else { return }
        timer.cancel()
    }
}
