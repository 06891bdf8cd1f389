/*
 * fdpair.c - an example xferbench device plugin: a card reached through two
 * file descriptors, one per direction.
 *
 * What it models: the shape of Xilinx XDMA and similar drivers, where the host
 * writes a request into a host-to-card channel file (/dev/xdma0_h2c_0) and
 * reads the answer from a card-to-host channel file (/dev/xdma0_c2h_0). The
 * card is a loopback: it returns the bytes it was sent. A job writes its
 * request_len bytes to h2c and reads request_len bytes back from c2h; the
 * first reply_len of them land in job.reply, the rest are drained and
 * dropped. Any pair of files works, and one FIFO given as both channels is a
 * loopback card with no hardware at all:
 *
 *   mkfifo /tmp/card
 *   xferbench roundtrip -t plugin:path=./fdpair.so,h2c=/tmp/card,c2h=/tmp/card \
 *       --in 64 --out 64
 *   xferbench plugin check ./fdpair.so h2c=/tmp/card c2h=/tmp/card
 *
 * Options:
 *   h2c=PATH    the host-to-card channel (required), opened write-only
 *   c2h=PATH    the card-to-host channel (required), opened read-only
 *   offset=N    card address (decimal or 0x hex): jobs then use pwrite/pread
 *               at offset + job.device_offset, as XDMA's dma_to_device -a
 *               does, and go one at a time (they share the address); without
 *               it the channels are streams (write/read)
 *   depth=N     jobs in flight at most, 1..1024 (default 1)
 *   max=SIZE    largest request in bytes, K/M/G suffixes (default 64M)
 *
 * Both channels are non-blocking and the plugin is a state machine: submit()
 * queues, poll() and wait() move whatever bytes the channels take now. So
 * several large jobs in flight cannot deadlock on a pipe's 64 KiB: the host
 * never blocks writing while the card blocks writing back. With completion
 * BLOCK the host calls wait(), which sleeps in ppoll(2) on the channels: the
 * wait() style of the ABI (echo.c shows the completion_fd() style).
 *
 * SIGPIPE: a write to a FIFO whose reader is gone raises SIGPIPE, which kills
 * a process that does not ignore it. A plugin must not change the host's
 * signal dispositions, so this one only handles the EPIPE the write returns
 * when the signal is ignored; a loopback FIFO keeps its own reader open and
 * never sees it. A card process on separate FIFOs should open c2h for writing
 * before the first job (a FIFO without a writer reads as end of file) and
 * not exit mid-run.
 *
 * Build:
 *   cc -O2 -Wall -Wextra -std=gnu11 -shared -fPIC -Iinclude \
 *      examples/plugins/fdpair.c -o fdpair.so -lpthread
 */
#define _GNU_SOURCE
#include <xferbench/plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUF_ALIGN 4096         /* alloc() hands out pages, like pinned memory */
#define SCRATCH (64 * 1024)    /* where reply bytes past reply_len are dropped */
#define MAX_DEPTH 1024
#define CHUNK (1u << 30)       /* one read/write moves at most this much */

/* A queued job. Bytes go out in job order and come back in job order, so
 * three counters place everything: wr (first job not fully sent), rd (first
 * not fully received), tail (first not yet reported). */
struct fjob {
    uint64_t tag;
    const uint8_t *req;
    uint8_t *rep;
    uint64_t pos;       /* card address (offset mode) */
    uint64_t sent;      /* request bytes written to h2c */
    uint64_t got;       /* bytes read back from c2h */
};

struct alloc_rec {
    struct alloc_rec *next;
    void *ptr;
};

struct fd_dev {
    int h2c, c2h;
    char *h2c_path, *c2h_path;
    bool has_offset;
    uint64_t offset;
    uint32_t depth;
    uint64_t max;
    bool configured;
    uint64_t req_len, rep_len;
    struct fjob *ring;          /* depth entries, job k at k % depth */
    uint64_t head, wr, rd, tail;
    uint8_t *scratch;
    int failed;                 /* sticky: a dead channel stays dead */
    char failure[256];
    uint64_t jobs, h2c_bytes, c2h_bytes, eagain;
    char *msg;
    size_t msg_len;
    struct alloc_rec *allocs;
};

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

