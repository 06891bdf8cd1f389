/* saxpy.c - the saxpy kernel alone, for bench/flowgraph-peers.sh.
 *
 * y[i] = a * x[i] + b over float32, out of place, on 16 KiB buffers (4096
 * floats each), repeated over the same buffers for a fixed time on one core.
 * x and y are both 64-byte aligned but 2 KiB apart modulo 4 KiB, so loads of
 * x never alias stores to y in the 4 KiB store-forwarding check (same page
 * offset), which would otherwise cost a large fraction of the throughput.
 *
 * Build: cc -O3 -march=native -o saxpy saxpy.c
 * Usage: saxpy [SECONDS [WARMUP_SECONDS]]   (defaults 2 and 0.3)
 * Prints: {"runtime":"c-march-native","scheduler":"kernel","cores":1,"blocks":1,"samples_per_s":X}
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_BYTES (16 * 1024)
#define N (BUF_BYTES / sizeof(float))
#define PASSES_PER_CHECK 1024

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void saxpy(float *restrict y, const float *restrict x, float a, float b)
{
    for (size_t i = 0; i < N; i++)
        y[i] = a * x[i] + b;
}

/* Runs passes for `seconds`; returns floats per second. */
static double run(float *y, const float *x, float a, float b, double seconds)
{
    unsigned long long passes = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < PASSES_PER_CHECK; k++) {
            saxpy(y, x, a, b);
            /* every pass must really load x and store y */
            __asm__ __volatile__("" : : "r"(y), "r"(x) : "memory");
        }
        passes += PASSES_PER_CHECK;
        t = now();
    } while (t - t0 < seconds);
    return (double)passes * N / (t - t0);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    double warmup = argc > 2 ? atof(argv[2]) : 0.3;
    if (seconds <= 0) {
        fprintf(stderr, "usage: %s [SECONDS [WARMUP_SECONDS]]\n", argv[0]);
        return 2;
    }
    unsigned char *mem = aligned_alloc(4096, 3 * BUF_BYTES);
    if (!mem) {
        perror("aligned_alloc");
        return 1;
    }
    float *x = (float *)mem;                         /* page offset 0 */
    float *y = (float *)(mem + BUF_BYTES + 2048);    /* page offset 2 KiB */
    for (size_t i = 0; i < N; i++)
        x[i] = (float)(i % 97) * 0.01f;
    memset(y, 0, BUF_BYTES);
    volatile float va = 1.0001f, vb = 0.5f;
    float a = va, b = vb;

    if (warmup > 0)
        run(y, x, a, b, warmup);
    double sps = run(y, x, a, b, seconds);

    /* use the result so the stores cannot be dropped */
    float sum = 0;
    for (size_t i = 0; i < N; i++)
        sum += y[i];
    if (sum == 12345.678f)
        fprintf(stderr, "unlikely\n");
    printf("{\"runtime\":\"c-march-native\",\"scheduler\":\"kernel\",\"cores\":1,\"blocks\":1,\"samples_per_s\":%.0f}\n", sps);
    return 0;
}
