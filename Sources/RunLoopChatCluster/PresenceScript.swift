/// The Lua scripts that change leases and session counts, each one atomic in Redis (`EVALSHA`, or
/// `EVAL` when Redis does not have it cached). Every key a script touches is passed in `KEYS`.
///
/// Each is safe to run again, or to have run when its answer was lost: counts are set to absolute
/// values, never incremented; a register replaces the node's whole hash; reaping and leaving are
/// guarded by the registry's epoch, so a second run finds nothing to do.
enum PresenceScript: CaseIterable {
    /// Joins, rejoins or re-registers a node. KEYS: epoch counter, registry, totals, lease, node's
    /// sessions. ARGV: node id, the epoch to keep if the lease still holds it (0: none), ttl in ms,
    /// then user, count pairs. Answers `{epoch, online users, offline users}`.
    case register
    /// Extends the lease if it still holds the epoch. KEYS: lease. ARGV: epoch, ttl in ms. Answers 1
    /// (extended) or 0 (gone or another epoch's: fenced).
    case refresh
    /// Sets one user's count on the node. KEYS: lease, totals, node's sessions. ARGV: epoch, user,
    /// base, want, limit (-1: none), announce (`1`: name the user online or offline as it is, changed
    /// or not). Answers `{-1}` when the lease is not the epoch's, else `{1 applied | 0 refused, total,
    /// online users, offline users}`.
    case session
    /// Removes a node's counts and its registry entry if the registry still names the epoch: `reap`
    /// only when its lease is gone, `leave` deleting the lease too. KEYS: registry, totals, lease,
    /// node's sessions. ARGV: node id, epoch, `reap` or `leave`. Answers `{1 | 0, offline users}`.
    case retire

    var source: String { Self.prelude + body }

    private var body: String {
        switch self {
        case .register:
            return """
                local keep = tonumber(ARGV[2])
                local epoch = keep
                if keep == 0 or redis.call('GET', KEYS[4]) ~= ARGV[2] then
                  epoch = redis.call('INCR', KEYS[1])
                  -- Redis restarted empty starts the counter over: a node's epochs still only grow.
                  if epoch <= keep then
                    epoch = keep + 1
                    redis.call('SET', KEYS[1], epoch)
                  end
                end
                local wanted = {}
                for i = 4, #ARGV, 2 do wanted[ARGV[i]] = tonumber(ARGV[i + 1]) end
                local changes = {{}, {}}
                clear_node(KEYS[5], KEYS[3], changes, wanted)
                for i = 4, #ARGV, 2 do note(changes, ARGV[i], set_count(KEYS[5], KEYS[3], ARGV[i], wanted[ARGV[i]])) end
                redis.call('SET', KEYS[4], epoch, 'PX', ARGV[3])
                redis.call('HSET', KEYS[2], ARGV[1], epoch)
                return {epoch, changes[1], changes[2]}
                """
        case .refresh:
            return """
                if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
                redis.call('PEXPIRE', KEYS[1], ARGV[2])
                return 1
                """
        case .session:
            return """
                if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-1} end
                local user, base, want, limit = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
                local mine = tonumber(redis.call('HGET', KEYS[3], user) or '0')
                local total = tonumber(redis.call('HGET', KEYS[2], user) or '0')
                local applied, value = 1, want
                if limit >= 0 and want > base and total - mine + want > limit then applied, value = 0, base end
                local changes = {{}, {}}
                local before, after = set_count(KEYS[3], KEYS[2], user, value)
                if ARGV[6] == '1' then
                  -- An earlier script's answer was lost with the change it may have made: say the state.
                  table.insert(changes[after > 0 and 1 or 2], user)
                else
                  note(changes, user, before, after)
                end
                return {applied, after, changes[1], changes[2]}
                """
        case .retire:
            return """
                if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return {0, {}} end
                if ARGV[3] == 'reap' and redis.call('EXISTS', KEYS[3]) == 1 then return {0, {}} end
                local changes = {{}, {}}
                clear_node(KEYS[4], KEYS[2], changes, {})
                redis.call('HDEL', KEYS[1], ARGV[1])
                if ARGV[3] == 'leave' then redis.call('DEL', KEYS[3]) end
                return {1, changes[2]}
                """
        }
    }

    /// The rules every script shares, written once.
    private static let prelude = """
        -- Sets the node's count of a user to value and keeps the user's cluster-wide total in step;
        -- answers the total before and after. Zero counts and totals are deleted, not kept.
        local function set_count(node_key, totals_key, user, value)
          local mine = tonumber(redis.call('HGET', node_key, user) or '0')
          local before = tonumber(redis.call('HGET', totals_key, user) or '0')
          local after = before - mine + value
          if value > 0 then redis.call('HSET', node_key, user, value) else redis.call('HDEL', node_key, user) end
          if after > 0 then redis.call('HSET', totals_key, user, after) else redis.call('HDEL', totals_key, user) end
          return before, after
        end
        -- A user whose total left zero came online; one whose total reached zero went offline.
        local function note(changes, user, before, after)
          if before <= 0 and after > 0 then table.insert(changes[1], user)
          elseif before > 0 and after <= 0 then table.insert(changes[2], user) end
        end
        -- Sets to zero every count of the node but those of the users in keep.
        local function clear_node(node_key, totals_key, changes, keep)
          local old = redis.call('HGETALL', node_key)
          for i = 1, #old, 2 do
            if keep[old[i]] == nil then note(changes, old[i], set_count(node_key, totals_key, old[i], 0)) end
          end
        end

        """
}
