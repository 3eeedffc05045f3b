/// One mode's port registrations with readiness not yet performed, oldest first: a list linked through
/// the registrations themselves (`PortRegistration.nextReady`), each holding one retain from the moment
/// it is queued until it is taken. Loop thread only.
///
/// Why not an array: appending to an array stored in the mode cost, per readiness, a retain and release
/// of the mode's store, a uniqueness check and two calls into the runtime's unspecialised array code
/// (≈ 60 instructions of a ping-pong iteration's ≈ 500); linking is the registration's retain and three
/// stores, and taking the lone entry of a request/response exchange is two.
struct ReadyPortQueue {
    private var head: Unmanaged<PortRegistration>?
    private var tail: Unmanaged<PortRegistration>?
    /// The dispatch keys of a take in order (``takeAllInOrder(into:)``), kept between passes so a
    /// burst's sort allocates nothing but its merge buffer.
    private var keys: [DispatchKey] = []

    /// A registration's place in the dispatch order, copied out of it: sorting these plain values
    /// compares two integers in place, where sorting the registrations compared through two
    /// references (the registration's source) and retained and released each element it looked at
    /// (~470 instructions a port in a burst of hundreds; issue 22, IM-RESULTS "cread").
    private struct DispatchKey {
        let order: Int
        let sequence: UInt64
        let entry: Unmanaged<PortRegistration>

        @inline(__always)
        func precedes(_ other: DispatchKey) -> Bool {
            order < other.order || (order == other.order && sequence < other.sequence)
        }
    }

    var isEmpty: Bool { head == nil }

    /// Queues `registration` (not queued already) behind the others; the queue keeps it alive.
    @inline(__always)
    mutating func append(_ registration: PortRegistration) {
        let entry = Unmanaged.passRetained(registration)
        if let tail {
            tail._withUnsafeGuaranteedRef { $0.nextReady = entry }
        } else {
            head = entry
        }
        tail = entry
    }

    /// Takes the queue's only registration (the caller now owns the queue's retain); nil when the queue
    /// holds none or several.
    @inline(__always)
    mutating func takeSole() -> PortRegistration? {
        guard let head, head.toOpaque() == tail?.toOpaque() else { return nil }
        self.head = nil
        tail = nil
        return head.takeRetainedValue()
    }

    /// Moves every queued registration to the end of `array`, in queue order, and empties the queue.
    mutating func takeAll(into array: inout [PortRegistration]) {
        var next = head
        head = nil
        tail = nil
        while let entry = next {
            let registration = entry.takeRetainedValue()
            next = registration.nextReady
            registration.nextReady = nil
            array.append(registration)
        }
    }

    /// Moves every queued registration to the end of `array` in dispatch order — ascending source
    /// `order`, ties in the order the sources were added to the mode (`PortRegistration.sequence`) —
    /// and empties the queue. Readiness is queued in the order epoll reports it, so a burst is
    /// usually out of order; one already in order is taken without sorting.
    mutating func takeAllInOrder(into array: inout [PortRegistration]) {
        var next = head
        head = nil
        tail = nil
        var inOrder = true
        while let entry = next {
            let key = entry._withUnsafeGuaranteedRef { registration in
                next = registration.nextReady
                registration.nextReady = nil
                return DispatchKey(order: registration.source.order, sequence: registration.sequence, entry: entry)
            }
            if inOrder, let last = keys.last, !last.precedes(key) { inOrder = false }
            keys.append(key)
        }
        if !inOrder { keys.sort { $0.precedes($1) } }
        for key in keys { array.append(key.entry.takeRetainedValue()) }
        keys.removeAll(keepingCapacity: keys.capacity <= Self.keptKeyCapacity)
    }

    /// Keys kept between passes at most (a pass of more lets its key buffer go).
    private static var keptKeyCapacity: Int { 1_024 }

    /// Queues `registrations` ahead of everything queued now, in their order.
    mutating func prepend(_ registrations: ArraySlice<PortRegistration>) {
        var front = ReadyPortQueue()
        for registration in registrations { front.append(registration) }
        guard let frontTail = front.tail else { return }
        frontTail._withUnsafeGuaranteedRef { $0.nextReady = head }
        if head == nil { tail = frontTail }
        head = front.head
    }

    /// Lets every queued registration go (teardown).
    mutating func removeAll() {
        var released: [PortRegistration] = []
        takeAll(into: &released)
    }
}
