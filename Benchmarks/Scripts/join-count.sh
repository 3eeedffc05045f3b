#!/usr/bin/env bash
# What a JOIN_ACK's member count costs in the SQLite store (issue 22): the read it made before schema 4
# (count(*) over the room's members index) beside the one it makes now (the kept
# conversations.member_count and one primary-key probe), in a room of N members, with SQLite's own
# counters (virtual-machine steps: exact, whatever the load) and the wall time of 1,000 reads (three
# runs each). Needs Debian's sqlite3 (`apt-get install sqlite3`). Usage: join-count.sh [N ...]
set -euo pipefail
command -v sqlite3 >/dev/null || { echo "needs sqlite3 (apt-get install sqlite3)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
counted="SELECT count(*), coalesce(max(user = 'm5'), 0) FROM members WHERE conversation_id = (SELECT id FROM conversations WHERE key = 'r:town');"
kept="SELECT c.member_count, EXISTS (SELECT 1 FROM members WHERE user = 'm5' AND conversation_id = c.id) FROM conversations c WHERE c.key = 'r:town';"
steps() { sqlite3 "$work/room.db" ".stats on" "$1" 2>&1 | awk '/Virtual Machine Steps/ { print $NF }'; }
seconds() { { /usr/bin/time -f %e sqlite3 "$work/room.db" <"$1" >/dev/null; } 2>&1; }
echo "| members | counted: VM steps | kept: VM steps | counted: 1,000 reads (s, 3 runs) | kept: 1,000 reads (s, 3 runs) |"
echo "| ---: | ---: | ---: | --- | --- |"
for members in "${@:-1000 10000 100000}"; do
  for n in $members; do
    rm -f "$work/room.db"
    # The store's tables as schema 4 has them (SQLiteIMStore+Schema.swift), one room of n members.
    sqlite3 "$work/room.db" >/dev/null <<SQL
CREATE TABLE conversations(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, room TEXT, last_seq INTEGER NOT NULL DEFAULT 0,
    member_count INTEGER NOT NULL DEFAULT 0);
CREATE TABLE members(user TEXT NOT NULL, conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    acked_through INTEGER NOT NULL, PRIMARY KEY(user, conversation_id)) WITHOUT ROWID;
CREATE INDEX members_by_conversation ON members(conversation_id, user);
INSERT INTO conversations(id, key, room) VALUES (1, 'r:town', 'town');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $n) INSERT INTO members SELECT 'm' || i, 1, 0 FROM n;
UPDATE conversations SET member_count = $n;
SQL
    for _ in $(seq 1000); do echo "$counted"; done >"$work/counted.sql"
    for _ in $(seq 1000); do echo "$kept"; done >"$work/kept.sql"
    counted_times=$(for _ in 1 2 3; do seconds "$work/counted.sql"; done | paste -sd' ')
    kept_times=$(for _ in 1 2 3; do seconds "$work/kept.sql"; done | paste -sd' ')
    echo "| $n | $(steps "$counted") | $(steps "$kept") | $counted_times | $kept_times |"
  done
done
