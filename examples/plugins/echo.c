/*
 * echo.c - an example xferbench device plugin: a software DMA engine.
 *
 * What it models: a device with a submission queue and a completion queue in
 * host memory, served by an engine (here a worker thread, ideally on its own
 * core) that reads each request, runs a "device program" and writes the reply,
 * as a DMA engine or an accelerator's firmware would. The program is the
 * Vollo-style no-compute program of configure(): wait for the request, wait
 * delay_ns more (a busy wait, so the delay is exact), then write reply_len
 * bytes: the request's bytes first (an echo), then the pattern
 * reply[i] = (uint8_t)i for i >= request_len.
 *
 * Every job reads every request byte (the "DMA in": bytes the reply does not
 * echo land in device memory, a staging buffer). Buffer modes: USER (the
 * request is copied into device memory, the reply built there and copied
 * into the caller's buffer, as a runtime's copy-in/copy-out API does), RAW
 * (alloc()'d memory the engine reads and writes directly) and MMIO (a window of at
 * most 4096 bytes the host writes the request into; the reply goes to
 * job.reply). Completion modes: POLL (the engine and the host spin, no system
 * call per job) and BLOCK (the engine sleeps on a futex while idle and signals
 * each completion on an eventfd that completion_fd() hands to the host).
 *
 * Options (-t plugin:path=./echo.so,depth=64,max=1G,lat=5us,bw=1000000000),
 * described to the host in the ABI 1.1 option_info table and parsed with
 * the header's helpers, so `xferbench list -t plugin:path=./echo.so` shows
 * them and a bad value is refused before open():
 *   depth=COUNT  jobs in flight at most, 1..4096 (default 64)
 *   max=SIZE     largest request and reply (default 1G; k/M/G are binary)
 *   lat=TIME     the device's own latency per job, spun (default 0us)
 *   bw=RATE      the device's data rate: a job moving B bytes (request plus
 *                reply) takes at least B/bw (default 0: as fast as memcpy)
 *   hw_time=BOOL report each job's device time in xb_completion.hw_ns
 *                (default: on when lat or bw is set; it costs two clock
 *                reads per job on the engine's core)
 *
 * With lat= and bw= the example is a timing model of a DMA device: a job
 * ends no earlier than lat + bytes/bw after the engine took it, and its
 * hw_ns says how long it took, so xferbench splits each round trip into
 * device time and host time (the latency budget).
 *
 * Build and run, from the repository root:
 *   cc -O2 -Wall -Wextra -std=gnu11 -shared -fPIC -Iinclude \
 *      examples/plugins/echo.c -o echo.so -lpthread
 *   xferbench plugin check ./echo.so
 *   xferbench roundtrip -t plugin:path=./echo.so --in 64 --out 64
 *
 * To start a plugin of your own, copy this file: the option parsing, the
 * struct_size handling and the error messages carry over unchanged; replace
 * the worker with your runtime's submit and completion calls.
 */
#define _GNU_SOURCE
#include <xferbench/plugin.h>

#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LINE 64             /* cache line: the unit the two cores trade */
#define BUF_ALIGN 4096      /* alloc() hands out whole pages, like a DMA API */
#define MAX_MMIO 4096       /* one doorbell page */
#define MAX_DEPTH 4096
#define ECHO_FLAGS (XB_CAP_REPLY_LONGER | XB_CAP_DELAY | XB_CAP_ECHO | XB_CAP_EMPTY)
#define NS_PER_S 1000000000ull
#define ECHO_BUFS (XB_BUF_USER | XB_BUF_RAW | XB_BUF_MMIO)

/*
 * One queue entry, one cache line. The host fills it and publishes it with a
 * release store of seq = 2*pos+1; the engine answers in the same line with
 * seq = 2*pos+2. So a job costs one line moving to the engine and back, and
 * neither side ever reads the other's index: there are no shared head/tail
 * words to bounce. A slot is reused (pos + ring size) only after the host has
 * collected its completion, since at most depth <= ring size jobs are out.
 */
struct slot {
    _Alignas(LINE) _Atomic uint64_t seq;
    uint64_t tag;
    const uint8_t *request;
    uint8_t *reply;
    int64_t status;
    uint64_t hw_ns;         /* the engine's time for the job (hw_time=1) */
    uint32_t mode;
};

