#!/usr/bin/env bash
# A throw-away CA and a certificate it signs for 127.0.0.1 and localhost, with the openssl command line:
# writes ca.pem, ca.key, node.pem and node.key into DIRECTORY. For scripts that start a node with TLS
# (Scripts/testssl.sh, Benchmarks/Scripts/tls-figures.sh); the tests make theirs with TestPKI. A DIRECTORY that
# already holds ca.pem and ca.key keeps that CA and gets a new node certificate from it, with the next serial:
# a renewal, as Scripts/systemd-check.sh reloads one.
#   Scripts/make-test-certificate.sh DIRECTORY [DAYS] [EXTRA-EXTENSION-LINE]
set -euo pipefail
directory="$1"
days="${2:-2}"
extra="${3:-}"
cd "$directory"
key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
if [ ! -f ca.pem ] || [ ! -f ca.key ]; then
  openssl req -x509 "${key[@]}" -keyout ca.key -out ca.pem -subj "/CN=throw-away test CA" -days $((days + 30)) 2>/dev/null
fi
openssl req -new "${key[@]}" -keyout node.key -out node.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n%s\n' "$extra" > node.ext
openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" -extfile node.ext -out node.pem 2>/dev/null
rm -f node.csr node.ext
