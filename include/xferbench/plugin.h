/*
 * xferbench device plugin ABI, version 1.1.
 *
 * A plugin lets xferbench measure a device it does not know: an accelerator
 * driven through its vendor runtime, a DMA engine's channels, a NIC's verbs
 * library. The plugin is a shared library exporting ONE function,
 * xferbench_plugin_v1(), which returns a table of operations. xferbench turns
 * that table into a transport like its built-in ones, so every experiment that
 * takes -t works on it unchanged:
 *
 *     xferbench roundtrip -t plugin:path=./mydev.so,card=0 --in 64 --out 64
 *     xferbench plugin check ./mydev.so card=0
 *
 * The model is how device SDKs already work: open a device, ask what it can
 * do, allocate DMA-able memory, tell the device program what to send back,
 * then submit jobs and collect their completions by tag, polling or waiting.
 *
 * C99, no dependencies, no xferbench-internal types: usable from C, C++,
 * Rust, Zig. Copy examples/plugins/echo.c to start.
 *
 * ---------------------------------------------------------------------------
 * Versioning (why it is done this way)
 *
 * - The major version is in the entry symbol's name (xferbench_plugin_v1), so
 *   an xferbench speaking another major version finds no symbol instead of
 *   calling a table it misreads. The host also passes the versions it speaks,
 *   and the table states the one the plugin was built for.
 * - Minor versions only APPEND fields to the structures that start with
 *   struct_size (xb_open_params, xb_caps, xb_job, xb_plugin); a reader treats
 *   fields past struct_size as zero or NULL. So a plugin built against 1.0
 *   keeps loading in every 1.x host, and a 1.x plugin loads in a 1.0 host,
 *   which ignores what it does not know. xb_option and xb_completion have no
 *   struct_size (they travel in arrays): their layout is fixed for major 1.
 * - Handles are opaque (void *): nothing of xferbench's internals is here.
 * - 1.1 appended: xb_plugin.option_info (the options a plugin takes, shown
 *   by `xferbench list` and `plugin check`, checked by the host before
 *   open), xb_job.times (device timestamps), XB_CAP_DEVICE_TIMESTAMPS, and
 *   the option parsing helpers at the end of this file. A 1.0 plugin keeps
 *   loading: its table is shorter, and the host reads the new fields as
 *   NULL.
 *
 * Threading and ownership (what xferbench guarantees, what it expects)
 *
 * - Calls on one device handle are never concurrent: xferbench serialises
 *   them (one link = one measuring thread). They may come from different
 *   threads over the device's life, so do not keep thread-local state per
 *   device. Different device handles may be used from different threads at
 *   once (e.g. several stream jobs), so global state must be thread-safe.
 * - The plugin may run threads of its own (a worker, an interrupt handler);
 *   close() must stop and join them: xferbench keeps the library loaded for
 *   the life of the process, but frees everything it gave the device.
 * - Strings and option arrays passed in are owned by xferbench and valid only
 *   during the call: copy what you keep.
 * - Buffers from alloc() belong to the plugin until free(). xferbench frees
 *   its buffers before close() when no job is in flight; when a run stops
 *   with jobs in flight (a timeout, a failed job), it calls close() without
 *   freeing them, so a device still writing one never writes freed memory:
 *   close() stops the device first, then releases every buffer still out.
 * - Buffers passed to submit() (user or raw) stay untouched by the host
 *   until their job completes; the plugin must not touch them after it has
 *   reported the completion. Jobs always start at the beginning of a buffer,
 *   and several jobs in flight may name the SAME request and reply buffers
 *   (a window of messages sent from one buffer): do not assume they differ.
 * - A job's request_len and reply_len are those of the last configure():
 *   xferbench submits only the configured shape.
 * - "In flight" means submitted and not yet returned by poll() or wait(): a
 *   completion the device has posted but the host has not collected still
 *   counts toward max_inflight.
 * - The message buffer is written only during a call that returns a negative
 *   status, or during the poll()/wait() call that returns a failed completion
 *   (on the host's thread), never from a plugin's own thread.
 * - The host owns the clock: it timestamps submit and completion itself. A
 *   plugin may add the device's own time for each job (xb_completion.hw_ns,
 *   a duration) as an extra: the host then splits each round trip into
 *   device time and host time (the round trip minus the device's time:
 *   driver, runtime, bus and host software), the latency budget.
 * - POLL devices: the host spins on poll() without sleeping, so a device
 *   answering in microseconds should spin too while jobs may come. A worker
 *   MAY park when idle (to spare a core), but then its wake-up is part of
 *   every figure measured; say so in the description.
 * - Every call returns. wait() returns by its timeout_ns; poll(), submit(),
 *   configure(), alloc() and counters() return at once; open() and close()
 *   within a second or so. The host bounds every call by the run's
 *   --timeout: a call still running then is reported by name, the device is
 *   abandoned (never called, freed or closed again) and the run ends with
 *   what it measured.
 *
 * Errors
 *
 * Every operation returns an int: XB_OK (0) or positive where documented,
 * XB_BUSY for "queue full, collect completions and submit again" (not an
 * error), a negative XB_E_* code for failure. With a negative status the
 * plugin writes one line into the error buffer given at open (msg/msg_len,
 * NUL-terminated, no newline): what went wrong and, if it can, the fix.
 * xferbench shows it with the operation's name. Which code to return:
 *
 * - a bad option key or value:                     XB_E_INVAL (open)
 * - a request over max_request, a reply over
 *   max_reply (configure; the host never submits
 *   a shape it did not configure):                 XB_E_INVAL
 * - a shape, mode or delay the device cannot do:   XB_E_UNSUPPORTED
 * - a structure whose struct_size is too short for
 *   the fields the plugin must read:               XB_E_VERSION
 * - the device failed or went away:                XB_E_IO
 *
 * Option values (ABI 1.1: the rules the host applies to option_info kinds,
 * and the helpers at the end of this file, so host and plugin agree):
 *
 * - size   a whole number of bytes, with an optional binary suffix: k, M, G
 *          (and KiB, MiB, GiB) are 1024, 1024^2, 1024^3. "4k" = 4096.
 * - time   a number (decimals allowed) WITH a unit: ns, us, ms or s.
 *          "5us" = 5000 ns. A bare number is refused: "lat=5" is ambiguous.
 * - rate   bytes per second, written as a size, optionally followed by "/s":
 *          "1g" and "1G/s" = 1073741824 B/s; "1000000000" = 10^9 B/s.
 * - count  a whole number, no suffix.
 * - bool   1, 0, true, false, yes, no, on, off.
 * - string anything, passed as it is.
 */