/* A buffer from alloc(): tracked so free() can refuse strangers and close()
 * can release what the host forgot. */
struct alloc_rec {
    struct alloc_rec *next;
    void *ptr;
};

struct echo_dev {
    /* Read-mostly: written by open() and configure() while no job is out, read
     * by the engine once per job; it stays in both cores' caches. */
    struct slot *ring;
    uint64_t mask;          /* ring size - 1, ring size a power of two */
    uint32_t depth;
    uint32_t completion;    /* XB_COMPLETE_POLL or XB_COMPLETE_BLOCK */
    uint64_t max;
    bool configured;
    uint64_t req_len, rep_len, delay_ns;
    uint64_t lat_ns;        /* lat= */
    uint64_t bw;            /* bw=, bytes per second; 0: unlimited */
    bool hw_time;           /* hw_time= */
    uint8_t *stage;         /* device memory: every request lands here */
    size_t stage_len;
    _Atomic bool stop;      /* close(): the engine leaves its loop */
    int efd;                /* BLOCK: completions signal here */
    uint8_t pattern[256];   /* reply bytes past the request: pattern[i % 256] */

    /* Host-only state on its own lines: the engine never reads it, so the
     * host's bookkeeping costs no coherence traffic. */
    _Alignas(LINE) uint64_t head;  /* jobs submitted */
    uint64_t tail;                 /* completions returned */
    uint64_t jobs, bytes_in, bytes_out, busy;
    char *msg;
    size_t msg_len;
    struct alloc_rec *allocs;
    pthread_t thread;

    /* BLOCK mode's sleep handshake, apart from the rest because the engine
     * writes it each time it sleeps. */
    _Alignas(LINE) _Atomic uint32_t wake;   /* futex word: bumped to wake */
    _Atomic uint32_t sleeping;
};

/* Writes the one-line error message and returns code: every negative return
 * goes through here, so none leaves the host guessing. */
