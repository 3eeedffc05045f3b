#!/usr/bin/env bash
# testssl.sh (Debian package `testssl.sh`, command `testssl`) against a chat node's two TLS ports: it
# makes a throw-away CA and a certificate for 127.0.0.1 with the openssl command line, starts
# `chat-node serve --tls-cert --tls-key` on free ports, runs testssl against the IM port and the HTTPS
# port, and fails on any finding rated HIGH or CRITICAL, and on a report that is missing or incomplete.
# The test CA is added to testssl's trust, and the certificate is made the way a real one is (a year's
# validity, a CRL address), so what is judged is the node's TLS, not the test certificate's shortcuts.
# Prints one line per port and the findings, if any; reports go to .build-testssl/. CI runs it.
#
# What runs: every section of testssl 3.0's default run that can rate a finding HIGH or CRITICAL, on both
# ports: protocols (-p), cipher categories (-s), forward secrecy (-f), server preferences (-P), server
# defaults and the certificate (-S), HTTP headers (-h; testssl itself skips them on the IM port, which
# does not answer HTTP) and all vulnerabilities (-U).
# What does not, and why it cannot matter here:
#   -e (each of 370 ciphers) and -c (handshakes as ~40 known clients): both only list what was offered or
#      negotiated, as INFO; a weak cipher they would show is rated by -s, -f and -U, which run.
#   DNS (--nodns none): the target is an IP literal; reverse DNS is INFO and the CAA record at most LOW.
# Where the time goes: testssl is bash that forks a process or more for each byte string it parses, so
# it is CPU-bound; its waits (a second wherever a reply is not there at once) are a few seconds a port.
# The full default run of both ports was ~100 CPU-seconds, -e and -c almost half of it; this is ~55.
# Each testssl process spends ~7 CPU-seconds before its first check (what the local openssl can do, its
# cipher tables), so one process per port: three per port, the sections split, took ~100 again.
#   Scripts/testssl.sh            # builds chat-node (debug) first
#   CHAT_NODE=/path/to/chat-node Scripts/testssl.sh
#   CERT_DAYS=0 Scripts/testssl.sh   # an already expired certificate: must fail (CRITICAL)
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
bash "$root/Scripts/make-test-certificate.sh" "$work" "${CERT_DAYS:-365}" \
    "crlDistributionPoints=URI:http://127.0.0.1/testssl-ca.crl"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
im_port="$(free_port)"
web_port="$(free_port)"
"$CHAT_NODE" serve --host 127.0.0.1 --port "$im_port" --http-port "$web_port" --database "$work/node.sqlite" \
    --tls-cert node.pem --tls-key node.key > node.out 2> node.log &
node=$!
trap 'kill $node 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" node.out && break; sleep 0.1; done
grep -q "listening on" node.out || { echo "chat-node did not start (see $work/node.log)"; exit 1; }

# One testssl process per port, both at once. A hung one is cut off at 10 minutes; its report is then
# incomplete, which fails the run.
sections="-p -s -f -P -S -h -U"
scan() {
    local name="$1" port="$2" start
    start=$(date +%s)
    # shellcheck disable=SC2086 # $sections is a list of testssl's section flags
    timeout 600 testssl --quiet --color 0 --warnings off --nodns none --add-ca "$work/ca.pem" $sections \
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
    python3 - "${target%%:*}" "${target##*:}" "$work" "$sections" <<'PY' || status=1
import json, sys

# Findings each section writes on every run (its first and its last, where it writes many): a report
# without one was cut short. scanTime is written when the whole scan is done.
written_by = {
    "-p": ["SSLv2", "TLS1_3", "ALPN"],
    "-s": ["cipherlist_NULL", "cipherlist_STRONG"],
    "-f": ["PFS"],
    "-P": ["cipher_order", "cipherorder_TLSv1_3"],
    "-S": ["cert_trust", "cert_expirationStatus", "certificate_transparency"],
    "-U": ["heartbleed", "RC4"],
}
# testssl writes these only where a port answers HTTP, so it does not judge the IM port's headers; on the
# HTTPS port their absence means testssl did not take it for HTTP, and its headers went unjudged.
written_over_http = {"-h": ["HSTS", "banner_reverseproxy"], "-U": ["BREACH"]}
name, port, work, sections = sys.argv[1:]
seconds = open(f"{work}/{name}.seconds").read().strip()
problems, findings = [], []
try:
    report = json.load(open(f"{work}/{name}.json"))
except (OSError, ValueError):
    report = None
    problems.append(f"no complete report (see {work}/{name}.txt)")
if report is not None:
    ids = {finding["id"] for finding in report}
    expected = ["scanTime"]
    for flag in sections.split():
        expected += written_by.get(flag, []) + (written_over_http.get(flag, []) if name == "https" else [])
    missing = [i for i in expected if i not in ids]
    if missing:
        problems.append(f"the report lacks {', '.join(missing)} (see {work}/{name}.txt)")
    for finding in report:
        if finding.get("severity") in ("HIGH", "CRITICAL", "FATAL"):
            findings.append(f'  {finding["severity"]} {finding["id"]}: {finding["finding"]}')
if problems or findings:
    print(f"testssl {name} port {port}: FAILED ({seconds} s)")
    print("\n".join([f"  {line}" for line in problems] + findings))
    sys.exit(1)
print(f"testssl {name} port {port}: no finding rated HIGH or CRITICAL ({seconds} s)")
PY
done
exit $status
