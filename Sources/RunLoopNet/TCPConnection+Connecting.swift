import RunLoopKit

#if canImport(Glibc)
import Glibc
import Logging
#endif

extension TCPConnection {
    /// Starts connecting to `host` (an IP literal or a host name) at `port`. Loop thread only; the
    /// connection must be idle.
    ///
    /// An IP literal is used at once. A name is handed to `resolver`, which answers off the loop's thread
    /// (the default runs `getaddrinfo` on a worker thread); the answer comes back through
    /// ``RunLoop/perform(inModes:_:)`` in the connection's modes, so the loop never blocks. The addresses
    /// are tried in order until one accepts; the error of the last one is reported if none does.
    ///
    /// Outcome, on the loop's thread: ``onConnect`` on success, otherwise ``onClose`` with
    /// ``CloseReason/failed(_:)`` — ``NetError/connectionRefused``, ``NetError/hostUnreachable``,
    /// ``NetError/networkUnreachable``, ``NetError/resolutionFailed(host:reason:)``, or
    /// ``NetError/timedOut(_:)`` `.connect` when resolving plus connecting takes longer than `timeout`.
    /// Writes made before the handshake completes are queued and sent once it does.
    /// - Parameter timeout: bound on resolution and handshake together; `nil` leaves it to the kernel
    ///   (about two minutes of SYN retries).
    public func connect(
        to host: String,
        port: UInt16,
        timeout: Duration? = .seconds(30),
        resolver: any HostResolver = SystemResolver()
    ) {
        if let address = SocketAddress(ip: host, port: port) {
            return connect(to: [address], timeout: timeout)
        }
        beginConnecting(timeout: timeout)
        lifecycle.startConnecting(resolving: true)
        rare.resolutionGeneration += 1
        let generation = rare.resolutionGeneration
        let bound = LoopBound(self, loop: loop)
        let loop = self.loop
        let modes = self.modes
        logger.trace("resolving \(host)")
        resolver.resolve(host: host, port: port) { result in
            loop.perform(inModes: modes) { bound.value.resolved(result, generation: generation) }
        }
    }

    /// Starts connecting to `address`. See ``connect(to:port:timeout:resolver:)``.
    public func connect(to address: SocketAddress, timeout: Duration? = .seconds(30)) {
        connect(to: [address], timeout: timeout)
    }

    /// Starts connecting to the first of `addresses` that accepts. See
    /// ``connect(to:port:timeout:resolver:)``.
    public func connect(to addresses: [SocketAddress], timeout: Duration? = .seconds(30)) {
        ownerCall {
            beginConnecting(timeout: timeout)
            lifecycle.startConnecting(resolving: false)
            rare.candidates = addresses
            tryNextAddress()
        }
    }

    private func beginConnecting(timeout: Duration?) {
        checkThread()
        precondition(state == .idle, "connect called on a connection that is not idle (\(state))")
        holdWhileOpen()
        if let timeout {
            timer(&rare.connectTimer, "connect timeout") { $0.connectTimerFired() }.arm(at: loop.now + timeout)
        }
    }

    private func resolved(_ result: Result<[SocketAddress], NetError>, generation: Int) {
        guard state == .resolving, generation == rare.resolutionGeneration else { return }
        switch result {
        case .success(let addresses):
            lifecycle.resolved()
            rare.candidates = addresses
            tryNextAddress()
        case .failure(let error):
            finish(.failed(error))
        }
    }

    /// Starts a non-blocking connect to the next candidate; a synchronous failure moves on to the one
    /// after. With no candidate left the connection fails with the last error.
    private func tryNextAddress() {
        while state == .connecting, !rare.candidates.isEmpty {
            let address = rare.candidates.removeFirst()
            do throws(NetError) {
                fd = try Socket.make(address.family)
                try options.apply(to: fd)
                remoteAddress = address
                let status = address.withSockAddr { Glibc.connect(fd, $0, $1) }
                let code = status == 0 ? 0 : errno
                // Even an immediate success is confirmed through writability, so the outcome is always
                // reported from a loop callout.
                guard code == 0 || code == EINPROGRESS || code == EINTR else {
                    throw NetError.from(errno: code, operation: "connect", connecting: true)
                }
                try makeSources()
                updateWriteInterest()
                return
            } catch {
                logger.trace("connect to \(address) failed: \(error)")
                rare.lastConnectError = error
                releaseSocket()
            }
        }
        guard state == .connecting else { return }
        finish(.failed(rare.lastConnectError ?? .connectionRefused))
    }

    /// The write source fired during the handshake: SO_ERROR says how it went.
    func handleConnectResult() {
        let code = Socket.pendingError(fd)
        guard code == 0 else {
            let error = NetError.from(errno: code, operation: "connect", connecting: true)
            logger.trace("connect to \(remoteAddress?.description ?? "?") failed: \(error)")
            rare.lastConnectError = error
            releaseSocket()
            return tryNextAddress()
        }
        established()
    }

    private func established() {
        lifecycle.established()
        rare.connectTimer?.cancel()
        rare.connectTimer = nil
        rare.candidates.removeAll()
        rare.connectedLocalAddress = SocketAddress.of(fd, peer: false)
        if let peer = SocketAddress.of(fd, peer: true) { remoteAddress = peer }
        let now = loop.now
        readWaitStart = now
        rareState?.readExtension = .zero
        lastWriteProgress = now
        updateWriteInterest()
        updateReadInterest()
        guard state == .connected else { return }
        flushOutput()
        guard state == .connected else { return }
        rareState?.onConnect?(self)
        rareState?.onConnect = nil
        guard state == .connected else { return }
        armReadTimer()
        deliverInput()
    }

    /// Called by the listener once its `onAccept` has returned: input starts flowing.
    func startAccepted() {
        // `onAccept` may have closed it already (closing flushes what it wrote, so still needs sources).
        guard isOpen else { return }
        do throws(NetError) {
            try makeSources()
        } catch {
            return finish(.failed(error))
        }
        updateReadInterest()
        guard isOpen else { return }
        flushOutput()
        guard isOpen else { return }
        armReadTimer()
    }

    func connectTimerFired() {
        guard state == .resolving || state == .connecting else { return }
        finish(.failed(.timedOut(.connect)))
    }
}
