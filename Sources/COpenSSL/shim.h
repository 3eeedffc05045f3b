// Debian's OpenSSL 3 (libssl-dev), used through its C API. Today only libcrypto: SHA-1 for the
// WebSocket handshake and scrypt for stored passwords. One crypto library for the whole package —
// the one TLS will need anyway — instead of a second one (BoringSSL) compiled from source on every
// clean build.
#include <openssl/err.h>
#include <openssl/evp.h>
