// Debian's libpq (libpq-dev), PostgreSQL's client library, used through its asynchronous C API only.
#include <libpq-fe.h>