/* The card failed: remember why, so every later call says so too instead of
 * pretending the device recovered. */
__attribute__((format(printf, 2, 3)))
static int broken(struct fd_dev *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->failure, sizeof d->failure, fmt, ap);
    va_end(ap);
    d->failed = XB_E_IO;
    return FAIL(d, XB_E_IO, "%s", d->failure);
}

static int still_broken(struct fd_dev *d)
{
    return FAIL(d, d->failed, "%s", d->failure);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the state machine ------------------------------------------------- */

/* Moves as many bytes as the channels take without blocking, in job order. */
static int advance(struct fd_dev *d)
{
    if (d->failed)
        return still_broken(d);
    for (bool moved = true; moved;) {
        moved = false;
        /* Send. With offset= the jobs share one card address, so a job is
         * sent only once every earlier one came back (wr == rd). */
        while (d->wr < d->head && (!d->has_offset || d->wr == d->rd)) {
            struct fjob *j = &d->ring[d->wr % d->depth];
            uint64_t left = d->req_len - j->sent;
            size_t n = left < CHUNK ? (size_t)left : CHUNK;
            ssize_t k = d->has_offset
                ? pwrite(d->h2c, j->req + j->sent, n, (off_t)(j->pos + j->sent))
                : write(d->h2c, j->req + j->sent, n);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                d->eagain++; /* the channel is full: the card must drain it */
                break;
            }
            if (k < 0 && errno == EPIPE)
                return broken(d, "fdpair: h2c=%s: the card side closed (EPIPE)", d->h2c_path);
            if (k < 0)
                return broken(d, "fdpair: h2c=%s: %s", d->h2c_path, strerror(errno));
            if (k == 0)
                break; /* took nothing: try again on the next call */
            j->sent += (uint64_t)k;
            d->h2c_bytes += (uint64_t)k;
            moved = true;
            if (j->sent == d->req_len)
                d->wr++;
        }
        /* Receive, for the oldest job still owed bytes. A loopback returns
         * only what it was sent, so never ask for more than that. */
        while (d->rd < d->head) {
            struct fjob *j = &d->ring[d->rd % d->depth];
            uint64_t avail = j->sent - j->got, room;
            uint8_t *dst;
            if (!avail)
                break;
            if (j->got < d->rep_len) {
                dst = j->rep + j->got;
                room = d->rep_len - j->got;
            } else {
                dst = d->scratch;
                room = SCRATCH;
            }
            size_t n = avail < room ? (size_t)avail : (size_t)room;
            if (n > CHUNK)
                n = CHUNK;
            ssize_t k = d->has_offset ? pread(d->c2h, dst, n, (off_t)(j->pos + j->got))
                                      : read(d->c2h, dst, n);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                d->eagain++; /* nothing back yet */
                break;
            }
            if (k < 0)
                return broken(d, "fdpair: c2h=%s: %s", d->c2h_path, strerror(errno));
            if (k == 0)
                return broken(d, "fdpair: c2h=%s: end of file: the card side closed",
                              d->c2h_path);
            j->got += (uint64_t)k;
            d->c2h_bytes += (uint64_t)k;
            moved = true;
            if (j->got == d->req_len)
                d->rd++; /* all its bytes came back: the job is done */
        }
    }
    return XB_OK;
}

/* Reports finished jobs, oldest first. */
static uint32_t collect(struct fd_dev *d, xb_completion *out, uint32_t max)
{
    uint32_t got = 0;
    while (got < max && d->tail < d->rd) {
        const struct fjob *j = &d->ring[d->tail % d->depth];
        out[got].tag = j->tag;
        out[got].status = (int64_t)d->rep_len;
        out[got].hw_ns = 0;
        got++;
        d->tail++;
        d->jobs++;
    }
    return got;
}

/* ---- options ----------------------------------------------------------- */

/* Decimal, 0x hex (card addresses are written in hex), or with K/M/G when a
 * size. Refuses signs, spaces and overflow, which strtoull would accept. */
