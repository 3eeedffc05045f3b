public import RunLoopPostgres

/// The chat's tables in PostgreSQL, versioned: what ``migrate(on:completion:)`` creates or upgrades
/// and what a node checks at start with ``check(on:completion:)``.
///
/// The tables mean what the SQLite store's do (one shared design): `conversations` (a room, or two
/// users' direct conversation, keyed by `IMConversation.storageKey`, with the last per-conversation
/// sequence handed out), `messages` (each with its store-wide `seq` and its `conversation_seq`),
/// `members` (each member's cursor: the highest `conversation_seq` they acknowledged), `abandoned`,
/// `users` (names that logged in or have an account) and `accounts` (scrypt hashes, and whether
/// the account is disabled). One row in
/// `schema_version` says which version the database holds.
///
/// A value namespace; the operations run on a connection's loop thread.
public enum ChatSchema {
    /// The version this build creates and runs against: the number of migration steps.
    public static var version: Int { steps.count }

    /// Step `n` takes a database from version `n` to `n + 1`. A released step never changes: a new
    /// version is a new step at the end.
    static let steps: [[String]] = [
        [
            // Names compare and sort by their UTF-8 bytes (the C collation), as room lists page by
            // them and as SQLite's BINARY does, whatever the database's default collation.
            """
            CREATE TABLE conversations(
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                key text COLLATE "C" NOT NULL UNIQUE,
                room text COLLATE "C" UNIQUE,
                last_seq bigint NOT NULL DEFAULT 0)
            """,
            """
            CREATE TABLE messages(
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                conversation_id bigint NOT NULL REFERENCES conversations(id),
                conversation_seq bigint NOT NULL,
                sender text NOT NULL, client_id text NOT NULL,
                to_user text, to_room text, text text NOT NULL, sent_at_ms bigint NOT NULL,
                CONSTRAINT messages_sender_client_id_key UNIQUE(sender, client_id),
                CONSTRAINT messages_conversation_seq_key UNIQUE(conversation_id, conversation_seq))
            """,
            // History pages by the store-wide seq within one conversation.
            "CREATE INDEX messages_by_conversation ON messages(conversation_id, seq)",
            """
            CREATE TABLE members(
                "user" text COLLATE "C" NOT NULL,
                conversation_id bigint NOT NULL REFERENCES conversations(id),
                acked_through bigint NOT NULL,
                PRIMARY KEY("user", conversation_id))
            """,
            "CREATE INDEX members_by_conversation ON members(conversation_id, \"user\")",
            "CREATE TABLE abandoned(sender text NOT NULL, client_id text NOT NULL, PRIMARY KEY(sender, client_id))",
            "CREATE TABLE users(name text PRIMARY KEY)",
            "CREATE TABLE accounts(name text PRIMARY KEY, password_hash text NOT NULL)",
            // Not UNIQUE, like the SQLite accounts: names are stored in lower case, looked up in any.
            "CREATE INDEX accounts_by_folded_name ON accounts(lower(name))"
        ],
        // 2: an account can be disabled (its logins refused, its data kept).
        ["ALTER TABLE accounts ADD COLUMN disabled boolean NOT NULL DEFAULT false"],
        // 3: each conversation's member count, kept by a trigger in the transaction that adds or removes
        // a member row (a JOIN, a LEAVE, a first direct message, an account's removal), filled once here:
        // a JOIN_ACK, LEAVE_ACK or room list reads one row per room instead of counting its members.
        [
            "ALTER TABLE conversations ADD COLUMN member_count bigint NOT NULL DEFAULT 0",
            "UPDATE conversations c SET member_count = (SELECT count(*) FROM members mb WHERE mb.conversation_id = c.id)",
            """
            CREATE FUNCTION count_conversation_members() RETURNS trigger LANGUAGE plpgsql AS $count$
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    UPDATE conversations SET member_count = member_count + 1 WHERE id = NEW.conversation_id;
                ELSE
                    UPDATE conversations SET member_count = member_count - 1 WHERE id = OLD.conversation_id;
                END IF;
                RETURN NULL;
            END $count$
            """,
            """
            CREATE TRIGGER members_counted AFTER INSERT OR DELETE ON members
            FOR EACH ROW EXECUTE FUNCTION count_conversation_members()
            """
        ],
        // 4: each room's membership order (RunLoopChat's `MembershipCommit`): the number of its last
        // JOIN or LEAVE, and each member's join's. Members from before had joined before every change
        // numbered from now on (0), so they are owed every notice; both are metadata-only changes.
        [
            "ALTER TABLE conversations ADD COLUMN membership_seq bigint NOT NULL DEFAULT 0",
            "ALTER TABLE members ADD COLUMN joined_seq bigint NOT NULL DEFAULT 0"
        ]
    ]

    /// How a database's version relates to this build's.
    public enum Compatibility: Equatable, Sendable {
        /// The version this build knows: a node may run.
        case current
        /// Older (0: no chat tables at all): `chat-node migrate` must upgrade it first.
        case needsMigration(found: Int)
        /// Made by a newer build: this one must not write to it.
        case newer(found: Int)
    }

    /// What a database at `found` means for this build.
    public static func compatibility(of found: Int) -> Compatibility {
        if found < version { return .needsMigration(found: found) }
        if found > version { return .newer(found: found) }
        return .current
    }

    /// The error a node refuses to start with, `nil` when it may run against `found`.
    static func refusal(toRunAgainst found: Int) -> ChatSchemaError? {
        switch compatibility(of: found) {
        case .current: return nil
        case .needsMigration(let found): return .needsMigration(found: found, required: version)
        case .newer(let found): return .newerThanKnown(found: found, known: version)
        }
    }
}

/// Why the chat schema could not be used or upgraded.
public enum ChatSchemaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The database holds an older version (0: none) than this node runs against.
    case needsMigration(found: Int, required: Int)
    /// The database holds a version newer than this build knows: running or migrating it could
    /// break what the newer nodes rely on.
    case newerThanKnown(found: Int, known: Int)
    /// The database failed or could not be reached.
    case database(PostgresError)

    public var description: String {
        switch self {
        case .needsMigration(let found, let required):
            return "the database holds chat schema version \(found), this node needs version \(required): run `chat-node migrate`"
        case .newerThanKnown(let found, let known):
            return "the database holds chat schema version \(found), newer than version \(known), the newest this chat-node knows: "
                + "upgrade the node"
        case .database(let error): return "the chat schema could not be read or changed: \(error)"
        }
    }
}
