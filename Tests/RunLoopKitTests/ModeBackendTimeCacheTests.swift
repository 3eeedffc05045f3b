import CLibevent
import Glibc
import Testing

@testable import RunLoopKit

/// A mode's libevent base keeps no time cache: the loop uses none of libevent's timers, so the clock read
/// libevent makes after every epoll return to fill the cache was paid per dispatch for nothing.
@Suite struct ModeBackendTimeCacheTests {
    @Test func aDispatchLeavesLibeventWithoutACachedTime() throws {
        let backend = try ModeBackend(wakePort: WakeUpPort())
        var ends: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(Glibc.SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var byte: UInt8 = 1
        precondition(write(ends[1], &byte, 1) == 1)

        let probe = TimeCacheProbe(base: backend.base)
        let newEvent = event_new(
            backend.base, ends[0], Int16(EV_READ),
            { _, _, context in
                Unmanaged<TimeCacheProbe>.fromOpaque(context!).takeUnretainedValue().look()
            }, Unmanaged.passUnretained(probe).toOpaque())
        let event = try #require(newEvent)
        #expect(event_add(event, nil) == 0)

        // The event goes before its base, which the backend's deinit frees.
        withExtendedLifetime(backend) {
            backend.dispatch(blocking: false)
            event_free(event)
        }

        let seen = try #require(probe.seen)
        // A cached time stays at the instant the dispatch filled it in, before the clock moved on.
        #expect(seen.cachedAfterwards >= seen.clockMovedTo)
    }
}

/// Inside a libevent callback, reads libevent's "cached" time, waits (spinning, ≤ 1 ms) until the wall
/// clock has passed that reading, and reads it again.
private final class TimeCacheProbe {
    let base: OpaquePointer
    var seen: (clockMovedTo: Int64, cachedAfterwards: Int64)?

    init(base: OpaquePointer) { self.base = base }

    func look() {
        let first = cachedMicroseconds()
        // A millisecond, not a microsecond: libevent's cached time is its monotonic clock plus an
        // offset to the wall clock, which may differ from `gettimeofday` by a little.
        var now = timeval()
        repeat {
            gettimeofday(&now, nil)
        } while Self.microseconds(now) <= first + 1_000
        seen = (Self.microseconds(now), cachedMicroseconds())
    }

    private func cachedMicroseconds() -> Int64 {
        var time = timeval()
        precondition(event_base_gettimeofday_cached(base, &time) == 0)
        return Self.microseconds(time)
    }

    private static func microseconds(_ time: timeval) -> Int64 {
        Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_usec)
    }
}
