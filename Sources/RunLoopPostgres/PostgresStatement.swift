/// One SQL statement with its parameters, for ``PostgresConnection/transaction(_:completion:)``.
///
/// Parameters are sent as text (`$1`, `$2`, … in the SQL; `nil` is SQL NULL) and the server converts
/// them to the column types; results come back as text too. One statement per string: the extended
/// protocol the pipeline uses takes no `;`-separated lists.
public struct PostgresStatement: Sendable, Equatable {
    public var sql: String
    public var parameters: [String?]

    public init(_ sql: String, _ parameters: [String?] = []) {
        self.sql = sql
        self.parameters = parameters
    }

    static let begin = PostgresStatement("BEGIN")
    static let commit = PostgresStatement("COMMIT")
    static let rollback = PostgresStatement("ROLLBACK")

    /// Whether the statement opens or ends a transaction or savepoint. The pipeline decides when
    /// results are final from where its own BEGIN and COMMIT stand, so such statements must come from
    /// the transaction helper, never from `query`.
    var controlsTransaction: Bool {
        let firstWord = sql.drop(while: { $0.isWhitespace || $0 == "(" }).prefix(while: { $0.isLetter }).uppercased()
        return ["BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE"].contains(firstWord)
    }
}
