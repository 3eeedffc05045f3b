import RunLoopIM
import RunLoopIMCore
public import RunLoopKit
import RunLoopTesting

/// Two linked ``MemoryFrameLink`` ends on one loop, and their fault script.
///
/// ```swift
/// let pair = MemoryLinkPair(loop: loop)
/// server.adopt(pair.server)
/// let client = IMClient(configuration: configuration, connector: { _, _, _ in pair.client })
/// pair.apply(.delay(.milliseconds(80)))
/// pair.apply(.drop, after: .seconds(30))
/// ```
///
/// For clients that reconnect (a fresh pair per attempt), use a ``MemoryLinkConnector``.
/// Loop thread only.
public final class MemoryLinkPair {
    /// The connecting end: give it to an ``IMClient`` (its `opened` comes on a later pass).
    public let client: MemoryFrameLink
    /// The accepted end: give it to ``IMServer/adopt(_:)``.
    public let server: MemoryFrameLink
    let wire: MemoryLinkWire

    /// - Parameters:
    ///   - modes: the client end's modes, in which what travels toward it is delivered (and faults
    ///     scheduled with ``apply(_:after:)`` fire).
    ///   - serverModes: the server end's modes, in which what travels toward it is delivered, as an
    ///     accepted socket runs in its listener's modes (nil: `modes`).
    ///   - clientFrameLimit: the largest body the client end accepts (until raised).
    ///   - serverFrameLimit: the largest body the server end accepts.
    ///   - skippableSendLength: a SEND body over `serverFrameLimit` but at most this long reaches the
    ///     server end as ``IMFrameLinkEvents/oversized(_:_:_:)``, as over TCP; 0: never.
    public init(
        loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common], serverModes: [RunLoop.Mode]? = nil,
        clientFrameLimit: Int = 64 * 1024,
        serverFrameLimit: Int = 64 * 1024, skippableSendLength: Int = 0
    ) {
        wire = MemoryLinkWire(loop: loop, modes: modes, serverModes: serverModes ?? modes)
        client = MemoryFrameLink(
            pair: wire, side: .client, loop: loop, modes: modes,
            decoder: FrameDecoder(maximumBodyLength: clientFrameLimit))
        server = MemoryFrameLink(
            pair: wire, side: .server, loop: loop, modes: wire.serverModes,
            decoder: FrameDecoder(
                maximumBodyLength: serverFrameLimit, skippableBodyLength: skippableSendLength,
                skippableCommands: FrameDecoder.sendOnly))
        wire.client = client
        wire.server = server
    }

    /// The end on `side`.
    public func end(_ side: MemoryLinkSide) -> MemoryFrameLink { side == .client ? client : server }

    /// Applies one fault now.
    public func apply(_ fault: MemoryLinkFault) { wire.apply(fault) }

    /// Applies one fault `delay` from now on the loop's clock.
    public func apply(_ fault: MemoryLinkFault, after delay: Duration) {
        let timer = RunLoopTimer(after: delay, label: "memory link fault") { [wire] _ in wire.apply(fault) }
        for mode in wire.modes { wire.loop.add(timer, forMode: mode) }
    }

    /// Whether ``MemoryLinkFault/drop`` vanished the link.
    public var isDropped: Bool { wire.isDropped }

    /// Whether nothing is on its way that the loop would deliver (no connect pending; every direction
    /// empty, stalled or dropped).
    public var isIdle: Bool { wire.isIdle }

    /// Runs the loop until ``isIdle`` and `alsoIdle` holds (at most `timeout` of the loop's clock);
    /// whether it got there.
    @discardableResult
    public func settle(timeout: Duration = .seconds(10), alsoIdle: @escaping () -> Bool = { true }) throws -> Bool {
        try wire.loop.runUntil(timeout: timeout) { [wire] in wire.isIdle && alsoIdle() }
    }
}

/// The shared state of a pair: two one-way channels, each a queue of bytes and ends with their due
/// instants, pumped by a timer on the loop so delivery always comes on a later pass.
final class MemoryLinkWire {
    let loop: RunLoop
    /// The client end's modes (and the fault script's).
    let modes: [RunLoop.Mode]
    let serverModes: [RunLoop.Mode]
    weak var client: MemoryFrameLink?
    weak var server: MemoryFrameLink?
    /// Hands the server end to its acceptor when the client end connects (``MemoryLinkConnector``).
    var accept: ((MemoryFrameLink) -> Void)?
    var refusesConnect = false
    private(set) var isDropped = false
    private(set) var isReset = false
    private var delay: Duration = .zero
    private var isByteByByte = false
    private var channels: [MemoryLinkSide: Channel] = [.client: Channel(), .server: Channel()]

    /// What travels toward one end.
    final class Channel {
        enum Item {
            case bytes([UInt8])
            case end(IMLinkCloseReason)
        }
        var queue: [(due: LoopInstant, item: Item)] = []
        var isStalled = false
        var timer: RunLoopTimer?

        var bytesQueued: Int {
            queue.reduce(0) { total, entry in
                if case .bytes(let bytes) = entry.item { return total + bytes.count }
                return total
            }
        }

        func clear() {
            queue.removeAll()
            timer?.invalidate()
            timer = nil
        }
    }

    init(loop: RunLoop, modes: [RunLoop.Mode], serverModes: [RunLoop.Mode]) {
        self.loop = loop
        self.modes = modes
        self.serverModes = serverModes
    }

    private func end(_ side: MemoryLinkSide) -> MemoryFrameLink? { side == .client ? client : server }

    // MARK: The ends' calls

