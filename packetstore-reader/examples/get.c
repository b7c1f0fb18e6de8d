/* One-sided GET (or HGET) from C: get POOL SERVER|- KEY [FIELD]
 * Build: cc -I packetstore-reader/include examples/get.c \
 *          -L target/release -lpacketstore_reader -o get
 * Run:   LD_LIBRARY_PATH=target/release ./get packetstore-data/kv.pool 127.0.0.1:6380 mykey */
#include <stdio.h>
#include <string.h>

#include "packetstore_reader.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s POOL SERVER|- KEY [FIELD]\n", argv[0]);
        return 2;
    }
    char error[256];
    const char *server = strcmp(argv[2], "-") == 0 ? NULL : argv[2];
    packetstore_reader *reader = packetstore_reader_open(argv[1], server, error, sizeof error);
    if (reader == NULL) {
        fprintf(stderr, "open: %s\n", error);
        return 1;
    }
    const void *value;
    size_t len;
    const char *key = argv[3];
    int found = argc > 4 ? packetstore_reader_hget(reader, 0, key, strlen(key), argv[4], strlen(argv[4]), &value, &len)
                         : packetstore_reader_get(reader, 0, key, strlen(key), &value, &len);
    int status = 0;
    if (found == PACKETSTORE_READER_FOUND) {
        fwrite(value, 1, len, stdout);
        putchar('\n');
    } else if (found == PACKETSTORE_READER_ABSENT) {
        puts("(nil)");
    } else {
        fprintf(stderr, "read: %s\n", packetstore_reader_error(reader));
        status = 1;
    }
    packetstore_reader_counters stats;
    packetstore_reader_stats(reader, &stats);
    fprintf(stderr, "one-sided %llu, fallbacks %llu\n", (unsigned long long)stats.one_sided,
            (unsigned long long)stats.fallbacks);
    packetstore_reader_close(reader);
    return status;
}
