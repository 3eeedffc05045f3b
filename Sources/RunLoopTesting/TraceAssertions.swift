#if canImport(Testing)
public import Testing

/// Records a Swift Testing issue at the caller when `check` failed; returns whether it passed.
@discardableResult
public func expectTrace(_ check: TraceCheck, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    if !check.passed { Issue.record(Comment(rawValue: check.description), sourceLocation: sourceLocation) }
    return check.passed
}
#endif

#if canImport(XCTest)
import XCTest

/// Fails the current XCTest test at the caller when `check` failed.
public func XCTAssertTrace(_ check: TraceCheck, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(check.passed, check.description, file: file, line: line)
}
#endif