    func opened(_ link: MemoryFrameLink) {
        guard link.side == .client else { return schedule(toward: .server) }
        // Connecting takes a pass, as a socket's does: the owner's open call returns first.
        isConnecting = true
        at(loop.now, in: modes) { [self] in
            isConnecting = false
            // Closed by its owner within the pass: nothing connects.
            guard link.isOpen else { return }
            if refusesConnect { return link.reportClosed(.failed(.refused)) }
            if let server { accept?(server) }
            link.reportOpened()
            schedule(toward: .client)
        }
    }

    /// Whether what `side` sends goes anywhere (not dropped, not discarded): the sender skips the
    /// encoding otherwise.
    func carries(from side: MemoryLinkSide) -> Bool { !isDropped && !discarding.contains(side.peer) }
    private var discarding: Set<MemoryLinkSide> = []

    func transmit(_ bytes: [UInt8], from side: MemoryLinkSide) {
        guard !isDropped else { return }
        enqueue(.bytes(bytes), toward: side.peer)
    }

    /// The end on `side` was closed by its owner: its peer learns `reason` after what was sent (a
    /// graceful close), or at once, losing what was in flight (an abort's reset).
    func ended(_ side: MemoryLinkSide, reason: IMLinkCloseReason) {
        channels[side]!.clear()
        guard !isDropped, !isReset else { return }
        if reason != .peerClosed { channels[side.peer]!.clear() }
        enqueue(.end(reason), toward: side.peer)
    }

    func hasDueInput(for side: MemoryLinkSide) -> Bool {
        let channel = channels[side]!
        guard !isDropped, !channel.isStalled, let head = channel.queue.first, case .bytes = head.item else { return false }
        return head.due <= loop.now
    }

    func bytesInFlight(from side: MemoryLinkSide) -> Int { channels[side.peer]!.bytesQueued }

    /// Nothing is on its way that the loop will deliver: no connect pending, and toward each end
    /// nothing, or nothing it can take yet (stalled, dropped, or an end never opened).
    var isIdle: Bool {
        !isConnecting
            && (isDropped
                || [MemoryLinkSide.client, .server].allSatisfy { side in
                    let channel = channels[side]!
                    return channel.queue.isEmpty || channel.isStalled || end(side)?.events == nil
                })
    }
    private var isConnecting = false

    // MARK: Faults

    func apply(_ fault: MemoryLinkFault) {
        switch fault {
        case .drop:
            isDropped = true
            for channel in channels.values { channel.clear() }
        case .stall(let direction):
            channels[direction.receiver]!.isStalled = true
        case .resume(let direction):
            channels[direction.receiver]!.isStalled = false
            schedule(toward: direction.receiver)
        case .reset:
            guard !isReset else { return }
            isReset = true
            isDropped = false
            for side in [MemoryLinkSide.client, .server] {
                channels[side]!.clear()
                channels[side]!.isStalled = false
                enqueue(.end(.failed(.reset)), toward: side, due: loop.now)
            }
        case .delay(let duration):
            delay = max(duration, .zero)
        case .byteByByte(let on):
            isByteByByte = on
        case .discard(let direction):
            discarding.insert(direction.receiver)
        case .outputFull(let side, let full):
            end(side)?.isOutputFull = full
        }
    }

    // MARK: Delivery

    private func enqueue(_ item: Channel.Item, toward side: MemoryLinkSide, due: LoopInstant? = nil) {
        let channel = channels[side]!
        // Never before what is queued already: a frame sent later never overtakes an earlier one.
        let due = max(due ?? loop.now + delay, channel.queue.last?.due ?? loop.now)
        channel.queue.append((due, item))
        schedule(toward: side)
    }

    private func schedule(toward side: MemoryLinkSide) {
        let channel = channels[side]!
        guard channel.timer == nil, !isDropped, !channel.isStalled, let head = channel.queue.first,
            end(side)?.events != nil
        else { return }
        // Weakly: the channel keeps its timer, and a loop whose thread ends keeps no timer from
        // running, so strong captures would keep the wire and its channel alive forever.
        channel.timer = at(head.due, in: side == .client ? modes : serverModes) { [weak self, weak channel] in
            channel?.timer = nil
            self?.pump(toward: side)
        }
    }

    /// Delivers what is due toward `side`: every due byte as one read (or one byte, byte by byte),
    /// then a due end.
    private func pump(toward side: MemoryLinkSide) {
        let channel = channels[side]!
        guard !isDropped, !channel.isStalled, let receiver = end(side) else { return }
        var read: [UInt8] = []
        while let head = channel.queue.first, head.due <= loop.now, case .bytes(let bytes) = head.item {
            if isByteByByte {
                read = [bytes[0]]
                if bytes.count > 1 { channel.queue[0].item = .bytes(Array(bytes.dropFirst())) } else { channel.queue.removeFirst() }
                break
            }
            read += bytes
            channel.queue.removeFirst()
        }
        if !read.isEmpty {
            receiver.deliver(read)
        } else if let head = channel.queue.first, head.due <= loop.now, case .end(let reason) = head.item {
            channel.queue.removeFirst()
            receiver.reportClosed(reason)
        }
        schedule(toward: side)
    }

    @discardableResult
    private func at(_ instant: LoopInstant, in modes: [RunLoop.Mode], _ body: @escaping () -> Void) -> RunLoopTimer {
        let timer = RunLoopTimer(fireAt: instant, label: "memory link") { _ in body() }
        for mode in modes { loop.add(timer, forMode: mode) }
        return timer
    }
}
