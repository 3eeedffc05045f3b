import Synchronization

/// One producer's events handed to any number of `AsyncStream` subscribers, each with a bounded
/// buffer of its own: a slow subscriber loses events (counted in ``dropped``) but never holds up the
/// producer — the loop — or the other subscribers.
///
/// Each ``subscribe()`` is a new stream that sees the events yielded after it (and, when the
/// broadcast replays its latest event, that one first). The streams end at ``finish()``; a
/// subscription made after it ends at once (after the replayed event). Any thread.
package final class AsyncBroadcast<Element: Sendable>: Sendable {
    private struct State {
        var subscribers: [UInt64: AsyncStream<Element>.Continuation] = [:]
        var nextID: UInt64 = 0
        var latest: Element?
        var finished = false
        var dropped = 0
    }

    private let state: Mutex<State>
    private let buffering: AsyncStream<Element>.Continuation.BufferingPolicy

    /// - Parameters:
    ///   - buffering: each subscriber's buffer.
    ///   - latest: the event a new subscriber sees first, then kept up to date by ``yield(_:)``; `nil`:
    ///     a subscriber sees only later events.
    package init(buffering: AsyncStream<Element>.Continuation.BufferingPolicy, latest: Element? = nil) {
        self.buffering = buffering
        state = Mutex(State(latest: latest))
    }

    deinit { finish() }

    /// Events no subscriber's full buffer could take, summed over the subscribers.
    package var dropped: Int { state.withLock { $0.dropped } }

    /// A new stream of the events from now on.
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering)
        let finished = state.withLock { state -> Bool in
            // Under the lock, so no yield can slip in between the replayed event and this subscription.
            if let latest = state.latest { continuation.yield(latest) }
            guard !state.finished else { return true }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
            return false
        }
        if finished { continuation.finish() }
        return stream
    }

    /// Hands `element` to every subscriber, in the order of the calls. One producer thread at a time.
    package func yield(_ element: Element) {
        state.withLock { state in
            guard !state.finished else { return }
            if state.latest != nil { state.latest = element }
            // Yielding under the lock keeps each subscriber's order equal to the calls' order whatever
            // thread subscribes meanwhile; a yield never calls back into this object.
            for continuation in state.subscribers.values {
                if case .dropped = continuation.yield(element) { state.dropped += 1 }
            }
        }
    }

    /// Ends every stream once its buffered events are read; later events are dropped.
    package func finish() {
        let ending = state.withLock { state -> [AsyncStream<Element>.Continuation] in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        // Outside the lock: finishing runs the stream's termination handler, which takes it.
        for continuation in ending { continuation.finish() }
    }

    private func unsubscribe(_ id: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
}