__attribute__((format(printf, 4, 5)))
static int say(char *msg, size_t len, int code, const char *fmt, ...)
{
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap); /* truncates, always NUL-terminates */
        va_end(ap);
    }
    return code;
}
#define FAIL(d, code, ...) say((d)->msg, (d)->msg_len, (code), __VA_ARGS__)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause(); /* yields the core's pipeline to its sibling */
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void futex_wait(_Atomic uint32_t *word, uint32_t expected)
{
    /* Returns at once if *word != expected, so a wake between our check and
     * this call is never lost. */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the engine -------------------------------------------------------- */

/* The device program's output: the echo, then the pattern. memmove because
 * a ping-pong may hand the same buffer as request and reply. */
static void produce(const struct echo_dev *d, uint8_t *dst, const uint8_t *src)
{
    uint64_t req = d->req_len, rep = d->rep_len;
    uint64_t n = req < rep ? req : rep;
    if (n && dst != src)
        memmove(dst, src, n);
    for (uint64_t i = req; i < rep;) {
        uint64_t off = i & 255, k = 256 - off;
        if (k > rep - i)
            k = rep - i;
        memcpy(dst + i, d->pattern + off, k);
        i += k;
    }
}

/* Spins until `end` on the monotonic clock (or close()). */
static void spin_until(struct echo_dev *d, uint64_t end)
{
    while (now_ns() < end && !atomic_load_explicit(&d->stop, memory_order_relaxed))
        cpu_relax();
}

static void run_job(struct echo_dev *d, struct slot *s)
{
    const uint64_t req = d->req_len, rep = d->rep_len;
    const uint64_t n = req < rep ? req : rep;
    const uint64_t seen = d->hw_time ? now_ns() : 0;

    if (s->mode == XB_BUF_USER) {
        /* A runtime's copy-in: the whole request into device memory (the
         * staging buffer), the reply built there and copied out. */
        if (req)
            memcpy(d->stage, s->request, req);
    } else if (req > n) {
        /* DMA in: the device reads every request byte, also those the reply
         * does not echo (a stream of requests with empty replies then costs
         * what moving its bytes costs). The echoed ones are read below. */
        memcpy(d->stage + n, s->request + n, req - n);
    }
    if (d->delay_ns) /* a spin, not a sleep: sleeps overshoot by tens of µs */
        spin_until(d, now_ns() + d->delay_ns);
    if (s->mode == XB_BUF_USER) {
        produce(d, d->stage, d->stage);
        if (rep)
            memcpy(s->reply, d->stage, rep); /* copy out */
    } else {
        /* DMA out: the echo goes straight from the request to the reply. */
        produce(d, s->reply, s->request);
    }
    if (d->lat_ns || d->bw) {
        /* The timing model: the job ends lat + bytes/bw after it was taken,
         * or when its copies are done if they took longer. */
        uint64_t bytes = req + rep, xfer = 0;
        if (d->bw)
            xfer = (uint64_t)((double)bytes * (double)NS_PER_S / (double)d->bw);
        spin_until(d, seen + d->lat_ns + xfer);
    }
    s->hw_ns = d->hw_time ? now_ns() - seen : 0;
    s->status = (int64_t)rep;
}

static void *engine(void *arg)
{
    struct echo_dev *d = arg;
    struct slot *ring = d->ring;
    const uint64_t mask = d->mask;
    const bool block = d->completion == XB_COMPLETE_BLOCK;

    for (uint64_t pos = 0;; pos++) {
        struct slot *s = &ring[pos & mask];
        const uint64_t want = 2 * pos + 1;
        while (atomic_load_explicit(&s->seq, memory_order_acquire) != want) {
            if (atomic_load_explicit(&d->stop, memory_order_relaxed))
                return NULL;
            if (!block) {
                cpu_relax();
                continue;
            }
            /* Announce the sleep, then look once more: submit() stores seq
             * then reads `sleeping` (both seq_cst), so either it sees us
             * asleep and wakes us, or we see its job here. */
            uint32_t w = atomic_load_explicit(&d->wake, memory_order_acquire);
            atomic_store(&d->sleeping, 1);
            if (atomic_load(&s->seq) != want && !atomic_load(&d->stop))
                futex_wait(&d->wake, w);
            atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
        }
        run_job(d, s);
        /* Publishes the reply bytes and the status with the sequence. */
        atomic_store_explicit(&s->seq, want + 1, memory_order_release);
        if (block) {
            uint64_t one = 1;
            ssize_t r = write(d->efd, &one, sizeof one); /* the "interrupt" */
            (void)r; /* cannot fail short of a counter overflow (2^64 - 1) */
        }
    }
}

/* ---- options ----------------------------------------------------------- */

/* What the host shows and checks (ABI 1.1): kinds follow the header's value
 * rules, and the helpers below parse exactly what the host accepted. */
static const xb_option_info echo_options[] = {
    {"depth", XB_OPT_COUNT, 0, "64", "jobs in flight at most, 1..4096"},
    {"max", XB_OPT_SIZE, 0, "1G", "largest request and reply, bytes, up to 1T"},
    {"lat", XB_OPT_TIME, 0, "0us", "the device's own latency per job (spun)"},
    {"bw", XB_OPT_RATE, 0, "0",
     "the device's data rate, bytes/s: a job of B bytes takes at least B/bw (0: unlimited)"},
    {"hw_time", XB_OPT_BOOL, 0, NULL,
     "report each job's device time in hw_ns (default: on with lat or bw)"},
};

struct echo_options {
    uint32_t depth;
    uint64_t max, lat_ns, bw;
    int hw_time; /* -1: not given */
};

static int parse_options(const xb_open_params *p, struct echo_options *o)
{
    for (size_t i = 0; i < p->n_options; i++) {
        const char *k = p->options[i].key, *v = p->options[i].value;
        uint64_t x;
        if (!k)
            return say(p->msg, p->msg_len, XB_E_INVAL, "echo: option %zu has no key", i);
        /* A 1.0 host does not check values before open: check them here too. */
        if (!strcmp(k, "depth")) {
            if (xb_parse_count(v, &x) || x < 1 || x > MAX_DEPTH)
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "echo: depth=%s: expected a count 1..%d", v ? v : "", MAX_DEPTH);
            o->depth = (uint32_t)x;
        } else if (!strcmp(k, "max")) {
            /* Capped at 1 TiB so sizes stay far from size_t overflow. */
            if (xb_parse_size(v, &x) || x < 1 || x > (1ull << 40))
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "echo: max=%s: expected a size 1..1T in bytes (k/M/G suffixes)",
                           v ? v : "");
            o->max = x;
        } else if (!strcmp(k, "lat")) {
            if (xb_parse_time_ns(v, &x) || x > 10 * NS_PER_S)
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "echo: lat=%s: expected a time with a unit up to 10s (e.g. 5us)",
                           v ? v : "");
            o->lat_ns = x;
        } else if (!strcmp(k, "bw")) {
            if (xb_parse_rate(v, &x))
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "echo: bw=%s: expected bytes per second (e.g. 1000000000 or 1G/s)",
                           v ? v : "");
            o->bw = x;
        } else if (!strcmp(k, "hw_time")) {
            int b;
            if (xb_parse_bool(v, &b))
                return say(p->msg, p->msg_len, XB_E_INVAL, "echo: hw_time=%s: expected 1 or 0",
                           v ? v : "");
            o->hw_time = b;
        } else {
            return say(p->msg, p->msg_len, XB_E_INVAL,
                       "echo: unknown option '%s'; valid: depth, max, lat, bw, hw_time", k);
        }
    }
    return XB_OK;
}

