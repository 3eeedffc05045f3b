#!/usr/bin/env bash
# The package's one code style, checked by .ci/run: swift-format (part of the Swift 6 toolchain) with
# the committed .swift-format. `bash Scripts/format.sh` rewrites the files in place; `--check` only
# reports (and fails on) what differs. Generated files (the protobuf code, the embedded web assets)
# keep their generators' layout and are left out.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files '*.swift' | grep -vE '(\.pb\.swift|\.generated\.swift)$' | grep -v '^Package.swift$')
if [ "${1:-}" = "--check" ]; then
  swift format lint --strict --parallel --configuration .swift-format "${files[@]}"
else
  swift format format --in-place --parallel --configuration .swift-format "${files[@]}"
fi