#ifndef XFERBENCH_PLUGIN_H
#define XFERBENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XB_ABI_MAJOR 1
#define XB_ABI_MINOR 1

/* The entry symbol's name, for dlsym-style loaders. */
#define XB_ENTRY_SYMBOL "xferbench_plugin_v1"

/* ---- status codes ------------------------------------------------------ */

#define XB_OK 0
/* The device queue is full: collect completions, then submit again. */
#define XB_BUSY 1
/* A generic failure; the message says what. */
#define XB_E_FAIL (-1)
/* An argument the plugin cannot accept (bad option, length over the limit). */
#define XB_E_INVAL (-2)
/* Something the device cannot do (a buffer mode, a reply shape, a delay). */
#define XB_E_UNSUPPORTED (-3)
/* Out of memory or device memory. */
#define XB_E_NOMEM (-4)
/* The device is gone (unplugged, peer closed, reset). */
#define XB_E_IO (-5)
/* The host's ABI version is one this plugin cannot serve. */
#define XB_E_VERSION (-6)

/* ---- modes ------------------------------------------------------------- */

/* Buffer modes, as bits in xb_caps.buffer_modes and values of xb_job.mode. */
/* USER: the host's own memory (malloc'd, page aligned); the plugin copies or
 * pins it per job, as a runtime's "copy in" API does. */
#define XB_BUF_USER (1u << 0)
/* RAW: DMA-able memory the plugin allocated (alloc(XB_BUF_RAW)); the host
 * writes requests into it and reads replies from it: zero copy. */