static bool parse_u64(const char *s, bool sized, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno || end == s + (base == 16 ? 2 : 0))
        return false;
    if (sized && *end) {
        const char *units = "KMG", *u = strchr(units, end[0] & ~0x20);
        if (!u || !*u)
            return false;
        for (int k = 0; k <= u - units; k++) {
            if (v > UINT64_MAX / 1024)
                return false;
            v *= 1024;
        }
        end++;
    }
    if (*end)
        return false;
    *out = v;
    return true;
}

#define VALID_OPTIONS \
    "h2c=PATH, c2h=PATH (both required), offset=N, depth=N (1..1024), max=SIZE (K/M/G)"

struct fd_opts {
    const char *h2c, *c2h;
    bool has_offset;
    uint64_t offset, max;
    uint32_t depth;
};

static int parse_options(const xb_open_params *p, struct fd_opts *o)
{
    for (size_t i = 0; i < p->n_options; i++) {
        const char *k = p->options[i].key, *v = p->options[i].value;
        const char *val = v ? v : "";
        uint64_t x;
        if (!k)
            return say(p->msg, p->msg_len, XB_E_INVAL, "fdpair: option %zu has no key", i);
        if (!strcmp(k, "h2c") || !strcmp(k, "c2h")) {
            if (!*val)
                return say(p->msg, p->msg_len, XB_E_INVAL, "fdpair: %s= needs a path", k);
            *(k[0] == 'h' ? &o->h2c : &o->c2h) = v;
        } else if (!strcmp(k, "offset")) {
            if (!parse_u64(v, false, &x) || x > INT64_MAX)
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "fdpair: offset=%s: expected a card address (decimal or 0x hex)", val);
            o->offset = x;
            o->has_offset = true;
        } else if (!strcmp(k, "depth")) {
            if (!parse_u64(v, false, &x) || x < 1 || x > MAX_DEPTH)
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "fdpair: depth=%s: expected an integer 1..%d", val, MAX_DEPTH);
            o->depth = (uint32_t)x;
        } else if (!strcmp(k, "max")) {
            if (!parse_u64(v, true, &x) || x < 1 || x > (1ull << 40))
                return say(p->msg, p->msg_len, XB_E_INVAL,
                           "fdpair: max=%s: expected a size 1..1T in bytes (K/M/G suffixes)", val);
            o->max = x;
        } else {
            return say(p->msg, p->msg_len, XB_E_INVAL,
                       "fdpair: unknown option '%s'; valid: " VALID_OPTIONS, k);
        }
    }
    if (!o->h2c || !o->c2h)
        return say(p->msg, p->msg_len, XB_E_INVAL,
                   "fdpair: %s=PATH is required (valid: " VALID_OPTIONS ")",
                   o->h2c ? "c2h" : "h2c");
    return XB_OK;
}

/* Opens one channel; on failure writes the message and returns a status. */
static int open_channel(const xb_open_params *p, const char *key, const char *path,
                        int flags, bool seek, int *fd)
{
    *fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0 && errno == ENXIO)
        /* O_WRONLY|O_NONBLOCK on a FIFO nobody reads fails instead of
         * waiting for a reader: say who is missing. */
        return say(p->msg, p->msg_len, XB_E_IO,
                   "fdpair: no process has %s open for reading "
                   "(start the card side or use a loopback FIFO)", path);
    if (*fd < 0) {
        int e = errno;
        return say(p->msg, p->msg_len, e == ENOENT || e == EACCES ? XB_E_INVAL : XB_E_IO,
                   "fdpair: %s=%s: %s", key, path, strerror(e));
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(*fd, &st))
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory";
    else if (seek && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        why = "offset= needs a seekable channel (XDMA's are), this is a FIFO or socket";
    if (why) {
        close(*fd);
        *fd = -1;
        return say(p->msg, p->msg_len, XB_E_INVAL, "fdpair: %s=%s: %s", key, path, why);
    }
    return XB_OK;
}

/* ---- operations -------------------------------------------------------- */

