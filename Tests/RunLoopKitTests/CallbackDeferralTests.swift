import RunLoopKit
import RunLoopTesting
import Testing

/// "Callbacks never run inside the owner's call", on its own: what an owner's call causes waits for
/// the loop's next pass in the deferral's modes, in order, and nothing overtakes what waits.
@Suite struct CallbackDeferralTests {
    @Test func outsideAnOwnersCallACallbackRunsAtOnce() async throws {
        let log = try await onLoopThread { () -> [String] in
            let deferral = CallbackDeferral(loop: .current, modes: [.default], label: "test")
            var log: [String] = []
            deferral.run { log.append("callback") }
            log.append("after")
            return log
        }
        #expect(log == ["callback", "after"])
    }

    @Test func insideAnOwnersCallCallbacksWaitForTheNextPassInOrder() async throws {
        let log = try await onLoopThread { () -> [String] in
            let loop = RunLoop.current
            let deferral = CallbackDeferral(loop: loop, modes: [.default], label: "test")
            var log: [String] = []
            let returned = deferral.ownerCall { () -> Int in
                #expect(deferral.isInsideOwnerCall)
                deferral.run { log.append("first") }
                deferral.ownerCall { deferral.run { log.append("nested") } }
                #expect(deferral.isInsideOwnerCall, "still inside after a nested call")
                deferral.run { log.append("second") }
                return 7
            }
            #expect(returned == 7)
            #expect(!deferral.isInsideOwnerCall)
            log.append("call returned")
            #expect(deferral.hasWaitingCallbacks)
            _ = try loop.runUntil(timeout: .seconds(10)) { !deferral.hasWaitingCallbacks }
            return log
        }
        #expect(log == ["call returned", "first", "nested", "second"])
    }

    @Test func nothingOvertakesWhatWaits() async throws {
        let log = try await onLoopThread { () -> [String] in
            let loop = RunLoop.current
            let deferral = CallbackDeferral(loop: loop, modes: [.default], label: "test")
            var log: [String] = []
            deferral.ownerCall { deferral.run { log.append("from the call") } }
            // From a callout (not an owner's call), while the first still waits.
            deferral.run { log.append("from a callout") }
            #expect(log.isEmpty)
            _ = try loop.runUntil(timeout: .seconds(10)) { log.count == 2 }
            return log
        }
        #expect(log == ["from the call", "from a callout"])
    }

    @Test func runLaterAlwaysWaitsAndAnOwnersCallInAFlushedCallbackWaitsForTheNextPass() async throws {
        let log = try await onLoopThread { () -> [String] in
            let loop = RunLoop.current
            let deferral = CallbackDeferral(loop: loop, modes: [.default], label: "test")
            var log: [String] = []
            deferral.runLater {
                log.append("later")
                // The owner calls the object again from its callback: that call's callback waits.
                deferral.ownerCall { deferral.run { log.append("caused by the callback") } }
                log.append("callback returned")
            }
            #expect(log.isEmpty)
            // Polls: a block queued by a block waits for the next iteration, which a poll starts.
            for _ in 0..<3 where log.count < 3 { _ = try loop.run(.default, timeout: .zero) }
            return log
        }
        #expect(log == ["later", "callback returned", "caused by the callback"])
    }

    /// A callback deferred from inside a flushed callback runs inside a block, and a block queued by a
    /// block waits for the loop's next wake-up (§9.13, as in CFRunLoop): a chain of owner calls made
    /// from callbacks would sit until some timer or socket woke the loop. The deferral wakes it.
    @Test func aCallbackCausedByAFlushedCallbackDoesNotWaitForTheNextWakeUp() async throws {
        let (log, waited) = try await onManualClockLoop { loop, clock -> ([String], Duration) in
            let deferral = CallbackDeferral(loop: loop, modes: [.default], label: "test")
            var log: [String] = []
            // Keeps the mode alive and bounds the wait: without the wake-up, the loop sleeps to it.
            let far = RunLoopTimer(after: .seconds(30), label: "far") { _ in }
            loop.add(far, forMode: .default)
            defer { far.invalidate() }
            deferral.runLater {
                log.append("first")
                deferral.ownerCall { deferral.run { log.append("second") } }
            }
            let start = clock.now
            _ = try loop.runUntil(timeout: .seconds(60)) { log.count == 2 }
            return (log, clock.now - start)
        }
        #expect(log == ["first", "second"])
        #expect(waited == .zero, "the second callback waited \(waited) for something to wake the loop")
    }

