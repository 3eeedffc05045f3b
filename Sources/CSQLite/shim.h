// Debian's SQLite 3 (libsqlite3-dev), used through its C API: one header, nothing else.
#include <sqlite3.h>
