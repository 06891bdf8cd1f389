/*
 * plugin_loop.c - the smallest host of a device plugin: dlopen it, open one
 * device in poll mode, and time submit + poll round trips of BYTES each
 * way, two clock_gettime(CLOCK_MONOTONIC) reads per round trip, as
 * xferbench times its samples. bench/floors.sh sets it beside
 * `xferbench roundtrip -t plugin:path=PLUGIN` to show what xferbench's
 * plugin host (its guard, its checks) adds to a device's own round trip.
 *
 * Output, one line:
 *   plugin_loop rtt_ns p50=.. min=.. mean=.. iterations=.. bytes=..
 *
 * Build: cc -O2 -Iinclude -o plugin_loop bench/plugin_loop.c -ldl
 * Usage: plugin_loop PLUGIN.so [-b BYTES (16)] [-c CPU (0)] [-r CPU (1)]
 *                   [-n ITER (200000)] [-w WARMUP (20000)]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xferbench/plugin.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: plugin_loop PLUGIN.so [-b BYTES] [-c CPU] [-r CPU] [-n ITER] [-w WARMUP]\n");
        return 2;
    }
    long bytes = 16, iterations = 200000, warmup = 20000;
    int cpu = 0, responder = 1, opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "b:c:r:n:w:")) != -1) {
        switch (opt) {
        case 'b': bytes = atol(optarg); break;
        case 'c': cpu = atoi(optarg); break;
        case 'r': responder = atoi(optarg); break;
        case 'n': iterations = atol(optarg); break;
        case 'w': warmup = atol(optarg); break;
        default: return 2;
        }
    }
    if (bytes < 1 || iterations <= 0 || warmup < 0)
        return 2;
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "plugin_loop: %s\n", dlerror());
        return 1;
    }
    xb_entry_fn entry = (xb_entry_fn)dlsym(so, XB_ENTRY_SYMBOL);
    const xb_plugin *p = entry ? entry(XB_ABI_MAJOR, XB_ABI_MINOR) : NULL;
    if (!p) {
        fprintf(stderr, "plugin_loop: %s has no usable %s\n", argv[1], XB_ENTRY_SYMBOL);
        return 1;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);

    char msg[512] = "";
    xb_open_params op = {.struct_size = sizeof op, .completion = XB_COMPLETE_POLL,
                         .responder_cpu = responder, .msg = msg, .msg_len = sizeof msg};
    void *dev = NULL;
    if (p->open(&op, &dev) != XB_OK || p->configure(dev, (uint64_t)bytes, (uint64_t)bytes, 0) != XB_OK) {
        fprintf(stderr, "plugin_loop: %s\n", msg);
        return 1;
    }
    unsigned char *req = aligned_alloc(4096, 4096 + (size_t)bytes);
    unsigned char *rep = aligned_alloc(4096, 4096 + (size_t)bytes);
    memset(req, 0x5a, (size_t)bytes);
    uint64_t *t = calloc((size_t)iterations, sizeof *t);
    double sum = 0;
    xb_job job = {.struct_size = sizeof job, .mode = XB_BUF_USER, .request = req,
                  .request_len = (uint64_t)bytes, .reply = rep, .reply_len = (uint64_t)bytes};
    for (long i = 0; i < warmup + iterations; i++) {
        uint64_t a = now_ns();
        job.tag = (uint64_t)i;
        if (p->submit(dev, &job) != XB_OK) {
            fprintf(stderr, "plugin_loop: submit failed: %s\n", msg);
            return 1;
        }
        xb_completion c;
        uint32_t n = 0;
        do {
            if (p->poll(dev, &c, 1, &n) != XB_OK) {
                fprintf(stderr, "plugin_loop: poll failed: %s\n", msg);
                return 1;
            }
        } while (n == 0);
        uint64_t b = now_ns();
        if (i >= warmup) {
            t[i - warmup] = b - a;
            sum += (double)(b - a);
        }
    }
    p->close(dev);
    qsort(t, (size_t)iterations, sizeof *t, cmp_u64);
    printf("plugin_loop rtt_ns p50=%llu min=%llu mean=%.1f iterations=%ld bytes=%ld\n",
           (unsigned long long)t[iterations / 2], (unsigned long long)t[0],
           sum / (double)iterations, iterations, bytes);
    return 0;
}