/* ---- operations -------------------------------------------------------- */

static void echo_close(void *dev);

static int echo_open(const xb_open_params *params, void **dev)
{
    if (!params || !dev)
        return XB_E_INVAL;
    /* Read only what the host's struct holds; later fields stay zero. */
    xb_open_params p = {0};
    size_t have = params->struct_size < sizeof p ? params->struct_size : sizeof p;
    memcpy(&p, params, have);

    struct echo_options o = {.depth = 64, .max = 1ull << 30, .hw_time = -1};
    int rc = parse_options(&p, &o);
    if (rc)
        return rc;
    uint32_t depth = o.depth;
    if (p.completion != XB_COMPLETE_POLL && p.completion != XB_COMPLETE_BLOCK)
        return say(p.msg, p.msg_len, XB_E_UNSUPPORTED,
                   "echo: completion mode %u unknown; echo does POLL and BLOCK", p.completion);
    if (p.responder_cpu >= CPU_SETSIZE)
        return say(p.msg, p.msg_len, XB_E_INVAL, "echo: responder CPU %d is over %d",
                   p.responder_cpu, CPU_SETSIZE - 1);

    struct echo_dev *d;
    if (posix_memalign((void **)&d, LINE, sizeof *d))
        return say(p.msg, p.msg_len, XB_E_NOMEM, "echo: out of memory");
    memset(d, 0, sizeof *d);
    d->msg = p.msg;
    d->msg_len = p.msg_len;
    d->depth = depth;
    d->max = o.max;
    d->lat_ns = o.lat_ns;
    d->bw = o.bw;
    d->hw_time = o.hw_time >= 0 ? o.hw_time : (o.lat_ns || o.bw);
    d->completion = p.completion;
    d->efd = -1;
    for (int i = 0; i < 256; i++)
        d->pattern[i] = (uint8_t)i;

    uint64_t size = 1;
    while (size < depth)
        size <<= 1;
    d->mask = size - 1;
    if (posix_memalign((void **)&d->ring, LINE, size * sizeof *d->ring)) {
        free(d);
        return say(p.msg, p.msg_len, XB_E_NOMEM, "echo: out of memory for %" PRIu64 " slots", size);
    }
    memset(d->ring, 0, size * sizeof *d->ring);

    if (d->completion == XB_COMPLETE_BLOCK) {
        d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (d->efd < 0) {
            rc = FAIL(d, XB_E_FAIL, "echo: eventfd: %s", strerror(errno));
            goto fail_early;
        }
    }
    int e = pthread_create(&d->thread, NULL, engine, d);
    if (e) {
        rc = FAIL(d, XB_E_FAIL, "echo: cannot start the engine thread: %s", strerror(e));
        goto fail_early;
    }
    pthread_setname_np(d->thread, "xb-echo"); /* best effort: names it in top */
    if (p.responder_cpu >= 0) {
        /* Pinned from here rather than inside the engine so that open() can
         * report the failure without a start-up handshake; the engine has
         * touched only its first slot by then. */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(p.responder_cpu, &set);
        e = pthread_setaffinity_np(d->thread, sizeof set, &set);
        if (e) {
            echo_close(d); /* joins the engine; d->msg stays the host's */
            return say(p.msg, p.msg_len, XB_E_INVAL,
                       "echo: cannot pin the engine to CPU %d: %s (pick one of the allowed CPUs)",
                       p.responder_cpu, strerror(e));
        }
    }
    *dev = d;
    return XB_OK;

fail_early:
    if (d->efd >= 0)
        close(d->efd);
    free(d->ring);
    free(d);
    return rc;
}

