/* A multi-threaded writer for the write cache's tests (an unmodified
 * program, as far as the preload library knows): THREADS threads write
 * versions of blocks into FILES files, each thread in slots of its own
 * (SLOT_BYTES apart), with pwrite, pwritev (three pieces) and, with
 * "punch", a hole punched over a slot now and then; each op is followed by
 * an fdatasync (free under the cache). Before each op a thread prints
 * "B file slot version kind", after it "A file slot version", so a checker
 * knows every acknowledged op and the one in flight per thread.
 *
 * A block of version v is: "PSWB", file, slot, version, length (u32 each,
 * little-endian), then length-20 bytes of a pattern of (file, slot, v).
 *
 *   writer DIR THREADS FILES OPS SEED [punch]   (OPS 0: until killed) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define SLOTS_PER_THREAD 8
#define SLOT_BYTES 16384
#define FILES_MAX 8

static int fds[FILES_MAX];
static int files, threads, punch;
static long ops;
static uint64_t seed;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void say(const char *line) {
  pthread_mutex_lock(&out_lock);
  size_t len = strlen(line), done = 0;
  while (done < len) {
    ssize_t n = write(1, line + done, len - done);
    if (n <= 0) exit(3);
    done += (size_t)n;
  }
  pthread_mutex_unlock(&out_lock);
}

static void put32(unsigned char *at, uint32_t v) {
  for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> (8 * i));
}

static void *run(void *arg) {
  long t = (long)arg;
  uint32_t versions[FILES_MAX][SLOTS_PER_THREAD] = {{0}};
  uint64_t rng = mix(seed ^ (uint64_t)t);
  unsigned char *block = malloc(SLOT_BYTES);
  char line[128];
  for (long op = 0; ops == 0 || op < ops; op++) {
    rng = mix(rng);
    int f = (int)(rng % (uint64_t)files);
    int k = (int)((rng >> 8) % SLOTS_PER_THREAD);
    uint32_t slot = (uint32_t)(t * SLOTS_PER_THREAD + k);
    uint32_t version = ++versions[f][k];
    int is_punch = punch && (rng >> 20) % 7 == 0;
    off_t at = (off_t)slot * SLOT_BYTES;
    snprintf(line, sizeof line, "B %d %u %u %c\n", f, slot, version, is_punch ? 'P' : 'W');
    say(line);
    if (is_punch) {
      if (fallocate(fds[f], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at, SLOT_BYTES) != 0) {
        perror("fallocate");
        exit(2);
      }
    } else {
      uint32_t len = 20 + (uint32_t)((rng >> 24) % (SLOT_BYTES - 20 + 1));
      uint64_t pattern = mix(((uint64_t)f << 48) ^ ((uint64_t)slot << 32) ^ version);
      memcpy(block, "PSWB", 4);
      put32(block + 4, (uint32_t)f);
      put32(block + 8, slot);
      put32(block + 12, version);
      put32(block + 16, len);
      for (uint32_t i = 20; i < len; i++) block[i] = (unsigned char)(pattern >> ((i % 8) * 8)) ^ (unsigned char)i;
      ssize_t wrote;
      if ((rng >> 40) & 1) {
        wrote = pwrite(fds[f], block, len, at);
      } else {
        uint32_t a = len / 3, b = len / 3;
        struct iovec iov[3] = {{block, a}, {block + a, b}, {block + a + b, len - a - b}};
        wrote = pwritev(fds[f], iov, 3, at);
      }
      if (wrote != (ssize_t)len) {
        perror("pwrite");
        exit(2);
      }
    }
    if (fdatasync(fds[f]) != 0) {
      perror("fdatasync");
      exit(2);
    }
    snprintf(line, sizeof line, "A %d %u %u\n", f, slot, version);
    say(line);
  }
  free(block);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: writer DIR THREADS FILES OPS SEED [punch]\n");
    return 1;
  }
  threads = atoi(argv[2]);
  files = atoi(argv[3]);
  ops = atol(argv[4]);
  seed = strtoull(argv[5], NULL, 10);
  punch = argc > 6 && strcmp(argv[6], "punch") == 0;
  if (threads < 1 || threads > 64 || files < 1 || files > FILES_MAX) return 1;
  for (int f = 0; f < files; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/file%d", argv[1], f);
    fds[f] = open(path, O_RDWR | O_CREAT, 0644);
    if (fds[f] < 0) {
      perror(path);
      return 2;
    }
  }
  pthread_t ids[64];
  for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, run, (void *)t);
  for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
  return 0;
}
