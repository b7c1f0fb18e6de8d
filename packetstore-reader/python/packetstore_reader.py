"""One-sided reads of a running packetstore server's pool, from Python.

The server runs with --one-sided-reads; a Reader maps its pool read-only
and answers GET and HGET without a request to the server, falling back to
the server's Redis port when a read cannot be proved (docs/one-sided-reads.md).
A thin cffi (ABI mode) binding over the C ABI of libpacketstore_reader.so:
set PACKETSTORE_READER_LIB to its path, or keep it next to this file or
on the loader's path.

    from packetstore_reader import Reader
    with Reader("packetstore-data/kv.pool", "127.0.0.1:6379") as reader:
        print(reader.get(b"mykey"))
"""

import ctypes.util
import os
import threading

from cffi import FFI

_ffi = FFI()
_ffi.cdef(
    """
typedef struct packetstore_reader packetstore_reader;
typedef struct packetstore_reader_counters {
    uint64_t one_sided; uint64_t from_log; uint64_t retries; uint64_t fallbacks;
} packetstore_reader_counters;
packetstore_reader *packetstore_reader_open(const char *pool_path, const char *server, char *error, size_t error_len);
void packetstore_reader_close(packetstore_reader *reader);
int packetstore_reader_get(packetstore_reader *reader, uint32_t db, const void *key, size_t key_len,
                           const void **value, size_t *value_len);
int packetstore_reader_hget(packetstore_reader *reader, uint32_t db, const void *key, size_t key_len,
                            const void *field, size_t field_len, const void **value, size_t *value_len);
const char *packetstore_reader_error(const packetstore_reader *reader);
void packetstore_reader_stats(const packetstore_reader *reader, packetstore_reader_counters *out);
"""
)

FOUND, ABSENT, ERROR, WRONG_TYPE = 1, 0, -1, -2


def _library_path():
    explicit = os.environ.get("PACKETSTORE_READER_LIB")
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libpacketstore_reader.so")
    if os.path.exists(beside):
        return beside
    found = ctypes.util.find_library("packetstore_reader")
    if found:
        return found
    raise OSError("libpacketstore_reader.so not found: set PACKETSTORE_READER_LIB to its path")


_lib = _ffi.dlopen(_library_path())


class ReaderError(Exception):
    """A read that failed (and could not fall back, or whose fallback failed)."""


class WrongType(ReaderError):
    """The key holds another type (Redis's WRONGTYPE)."""


class Reader:
    """A one-sided reader of one server's pool. Safe to share between
    threads (calls are serialised; one Reader per thread reads in parallel)."""

    _handle = _ffi.NULL

    def __init__(self, pool, server="127.0.0.1:6379"):
        self._lock = threading.Lock()
        error = _ffi.new("char[512]")
        server_arg = server.encode() if server else _ffi.NULL
        self._handle = _lib.packetstore_reader_open(os.fsencode(pool), server_arg, error, 512)
        if self._handle == _ffi.NULL:
            raise ReaderError(_ffi.string(error).decode(errors="replace"))
        self._value = _ffi.new("const void **")
        self._len = _ffi.new("size_t *")

    def _answer(self, code):
        if code == FOUND:
            return bytes(_ffi.buffer(self._value[0], self._len[0]))
        if code == ABSENT:
            return None
        message = _ffi.string(_lib.packetstore_reader_error(self._handle)).decode(errors="replace")
        raise (WrongType if code == WRONG_TYPE else ReaderError)(message)

    def get(self, key, db=0):
        """The string value of key (bytes), or None if absent."""
        key = key.encode() if isinstance(key, str) else key
        with self._lock:
            self._check_open()
            return self._answer(_lib.packetstore_reader_get(self._handle, db, key, len(key), self._value, self._len))

    def hget(self, key, field, db=0):
        """The value of field of the hash key, or None."""
        key = key.encode() if isinstance(key, str) else key
        field = field.encode() if isinstance(field, str) else field
        with self._lock:
            self._check_open()
            code = _lib.packetstore_reader_hget(
                self._handle, db, key, len(key), field, len(field), self._value, self._len
            )
            return self._answer(code)

    def _check_open(self):
        if self._handle == _ffi.NULL:
            raise ReaderError("the reader is closed")

    def stats(self):
        """What the reader did: one_sided, from_log, retries, fallbacks."""
        out = _ffi.new("packetstore_reader_counters *")
        with self._lock:
            self._check_open()
            _lib.packetstore_reader_stats(self._handle, out)
        return {name: getattr(out, name) for name in ("one_sided", "from_log", "retries", "fallbacks")}

    def close(self):
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            if self._handle != _ffi.NULL:
                _lib.packetstore_reader_close(self._handle)
                self._handle = _ffi.NULL

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