static void echo_close(void *dev)
{
    struct echo_dev *d = dev;
    if (!d)
        return;
    /* Stop first, then wake: the engine rechecks stop after reading `wake`. */
    atomic_store(&d->stop, true);
    atomic_fetch_add(&d->wake, 1);
    futex_wake(&d->wake);
    pthread_join(d->thread, NULL); /* a job in progress finishes, bounded */
    for (struct alloc_rec *a = d->allocs, *next; a; a = next) {
        next = a->next;
        free(a->ptr);
        free(a);
    }
    if (d->efd >= 0)
        close(d->efd);
    free(d->stage);
    free(d->ring);
    free(d);
}

static int echo_caps(void *dev, xb_caps *caps)
{
    struct echo_dev *d = dev;
    if (!caps || caps->struct_size < sizeof caps->struct_size)
        return FAIL(d, XB_E_INVAL, "echo: caps: no structure or struct_size too small");
    xb_caps c = {
        .struct_size = sizeof c,
        .buffer_modes = ECHO_BUFS,
        .completion_modes = XB_COMPLETE_POLL | XB_COMPLETE_BLOCK,
        .flags = ECHO_FLAGS | (d->hw_time ? XB_CAP_HW_TIMESTAMPS : 0),
        .max_request = d->max,
        .max_reply = d->max,
        .max_mmio = MAX_MMIO,
        .alignment = LINE,
        .max_inflight = d->depth,
    };
    /* Write only what the host's struct has room for (an older minor). */
    uint32_t size = caps->struct_size;
    memcpy(caps, &c, size < sizeof c ? size : sizeof c);
    caps->struct_size = size;
    return XB_OK;
}

static int echo_alloc(void *dev, uint32_t kind, uint64_t len, void **ptr)
{
    struct echo_dev *d = dev;
    if (!ptr)
        return FAIL(d, XB_E_INVAL, "echo: alloc: ptr is NULL");
    if (kind != XB_BUF_RAW && kind != XB_BUF_MMIO)
        return FAIL(d, XB_E_UNSUPPORTED, "echo: alloc: kind %u is not RAW (2) or MMIO (4)", kind);
    if (kind == XB_BUF_MMIO && len > MAX_MMIO)
        return FAIL(d, XB_E_INVAL, "echo: an MMIO window holds at most %d bytes, asked %" PRIu64,
                    MAX_MMIO, len);
    if (len > SIZE_MAX - BUF_ALIGN)
        return FAIL(d, XB_E_NOMEM, "echo: cannot allocate %" PRIu64 " bytes", len);
    struct alloc_rec *a = malloc(sizeof *a);
    /* An MMIO window is a whole page, as a mapped BAR would be. */
    size_t bytes = kind == XB_BUF_MMIO ? MAX_MMIO : (len ? (size_t)len : 1);
    if (!a || posix_memalign(&a->ptr, BUF_ALIGN, bytes)) {
        free(a);
        return FAIL(d, XB_E_NOMEM, "echo: cannot allocate %" PRIu64 " bytes", len);
    }
    a->next = d->allocs;
    d->allocs = a;
    *ptr = a->ptr;
    return XB_OK;
}

static void echo_free(void *dev, void *ptr)
{
    struct echo_dev *d = dev;
    for (struct alloc_rec **pa = &d->allocs; *pa; pa = &(*pa)->next) {
        if ((*pa)->ptr == ptr) {
            struct alloc_rec *a = *pa;
            *pa = a->next;
            free(a->ptr);
            free(a);
            return;
        }
    }
    /* Not ours (or NULL): ignored, freeing it would corrupt the heap. */
}