static void fd_close(void *dev)
{
    struct fd_dev *d = dev;
    if (!d)
        return;
    /* Jobs in flight are simply dropped: nothing runs on their buffers once
     * the descriptors are closed, and a FIFO's leftovers vanish with it. */
    if (d->h2c >= 0)
        close(d->h2c);
    if (d->c2h >= 0)
        close(d->c2h);
    for (struct alloc_rec *a = d->allocs, *next; a; a = next) {
        next = a->next;
        free(a->ptr);
        free(a);
    }
    free(d->h2c_path);
    free(d->c2h_path);
    free(d->ring);
    free(d->scratch);
    free(d);
}

static int fd_open(const xb_open_params *params, void **dev)
{
    if (!params || !dev)
        return XB_E_INVAL;
    /* Read only what the host's struct holds; later fields stay zero. */
    xb_open_params p = {0};
    memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);

    struct fd_opts o = {.depth = 1, .max = 64ull << 20};
    int rc = parse_options(&p, &o);
    if (rc)
        return rc;
    if (p.completion != XB_COMPLETE_POLL && p.completion != XB_COMPLETE_BLOCK)
        return say(p.msg, p.msg_len, XB_E_UNSUPPORTED,
                   "fdpair: completion mode %u unknown; fdpair does POLL and BLOCK", p.completion);

    struct fd_dev *d = calloc(1, sizeof *d);
    if (!d)
        return say(p.msg, p.msg_len, XB_E_NOMEM, "fdpair: out of memory");
    d->h2c = d->c2h = -1;
    d->msg = p.msg;
    d->msg_len = p.msg_len;
    d->depth = o.depth;
    d->max = o.max;
    d->has_offset = o.has_offset;
    d->offset = o.offset;
    d->h2c_path = strdup(o.h2c); /* the host's strings die with this call */
    d->c2h_path = strdup(o.c2h);
    d->ring = calloc(o.depth, sizeof *d->ring);
    d->scratch = malloc(SCRATCH);
    if (!d->h2c_path || !d->c2h_path || !d->ring || !d->scratch) {
        fd_close(d);
        return say(p.msg, p.msg_len, XB_E_NOMEM, "fdpair: out of memory");
    }
    /* The reader first: on a loopback FIFO the writer's non-blocking open
     * needs a reader to exist already (else ENXIO). */
    rc = open_channel(&p, "c2h", o.c2h, O_RDONLY, o.has_offset, &d->c2h);
    if (!rc)
        rc = open_channel(&p, "h2c", o.h2c, O_WRONLY, o.has_offset, &d->h2c);
    if (rc) {
        fd_close(d);
        return rc;
    }
    *dev = d;
    return XB_OK;
}

static int fd_caps(void *dev, xb_caps *caps)
{
    struct fd_dev *d = dev;
    if (!caps || caps->struct_size < sizeof caps->struct_size)
        return FAIL(d, XB_E_INVAL, "fdpair: caps: no structure or struct_size too small");
    xb_caps c = {
        .struct_size = sizeof c,
        .buffer_modes = XB_BUF_USER | XB_BUF_RAW,
        .completion_modes = XB_COMPLETE_POLL | XB_COMPLETE_BLOCK,
        .flags = XB_CAP_ECHO, /* no REPLY_LONGER, DELAY or EMPTY: a loopback */
        .max_request = d->max,
        .max_reply = d->max,
        .max_mmio = 0,
        .alignment = 64,
        .max_inflight = d->depth,
    };
    /* Write only what the host's struct has room for (an older minor). */
    uint32_t size = caps->struct_size;
    memcpy(caps, &c, size < sizeof c ? size : sizeof c);
    caps->struct_size = size;
    return XB_OK;
}

static int fd_alloc(void *dev, uint32_t kind, uint64_t len, void **ptr)
{
    struct fd_dev *d = dev;
    if (!ptr)
        return FAIL(d, XB_E_INVAL, "fdpair: alloc: ptr is NULL");
    if (kind != XB_BUF_RAW)
        return FAIL(d, XB_E_UNSUPPORTED, "fdpair: alloc: only RAW (2) buffers, asked kind %u", kind);
    /* A real XDMA plugin would hand out pinned, DMA-mapped memory here. */
    struct alloc_rec *a = malloc(sizeof *a);
    if (!a || len > SIZE_MAX - BUF_ALIGN || posix_memalign(&a->ptr, BUF_ALIGN, len ? len : 1)) {
        free(a);
        return FAIL(d, XB_E_NOMEM, "fdpair: cannot allocate %" PRIu64 " bytes", len);
    }
    a->next = d->allocs;
    d->allocs = a;
    *ptr = a->ptr;
    return XB_OK;
}

