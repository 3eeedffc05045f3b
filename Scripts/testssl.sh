#!/usr/bin/env bash
# testssl.sh (Debian package `testssl.sh`, command `testssl`) against a chat node's two TLS ports: it
# makes a throw-away CA and a certificate for 127.0.0.1 with the openssl command line, starts
# `chat-node serve --tls-cert --tls-key` on free ports, runs testssl's default checks against the IM
# port and the HTTPS port side by side, and fails on any finding rated HIGH or CRITICAL. The test CA is
# added to testssl's trust, and the certificate is made the way a real one is (a year's validity, a CRL
# address), so what is judged is the node's TLS, not the test certificate's shortcuts. Prints one line
# per port and the findings, if any; JSON reports go to .build-testssl/. A run takes 4-9 minutes on
# two busy cores (each port about 4 minutes of testssl's own waiting), so CI does not run it.
#   Scripts/testssl.sh            # builds chat-node (debug) first
#   CHAT_NODE=/path/to/chat-node Scripts/testssl.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.build-testssl"
command -v testssl >/dev/null || bash "$root/Scripts/setup.sh" --testssl

if [ -z "${CHAT_NODE:-}" ]; then
    (cd "$root" && swift build --product chat-node >/dev/null)
    CHAT_NODE="$(cd "$root" && swift build --show-bin-path)/chat-node"
fi

rm -rf "$work"
mkdir -p "$work"
cd "$work"
# A year's validity and a CRL address, as a real certificate has: testssl judges those too.
bash "$root/Scripts/make-test-certificate.sh" "$work" 365 "crlDistributionPoints=URI:http://127.0.0.1/testssl-ca.crl"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
im_port="$(free_port)"
web_port="$(free_port)"
"$CHAT_NODE" serve --host 127.0.0.1 --port "$im_port" --http-port "$web_port" --database "$work/node.sqlite" \
    --tls-cert node.pem --tls-key node.key > node.out 2> node.log &
node=$!
trap 'kill $node 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" node.out && break; sleep 0.1; done

scan() {
    local name="$1" port="$2" start
    start=$(date +%s)
    testssl --quiet --color 0 --warnings off --add-ca "$work/ca.pem" --severity HIGH \
        --jsonfile "$work/$name.json" "127.0.0.1:$port" > "$work/$name.txt" 2>&1 || true
    echo "$(( $(date +%s) - start ))" > "$work/$name.seconds"
}
scan im "$im_port" &
im_scan=$!
scan https "$web_port" &
web_scan=$!
wait $im_scan $web_scan

status=0
for target in "im:$im_port" "https:$web_port"; do
    name="${target%%:*}"
    port="${target##*:}"
    seconds="$(cat "$work/$name.seconds")"
    [ -s "$work/$name.json" ] || { echo "testssl $name port $port: no report (see $work/$name.txt)"; status=1; continue; }
    findings="$(python3 - "$work/$name.json" <<'PY'
import json, sys
for finding in json.load(open(sys.argv[1])):
    if finding.get("severity") in ("HIGH", "CRITICAL"):
        print(f'  {finding["severity"]} {finding["id"]}: {finding["finding"]}')
PY
)"
    if [ -n "$findings" ]; then
        echo "testssl $name port $port: FAILED ($seconds s)"
        echo "$findings"
        status=1
    else
        echo "testssl $name port $port: no finding rated HIGH or CRITICAL ($seconds s)"
    fi
done
exit $status
