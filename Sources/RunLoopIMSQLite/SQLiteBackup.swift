import CSQLite
import Glibc

/// A copy of a live SQLite database through SQLite's online backup API, on connections of its own, so
/// the process serving the file (a chat node) keeps reading and writing it meanwhile: in WAL mode the
/// copy's reads never block the node's writes.
///
/// Blocking: call it from a tool's thread, never a loop's.
public enum SQLiteBackup {
    /// What a copy did.
    public struct Report: Equatable, Sendable {
        /// Pages in the copy.
        public var pages: Int
        /// How often a write to the source between two steps made SQLite start the copy again.
        public var restarts: Int
    }

    /// Copies the database at `source` (which must exist) to `destination` (created, or replaced),
    /// `pagesPerStep` pages at a time, then checks the copy with `PRAGMA integrity_check`. A source
    /// written between two steps makes SQLite start over; after three such restarts the rest is
    /// copied in one step, which in WAL mode still lets the writer go on. On any failure the
    /// destination is deleted.
    /// - Throws: SQLite's error, or the integrity check's findings.
    public static func copy(from source: String, to destination: String, pagesPerStep: Int32 = 256) throws(SQLiteError) -> Report {
        do {
            let report = try copyPages(from: source, to: destination, pagesPerStep: pagesPerStep)
            try checkIntegrity(of: destination)
            return report
        } catch {
            for suffix in ["", "-wal", "-shm"] { unlink(destination + suffix) }
            throw error
        }
    }

    private static func copyPages(from source: String, to destination: String, pagesPerStep: Int32) throws(SQLiteError) -> Report {
        let from = try open(source, flags: SQLITE_OPEN_READWRITE)
        defer { sqlite3_close(from) }
        let to = try open(destination, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        defer { sqlite3_close(to) }
        sqlite3_busy_timeout(from, 5_000)
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else { throw error(of: to, destination) }
        var restarts = 0
        var remaining = Int32.max
        var status = SQLITE_OK
        while status == SQLITE_OK || status == SQLITE_BUSY || status == SQLITE_LOCKED {
            status = sqlite3_backup_step(backup, restarts >= 3 ? -1 : pagesPerStep)
            if status == SQLITE_BUSY || status == SQLITE_LOCKED { usleep(10_000) }
            let left = sqlite3_backup_remaining(backup)
            if left > remaining { restarts += 1 }
            remaining = left
        }
        let pages = Int(sqlite3_backup_pagecount(backup))
        sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE else {
            throw SQLiteError(code: status, message: "backup of \(source): \(String(cString: sqlite3_errstr(status)))")
        }
        return Report(pages: pages, restarts: restarts)
    }

    /// `PRAGMA integrity_check` on a connection of its own: "ok", or its findings as the error.
    private static func checkIntegrity(of path: String) throws(SQLiteError) {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        var findings: [String] = []
        try database.query("PRAGMA integrity_check") { row in findings.append(row.text(0) ?? "") }
        guard findings == ["ok"] else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "the copy \(path) failed its integrity check: \(findings.joined(separator: "; "))")
        }
    }

    private static func open(_ path: String, flags: Int32) throws(SQLiteError) -> OpaquePointer? {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK else {
            defer { sqlite3_close(handle) }
            throw error(of: handle, path)
        }
        return handle
    }

    private static func error(of handle: OpaquePointer?, _ path: String) -> SQLiteError {
        SQLiteError(code: sqlite3_errcode(handle), message: "\(path): \(handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open")")
    }
}
