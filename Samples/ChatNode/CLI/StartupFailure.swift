import ChatNodeKit
import Glibc
import RunLoopIMSQLite
import RunLoopKit
import RunLoopNet

/// What stops `chat-node` before it serves, said so that an operator knows what to change: which
/// port or file, and the flag that changes it. ArgumentParser prints it as `Error: …` and exits 1.
enum StartupFailure: Error, CustomStringConvertible {
    /// A port of `serve` cannot be listened on.
    case cannotListen(Listener, host: String, port: UInt16, NetError)
    /// The SQLite file's directory does not exist (SQLite says only "unable to open database file").
    case databaseDirectoryMissing(path: String, directory: String)
    /// SQLite refused the file.
    case database(path: String, SQLiteError)
    /// A command that works on an existing database (`account`, `backup`) found no file there.
    case databaseMissing(path: String)

    /// The two listeners of `serve`, and the flags that move them.
    enum Listener {
        case im, http

        var name: String {
            switch self {
            case .im: return "IM over TCP"
            case .http: return "HTTP: the page and its WebSocket"
            }
        }

        var remedy: String {
            switch self {
            case .im: return "choose another with --port PORT (0: any free port)"
            case .http: return "choose another with --http-port PORT (0: any free port), or serve no page with --no-http"
            }
        }
    }

    var description: String {
        switch self {
        case .cannotListen(let listener, let host, let port, .addressInUse):
            return "port \(port) on \(host) (\(listener.name)) is in use: is another chat-node running there? \(listener.remedy)"
        case .cannotListen(let listener, let host, let port, let error):
            return "cannot listen on \(host) port \(port) (\(listener.name)): \(error); \(listener.remedy)"
        case .databaseDirectoryMissing(let path, let directory):
            return "the database \(path) cannot be created: its directory \(directory) does not exist "
                + "(create it, or give another file with --database)"
        case .database(let path, let error) where error.code == 26:  // SQLITE_NOTADB
            return "\(path) is not a SQLite database (\(error)): give the node's database with --database, or a new file name to start empty"
        case .database(let path, let error) where error.code == 14:  // SQLITE_CANTOPEN
            return "cannot open the database \(path) (\(error)): can this user read and write it and its directory?"
        case .database(let path, let error):
            return "the database \(path): \(error)"
        case .databaseMissing(let path):
            return "no database \(path): give the node's file with --database (`chat-node migrate --database FILE` or `serve` creates one)"
        }
    }

    /// Refuses a SQLite file that does not exist, which opening would create empty: a command that
    /// reads or changes a node's data was pointed at the wrong place.
    static func requireExistingDatabase(_ storage: ChatNodeStorage) throws(StartupFailure) {
        guard case .sqlite(let path) = storage, access(path, F_OK) != 0 else { return }
        throw .databaseMissing(path: path)
    }

    /// Listens on `port` and lets it go again, so that `serve` refuses a port in use before it creates
    /// or opens its database. Port 0 always binds. Loop thread only.
    static func checkListen(_ listener: Listener, host: String, port: UInt16) throws(StartupFailure) {
        guard port != 0 else { return }
        let probe = TCPListener()
        do {
            try probe.listen(host: host, port: port)
        } catch {
            throw .cannotListen(listener, host: host, port: port, error)
        }
        probe.close()
    }

    /// Runs `open` (what opens the store: a node, a migration), its SQLite failures named by file; a
    /// missing directory is said before SQLite makes it "unable to open database file".
    static func openingDatabase<Value>(_ storage: ChatNodeStorage, _ open: () throws -> Value) throws -> Value {
        guard case .sqlite(let path) = storage else { return try open() }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var status = stat()
        if stat(directory, &status) != 0, errno == ENOENT { throw StartupFailure.databaseDirectoryMissing(path: path, directory: directory) }
        do {
            return try open()
        } catch let error as SQLiteError {
            throw StartupFailure.database(path: path, error)
        }
    }
}
