/* One change of a cached file, for a test that kills the program inside
 * it (packetstore-preload/tests/kills.rs, with the library's test switch
 * PACKETSTORE_CACHE_KILL_AT).
 *
 *   kills DIR setup   writes DIR/f: 16 blocks of 4 KiB, block i all
 *                     'A' + i (pwrite, fsync each), and exits
 *   kills DIR CHANGE  opens DIR/f, rewrites block 2 with 'q' (pwrite,
 *                     fsync), prints "acked", makes CHANGE, fsyncs,
 *                     prints "done"
 *
 * CHANGE: o_trunc (open O_WRONLY|O_TRUNC), creat, ftruncate (to 8 KiB),
 * truncate (truncate(2) to 8 KiB), pwrite (block 5 with 'z'), write
 * (block 7 with 'y', through the file position), unlink, rename (to
 * DIR/g). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 4096
#define BLOCKS 16

static void fail(const char *what) {
  perror(what);
  exit(2);
}

static void put(int fd, char fill, int block) {
  char data[BLOCK];
  memset(data, fill, sizeof data);
  if (pwrite(fd, data, sizeof data, (off_t)block * BLOCK) != BLOCK) fail("pwrite");
  if (fsync(fd) != 0) fail("fsync");
}

static int change(const char *change, int fd, const char *f, const char *g) {
  char data[BLOCK];
  if (strcmp(change, "o_trunc") == 0) return open(f, O_WRONLY | O_TRUNC);
  if (strcmp(change, "creat") == 0) return creat(f, 0644);
  if (strcmp(change, "ftruncate") == 0) return ftruncate(fd, 2 * BLOCK) == 0 ? fd : -1;
  if (strcmp(change, "truncate") == 0) return truncate(f, 2 * BLOCK) == 0 ? fd : -1;
  if (strcmp(change, "pwrite") == 0) {
    memset(data, 'z', sizeof data);
    return pwrite(fd, data, sizeof data, 5 * BLOCK) == BLOCK ? fd : -1;
  }
  if (strcmp(change, "write") == 0) {
    memset(data, 'y', sizeof data);
    if (lseek(fd, 7 * BLOCK, SEEK_SET) != 7 * BLOCK) return -1;
    return write(fd, data, sizeof data) == BLOCK ? fd : -1;
  }
  if (strcmp(change, "unlink") == 0) return unlink(f) == 0 ? fd : -1;
  if (strcmp(change, "rename") == 0) return rename(f, g) == 0 ? fd : -1;
  fprintf(stderr, "unknown change %s\n", change);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 3) return 1;
  char f[4096], g[4096];
  snprintf(f, sizeof f, "%s/f", argv[1]);
  snprintf(g, sizeof g, "%s/g", argv[1]);
  if (strcmp(argv[2], "setup") == 0) {
    int fd = open(f, O_RDWR | O_CREAT, 0644);
    if (fd < 0) fail(f);
    for (int i = 0; i < BLOCKS; i++) put(fd, 'A' + i, i);
    return close(fd);
  }
  int fd = open(f, O_RDWR);
  if (fd < 0) fail(f);
  put(fd, 'q', 2);
  printf("acked\n");
  fflush(stdout);
  int changed = change(argv[2], fd, f, g);
  if (changed < 0) fail(argv[2]);
  if (fsync(changed) != 0) fail("fsync");
  printf("done\n");
  return 0;
}
