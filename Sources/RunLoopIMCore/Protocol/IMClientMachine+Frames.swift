import RunLoopKit

extension IMClientMachine {
    /// One frame from the server on the current, open transport.
    mutating func handle(_ frame: IMFrame, now: LoopInstant) throws(IMFrameError) {
        switch frame.command {
        case .heartbeatAck:
            if let beat = pendingHeartbeat, beat.serial == frame.serial {
                heartbeat.recordSuccess(afterQuiet: beat.quiet)
                pendingHeartbeat = nil
            }
        case .heartbeat:
            // The server may ping too (it must, for browsers); answer at once with its serial.
            write(IMFrame(command: .heartbeatAck, serial: frame.serial), now: now, expectsAnswer: false)
        case .loginAck:
            try handleLoginAnswer(frame, now: now)
        case .sendAck:
            let ack = try frame.decode(IMSendAck.self)
            handleSendAck(ack, serial: frame.serial, code: frame.header.code, now: now)
        case .deliver:
            let message = try frame.decode(IMChatMessage.self)
            handleIncoming(message, now: now)
        case .abandonAck:
            handleAbandonAnswer(try frame.decode(IMAbandonResponse.self))
        case .logoutAck:
            if case .closing = phase { finishClose(now: now) }
        case .error:
            let notice = (try? frame.decode(IMErrorNotice.self)) ?? IMErrorNotice()
            let code = frame.code ?? .internalError
            // tooManyConnections, shuttingDown: the server may say when to come back. Any ERROR
            // (tooSlow and sessionReplaced too) is a drop like another, reconnected with backoff.
            if notice.retryAfterMs > 0 { retryFloor = .milliseconds(Int64(notice.retryAfterMs)) }
            if case .loggingIn = phase, code == .authenticationFailed {
                drop(.loginRefused(code, notice.message), now: now)
            } else {
                drop(.serverError(code, notice.message), now: now)
            }
        case .joinAck, .leaveAck, .roomList, .historyPage:
            if pendingRequests.remove(frame.serial) != nil { actions.append(.response(serial: frame.serial, frame)) }
        case .presence, .membership, .presenceBatch:
            // What ``noticeReceived(generation:now:)`` does for these too, the same three (``isNotice(_:)``).
            actions.append(.notice(frame))
        case .login, .logout, .send, .deliverAck, .abandon, .join, .leave, .listRooms, .history, nil:
            // Requests only a server handles, or a command from a newer protocol: ignored, so a
            // server may add commands without breaking older clients.
            break
        }
    }

    private mutating func handleLoginAnswer(_ frame: IMFrame, now: LoopInstant) throws(IMFrameError) {
        guard case .loggingIn(let current, let serial) = phase, frame.serial == serial else { return }
        let response = try frame.decode(IMLoginResponse.self)
        guard frame.header.code == IMStatusCode.ok.rawValue else {
            // A refusal for now may say when to try again: the next attempt waits at least that.
            if response.retryAfterMs > 0 { retryFloor = .milliseconds(Int64(response.retryAfterMs)) }
            isAccountUnknown = response.accountUnknown
            drop(.loginRefused(frame.code ?? .authenticationFailed, response.reason), now: now)
            return
        }
        phase = .online(current)
        isAccountCreated = response.accountCreated
        loginDeadline = nil
        onlineSince = now
        grantedKeepalive = response.keepaliveSeconds > 0 ? .seconds(Int64(response.keepaliveSeconds)) : nil
        receivesPresenceBatches = response.presenceBatches
        adoptLimits(response)
        report(.online)
        settleOversize()
        askAbandonAgain(now: now)
        transmitDue(now: now)
    }

    /// The session's limits, as announced (an older server announces none: the configured ones hold).
    private mutating func adoptLimits(_ response: IMLoginResponse) {
        let limits = response.hasLimits ? response.limits : IMSessionLimits()
        maximumSendBody = limits.maxSendBody > 0 ? Int(limits.maxSendBody) : Self.assumedSendLimit(configuration)
        // The server promised every frame fits in its limit: never refuse one that does.
        receiveLimit = max(configuration.maximumFrameBody, Int(limits.maxFrameBody))
        largeRoomMembers = limits.largeRoomMembers > 0 ? Int(limits.largeRoomMembers) : nil
    }

    private mutating func handleIncoming(_ message: IMChatMessage, now: LoopInstant) {
        if seen.insert(message.from + "\u{0}" + message.id) {
            actions.append(.received(IMMessage(message)))
        } else {
            duplicatesDropped += 1
        }
        // Acknowledge duplicates too: the server resent because our earlier ack was lost. One
        // DELIVER_ACK for everything one read brought (``endOfInput``): each ack is a transaction
        // on the server, and a busy room delivers many messages per read.
        unacknowledged.append(message.seq)
    }
}
