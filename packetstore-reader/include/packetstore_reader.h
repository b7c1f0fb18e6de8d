/* packetstore_reader.h: one-sided reads of a running packetstore server's
 * pool (the server runs with --one-sided-reads), from a process on the
 * same machine. Link with -lpacketstore_reader (the cdylib of the
 * packetstore-reader crate). docs/one-sided-reads.md has the guarantees:
 * a value returned was durable and the key's newest acknowledged value at
 * some moment during the call; reads that cannot be proved fall back to
 * the server's Redis port.
 *
 * A handle is used by one thread at a time (open one per thread). A value
 * returned is borrowed from the handle until the next call on it. */
#ifndef PACKETSTORE_READER_H
#define PACKETSTORE_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PACKETSTORE_READER_FOUND 1
#define PACKETSTORE_READER_ABSENT 0
#define PACKETSTORE_READER_ERROR (-1)
#define PACKETSTORE_READER_WRONG_TYPE (-2)

typedef struct packetstore_reader packetstore_reader;

typedef struct packetstore_reader_counters {
    uint64_t one_sided; /* reads answered from the pool */
    uint64_t from_log;  /* lookups answered from a log record */
    uint64_t retries;   /* one-sided tries repeated */
    uint64_t fallbacks; /* reads the server answered */
} packetstore_reader_counters;

/* Maps the pool at pool_path read-only. server: "host:port" of the
 * server's Redis port for fallbacks, or NULL (then a read that cannot be
 * proved returns PACKETSTORE_READER_ERROR). On failure returns NULL and
 * writes the reason into error (error_len bytes, NUL-terminated). */
packetstore_reader *packetstore_reader_open(const char *pool_path, const char *server, char *error,
                                            size_t error_len);
void packetstore_reader_close(packetstore_reader *reader);

/* GET key in logical database db (0-15). Returns FOUND with *value and
 * *value_len set (borrowed until the next call), ABSENT, WRONG_TYPE, or
 * ERROR (packetstore_reader_error says why). */
int packetstore_reader_get(packetstore_reader *reader, uint32_t db, const void *key, size_t key_len,
                           const void **value, size_t *value_len);
/* HGET field of the hash key, as packetstore_reader_get. */
int packetstore_reader_hget(packetstore_reader *reader, uint32_t db, const void *key, size_t key_len,
                            const void *field, size_t field_len, const void **value, size_t *value_len);

/* The last error's text, valid until the next call on reader. */
const char *packetstore_reader_error(const packetstore_reader *reader);
void packetstore_reader_stats(const packetstore_reader *reader, packetstore_reader_counters *out);

#ifdef __cplusplus
}
#endif
#endif
