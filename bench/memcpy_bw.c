/* memcpy_bw.c - plain memcpy bandwidth, the ceiling for moving a message
 * between two threads of one machine.
 *
 *   memcpy_bw [-s BYTES] [-t SECONDS] [-c CPU]
 *
 * Copies one page-aligned buffer of BYTES into another, over and over, for
 * about SECONDS (default 8 MiB, 1 s), each copy timed on its own, and prints
 *
 *   memcpy size=8388608 copies=123 median_MBps=... best_MBps=... mean_MBps=...
 *
 * in decimal MB/s (10^6 bytes/s), as xferbench reports bandwidth. Both
 * buffers are written before timing so no page fault lands in a copy.
 * Build: cc -O2 -o memcpy_bw memcpy_bw.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t size = 8u << 20;
    double seconds = 1.0;
    int cpu = -1, opt;
    while ((opt = getopt(argc, argv, "s:t:c:")) != -1) {
        switch (opt) {
        case 's': size = strtoull(optarg, NULL, 0); break;
        case 't': seconds = atof(optarg); break;
        case 'c': cpu = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-s BYTES] [-t SECONDS] [-c CPU]\n", argv[0]);
            return 2;
        }
    }
    if (size == 0 || seconds <= 0) {
        fprintf(stderr, "memcpy_bw: size and seconds must be positive\n");
        return 2;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, "memcpy_bw: cannot pin to cpu %d: %s\n", cpu, strerror(errno));
            return 1;
        }
    }
    size_t alloc = (size + 4095) / 4096 * 4096;
    char *src = aligned_alloc(4096, alloc), *dst = aligned_alloc(4096, alloc);
    if (!src || !dst) {
        fprintf(stderr, "memcpy_bw: out of memory for %zu bytes\n", size);
        return 1;
    }
    memset(src, 0x5a, alloc);
    memset(dst, 0xa5, alloc);

    size_t cap = 1 << 20, n = 0;
    double *t = malloc(cap * sizeof *t);
    double end = now() + seconds;
    /* A few untimed copies first: the caches and TLB settle. */
    for (int i = 0; i < 3; i++) {
        memcpy(dst, src, size);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    do {
        double t0 = now();
        memcpy(dst, src, size);
        __asm__ volatile("" : : "r"(dst) : "memory");
        t[n++] = now() - t0;
    } while (n < cap && (now() < end || n < 5));
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += t[i];
    qsort(t, n, sizeof *t, cmp);
    double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    printf("memcpy size=%zu copies=%zu median_MBps=%.1f best_MBps=%.1f mean_MBps=%.1f\n",
           size, n, size / med / 1e6, size / t[0] / 1e6, size / (sum / n) / 1e6);
    return 0;
}
