public import RunLoopKit

/// The verdict of comparing a recorded trace with an expectation, with a readable explanation.
///
/// Use it with any test framework: `#expect(check.passed, "\(check)")`, `XCTAssertTrue(check.passed,
/// check.description)`, or the helpers ``expectTrace(_:sourceLocation:)`` and ``XCTAssertTrace(_:file:line:)``.
public struct TraceCheck: Sendable, CustomStringConvertible {
    public let passed: Bool
    public let description: String

    public init(passed: Bool, description: String) {
        self.passed = passed
        self.description = description
    }
}

extension ActivityRecorder {
    /// The trace equals `expected` (tokens separated by spaces, e.g. "E BT BS BW AW T:tick X").
    /// - Parameters:
    ///   - allowingSpuriousWakes: also accept extra "BW AW BT BS" cycles, which CFRunLoop allows
    ///     (spurious and stale wake-ups); useful on the system clock.
    ///   - ignoringObservers: leave other observers' callouts (`O:…`) out of the comparison.
    public func check(
        sequence expected: String, allowingSpuriousWakes: Bool = false, ignoringObservers: Bool = true
    ) -> TraceCheck {
        let actual = tokens(ignoringObservers: ignoringObservers)
        let wanted = expected.split(separator: " ").map(String.init)
        let passed = allowingSpuriousWakes ? matchesAllowingSpuriousWakes(actual, wanted) : actual == wanted
        return TraceCheck(
            passed: passed,
            description: passed ? "trace matches" : "expected \(wanted.joined(separator: " "))\n     got \(actual.joined(separator: " "))")
    }

    /// The tokens of `expected` appear in the trace in this order (other tokens may come between).
    public func check(subsequence expected: String) -> TraceCheck {
        let wanted = expected.split(separator: " ").map(String.init)
        var position = 0
        for token in tokens where position < wanted.count && token == wanted[position] { position += 1 }
        return TraceCheck(
            passed: position == wanted.count,
            description: position == wanted.count
                ? "subsequence found"
                : "missing \(wanted[position...].joined(separator: " ")) after \(wanted[..<position].joined(separator: " ")) in \(tokens.joined(separator: " "))"
        )
    }

    /// `token` was recorded exactly `count` times.
    public func check(count expected: Int, of token: String) -> TraceCheck {
        let actual = count(of: token)
        return TraceCheck(passed: actual == expected, description: "\(token) recorded \(actual) times, expected \(expected)")
    }

    /// `first` was recorded, and before any `second`.
    public func check(handled first: String, before second: String) -> TraceCheck {
        let all = tokens
        guard let a = all.firstIndex(of: first) else {
            return TraceCheck(passed: false, description: "\(first) never recorded in \(all.joined(separator: " "))")
        }
        if let b = all.firstIndex(of: second), b < a {
            return TraceCheck(passed: false, description: "\(second) (at \(b)) came before \(first) (at \(a))")
        }
        return TraceCheck(passed: true, description: "\(first) before \(second)")
    }

    private func tokens(ignoringObservers: Bool) -> [String] {
        events.filter { event in
            if ignoringObservers, case .callout(.observer, _) = event.kind { return false }
            return true
        }.map(\.token)
    }
}

/// Whether `actual` equals `expected` once zero or more "BW AW BT BS" cycles (spurious or stale wake-ups,
/// which CFRunLoop allows) are taken out of `actual`.
public func matchesAllowingSpuriousWakes(_ actual: [String], _ expected: [String]) -> Bool {
    let cycle = ["BW", "AW", "BT", "BS"]
    var memo: [Int: Bool] = [:]
    func match(_ i: Int, _ j: Int) -> Bool {
        let key = i * (expected.count + 1) + j
        if let known = memo[key] { return known }
        var result = false
        if i == actual.count {
            result = j == expected.count
        } else {
            if j < expected.count, actual[i] == expected[j], match(i + 1, j + 1) { result = true }
            if !result, i + cycle.count <= actual.count, Array(actual[i..<(i + cycle.count)]) == cycle {
                result = match(i + cycle.count, j)
            }
        }
        memo[key] = result
        return result
    }
    return match(0, 0)
}
