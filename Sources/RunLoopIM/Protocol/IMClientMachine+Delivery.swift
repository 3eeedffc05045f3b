import RunLoopKit

extension IMClientMachine {
    /// Writes every queued message, in order, on the online connection.
    mutating func transmitQueued(now: LoopInstant) {
        for index in outbox.indices where outbox[index].phase == .queued {
            transmit(at: index, now: now)
        }
    }

    private mutating func transmit(at index: Int, now: LoopInstant) {
        outbox[index].attempts += 1
        outbox[index].wasWritten = true
        outbox[index].phase = .inFlight(resendAt: now + configuration.ackTimeout)
        write(IMFrame(command: .send, serial: takeSerial(), message: outbox[index].message), now: now, expectsAnswer: true)
        actions.append(.deliveryChanged(id: outbox[index].message.id, .sent(attempt: outbox[index].attempts)))
    }

    /// Resends what went unacknowledged for the ack timeout; gives up on what used its attempts.
    mutating func resendDue(now: LoopInstant) {
        var abandoned: [String] = []
        for index in outbox.indices {
            guard case .inFlight(let at) = outbox[index].phase, now >= at else { continue }
            if outbox[index].attempts < configuration.maximumSendAttempts {
                transmit(at: index, now: now)
            } else {
                abandoned.append(outbox[index].message.id)
            }
        }
        if !abandoned.isEmpty { askAbandon(abandoned, now: now) }
    }

    /// After a login: abandon requests the previous connection never got answered go out first.
    mutating func askAbandonAgain(now: LoopInstant) {
        let pending = outbox.entries.filter { $0.phase == .abandoning(asked: false) }.map(\.message.id)
        if !pending.isEmpty { askAbandon(pending, now: now) }
    }

    private mutating func askAbandon(_ ids: [String], now: LoopInstant) {
        var request = IMAbandonRequest()
        request.ids = ids
        outbox.markAbandonSent(ids)
        write(IMFrame(command: .abandon, serial: takeSerial(), message: request), now: now, expectsAnswer: true)
    }

    mutating func handleSendAck(_ ack: IMSendAck, code: UInt32, now: LoopInstant) {
        guard let index = outbox.index(of: ack.id) else { return }  // settled already (late duplicate ack)
        switch IMStatusCode(rawValue: code) {
        case .ok:
            settle(ack.id, .delivered(seq: ack.seq))
        case .rateLimited:
            // Too fast, not lost: try again when the server says, and do not count this attempt.
            let wait = max(Duration.milliseconds(Int64(ack.retryAfterMs)), .milliseconds(50))
            outbox[index].attempts -= 1
            outbox[index].phase = .inFlight(resendAt: now + wait)
        case .internalError, .shuttingDown:
            // Not stored, but worth another try: leave it in flight; the resend timer sends it again.
            break
        case let refusal:
            settle(ack.id, .failed(.refused(refusal ?? .badRequest)))
        }
    }

    mutating func handleAbandonAnswer(_ response: IMAbandonResponse) {
        for result in response.results {
            guard let index = outbox.index(of: result.id) else { continue }
            if result.accepted {
                settle(result.id, .delivered(seq: result.seq))
            } else {
                settle(result.id, .failed(.notAcknowledged(attempts: outbox[index].attempts)))
            }
        }
    }

    /// A message's final state: out of the outbox, reported once.
    mutating func settle(_ id: String, _ final: IMDeliveryState) {
        guard outbox.remove(id) != nil else { return }
        actions.append(.deliveryChanged(id: id, final))
    }

    /// Messages never written anywhere fail with `failure`: the server cannot have them.
    mutating func failNeverSent(_ failure: IMSendFailure) {
        for id in outbox.entries.filter({ !$0.wasWritten }).map(\.message.id) {
            settle(id, .failed(failure))
        }
    }
}