#define XB_BUF_RAW (1u << 1)
/* MMIO: a window the plugin maps (a BAR, a doorbell page) that the CPU writes
 * the request into directly; replies come back in raw memory. Limited to
 * xb_caps.max_mmio bytes. */
#define XB_BUF_MMIO (1u << 2)

/* Completion modes, as bits in xb_caps.completion_modes and the value of
 * xb_open_params.completion. */
/* POLL: the host spins on poll(); the device should not sleep either. */
#define XB_COMPLETE_POLL (1u << 0)
/* BLOCK: the host sleeps until a completion arrives ("interrupts"), either in
 * the plugin's wait() or, when wait is NULL, in poll(2) on the file descriptor
 * that completion_fd() returns, calling poll() once it is readable. The host
 * sleeps on the descriptor only after a poll() that returned no completion,
 * so a plugin that drains the descriptor in poll() loses no wakeup. */
#define XB_COMPLETE_BLOCK (1u << 1)

/* Capability flags (xb_caps.flags). */
/* The reply may be longer than the request. Without it, configure() refuses
 * reply_len > request_len (a loopback returns only what it was sent). */
#define XB_CAP_REPLY_LONGER (1u << 0)
/* configure() honours delay_ns (the device program waits before replying). */
#define XB_CAP_DELAY (1u << 1)
/* The reply's first min(request_len, reply_len) bytes equal the request's:
 * `xferbench plugin check` then verifies every reply byte. */
#define XB_CAP_ECHO (1u << 2)
/* The device carries zero-length requests. (A reply of 0 bytes, when the host
 * needs only the completion, is always allowed: see configure.) */
#define XB_CAP_EMPTY (1u << 3)
/* Completions carry the device's own time for the job in
 * xb_completion.hw_ns: a DURATION in nanoseconds, from the moment the
 * device took the request (fetched the descriptor, saw the doorbell) to the
 * moment it posted the completion, on the device's clock. Not a timestamp.
 * The host reports it per point as device time, and the round trip minus
 * it as host time. */
#define XB_CAP_HW_TIMESTAMPS (1u << 4)
/* ABI 1.1: the device writes its own clock's readings for each job into
 * xb_job.times (when the host gives one): when it took the request and when
 * it sent the reply. Their difference is the job's device time, as hw_ns. */
#define XB_CAP_DEVICE_TIMESTAMPS (1u << 5)

/* Kinds of plugin options (xb_option_info.kind); the value rules are in
 * "Option values" above. */
#define XB_OPT_STRING 0u
#define XB_OPT_SIZE 1u
#define XB_OPT_TIME 2u
#define XB_OPT_RATE 3u
#define XB_OPT_COUNT 4u
#define XB_OPT_BOOL 5u

/* ---- structures -------------------------------------------------------- */

/* One key=value option from the transport spec
 * (-t plugin:path=x.so,card=0,lane=3 gives card=0 and lane=3; path is the
 * host's). */
typedef struct xb_option {
    const char *key;
    const char *value;
} xb_option;

/* ABI 1.1: one option a plugin takes, described for users. A table of
 * these (xb_plugin.option_info) is shown by `xferbench list -t plugin:...`
 * and `xferbench plugin check`, and the host refuses an unknown key or a
 * value that does not follow its kind's rules before calling open(). Fixed
 * layout for major 1 (it travels in arrays). */
typedef struct xb_option_info {
    const char *name;           /* the key: "depth", "lat" */
    uint32_t kind;              /* XB_OPT_* */
    uint32_t reserved;
    const char *default_value;  /* as a user would type it ("64", "0us"), or
                                   NULL when there is none */
    const char *help;           /* one line: what it does, its range */
} xb_option_info;

/* ABI 1.1: a job's device clock readings (XB_CAP_DEVICE_TIMESTAMPS). */
typedef struct xb_job_times {
    uint64_t request_seen_ns;   /* the device took the request */
    uint64_t reply_sent_ns;     /* the device sent the reply / completion */
} xb_job_times;

