#!/usr/bin/env bash
# The README's main job: install what is missing, build, and run the chat node demo (about 13 s).
# Arguments go to `chat-node demo` (e.g. --timeline FILE, --no-timeline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/setup.sh
swift build --product chat-node
exec .build/debug/chat-node demo "$@"
