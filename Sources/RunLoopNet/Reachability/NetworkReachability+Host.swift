import Logging
import RunLoopKit

/// Looking up a ``NetworkReachability/host`` name: off the loop's thread, one lookup at a time, timed
/// by ``HostLookupSchedule``.
extension NetworkReachability {
    /// The network settled after a change, or the object starts: the name may resolve differently now.
    func networkSettled() {
        guard isValid, host != nil else { return }
        lookupSchedule.networkChanged(now: loop.now)
        lookUpIfDue()
    }

    /// Starts the lookup the schedule wants now, or sets the timer for when it wants one.
    private func lookUpIfDue() {
        guard isValid, let host, let resolver else { return }
        if lookupSchedule.startIfDue(now: loop.now) {
            cancelLookupTimer()
            startLookup(host, resolver)
            return
        }
        guard let due = lookupSchedule.nextLookup else { return cancelLookupTimer() }
        if lookupTimer?.due == due { return }
        cancelLookupTimer()
        let timer = RunLoopTimer(fireAt: due, label: "reachability lookup") { [weak self] _ in
            guard let self else { return }
            self.lookupTimer = nil
            self.lookUpIfDue()
        }
        lookupTimer = (timer, due)
        for mode in modes { loop.add(timer, forMode: mode) }
    }

    private func cancelLookupTimer() {
        lookupTimer?.timer.invalidate()
        lookupTimer = nil
    }

    private func startLookup(_ host: String, _ resolver: any HostResolver) {
        let generation = lookupGeneration
        let owner = WeakReachability(self)
        let loop = self.loop
        let modes = self.modes
        logger.debug("looking up \(host)")
        // The resolver answers from any thread; the answer is handled on the loop's, in a callout of its
        // own, so onChange never runs inside this call.
        resolver.resolve(host: host, port: 0) { result in
            loop.perform(inModes: modes, label: "reachability lookup answer") {
                owner.value?.lookedUp(result, generation: generation)
            }
        }
    }

    private func lookedUp(_ result: Result<[SocketAddress], NetError>, generation: Int) {
        guard isValid, generation == lookupGeneration, let host else { return }
        var found: [SocketAddress] = []
        if case .success(let addresses) = result {
            for address in addresses.map({ $0.withPort(0) }) where !found.contains(address) { found.append(address) }
        }
        guard !found.isEmpty else {
            lookupSchedule.finished(succeeded: false, now: loop.now)
            let why: String
            switch result {
            case .failure(let error): why = "\(error)"
            case .success: why = "no addresses"
            }
            let meanwhile =
                resolvedAddresses.isEmpty
                ? "no judgement until it resolves"
                : "still judging \(resolvedAddresses.map(\.ip).joined(separator: ", "))"
            let next = lookupSchedule.nextLookup.map { "\($0 - loop.now)" } ?? "?"
            logger.debug("cannot look up \(host) (\(why)); \(meanwhile); next lookup in \(next)")
            return lookUpIfDue()
        }
        lookupSchedule.finished(succeeded: true, now: loop.now)
        if found != resolvedAddresses {
            logger.debug("\(host) is \(found.map(\.ip).joined(separator: ", "))")
            resolvedAddresses = found
            // May call onChange, whose owner may invalidate us; lookUpIfDue checks.
            evaluate()
        }
        lookUpIfDue()
    }
}

/// Carries a reachability through a resolver's `@Sendable` completion back to its loop's thread, where
/// alone it is read; weak, so a lookup in flight does not keep a reachability its owner let go.
private final class WeakReachability: @unchecked Sendable {
    weak var value: NetworkReachability?
    init(_ value: NetworkReachability) { self.value = value }
}
