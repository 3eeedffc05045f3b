import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// Loops and items are released when they should be: no cycles between a loop and its items, and a
/// loop is torn down when its thread ends.
@Suite struct LifetimeTests {
    final class WeakBox<T: AnyObject>: @unchecked Sendable {
        weak var value: T?
        init(_ value: T?) { self.value = value }
    }

    /// Polls briefly (the thread's own teardown runs just after the test body hands back its result).
    private func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    @Test func loopIsTornDownWhenItsThreadEnds() async throws {
        let cancelled = LockedBox<[String]>([])
        let torndown = Latch()
        let weakLoop = try await onLoopThread { () -> WeakBox<RunLoop> in
            let loop = RunLoop.current
            let source = RunLoopSource(cancel: { _, mode in
                cancelled.update { $0.append(mode.rawValue) }
                torndown.open()
            }) { _ in }
            loop.add(source, forMode: "M")
            // The closure captures the loop strongly: teardown must still break the cycle.
            loop.add(RunLoopTimer(after: .seconds(60)) { _ in _ = loop }, forMode: .default)
            return WeakBox(loop)
        }
        torndown.wait()
        #expect(cancelled.get() == ["M"])
        #expect(eventually { weakLoop.value == nil })
    }

    @Test func invalidatedItemsAndTheirClosuresAreReleased() async throws {
        let released = try await onLoopThread { () -> Bool in
            let loop = RunLoop.current
            final class Payload {}
            let timerPayload = WeakBox<Payload>(nil)
            let sourcePayload = WeakBox<Payload>(nil)
            let observerPayload = WeakBox<Payload>(nil)
            let portPayload = WeakBox<Payload>(nil)
            let weakTimer = WeakBox<RunLoopTimer>(nil)
            let weakSource = WeakBox<RunLoopSource>(nil)
            let pair = SocketPair()
            do {
                let a = Payload(), b = Payload(), c = Payload(), d = Payload()
                timerPayload.value = a
                sourcePayload.value = b
                observerPayload.value = c
                portPayload.value = d
                let timer = RunLoopTimer(after: .seconds(1)) { _ in
                    _ = a; _ = loop
                }
                let source = RunLoopSource { _ in
                    _ = b; _ = loop
                }
                let observer = RunLoopObserver(activities: .allActivities) { _, _ in
                    _ = c; _ = loop
                }
                let port = try RunLoopPortSource(fileDescriptor: pair.right) { _, _ in
                    _ = d; _ = loop
                }
                weakTimer.value = timer
                weakSource.value = source
                loop.add(timer, forMode: .common)
                loop.add(source, forMode: "X")
                loop.add(observer, forMode: .default)
                try loop.add(port, forMode: .common)
                timer.invalidate()
                source.invalidate()
                observer.invalidate()
                port.invalidate()
            }
            return timerPayload.value == nil && sourcePayload.value == nil && observerPayload.value == nil
                && portPayload.value == nil && weakTimer.value == nil && weakSource.value == nil
        }
        #expect(released)
    }

    @Test func oneShotTimerIsReleasedAfterItFires() async throws {
        let released = try await onManualClockLoop { loop, _ in
            let weakTimer = WeakBox<RunLoopTimer>(nil)
            do {
                let timer = RunLoopTimer(after: .milliseconds(5)) { _ in }
                weakTimer.value = timer
                loop.add(timer, forMode: .default)
            }
            try loop.run(.default, timeout: .seconds(1))
            return weakTimer.value == nil
        }
        #expect(released)
    }