static void fd_free(void *dev, void *ptr)
{
    struct fd_dev *d = dev;
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

static int fd_configure(void *dev, uint64_t request_len, uint64_t reply_len, uint64_t delay_ns)
{
    struct fd_dev *d = dev;
    if (d->failed)
        return still_broken(d);
    if (d->head != d->tail)
        return FAIL(d, XB_E_INVAL, "fdpair: configure with %" PRIu64 " jobs in flight",
                    d->head - d->tail);
    if (request_len > d->max || reply_len > d->max)
        return FAIL(d, XB_E_INVAL,
                    "fdpair: request %" PRIu64 " / reply %" PRIu64 " bytes is over max=%" PRIu64
                    " (raise max=)", request_len, reply_len, d->max);
    if (request_len == 0)
        return FAIL(d, XB_E_UNSUPPORTED,
                    "fdpair: a channel write of 0 bytes reaches no card: requests need >= 1 byte");
    if (reply_len > request_len)
        return FAIL(d, XB_E_UNSUPPORTED,
                    "fdpair: a loopback returns only the request's bytes; the reply cannot be "
                    "longer than the request (request %" PRIu64 ", reply %" PRIu64 ")",
                    request_len, reply_len);
    if (delay_ns)
        return FAIL(d, XB_E_UNSUPPORTED, "fdpair: the card's loopback has no delay stage");
    d->req_len = request_len;
    d->rep_len = reply_len;
    d->configured = true;
    return XB_OK;
}

static int fd_submit(void *dev, const xb_job *job)
{
    struct fd_dev *d = dev;
    if (!job)
        return FAIL(d, XB_E_INVAL, "fdpair: submit: job is NULL");
    xb_job j = {0};
    memcpy(&j, job, job->struct_size < sizeof j ? job->struct_size : sizeof j);

    if (d->failed)
        return still_broken(d);
    if (!d->configured)
        return FAIL(d, XB_E_INVAL, "fdpair: submit before configure");
    if (j.mode != XB_BUF_USER && j.mode != XB_BUF_RAW)
        return FAIL(d, XB_E_UNSUPPORTED, "fdpair: buffer mode %u; fdpair takes USER, RAW", j.mode);
    if ((!j.request && j.request_len) || (!j.reply && j.reply_len))
        return FAIL(d, XB_E_INVAL, "fdpair: job %" PRIu64 " has a NULL %s buffer", j.tag,
                    !j.request && j.request_len ? "request" : "reply");
    if (j.request_len != d->req_len || j.reply_len < d->rep_len)
        return FAIL(d, XB_E_INVAL,
                    "fdpair: job %" PRIu64 " is request %" PRIu64 " / reply %" PRIu64
                    " bytes; configured request %" PRIu64 " / reply at least %" PRIu64,
                    j.tag, j.request_len, j.reply_len, d->req_len, d->rep_len);
    if (!d->has_offset && j.device_offset)
        return FAIL(d, XB_E_INVAL,
                    "fdpair: job.device_offset %" PRIu64 " needs offset= (the channels are streams)",
                    j.device_offset);
    if (d->has_offset && (j.device_offset > (uint64_t)INT64_MAX - d->offset ||
                          d->req_len > (uint64_t)INT64_MAX - d->offset - j.device_offset))
        return FAIL(d, XB_E_INVAL, "fdpair: card address %" PRIu64 " + %" PRIu64 " overflows",
                    d->offset, j.device_offset);
    if (d->head - d->tail >= d->depth)
        return XB_BUSY;

    d->ring[d->head % d->depth] = (struct fjob){
        .tag = j.tag,
        .req = j.request,
        .rep = j.reply,
        .pos = d->offset + j.device_offset,
    };
    d->head++;
    /* Start sending now; a channel failure stays recorded and poll()/wait()
     * report it, while the job itself is queued either way. */
    (void)advance(d);
    return XB_OK;
}

static int fd_poll(void *dev, xb_completion *out, uint32_t max, uint32_t *n)
{
    struct fd_dev *d = dev;
    if (!n || (max && !out))
        return FAIL(d, XB_E_INVAL, "fdpair: poll: NULL out or n");
    int rc = advance(d);
    *n = collect(d, out, max);
    /* Jobs that finished before a failure are still reported; the failure
     * is sticky and comes with the next call that finds nothing. */
    return *n ? XB_OK : rc;
}

static int fd_wait(void *dev, xb_completion *out, uint32_t max, uint32_t *n, uint64_t timeout_ns)
{
    struct fd_dev *d = dev;
    if (!n || (max && !out))
        return FAIL(d, XB_E_INVAL, "fdpair: wait: NULL out or n");
    uint64_t start = now_ns();
    uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    for (;;) {
        int rc = fd_poll(d, out, max, n);
        /* Nothing in flight: nothing can arrive, so sleeping would only
         * burn the host's timeout. */
        if (rc || *n || !max || d->tail == d->head)
            return rc;
        uint64_t now = now_ns();
        if (now >= deadline)
            return XB_OK;
        /* Sleep until the card sends bytes or takes more of ours. */
        struct pollfd fds[2];
        nfds_t k = 0;
        const struct fjob *j = &d->ring[d->rd % d->depth];
        if (j->sent > j->got)
            fds[k++] = (struct pollfd){.fd = d->c2h, .events = POLLIN};
        if (d->wr < d->head && (!d->has_offset || d->wr == d->rd))
            fds[k++] = (struct pollfd){.fd = d->h2c, .events = POLLOUT};
        if (!k)
            return XB_OK; /* unreachable while jobs are out; never hang */
        uint64_t left = deadline - now;
        struct timespec ts = {.tv_sec = (time_t)(left / 1000000000u),
                              .tv_nsec = (long)(left % 1000000000u)};
        /* ppoll, not poll: a nanosecond timeout, so short waits stay exact.
         * POLLHUP/POLLERR need no handling here: the next read or write
         * meets the EOF or EPIPE and reports it. */
        if (ppoll(fds, k, &ts, NULL) < 0 && errno != EINTR)
            return FAIL(d, XB_E_FAIL, "fdpair: ppoll: %s", strerror(errno));
    }
}

static int fd_counters(void *dev, char *buf, size_t len)
{
    struct fd_dev *d = dev;
    int k = snprintf(buf, buf ? len : 0,
                     "{\"jobs\":%" PRIu64 ",\"h2c_bytes\":%" PRIu64 ",\"c2h_bytes\":%" PRIu64
                     ",\"eagain\":%" PRIu64 "}", d->jobs, d->h2c_bytes, d->c2h_bytes, d->eagain);
    if (k < 0 || (size_t)k >= len || !buf)
        return FAIL(d, XB_E_NOMEM, "fdpair: counters need %d bytes, got %zu", k + 1, len);
    return XB_OK;
}

static const xb_plugin fdpair_plugin = {
    .struct_size = sizeof(xb_plugin),
    .abi_major = XB_ABI_MAJOR,
    .abi_minor = XB_ABI_MINOR,
    .name = "fdpair",
    .description = "a card behind h2c/c2h channel files, XDMA style (example plugin)",
    .open = fd_open,
    .close = fd_close,
    .caps = fd_caps,
    .alloc = fd_alloc,
    .free = fd_free,
    .configure = fd_configure,
    .submit = fd_submit,
    .poll = fd_poll,
    .wait = fd_wait,
    .completion_fd = NULL, /* this plugin shows the wait() style */
    .counters = fd_counters,
};

XB_EXPORT const xb_plugin *xferbench_plugin_v1(uint32_t host_major, uint32_t host_minor)
{
    (void)host_minor; /* minors only append: any 1.x host can use a 1.0 table */
    return host_major == XB_ABI_MAJOR ? &fdpair_plugin : NULL;
}
