#!/usr/bin/env bash
# Regenerates the committed Swift (and, for the outside-client tests, Python) code from proto/*.proto.
#
# Needs Debian's protobuf-compiler (protoc) and protoc-gen-swift built from the swift-protobuf version
# Package.swift names — not swift-protobuf's build-tool plugin, which compiles protoc from C++ on
# every clean build (~10 minutes). The plugin is built once into .build-protoc-gen-swift/ from the
# package checkout SwiftPM already resolved (or a local clone given as PROTOC_GEN_SWIFT_SOURCE).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
command -v protoc >/dev/null || { as_root apt-get update -qq; as_root apt-get install -y -qq protobuf-compiler; }

plugin="${PROTOC_GEN_SWIFT:-}"
if [ -z "$plugin" ]; then
  source_dir="${PROTOC_GEN_SWIFT_SOURCE:-}"
  if [ -z "$source_dir" ]; then
    swift package resolve >/dev/null
    source_dir=".build/checkouts/swift-protobuf"
  fi
  swift build -c release --package-path "$source_dir" --scratch-path .build-protoc-gen-swift \
    --product protoc-gen-swift >&2
  plugin=".build-protoc-gen-swift/release/protoc-gen-swift"
fi

protoc --version >&2
# The Python is for Tests/PythonClient, the outside client written from docs/PROTOCOL.md; its runtime
# version (Tests/PythonClient/requirements.txt) must match this protoc (3.21.x: protobuf 4.21.x).
# Visibility=Package: the messages are the wire format, not API — the libraries' public API speaks
# domain types (IMMessage, IMLoginAttempt, …) and converts at one `package` place each, so no user
# imports SwiftProtobuf. UseAccessLevelOnImports: the file is compiled with InternalImportsByDefault
# (Package.swift), and its package messages conform to SwiftProtobuf's protocols, so the import has to
# say `package`.
protoc --plugin=protoc-gen-swift="$plugin" \
  --swift_opt=Visibility=Package --swift_opt=FileNaming=DropPath --swift_opt=UseAccessLevelOnImports=true \
  --swift_out=Sources/RunLoopIMCore/Generated \
  --python_out=Tests/PythonClient \
  -I proto proto/runloopim.proto
echo "generated Sources/RunLoopIMCore/Generated/runloopim.pb.swift and Tests/PythonClient/runloopim_pb2.py" >&2