    /// The loop performs a mode's only source without retaining it; the mode's copy of its sources
    /// holds it. A callout that invalidates its source and runs the mode nested makes that pass replace
    /// the copy: the source must live until its callout returns, and be released after.
    @Test func aSoleSourceOutlivesItsCalloutsNestedRunAndIsReleasedAfter() async throws {
        let (aliveAfterNestedRun, releasedAfter) = try await onManualClockLoop { loop, _ in
            let mode = RunLoop.Mode("M")
            let weakSource = WeakBox<RunLoopSource>(nil)
            let aliveAfterNestedRun = LockedBox(false)
            loop.add(RunLoopTimer(after: .seconds(60)) { _ in }, forMode: mode)
            do {
                let source = RunLoopSource(label: "sole") { source in
                    source.invalidate()
                    _ = try? loop.run(mode, timeout: .zero)
                    aliveAfterNestedRun.set(weakSource.value != nil && source.label == "sole")
                }
                weakSource.value = source
                loop.add(source, forMode: mode)
                source.signal()
            }
            try loop.run(mode, timeout: .zero)
            return (aliveAfterNestedRun.get(), weakSource.value == nil)
        }
        #expect(aliveAfterNestedRun)
        #expect(releasedAfter)
    }

    @Test func currentIsTheSameObjectOnOneThreadAndDifferentAcrossThreads() async throws {
        let same = try await onLoopThread { RunLoop.current === RunLoop.current }
        #expect(same)
        let both = try await onLoopThread { () -> Bool in
            let mine = RunLoop.current
            let other = LockedBox<RunLoop?>(nil)
            let done = Latch()
            startThread {
                other.set(RunLoop.current)
                done.open()
            }
            done.wait()
            return other.get() !== mine && !(other.get()?.isCurrentThread ?? true) && mine.isCurrentThread
        }
        #expect(both)
    }

    @Test func mainLoopIsOneObjectFromAnyThreadAndNotTheTestThreadsLoop() async throws {
        let (mainIsMain, differs) = try await onLoopThread { (RunLoop.main.isMain, RunLoop.main !== RunLoop.current) }
        let sameMain = try await onLoopThread { RunLoop.main === RunLoop.main }
        #expect(mainIsMain)
        #expect(differs)
        #expect(sameMain)
    }

    /// An item's closure can hold the last reference to something whose deinit uses the loop (an
    /// `IMClient` invalidating its timer, say). The loop thread refreshes its own copies of a mode's
    /// observers and sources under the loop's lock, and teardown empties the block queue under it: what
    /// they drop must be let go after the lock, or that deinit takes the lock again on the same thread
    /// and hangs the loop.
    @Test(
        "a dropped observer, source or unrun block that owns the last reference to a loop user is released outside the loop's lock",
        arguments: ["observer", "source", "block at teardown"])
    func releaseOutsideTheLock(item: String) {
        final class TimerOwner {
            let timer: RunLoopTimer
            let released: Latch
            init(on loop: RunLoop, released: Latch) {
                timer = RunLoopTimer(after: .seconds(60)) { _ in }
                self.released = released
                loop.add(timer, forMode: .default)
            }
            deinit {
                timer.invalidate()
                released.open()
            }
        }
        let released = Latch()
        startThread {
            let loop = RunLoop.current
            do {
                let owner = TimerOwner(on: loop, released: released)
                let note: () -> Void = { [owner] in _ = owner }
                switch item {
                case "observer":
                    let observer = RunLoopObserver(activities: .entry) { _, _ in note() }
                    loop.add(observer, forMode: .default)
                    _ = try? loop.run(.default, timeout: .zero)
                    loop.remove(observer, forMode: .default)
                case "source":
                    let source = RunLoopSource { _ in note() }
                    loop.add(source, forMode: .default)
                    source.signal()
                    _ = try? loop.run(.default, timeout: .zero)
                    loop.remove(source, forMode: .default)
                default:
                    try? loop.performFromLoopThread(inModes: ["never run"]) { note() }
                }
            }
            // The loop thread's copy still holds a removed item: this pass refreshes it. A block never
            // run goes when the thread ends, at teardown.
            _ = try? loop.run(.default, timeout: .zero)
        }
        #expect(released.wait(timeout: .seconds(20)), "the loop thread hung releasing the \(item)")
    }
}
