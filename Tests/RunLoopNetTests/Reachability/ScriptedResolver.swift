import RunLoopKit
import RunLoopNet
import RunLoopTesting

/// A ``HostResolver`` that answers from a script: each lookup takes the next answer, then `otherwise`
/// for every later one; with neither, the lookup is held until the test calls ``answerHeld(with:)``.
/// Records every lookup with the loop's time (it is called on the loop's thread).
final class ScriptedResolver: HostResolver {
    typealias Answer = Result<[SocketAddress], NetError>

    private struct State: Sendable {
        var script: [Answer]
        var otherwise: Answer?
        var calls: [(host: String, port: UInt16, at: LoopInstant)] = []
        var held: [@Sendable (Answer) -> Void] = []
    }

    private let state: LockedBox<State>
    /// Answer on a thread of their own, as ``SystemResolver`` does, instead of inside `resolve`.
    let answersFromAnotherThread: Bool

    init(_ script: [Answer] = [], otherwise: Answer? = nil, answersFromAnotherThread: Bool = false) {
        state = LockedBox(State(script: script, otherwise: otherwise))
        self.answersFromAnotherThread = answersFromAnotherThread
    }

    static func addresses(_ ips: String...) -> Answer {
        .success(ips.map { SocketAddress(ip: $0, port: 0)! })
    }

    static func failure(_ host: String = "chat.test") -> Answer {
        .failure(.resolutionFailed(host: host, reason: "Name or service not known"))
    }

    var calls: [(host: String, port: UInt16, at: LoopInstant)] { state.get().calls }
    var callTimes: [LoopInstant] { calls.map(\.at) }
    var heldCount: Int { state.get().held.count }

    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Answer) -> Void) {
        let now = RunLoop.current.now
        var answer: Answer?
        state.update { state in
            state.calls.append((host, port, now))
            if !state.script.isEmpty {
                answer = state.script.removeFirst()
            } else if let otherwise = state.otherwise {
                answer = otherwise
            } else {
                state.held.append(completion)
            }
        }
        guard let answer else { return }
        if answersFromAnotherThread {
            startThread { completion(answer) }
        } else {
            completion(answer)
        }
    }

    /// Answers every held lookup with `answer`, on the calling thread.
    func answerHeld(with answer: Answer) {
        var held: [@Sendable (Answer) -> Void] = []
        state.update { state in
            held = state.held
            state.held.removeAll()
        }
        for completion in held { completion(answer) }
    }
}
