// Debian's OpenSSL 3 (libssl-dev), used through its C API: libcrypto for SHA-1 (the WebSocket
// handshake) and scrypt (stored passwords), libssl for TLS (RunLoopTLS). One crypto library for the
// whole package instead of a second one (BoringSSL) compiled from source on every clean build, and one
// module for both halves: libssl's headers declare their types with libcrypto's, which two modules
// over the same headers would each declare again.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// OpenSSL spells these as macros over SSL_CTX_ctrl/SSL_ctrl or as 64-bit option bits built by a
// function-like macro, which Swift cannot import; each wrapper is the macro, nothing more. They live
// here, beside the headers that define them, rather than in CRunLoopSupport, which would otherwise make
// every target of the package see OpenSSL's headers.

static inline long rlk_SSL_CTX_set_mode(SSL_CTX *context, long mode) {
    return SSL_CTX_set_mode(context, mode);
}

static inline int rlk_SSL_CTX_set_min_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_min_proto_version(context, version);
}

static inline int rlk_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline uint64_t rlk_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}

static inline uint64_t rlk_SSL_OP_NO_COMPRESSION(void) {
    return SSL_OP_NO_COMPRESSION;
}

static inline uint64_t rlk_SSL_OP_CIPHER_SERVER_PREFERENCE(void) {
    return SSL_OP_CIPHER_SERVER_PREFERENCE;
}
