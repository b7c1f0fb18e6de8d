/* Directory syncs under the cache: each step changes the directory DIR,
 * then syncs it, and prints the step's name. Which of those syncs the
 * cache may answer from its log (the test reads the library's counts):
 *   written    a file created and written              answered
 *   unlinked   a written file unlinked                 answered
 *   mkdir      a directory made                        real
 *   renamed    a file renamed                          real
 *   empty      a file created and not written          real
 *   again      nothing changed since the last sync     answered
 *
 *   dirsync DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir;

static void path(char *out, const char *name) { snprintf(out, 4096, "%s/%s", dir, name); }

static void sync_dir(const char *step) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0 || fsync(fd) != 0) {
    perror(step);
    exit(2);
  }
  close(fd);
  printf("%s\n", step);
  fflush(stdout);
}

static void written(const char *name) {
  char p[4096];
  path(p, name);
  int fd = open(p, O_RDWR | O_CREAT, 0644);
  if (fd < 0 || write(fd, "data", 4) != 4 || fdatasync(fd) != 0) {
    perror(p);
    exit(2);
  }
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 2) return 1;
  dir = argv[1];
  char p[4096], q[4096];
  written("a");
  sync_dir("written");
  path(p, "a");
  if (unlink(p) != 0) return 2;
  sync_dir("unlinked");
  path(p, "sub");
  if (mkdir(p, 0755) != 0) return 2;
  sync_dir("mkdir");
  written("b");
  path(p, "b");
  path(q, "c");
  if (rename(p, q) != 0) return 2;
  sync_dir("renamed");
  path(p, "empty");
  int fd = open(p, O_RDWR | O_CREAT, 0644);
  if (fd < 0) return 2;
  close(fd);
  sync_dir("empty");
  sync_dir("again");
  return 0;
}
