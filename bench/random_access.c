// What one random access to a large table costs on this machine, with and without software
// prefetch and transparent huge pages: the question behind the timed-mode figures on the
// Table-1 device (a 240 MB mapping table and a 256 MB OOB array, a few random lines per
// host request). Each iteration reads one random element of a table of TABLE_KIB KiB,
// prefetched DISTANCE iterations ahead (0: not at all), then runs ~600 instructions of
// independent integer work (about what ssdlab spends per request between random accesses).
// Compare with a table that fits the L2 (e.g. 16 KiB): the difference is the access's cost.
// usage: random_access TABLE_KIB DISTANCE HUGE(0|1)   e.g. cc -O2 random_access.c && ./a.out 262144 16 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <xmmintrin.h>
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv){
  if (argc < 4) { fprintf(stderr, "usage: random_access TABLE_KIB DISTANCE HUGE\n"); return 2; }
  size_t n = (size_t)atol(argv[1]) << 8; int d = atoi(argv[2]), huge = atoi(argv[3]);
  if (n == 0) n = 1;
  uint32_t *a; if (posix_memalign((void **)&a, 2 << 20, n * 4)) return 1;
  madvise(a, n * 4, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  for (size_t i = 0; i < n; i++) a[i] = (uint32_t)i;
  size_t m = 4 << 20; uint32_t *idx = malloc(m * 4); uint64_t s = 88172645463325252ULL;
  for (size_t i = 0; i < m; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; idx[i] = s % n; }
  uint64_t x0 = 0, x1 = 1, x2 = 2, x3 = 3, x4 = 4, x5 = 5;
  double t = now();
  for (size_t i = 0; i + 64 < m; i++) {
    if (d) _mm_prefetch((const char *)&a[idx[i + d]], _MM_HINT_T0);
    x0 += a[idx[i]];
    for (int k = 0; k < 100; k++) {
      x0 += x1 ^ k; x1 += x2 | k; x2 += x3 ^ x0; x3 += x4 & k; x4 += x5 ^ k; x5 += x0 + k;
      __asm__ volatile("" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5));
    }
  }
  double e = now() - t;
  printf("table %zu KiB, prefetch distance %d, huge pages %d: %.1f ns per iteration (%lu)\n",
         n >> 8, d, huge, e / (m - 64) * 1e9, (unsigned long)((x0 + x1 + x2 + x3 + x4 + x5) & 1));
  return 0;
}
