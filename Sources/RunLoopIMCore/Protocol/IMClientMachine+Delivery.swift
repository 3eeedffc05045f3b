import RunLoopKit

extension IMClientMachine {
    /// Writes, in outbox order, every queued message and every one whose ack timeout passed on the
    /// online connection; gives up on what used its attempts. Nothing while the server's rate-limit
    /// pause lasts: everything waits, so the server sees the messages in order when it ends.
    mutating func transmitDue(now: LoopInstant) {
        if let until = pausedUntil {
            guard now >= until else { return }
            pausedUntil = nil
        }
        var abandoned: [String] = []
        for index in outbox.indices {
            switch outbox[index].phase {
            case .queued:
                transmit(at: index, now: now)
            case .inFlight(let at) where now >= at:
                if outbox[index].attempts < configuration.maximumSendAttempts {
                    transmit(at: index, now: now)
                } else {
                    abandoned.append(outbox[index].message.id)
                }
            default:
                break
            }
        }
        if !abandoned.isEmpty { askAbandon(abandoned, now: now) }
    }

    private mutating func transmit(at index: Int, now: LoopInstant) {
        let serial = takeSerial()
        outbox[index].attempts += 1
        outbox[index].wasWritten = true
        outbox[index].serial = serial
        outbox[index].phase = .inFlight(resendAt: now + configuration.ackTimeout)
        write(IMFrame(command: .send, serial: serial, message: outbox[index].message), now: now, expectsAnswer: true)
        actions.append(.deliveryChanged(id: outbox[index].message.id, .sent(attempt: outbox[index].attempts)))
    }

    /// After a login: queued messages over the size limit the server just announced are refused
    /// (``refuseOversize(_:limit:)``) instead of sent.
    mutating func settleOversize() {
        for entry in outbox.entries where entry.phase == .queued && entry.bodySize > maximumSendBody {
            refuseOversize(entry.message.id, limit: maximumSendBody)
        }
    }

    /// `id` is over the server's size limit: it never goes out again. Never written anywhere, or
    /// written only under the limit the server refuses it by now, it fails at once; written on an
    /// earlier connection, that one may have stored it, so the server is asked (ABANDON).
    private mutating func refuseOversize(_ id: String, limit: Int) {
        guard let index = outbox.index(of: id) else { return }
        let entry = outbox[index]
        if entry.writtenOnEarlierConnection {
            outbox[index].oversize = (entry.bodySize, limit)
            outbox[index].phase = .abandoning(asked: false)
        } else {
            settle(id, .failed(.tooLarge(bytes: entry.bodySize, limit: limit)))
        }
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

    mutating func handleSendAck(_ ack: IMSendAck, serial: UInt32, code: UInt32, now: LoopInstant) {
        // A refusal of a SEND the server could not read may come without the id: its serial says.
        guard let index = outbox.index(of: ack.id) ?? (ack.id.isEmpty ? outbox.index(ofSerial: serial) : nil) else {
            return  // settled already (a late duplicate ack)
        }
        let id = outbox[index].message.id
        switch IMStatusCode(rawValue: code) {
        case .ok:
            settle(id, .stored(seq: ack.seq))
        case .rateLimited:
            pauseSending(from: index, retryAfter: .milliseconds(Int64(ack.retryAfterMs)), now: now)
        case .internalError, .shuttingDown:
            // Not stored, but worth another try: leave it in flight; the resend timer sends it again.
            break
        case .frameTooLarge:
            // Never again, by no path: the same bytes would be refused the same way.
            guard case .inFlight = outbox[index].phase else { return }
            refuseOversize(id, limit: maximumSendBody)
            askAbandonAgain(now: now)
        case let refusal:
            settle(id, .failed(.refused(refusal ?? .badRequest)))
        }
    }

    /// SEND_ACK `rateLimited` for the message at `index`: the server refuses every SEND on this
    /// connection until `retryAfter` has passed, so this one and every later one in flight go back
    /// to the queue (the attempt does not count), and nothing is sent until then; then all of them
    /// go out again in outbox order, which keeps one sender's messages in order.
    private mutating func pauseSending(from index: Int, retryAfter: Duration, now: LoopInstant) {
        // A refusal for a message already put back is part of the same pause.
        guard case .inFlight = outbox[index].phase else { return }
        let wait = max(retryAfter, Self.minimumRateLimitPause)
        let wasPaused = pausedUntil.map { now < $0 } ?? false
        pausedUntil = max(pausedUntil ?? now, now + wait)
        for later in index..<outbox.count {
            guard case .inFlight = outbox[later].phase else { continue }
            outbox[later].attempts -= 1
            outbox[later].phase = .queued
            actions.append(.deliveryChanged(id: outbox[later].message.id, .queued))
        }
        if !wasPaused { actions.append(.rateLimited(retryAfter: wait)) }
    }

    /// The shortest rate-limit pause, whatever the server says: a `retry_after_ms` of 0 must not
    /// make a busy loop of refusals.
    static var minimumRateLimitPause: Duration { .milliseconds(50) }

    mutating func handleAbandonAnswer(_ response: IMAbandonResponse) {
        for result in response.results {
            guard let index = outbox.index(of: result.id) else { continue }
            if result.accepted {
                settle(result.id, .stored(seq: result.seq))
            } else if let oversize = outbox[index].oversize {
                settle(result.id, .failed(.tooLarge(bytes: oversize.bytes, limit: oversize.limit)))
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