static int echo_configure(void *dev, uint64_t request_len, uint64_t reply_len, uint64_t delay_ns)
{
    struct echo_dev *d = dev;
    if (d->head != d->tail)
        return FAIL(d, XB_E_INVAL, "echo: configure with %" PRIu64 " jobs in flight",
                    d->head - d->tail);
    if (request_len > d->max || reply_len > d->max)
        return FAIL(d, XB_E_INVAL,
                    "echo: request %" PRIu64 " / reply %" PRIu64 " bytes is over max=%" PRIu64
                    " (raise max=)", request_len, reply_len, d->max);
    /* Written against the flags, so a copy that drops one refuses for it. */
    if (!(ECHO_FLAGS & XB_CAP_REPLY_LONGER) && reply_len > request_len)
        return FAIL(d, XB_E_UNSUPPORTED, "echo: the reply cannot be longer than the request");
    if (!(ECHO_FLAGS & XB_CAP_DELAY) && delay_ns)
        return FAIL(d, XB_E_UNSUPPORTED, "echo: the device program has no delay stage");
    if (!(ECHO_FLAGS & XB_CAP_EMPTY) && request_len == 0)
        return FAIL(d, XB_E_UNSUPPORTED, "echo: the device cannot carry empty requests");

    /* Device memory: sized here, to this shape, not at open() for max
     * (1 GiB by default); pages cost nothing until touched. Page aligned,
     * like device memory: a small malloc'd block would share cache lines
     * with the host's own heap data, and every job would pay for that. */
    size_t need = request_len > reply_len ? request_len : reply_len;
    if (need > d->stage_len || !d->stage) {
        void *s = NULL;
        if (posix_memalign(&s, BUF_ALIGN, need ? need : 1) != 0)
            return FAIL(d, XB_E_NOMEM, "echo: cannot allocate %zu bytes of staging", need);
        free(d->stage);
        d->stage = s;
        d->stage_len = need;
    }
    /* Plain stores: the next submit's release store publishes them. */
    d->req_len = request_len;
    d->rep_len = reply_len;
    d->delay_ns = delay_ns;
    d->configured = true;
    return XB_OK;
}

static int echo_submit(void *dev, const xb_job *job)
{
    struct echo_dev *d = dev;
    if (!job)
        return FAIL(d, XB_E_INVAL, "echo: submit: job is NULL");
    xb_job j = {0};
    memcpy(&j, job, job->struct_size < sizeof j ? job->struct_size : sizeof j);

    if (!d->configured)
        return FAIL(d, XB_E_INVAL, "echo: submit before configure");
    if (!(j.mode & ECHO_BUFS) || (j.mode & (j.mode - 1)))
        return FAIL(d, XB_E_UNSUPPORTED, "echo: buffer mode %u; echo takes USER, RAW, MMIO", j.mode);
    if ((!j.request && j.request_len) || (!j.reply && j.reply_len))
        return FAIL(d, XB_E_INVAL, "echo: job %" PRIu64 " has a NULL %s buffer", j.tag,
                    !j.request && j.request_len ? "request" : "reply");
    if (j.request_len != d->req_len || j.reply_len < d->rep_len)
        return FAIL(d, XB_E_INVAL,
                    "echo: job %" PRIu64 " is request %" PRIu64 " / reply %" PRIu64
                    " bytes; configured request %" PRIu64 " / reply at least %" PRIu64,
                    j.tag, j.request_len, j.reply_len, d->req_len, d->rep_len);
    if (j.mode == XB_BUF_MMIO && j.request_len > MAX_MMIO)
        return FAIL(d, XB_E_INVAL, "echo: an MMIO request is at most %d bytes", MAX_MMIO);
    if (d->head - d->tail >= d->depth) {
        d->busy++;
        return XB_BUSY;
    }

    struct slot *s = &d->ring[d->head & d->mask];
    s->tag = j.tag;
    s->request = j.request;
    s->reply = j.reply;
    s->mode = j.mode;
    const uint64_t seq = 2 * d->head + 1;
    d->head++;
    if (d->completion == XB_COMPLETE_POLL) {
        /* The doorbell: one release store, no fence, no system call. */
        atomic_store_explicit(&s->seq, seq, memory_order_release);
    } else {
        /* seq_cst store then load: pairs with the engine's sleep check. */
        atomic_store(&s->seq, seq);
        if (atomic_load(&d->sleeping)) {
            atomic_fetch_add(&d->wake, 1);
            futex_wake(&d->wake);
        }
    }
    return XB_OK;
}

