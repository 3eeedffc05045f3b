#!/usr/bin/env bash
# The cluster demo: install what is missing (PostgreSQL and Redis servers beside the build's
# libraries), build, and run `chat-node demo --cluster` (about 25 s): a throw-away PostgreSQL and
# Redis, three node processes, six clients; a node killed, Redis restarted, PostgreSQL stopped.
# Arguments go to `chat-node demo --cluster`. Ctrl-C stops it and removes everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/setup.sh --cluster
swift build --product chat-node
exec .build/debug/chat-node demo --cluster "$@"
