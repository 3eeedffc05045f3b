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
