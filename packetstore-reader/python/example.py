"""One-sided GET (or HGET) from Python: example.py POOL SERVER|- KEY [FIELD]

    PACKETSTORE_READER_LIB=target/release/libpacketstore_reader.so \
        python3 packetstore-reader/python/example.py packetstore-data/kv.pool 127.0.0.1:6379 mykey
"""

import sys

from packetstore_reader import Reader, WrongType

if len(sys.argv) < 4:
    sys.exit("usage: example.py POOL SERVER|- KEY [FIELD]")
pool, server, key = sys.argv[1], sys.argv[2], sys.argv[3].encode()
with Reader(pool, None if server == "-" else server) as reader:
    try:
        value = reader.hget(key, sys.argv[4].encode()) if len(sys.argv) > 4 else reader.get(key)
    except WrongType as error:
        sys.exit(f"read: {error}")
    print("(nil)" if value is None else value.decode(errors="replace"))
    print(reader.stats(), file=sys.stderr)