    @Test func waitingCallbacksRunOnlyInTheDeferralsModes() async throws {
        let (inOtherMode, inItsMode) = try await onLoopThread { () -> (Bool, Bool) in
            let loop = RunLoop.current
            let other = RunLoop.Mode("other")
            let deferral = CallbackDeferral(loop: loop, modes: [.default], label: "test")
            var ran = false
            deferral.runLater { ran = true }
            // Keeps the other mode non-empty for the run.
            let keep = RunLoopTimer(after: .seconds(3600), label: "keep") { _ in }
            loop.add(keep, forMode: other)
            defer { keep.invalidate() }
            _ = try loop.run(other, timeout: .milliseconds(20))
            let inOtherMode = ran
            _ = try loop.runUntil(timeout: .seconds(10)) { ran }
            return (inOtherMode, ran)
        }
        #expect(!inOtherMode)
        #expect(inItsMode)
    }
}

/// `performFromLoopThread` from inside a block wakes the loop; `perform` keeps CFRunLoop's §9.13 wait.
@Suite struct PerformFromLoopThreadWakeTests {
    @Test func aBlockQueuedByABlockRunsWithoutWaitingForTheNextWakeUp() async throws {
        let (ran, waited) = try await onManualClockLoop { loop, clock -> (Bool, Duration) in
            var ran = false
            let far = RunLoopTimer(after: .seconds(30), label: "far") { _ in }
            loop.add(far, forMode: .default)
            defer { far.invalidate() }
            try loop.performFromLoopThread {
                try? loop.performFromLoopThread { ran = true }
            }
            let start = clock.now
            _ = try loop.runUntil(timeout: .seconds(60)) { ran }
            return (ran, clock.now - start)
        }
        #expect(ran)
        #expect(waited == .zero, "the inner block waited \(waited) for something to wake the loop")
    }
}

/// What a deferral keeps alive, and for how long.
extension CallbackDeferralTests {
    /// An owner that keeps its deferral, with a waiting callback that captures the owner: the cycle a
    /// connection closed just before its loop's thread ends is in. The loop never runs the block, so
    /// the deferral must let the callback go, or the owner is never freed.
    @Test func callbacksThatNeverRanAreLetGoWhenTheLoopsThreadEnds() async throws {
        final class Owner {
            var deferral: CallbackDeferral?
            var ran = false
        }
        final class Weak: @unchecked Sendable {
            weak var owner: Owner?
            init(_ owner: Owner) { self.owner = owner }
        }
        let weak = try await onLoopThread { () -> Weak in
            let owner = Owner()
            let deferral = CallbackDeferral(loop: .current, modes: [.default], label: "test")
            owner.deferral = deferral
            deferral.runLater { owner.ran = true }
            deferral.ownerCall { deferral.run { owner.ran = true } }
            #expect(deferral.hasWaitingCallbacks)
            return Weak(owner)
        }
        // onLoopThread returns after the thread was joined, so after its loop's teardown.
        #expect(weak.owner == nil, "the owner is kept alive by a callback that can never run")
    }

    @Test func aBlockThatRanLetsTheCallbacksGoAsBefore() async throws {
        let ranAndFreed = try await onLoopThread { () -> (Bool, Bool) in
            final class Owner { var deferral: CallbackDeferral? }
            let loop = RunLoop.current
            var ran = false
            weak var weakOwner: Owner?
            do {
                let owner = Owner()
                weakOwner = owner
                let deferral = CallbackDeferral(loop: loop, modes: [.default], label: "test")
                owner.deferral = deferral
                deferral.runLater {
                    ran = true; _ = owner
                }
            }
            _ = try loop.runUntil(timeout: .seconds(10)) { ran }
            return (ran, weakOwner == nil)
        }
        #expect(ranAndFreed.0)
        #expect(ranAndFreed.1, "after running, nothing keeps the owner")
    }
}
