package import RunLoopIMCore
package import RunLoopKit

/// What an async client's tasks await, fed by the callbacks of the client it wraps: the broadcast
/// streams, and the sends and requests waiting for their answer. The one place that turns the
/// callback API's reports into `async` answers, for ``AsyncIMClient`` and RunLoopChat's
/// `AsyncChatClient` alike.
///
/// Loop thread only (the wrapped client's callbacks and the owning actor, which runs on the same
/// loop); ``streams`` any thread.
package final class IMClientEvents {
    package let streams: IMClientStreams
    /// Sends waiting for their message's final state, by id: ended by it (an ``IMClient`` settles
    /// every message once), or earlier by their task's cancellation.
    private var sends: [String: AnswerSlot<IMSendReceipt>] = [:]
    /// Requests waiting for their answer, by serial: ended by the answer or its loss.
    private var requests: [UInt32: AnswerSlot<IMFrame>] = [:]

    package init(buffers: IMStreamBuffers, state: IMConnectionState) {
        streams = IMClientStreams(buffers: buffers, state: state)
    }

    /// A slot that the final state of message `id` settles: a receipt when stored, the
    /// ``IMSendFailure`` when failed. Register it before the loop's next pass: the client reports
    /// nothing inside the call that queued the message, so none of its reports is missed.
    package func awaitStorage(of id: String) -> AnswerSlot<IMSendReceipt> {
        let slot = AnswerSlot<IMSendReceipt>()
        sends[id] = slot
        return slot
    }

    /// A slot that the answer to request `serial` settles: the frame, or the ``IMDisconnectReason``
    /// that lost it.
    package func awaitAnswer(to serial: UInt32) -> AnswerSlot<IMFrame> {
        let slot = AnswerSlot<IMFrame>()
        requests[serial] = slot
        return slot
    }

    package func received(_ message: IMMessage) {
        streams.messages.yield(message)
    }

    package func deliveryChanged(_ id: String, _ state: IMDeliveryState) {
        streams.deliveries.yield(IMDeliveryUpdate(id: id, state: state))
        switch state {
        case .queued, .sent: break
        case .stored(let seq): sends.removeValue(forKey: id)?.settle(with: .success(IMSendReceipt(id: id, seq: seq)))
        case .failed(let failure): sends.removeValue(forKey: id)?.settle(with: .failure(failure))
        }
    }

    package func answered(_ serial: UInt32, _ result: Result<IMFrame, IMDisconnectReason>) {
        requests.removeValue(forKey: serial)?.settle(with: result.mapError { $0 })
    }

    /// Passes `state` on; a client closed for good ends every stream (the state stream with `.closed`).
    package func stateChanged(_ state: IMConnectionState) {
        streams.states.yield(state)
        if case .closed = state { streams.finish() }
    }
}

/// The broadcast streams of an async client. Any thread.
package struct IMClientStreams: Sendable {
    package let messages: AsyncBroadcast<IMMessage>
    package let deliveries: AsyncBroadcast<IMDeliveryUpdate>
    /// Replays the current state to each new subscriber.
    package let states: AsyncBroadcast<IMConnectionState>

    init(buffers: IMStreamBuffers, state: IMConnectionState) {
        messages = AsyncBroadcast(buffering: .bufferingOldest(buffers.messages))
        deliveries = AsyncBroadcast(buffering: .bufferingOldest(buffers.deliveries))
        states = AsyncBroadcast(buffering: .bufferingNewest(buffers.states), latest: state)
    }

    /// Returns once the state is ``IMConnectionState/online`` (at once if it is).
    /// - Throws: ``IMClientClosedError`` when the client closes for good first; `CancellationError`.
    package func waitUntilOnline() async throws {
        for await state in states.subscribe() {
            switch state {
            case .online: return
            case .closed(let reason): throw IMClientClosedError(reason: reason)
            default: continue
            }
        }
        try Task.checkCancellation()
        // Not reached while the client lives: its states end only after `.closed`, which threw above.
        throw IMClientClosedError(reason: .userClosed)
    }

    func finish() {
        messages.finish()
        deliveries.finish()
        states.finish()
    }
}
