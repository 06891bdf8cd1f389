/*
 * pingpong.c - minimal two-thread cache-line ping-pong, the hand-written
 * baseline for `xferbench roundtrip -t thread:completion=poll`.
 *
 * Two cache lines, one per direction, each alone in its own 128-byte slot
 * (so adjacent-line prefetch does not couple them). Per round trip the
 * initiator copies N payload bytes into its line and publishes a sequence
 * number (release store); the responder spins until it sees the number
 * (acquire load), copies the payload into its own line and publishes the
 * same number back; the initiator spins until it sees it and reads the
 * echoed payload. Both threads spin with the CPU's pause hint, as
 * std::hint::spin_loop() does.
 *
 * After a warm-up, two timed passes are run:
 *   1. per-iteration: clock_gettime(CLOCK_MONOTONIC) before and after every
 *      round trip (two reads per iteration, like xferbench), durations
 *      stored in a preallocated array -> mean, p50, min, p99, max;
 *   2. loop: one clock read before and after the whole loop, no per-iteration
 *      reads -> loop_mean = total / iterations (clock overhead excluded).
 *
 * Output, one line:
 *   pingpong rtt_ns mean=.. p50=.. min=.. p99=.. max=.. loop_mean=.. \
 *            iterations=.. payload=.. cpus=A,B
 *
 * Build: cc -O2 -pthread -o pingpong pingpong.c
 * Usage: pingpong [-b BYTES(16, max 48)] [-c CPU_A,CPU_B (0,1)]
 *                 [-n ITERATIONS (1000000)] [-w WARMUP (100000)]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAYLOAD 48

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

/* One direction: a 64-byte line at the start of a 128-byte slot. */
struct slot {
    _Alignas(128) _Atomic uint64_t seq;
    unsigned char payload[MAX_PAYLOAD];
};
_Static_assert(sizeof(struct slot) == 128, "slot must be 128 bytes");

static struct slot ping; /* initiator -> responder */
static struct slot pong; /* responder -> initiator */

static size_t payload_len = 16;
static int cpu_a = 0, cpu_b = 1;

static const uint64_t STOP = UINT64_MAX;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
        fprintf(stderr, "pingpong: cannot pin to cpu %d: %s\n", cpu, strerror(rc));
        exit(1);
    }
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *responder(void *arg)
{
    (void)arg;
    pin(cpu_b);
    uint64_t last = 0;
    for (;;) {
        uint64_t s;
        while ((s = atomic_load_explicit(&ping.seq, memory_order_acquire)) == last)
            cpu_relax();
        if (s == STOP)
            break;
        memcpy(pong.payload, ping.payload, payload_len);
        atomic_store_explicit(&pong.seq, s, memory_order_release);
        last = s;
    }
    return NULL;
}

static uint64_t seq_next = 0;
static unsigned char sink[MAX_PAYLOAD];

/* One round trip. */
static inline void round_trip(void)
{
    uint64_t s = ++seq_next;
    memset(ping.payload, (int)(s & 0xff), payload_len);
    atomic_store_explicit(&ping.seq, s, memory_order_release);
    while (atomic_load_explicit(&pong.seq, memory_order_acquire) != s)
        cpu_relax();
    memcpy(sink, pong.payload, payload_len);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [-b BYTES (16, max %d)] [-c CPU_A,CPU_B (0,1)] "
            "[-n ITERATIONS (1000000)] [-w WARMUP (100000)]\n",
            argv0, MAX_PAYLOAD);
    exit(2);
}

int main(int argc, char **argv)
{
    long iterations = 1000000, warmup = 100000;
    int opt;
    while ((opt = getopt(argc, argv, "b:c:n:w:h")) != -1) {
        switch (opt) {
        case 'b': {
            long b = atol(optarg);
            if (b < 0 || b > MAX_PAYLOAD)
                usage(argv[0]);
            payload_len = (size_t)b;
            break;
        }
        case 'c':
            if (sscanf(optarg, "%d,%d", &cpu_a, &cpu_b) != 2)
                usage(argv[0]);
            break;
        case 'n':
            iterations = atol(optarg);
            break;
        case 'w':
            warmup = atol(optarg);
            break;
        default:
            usage(argv[0]);
        }
    }
    if (optind != argc || iterations <= 0 || warmup < 0)
        usage(argv[0]);

    uint64_t *samples = malloc((size_t)iterations * sizeof *samples);
    if (!samples) {
        perror("malloc");
        return 1;
    }
    memset(samples, 0, (size_t)iterations * sizeof *samples); /* fault pages in */

    pin(cpu_a);
    pthread_t th;
    if (pthread_create(&th, NULL, responder, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }

    for (long i = 0; i < warmup; i++)
        round_trip();

    /* Pass 1: per-iteration timing, two clock reads per round trip. */
    for (long i = 0; i < iterations; i++) {
        uint64_t t0 = now_ns();
        round_trip();
        uint64_t t1 = now_ns();
        samples[i] = t1 - t0;
    }

    /* Pass 2: whole-loop timing, no per-iteration clock reads. */
    uint64_t l0 = now_ns();
    for (long i = 0; i < iterations; i++)
        round_trip();
    uint64_t l1 = now_ns();

    atomic_store_explicit(&ping.seq, STOP, memory_order_release);
    pthread_join(th, NULL);

    double sum = 0;
    for (long i = 0; i < iterations; i++)
        sum += (double)samples[i];
    qsort(samples, (size_t)iterations, sizeof *samples, cmp_u64);
#define PCT(p) samples[(size_t)((double)(iterations - 1) * (p))]
    printf("pingpong rtt_ns mean=%.1f p50=%llu min=%llu p99=%llu max=%llu "
           "loop_mean=%.1f iterations=%ld payload=%zu cpus=%d,%d\n",
           sum / (double)iterations, (unsigned long long)PCT(0.50),
           (unsigned long long)samples[0], (unsigned long long)PCT(0.99),
           (unsigned long long)samples[iterations - 1],
           (double)(l1 - l0) / (double)iterations, iterations, payload_len, cpu_a, cpu_b);
    free(samples);
    return 0;
}
