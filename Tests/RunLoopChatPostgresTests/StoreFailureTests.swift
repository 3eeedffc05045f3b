import RunLoopChatPostgres
import RunLoopIMCore
import RunLoopPostgres
import Testing

/// Which failures a store calls temporary: the ones a resend or a later read may get past.
@Suite struct StoreFailureTests {
    @Test("the database gone, unreachable, slow or asking for a retry is temporary; a refused statement is not")
    func temporaryOrNot() {
        func server(_ state: String) -> PostgresError { .server(PostgresServerError(sqlState: state, message: "")) }
        let temporary: [PostgresError] = [
            .connectionFailed("refused"), .connectionLost("reset"), .commitOutcomeUnknown("reset"), .timedOut(.query), .closed,
            server("40001"), server("40P01"), server("57P01"), server("53300"), server("08006")
        ]
        let permanent: [PostgresError] = [.protocolMisuse("?"), server("23505"), server("42P01"), server("42601")]
        #expect(temporary.allSatisfy { IMStoreFailure("x", cause: $0).isTemporary })
        #expect(!permanent.contains { IMStoreFailure("x", cause: $0).isTemporary })
        #expect("\(IMStoreFailure("inbox read for bob", cause: .closed))".contains("inbox read for bob failed (temporary)"))
    }
}
