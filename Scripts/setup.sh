#!/usr/bin/env bash
# Installs what a fresh Debian machine (with Swift 6.3) lacks to build and run RunLoopKit: libevent 2.1,
# SQLite, OpenSSL 3, hiredis and libpq headers. With --tests, also what the test suite uses: redis-server (the
# Redis tests start their own, on a unix socket; a system one the package may start on 6379 does not matter),
# the PostgreSQL server (the RunLoopPostgres tests start throw-away servers from its binaries), iproute2
# (network-namespace tests, which need root), Debian's Chromium (the browser tests) and libnss3-tools (its
# certutil makes the NSS database through which the HTTPS browser test's Chromium trusts its test CA), the
# openssl command line and python3 (RunLoopTLSTests make certificates with one and use both as TLS peers), and a Python venv
# with the protobuf runtime (the outside-client test) and Playwright (which drives that Chromium; it downloads
# no browser), and systemd for `systemd-analyze verify` of the chat node's unit (it reads the file offline; no
# running systemd needed). With --fanout, also what Benchmarks/Scripts/fanout.sh runs beside the chat node: the
# mosquitto broker and its C clients (the script starts its own broker on a port of its own; a system one the package
# may start on 1883 does not matter) and python3-venv (its paho-mqtt venv). With --cluster, the PostgreSQL and
# Redis servers `chat-node demo --cluster` (Scripts/cluster-demo.sh) starts throw-away copies of. With --testssl,
# testssl.sh for Scripts/testssl.sh (CI's TLS scan of the chat node). With --systemd, what Scripts/systemd-check.sh
# needs to boot a real systemd in a container and talk TLS to the node there: systemd, systemd-container
# (systemd-nspawn), openssl and curl. The flags combine.
# Idempotent: installs only what is missing. Works as root or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

packages=(libevent-dev libsqlite3-dev libssl-dev libhiredis-dev libpq-dev pkg-config)
with_tests=false
for flag in "$@"; do
  case "$flag" in
    --tests)
      with_tests=true
      packages+=(redis-server postgresql iproute2 openssl python3 python3-venv chromium libnss3-tools systemd)
      ;;
    --fanout) packages+=(mosquitto mosquitto-clients python3-venv) ;;
    --cluster) packages+=(redis-server postgresql) ;;
    --testssl) packages+=(testssl.sh openssl python3) ;;
    --systemd) packages+=(systemd systemd-container openssl curl) ;;
    *) echo "usage: Scripts/setup.sh [--tests] [--fanout] [--cluster] [--testssl] [--systemd]" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  as_root apt-get update -qq
  # No recommends: Chromium's would pull in a desktop's worth of packages the headless test never uses.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
pkg-config --modversion libevent_core sqlite3 libcrypto hiredis libpq | paste -sd' ' | sed 's/^/libevent, sqlite, openssl, hiredis, libpq: /'

if $with_tests; then
  if [ ! -x .build-python/bin/python ]; then
    echo "== Python venv for the outside-client test (.build-python)"
    python3 -m venv .build-python
  fi
  .build-python/bin/pip install -q --disable-pip-version-check -r Tests/PythonClient/requirements.txt \
    -r Tests/BrowserClient/requirements.txt
fi
