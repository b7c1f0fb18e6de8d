/* Writes the log does not describe, on cached files: for each way, the
 * file's first 4 KiB is written with 'a' through write(2) (logged), then
 * overwritten with 'b' by the call under test. A replay of the logged 'a'
 * after the program ends must not bring it back. Also a file reopened
 * with O_TRUNC.
 *
 *   calls DIR     (prints "ok NAME" for each call made) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

static char a[4096], b[4096];

static int cached_with_a(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || pwrite(fd, a, sizeof a, 0) != sizeof a) {
    perror(path);
    exit(2);
  }
  return fd;
}

static void check(long got, const char *name) {
  if (got != (long)sizeof b) {
    fprintf(stderr, "%s: %ld\n", name, got);
    perror(name);
    exit(2);
  }
  printf("ok %s\n", name);
}

int main(int argc, char **argv) {
  if (argc != 2) return 1;
  memset(a, 'a', sizeof a);
  memset(b, 'b', sizeof b);
  /* The source of the copies: 'b', read through a descriptor of its own. */
  char source[4096];
  snprintf(source, sizeof source, "%s/source", argv[1]);
  int made = open(source, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (made < 0 || pwrite(made, b, sizeof b, 0) != sizeof b) return 2;
  int src = open(source, O_RDONLY);
  if (src < 0) return 2;

  int fd = cached_with_a(argv[1], "copy_file_range");
  loff_t in = 0, out = 0;
  check(copy_file_range(src, &in, fd, &out, sizeof b, 0), "copy_file_range");

  fd = cached_with_a(argv[1], "sendfile");
  off_t from = 0;
  check(sendfile(fd, src, &from, sizeof b), "sendfile");

  fd = cached_with_a(argv[1], "splice");
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0 || write(pipe_fds[1], b, sizeof b) != sizeof b) return 2;
  loff_t at = 0;
  check(splice(pipe_fds[0], NULL, fd, &at, sizeof b, 0), "splice");

  fd = cached_with_a(argv[1], "pwritev2");
  struct iovec iov = {b, sizeof b};
  check(pwritev2(fd, &iov, 1, 0, RWF_DSYNC), "pwritev2");

  /* Reopened with O_TRUNC, then 100 bytes of 'b': none of the 'a' may
   * come back (the truncate is logged). */
  fd = cached_with_a(argv[1], "o_trunc");
  close(fd);
  char reopen[4096];
  snprintf(reopen, sizeof reopen, "%s/o_trunc", argv[1]);
  fd = open(reopen, O_WRONLY | O_TRUNC);
  if (fd < 0) return 2;
  if (pwrite(fd, b, 100, 0) != 100) return 2;
  printf("ok o_trunc\n");

  fd = cached_with_a(argv[1], "pwritev2_append");
  if (ftruncate(fd, 0) != 0) return 2;
  check(pwritev2(fd, &iov, 1, -1, RWF_APPEND), "pwritev2_append");
  return 0;
}
