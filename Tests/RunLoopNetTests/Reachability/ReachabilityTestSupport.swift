import Glibc
import RunLoopKit
import RunLoopTesting

@testable import RunLoopNet

/// Every path a reachability reported, with when, on the loop's clock.
final class PathRecorder {
    private(set) var changes: [(path: NetworkPath, at: LoopInstant)] = []
    let loop: RunLoop
    unowned let reachability: NetworkReachability

    init(_ reachability: NetworkReachability) {
        loop = reachability.loop
        self.reachability = reachability
        reachability.onChange = { [unowned self] _, path in changes.append((path, loop.now)) }
    }

    var paths: [NetworkPath] { changes.map(\.path) }

    /// Runs the loop until `count` changes were reported; the limit only guards against a hang.
    /// Returns the time from `start` to the last of them, or nil if they did not come.
    func waitFor(_ count: Int, since start: LoopInstant, limit: Duration = .seconds(15)) throws -> Duration? {
        try loop.runUntil(timeout: limit) { self.changes.count >= count }
        return changes.count >= count ? changes[count - 1].at - start : nil
    }

    /// Runs the loop until the reported path is `path` (possibly after other changes: a link coming up
    /// may pass through "no carrier"). Returns the time from `start` to that report, or nil.
    func waitFor(path: NetworkPath, since start: LoopInstant, limit: Duration = .seconds(15)) throws -> Duration? {
        try loop.runUntil(timeout: limit) { self.changes.last?.path == path }
        return changes.last?.path == path ? changes.last!.at - start : nil
    }

    /// Runs the loop for `duration` (for "nothing else happens").
    func settle(for duration: Duration = .milliseconds(200)) throws {
        try loop.runUntil(timeout: duration) { false }
    }
}

/// The (device, inode) of an open descriptor, to tell later whether it was closed (the number may be
/// reused meanwhile by a parallel test).
func identity(of fd: Int32) -> [UInt64]? {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    return [UInt64(info.st_dev), UInt64(info.st_ino)]
}

extension NetworkPath {
    /// The reason of an unreachable path; "" when reachable.
    var reason: String {
        if case .unreachable(let reason) = self { return reason }
        return ""
    }
}