static int echo_poll(void *dev, xb_completion *out, uint32_t max, uint32_t *n)
{
    struct echo_dev *d = dev;
    if (!n || (max && !out))
        return FAIL(d, XB_E_INVAL, "echo: poll: NULL out or n");
    if (d->completion == XB_COMPLETE_BLOCK) {
        /* Drain the eventfd BEFORE looking at the ring: a completion posted
         * after this read leaves the fd readable, so it is never lost (at
         * worst the host wakes once for nothing). */
        uint64_t v;
        ssize_t r = read(d->efd, &v, sizeof v);
        (void)r; /* EAGAIN: nothing was signalled, fine */
    }
    uint32_t got = 0;
    while (got < max && d->tail != d->head) {
        struct slot *s = &d->ring[d->tail & d->mask];
        if (atomic_load_explicit(&s->seq, memory_order_acquire) != 2 * d->tail + 2)
            break;
        out[got].tag = s->tag;
        out[got].status = s->status;
        out[got].hw_ns = s->hw_ns;
        got++;
        d->tail++;
        d->jobs++;
        d->bytes_in += d->req_len;
        d->bytes_out += d->rep_len;
    }
    if (d->completion == XB_COMPLETE_BLOCK && got == max && d->tail != d->head &&
        atomic_load_explicit(&d->ring[d->tail & d->mask].seq, memory_order_acquire) ==
            2 * d->tail + 2) {
        /* Completions remain that did not fit in out: re-arm the fd we just
         * drained, or a host that sleeps on it now would never hear of them. */
        uint64_t one = 1;
        ssize_t r = write(d->efd, &one, sizeof one);
        (void)r;
    }
    *n = got;
    return XB_OK;
}

static int echo_completion_fd(void *dev, int *fd)
{
    struct echo_dev *d = dev;
    if (!fd)
        return FAIL(d, XB_E_INVAL, "echo: completion_fd: fd is NULL");
    if (d->completion != XB_COMPLETE_BLOCK)
        return FAIL(d, XB_E_UNSUPPORTED,
                    "echo: no completion fd in POLL mode (open with BLOCK for interrupts)");
    *fd = d->efd;
    return XB_OK;
}

static int echo_counters(void *dev, char *buf, size_t len)
{
    struct echo_dev *d = dev;
    int k = snprintf(buf, buf ? len : 0,
                     "{\"jobs\":%" PRIu64 ",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                     ",\"busy\":%" PRIu64 "}", d->jobs, d->bytes_in, d->bytes_out, d->busy);
    if (k < 0 || (size_t)k >= len || !buf)
        return FAIL(d, XB_E_NOMEM, "echo: counters need %d bytes, got %zu", k + 1, len);
    return XB_OK;
}

static const xb_plugin echo_plugin = {
    .struct_size = sizeof(xb_plugin),
    .abi_major = XB_ABI_MAJOR,
    .abi_minor = XB_ABI_MINOR,
    .name = "echo",
    .description = "software DMA engine: a worker thread echoes requests (example plugin)",
    .open = echo_open,
    .close = echo_close,
    .caps = echo_caps,
    .alloc = echo_alloc,
    .free = echo_free,
    .configure = echo_configure,
    .submit = echo_submit,
    .poll = echo_poll,
    .wait = NULL, /* BLOCK goes through completion_fd: the host poll(2)s it */
    .completion_fd = echo_completion_fd,
    .counters = echo_counters,
    .option_info = echo_options,
    .n_option_info = sizeof echo_options / sizeof echo_options[0],
};

XB_EXPORT const xb_plugin *xferbench_plugin_v1(uint32_t host_major, uint32_t host_minor)
{
    (void)host_minor; /* minors only append: any 1.x host can use a 1.0 table */
    return host_major == XB_ABI_MAJOR ? &echo_plugin : NULL;
}
