import CLibpq

/// The rows one statement returned (none for most statements that change data), as text.
///
/// It keeps libpq's result and reads values from it on demand, so a large result costs no copy and
/// no work on the loop beyond what libpq already did while the rows arrived. Immutable, so it may be
/// handed to another thread (libpq's results are read-only once made).
public final class PostgresRows: @unchecked Sendable {
    private let result: OpaquePointer

    /// Takes ownership of `result` (`PQclear` when released).
    init(taking result: OpaquePointer) {
        self.result = result
        columns = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
        count = Int(PQntuples(result))
    }

    deinit { PQclear(result) }

    /// The column names, in order.
    public let columns: [String]
    /// The number of rows.
    public let count: Int

    /// The command tag, e.g. `INSERT 0 1` or `SELECT 3`.
    public var commandTag: String { String(cString: PQcmdStatus(result)) }

    /// How many rows an INSERT, UPDATE, DELETE, MERGE, SELECT or COPY touched; `nil` for others.
    public var affectedRows: Int? { Int(String(cString: PQcmdTuples(result))) }

    /// The value in `row` and `column` as the server's text; `nil` for SQL NULL.
    public subscript(row: Int, column: Int) -> String? {
        precondition(row >= 0 && row < count && column >= 0 && column < columns.count, "row or column out of range")
        if PQgetisnull(result, Int32(row), Int32(column)) != 0 { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// The value in `row` of the column named `name`; `nil` for SQL NULL or no such column.
    public subscript(row: Int, name: String) -> String? {
        guard let column = columns.firstIndex(of: name) else { return nil }
        return self[row, column]
    }

    /// The value as an integer (`int2`, `int4`, `int8`, or text that reads as one).
    public func int(_ row: Int, _ column: Int) -> Int? { self[row, column].flatMap { Int($0) } }

    /// The value as a `boolean` (the server writes `t` and `f`).
    public func bool(_ row: Int, _ column: Int) -> Bool? {
        switch self[row, column] {
        case "t": return true
        case "f": return false
        default: return nil
        }
    }

    /// The value as a `Double` (`float4`, `float8`, `numeric` within range).
    public func double(_ row: Int, _ column: Int) -> Double? { self[row, column].flatMap { Double($0) } }
}