/* What the host passes to open(). */
typedef struct xb_open_params {
    uint32_t struct_size;      /* sizeof(xb_open_params) as the host knows it */
    uint32_t completion;       /* XB_COMPLETE_POLL or XB_COMPLETE_BLOCK: how
                                  the host will collect completions, so the
                                  device can arm interrupts or not. To read
                                  the capabilities before a run the host opens
                                  with POLL, and with BLOCK if that open fails
                                  with XB_E_UNSUPPORTED. */
    int32_t responder_cpu;     /* a core for the plugin's own worker or
                                  interrupt thread, -1 for no preference; the
                                  host's measuring thread is on another core */
    uint32_t reserved;
    const xb_option *options;  /* the spec's options, in order; the plugin
                                  refuses keys it does not know (XB_E_INVAL) */
    size_t n_options;
    char *msg;                 /* error-message buffer for the device's whole
                                  life (owned by the host) */
    size_t msg_len;
} xb_open_params;

/* What a device can do. The host zeroes it and sets struct_size; the plugin
 * fills what it knows. */
typedef struct xb_caps {
    uint32_t struct_size;
    uint32_t buffer_modes;     /* XB_BUF_* bits; at least one */
    uint32_t completion_modes; /* XB_COMPLETE_* bits; at least one */
    uint32_t flags;            /* XB_CAP_* bits */
    uint64_t max_request;      /* largest request, bytes (> 0) */
    uint64_t max_reply;        /* largest reply, bytes (> 0) */
    uint64_t max_mmio;         /* largest request an MMIO window takes */
    uint32_t alignment;        /* buffers must start at a multiple of this
                                  (a power of two; 0 or 1: any). The host's
                                  user buffers are page aligned. */
    uint32_t max_inflight;     /* jobs submitted and not yet completed, at
                                  most (>= 1): the queue depth */
} xb_caps;

/* One job: send request_len bytes, receive up to reply_len back. */
typedef struct xb_job {
    uint32_t struct_size;
    uint32_t mode;             /* XB_BUF_USER, XB_BUF_RAW or XB_BUF_MMIO: where
                                  request and reply live */
    uint64_t tag;              /* the host's name for this job; the completion
                                  returns it unchanged */
    const void *request;
    uint64_t request_len;
    void *reply;
    uint64_t reply_len;        /* bytes the host expects back */
    uint64_t device_offset;    /* card address for devices that have one
                                  (XDMA's dma_to_device -a); 0 otherwise */
    /* ABI 1.1 (read only if struct_size covers it): where a device with
     * XB_CAP_DEVICE_TIMESTAMPS writes its clock readings for this job,
     * before posting its completion; NULL when the host wants none. */
    xb_job_times *times;
} xb_job;

/* One finished job. */
typedef struct xb_completion {
    uint64_t tag;              /* the job's tag */
    int64_t status;            /* bytes written into the reply (>= 0), or a
                                  negative XB_E_* code (then msg says why) */
    uint64_t hw_ns;            /* the device's time for the job, a duration
                                  in ns (see XB_CAP_HW_TIMESTAMPS); else 0 */
} xb_completion;

/* The operations. Every function pointer marked "required" must be set;
 * optional ones may be NULL. */
typedef struct xb_plugin {
    uint32_t struct_size;      /* sizeof(xb_plugin) as the plugin knows it */
    uint32_t abi_major;        /* XB_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;        /* XB_ABI_MINOR the plugin was built with */
    uint32_t reserved;
    const char *name;          /* short, lowercase: "echo", "xdma", "vollo" */
    const char *description;   /* one line for `xferbench list` */

    /* Required. Opens one device with the spec's options. On failure return a
     * negative status and write the reason into params->msg; *dev is then
     * ignored. The device handle is opaque to the host. Check the options
     * first: a bad option is XB_E_INVAL whatever the completion mode, and
     * XB_E_UNSUPPORTED means "not in this completion mode" (the host then
     * tries the other one). */
    int (*open)(const xb_open_params *params, void **dev);

    /* Required. Stops the device's threads, releases what open() took and
     * every buffer alloc() gave out that was not freed. No call on dev
     * follows. Jobs may still be in flight (a run interrupted by a timeout):
     * stop the device, then cancel them. */
    void (*close)(void *dev);

    /* Required. Fills *caps (see xb_caps), leaving caps->struct_size as the
     * host set it. Called after open; the answer may depend on the options
     * (e.g. depth=). */
    int (*caps)(void *dev, xb_caps *caps);

    /* Optional (required for XB_BUF_RAW or XB_BUF_MMIO). Allocates len bytes
     * of device-reachable memory of kind XB_BUF_RAW or XB_BUF_MMIO, aligned to
     * caps.alignment. Why: zero-copy runtimes (vollo_rt_get_raw_buffer, ibv_reg_mr)
     * hand out their own memory. */
    int (*alloc)(void *dev, uint32_t kind, uint64_t len, void **ptr);

    /* Optional (with alloc). Releases a buffer from alloc(). */
    void (*free)(void *dev, void *ptr);

    /* Required. Sets the device program's answer for the jobs that follow:
     * wait for the last of request_len bytes, wait delay_ns more, send
     * reply_len bytes (the Vollo "no-compute program"). Called with no job in
     * flight, outside the timed loop. Return XB_E_UNSUPPORTED with a message
     * for a shape the device cannot produce (see XB_CAP_REPLY_LONGER,
     * XB_CAP_DELAY; a zero-length request without XB_CAP_EMPTY is
     * XB_E_UNSUPPORTED too). reply_len may be 0 when the host needs only the
     * completion (a stream of requests). The host never calls configure with
     * jobs in flight (XB_E_INVAL if one did). */
    int (*configure)(void *dev, uint64_t request_len, uint64_t reply_len,
                     uint64_t delay_ns);

    /* Required. Queues one job and returns at once (XB_OK), or XB_BUSY when
     * max_inflight jobs are already queued. The job structure itself may be
     * reused by the host after the call; its buffers may not (see above). */
    int (*submit)(void *dev, const xb_job *job);

    /* Required. Collects finished jobs without sleeping: writes up to max
     * completions into out, sets *n, returns XB_OK (also when *n is 0). A
     * job's failure is reported in its completion; a negative return means
     * the device itself failed. */
    int (*poll)(void *dev, xb_completion *out, uint32_t max, uint32_t *n);

    /* Optional. Like poll, but sleeps until at least one completion arrives
     * or timeout_ns passes (then XB_OK with *n = 0). With no job in flight,
     * or timeout_ns 0, it returns at once (XB_OK, *n = 0 if none is ready). For XB_COMPLETE_BLOCK devices that
     * wait in their own way (a blocking ioctl, an eventfd read). */
    int (*wait)(void *dev, xb_completion *out, uint32_t max, uint32_t *n,
                uint64_t timeout_ns);

    /* Optional. For XB_COMPLETE_BLOCK devices without wait(): a file
     * descriptor that becomes readable when a completion is ready (an
     * eventfd, a UIO or VFIO interrupt fd). The host poll(2)s it, then calls
     * poll(); the plugin drains it in poll(). */
    int (*completion_fd)(void *dev, int *fd);

    /* Optional. Device counters as one JSON object ({"dma_errors":0,...})
     * into buf (NUL-terminated, at most len bytes); the host records them
     * with the run. Return XB_E_NOMEM if len is too small. */
    int (*counters)(void *dev, char *buf, size_t len);

    /* ABI 1.1. The options open() takes, n_option_info of them (NULL, 0:
     * not described; the plugin then checks every key itself). With a
     * table, the host refuses keys not in it and values that break their
     * kind's rules, naming the option and its help, before open(). */
    const xb_option_info *option_info;
    uint32_t n_option_info;
    uint32_t reserved2;
} xb_plugin;

/* The one exported symbol. The host passes the ABI version it speaks; return
 * the table, or NULL if this plugin cannot serve that version. Called once
 * per load; the table must stay valid until the process exits. */
typedef const xb_plugin *(*xb_entry_fn)(uint32_t host_major,
                                        uint32_t host_minor);

#if defined(_WIN32)
#define XB_EXPORT __declspec(dllexport)
#else
#define XB_EXPORT __attribute__((visibility("default")))
#endif

XB_EXPORT const xb_plugin *xferbench_plugin_v1(uint32_t host_major,
                                               uint32_t host_minor);

/* ---- option value helpers (ABI 1.1) ------------------------------------
 * The host's own rules for option values (see "Option values"), so a plugin
 * parses exactly what the host checked. Each returns 0 and sets *out, or -1
 * for a malformed or overflowing value (*out untouched). */

static inline int xb__digits(const char **s, uint64_t *v)
{
    const char *p = *s;
    uint64_t n = 0;

    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return -1;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *s = p;
    *v = n;
    return 0;
}

static inline int xb__is(const char *s, const char *word)
{
    for (; *word; s++, word++) {
        char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        if (c != *word)
            return 0;
    }
    return *s == '\0';
}

/* A whole number, no suffix. */
static inline int xb_parse_count(const char *s, uint64_t *out)
{
    uint64_t n;

    if (s == NULL || xb__digits(&s, &n) != 0 || *s != '\0')
        return -1;
    *out = n;
    return 0;
}

/* Bytes: "4096", "4k", "1M", "2GiB" (binary suffixes). */
static inline int xb_parse_size(const char *s, uint64_t *out)
{
    uint64_t n, mult;

    if (s == NULL || xb__digits(&s, &n) != 0)
        return -1;
    if (*s == '\0' || xb__is(s, "b"))
        mult = 1;
    else if (xb__is(s, "k") || xb__is(s, "kb") || xb__is(s, "kib"))
        mult = 1ull << 10;
    else if (xb__is(s, "m") || xb__is(s, "mb") || xb__is(s, "mib"))
        mult = 1ull << 20;
    else if (xb__is(s, "g") || xb__is(s, "gb") || xb__is(s, "gib"))
        mult = 1ull << 30;
    else
        return -1;
    if (n > UINT64_MAX / mult)
        return -1;
    *out = n * mult;
    return 0;
}

/* Bytes per second: a size, optionally followed by "/s". */
static inline int xb_parse_rate(const char *s, uint64_t *out)
{
    char buf[64];
    size_t n = 0;

    if (s == NULL)
        return -1;
    while (s[n] != '\0' && n < sizeof(buf) - 1) {
        buf[n] = s[n];
        n++;
    }
    if (s[n] != '\0')
        return -1;
    buf[n] = '\0';
    if (n >= 2 && buf[n - 2] == '/' && (buf[n - 1] == 's' || buf[n - 1] == 'S'))
        buf[n - 2] = '\0';
    return xb_parse_size(buf, out);
}

/* Nanoseconds: "250ns", "5us", "1.5ms", "2s"; a unit is required. */
static inline int xb_parse_time_ns(const char *s, uint64_t *out)
{
    uint64_t whole, frac = 0, scale = 1, unit;
    const char *p = s;

    if (s == NULL || xb__digits(&p, &whole) != 0)
        return -1;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (scale < 1000000000ull) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
        }
    }
    if (xb__is(p, "ns"))
        unit = 1;
    else if (xb__is(p, "us"))
        unit = 1000;
    else if (xb__is(p, "ms"))
        unit = 1000000;
    else if (xb__is(p, "s"))
        unit = 1000000000;
    else
        return -1;
    if (whole > UINT64_MAX / unit || whole * unit > UINT64_MAX - frac * unit / scale)
        return -1;
    *out = whole * unit + frac * unit / scale;
    return 0;
}

/* 1/0, true/false, yes/no, on/off. */
static inline int xb_parse_bool(const char *s, int *out)
{
    if (s == NULL)
        return -1;
    if (xb__is(s, "1") || xb__is(s, "true") || xb__is(s, "yes") || xb__is(s, "on"))
        *out = 1;
    else if (xb__is(s, "0") || xb__is(s, "false") || xb__is(s, "no") || xb__is(s, "off"))
        *out = 0;
    else
        return -1;
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* XFERBENCH_PLUGIN_H */
