/*
 * floor.c - the smallest C round trip for each of xferbench's local
 * transports, the "C loop" that bench/floors.sh sets beside
 * `xferbench roundtrip -t T`. Each mode makes the same exchange the
 * transport makes, with its default completion, and nothing else:
 *
 *   thread      two threads, a cache line each way, spinning (poll)
 *   shm         two processes, the same over a shared mapping (poll)
 *   pipe        two processes, a pipe each way, blocking read/write
 *   unix        two processes, an AF_UNIX stream socketpair, blocking
 *   unix-dgram  two processes, an AF_UNIX datagram socketpair, blocking
 *   tcp         two processes, loopback TCP with TCP_NODELAY, blocking
 *   udp         two processes, two connected loopback UDP sockets, blocking
 *
 * The initiator runs on CPU A, the responder on CPU B. After a warm-up,
 * every round trip is timed with two clock_gettime(CLOCK_MONOTONIC) reads,
 * as xferbench times its samples.
 *
 * Output, one line:
 *   floor MODE rtt_ns p50=.. min=.. mean=.. iterations=.. bytes=..
 *
 * Build: cc -O2 -pthread -o floor floor.c
 * Usage: floor MODE [-b BYTES (16)] [-c A,B (0,1)] [-n ITER (200000)]
 *              [-w WARMUP (20000)]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BYTES 65536

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

static size_t bytes = 16;
static int cpu_a = 0, cpu_b = 1;
static long iterations = 200000, warmup = 20000;

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity");
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------ polled cache lines */

struct slot {
    _Alignas(128) _Atomic uint64_t seq;
    unsigned char payload[64];
};
struct lines {
    struct slot ping, pong;
};
static struct lines *L;
static const uint64_t STOP = UINT64_MAX;

static void *line_responder(void *arg)
{
    (void)arg;
    pin(cpu_b);
    uint64_t last = 0;
    for (;;) {
        uint64_t s;
        while ((s = atomic_load_explicit(&L->ping.seq, memory_order_acquire)) == last)
            cpu_relax();
        if (s == STOP)
            return NULL;
        memcpy(L->pong.payload, L->ping.payload, bytes);
        atomic_store_explicit(&L->pong.seq, s, memory_order_release);
        last = s;
    }
}

static unsigned char sink[MAX_BYTES], buf[MAX_BYTES];
static uint64_t seq_next;

static inline void line_trip(void)
{
    uint64_t s = ++seq_next;
    memcpy(L->ping.payload, buf, bytes);
    atomic_store_explicit(&L->ping.seq, s, memory_order_release);
    while (atomic_load_explicit(&L->pong.seq, memory_order_acquire) != s)
        cpu_relax();
    memcpy(sink, L->pong.payload, bytes);
}

/* ------------------------------------------------ file descriptors */

static int out_fd, in_fd; /* the initiator's */
static int datagram;

static void write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("write");
        }
        p += w;
        n -= (size_t)w;
    }
}

static int read_all(int fd, unsigned char *p, size_t n)
{
    if (datagram) {
        ssize_t r = recv(fd, p, n, 0);
        return r == (ssize_t)n ? 0 : -1;
    }
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r == 0)
            return -1;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void send_msg(int fd, const unsigned char *p, size_t n)
{
    if (datagram) {
        if (send(fd, p, n, 0) != (ssize_t)n)
            die("send");
    } else {
        write_all(fd, p, n);
    }
}

static void fd_responder(int in, int out)
{
    pin(cpu_b);
    unsigned char m[MAX_BYTES];
    while (read_all(in, m, bytes) == 0)
        send_msg(out, m, bytes);
    _exit(0);
}

static inline void fd_trip(void)
{
    send_msg(out_fd, buf, bytes);
    if (read_all(in_fd, sink, bytes) != 0) {
        fprintf(stderr, "floor: the responder went away\n");
        exit(1);
    }
}

static pid_t spawn(int in, int out, int close_a, int close_b)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        if (close_a >= 0)
            close(close_a);
        if (close_b >= 0)
            close(close_b);
        fd_responder(in, out);
    }
    return pid;
}

static pid_t setup_fd(const char *mode)
{
    if (!strcmp(mode, "pipe")) {
        int req[2], rep[2];
        if (pipe(req) || pipe(rep))
            die("pipe");
        pid_t pid = spawn(req[0], rep[1], req[1], rep[0]);
        close(req[0]);
        close(rep[1]);
        out_fd = req[1];
        in_fd = rep[0];
        return pid;
    }
    if (!strcmp(mode, "unix") || !strcmp(mode, "unix-dgram")) {
        datagram = !strcmp(mode, "unix-dgram");
        int sv[2];
        if (socketpair(AF_UNIX, datagram ? SOCK_DGRAM : SOCK_STREAM, 0, sv))
            die("socketpair");
        pid_t pid = spawn(sv[1], sv[1], sv[0], -1);
        close(sv[1]);
        out_fd = in_fd = sv[0];
        return pid;
    }
    if (!strcmp(mode, "udp")) {
        datagram = 1;
        int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET}, sb;
        socklen_t len = sizeof sa;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sb = sa;
        if (bind(a, (struct sockaddr *)&sa, sizeof sa) || bind(b, (struct sockaddr *)&sb, sizeof sb))
            die("bind");
        getsockname(a, (struct sockaddr *)&sa, &len);
        len = sizeof sb;
        getsockname(b, (struct sockaddr *)&sb, &len);
        if (connect(a, (struct sockaddr *)&sb, sizeof sb) || connect(b, (struct sockaddr *)&sa, sizeof sa))
            die("connect");
        pid_t pid = spawn(b, b, a, -1);
        close(b);
        out_fd = in_fd = a;
        return pid;
    }
    if (!strcmp(mode, "tcp")) {
        int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t len = sizeof sa;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 1))
            die("listen");
        getsockname(l, (struct sockaddr *)&sa, &len);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, (struct sockaddr *)&sa, sizeof sa))
            die("connect");
        int s = accept(l, NULL, NULL);
        if (s < 0)
            die("accept");
        close(l);
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pid_t pid = spawn(s, s, c, -1);
        close(s);
        out_fd = in_fd = c;
        return pid;
    }
    return -1;
}

/* ------------------------------------------------ the timed loop */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void usage(void)
{
    fprintf(stderr, "usage: floor thread|shm|pipe|unix|unix-dgram|tcp|udp [-b BYTES (16)] "
                    "[-c A,B (0,1)] [-n ITERATIONS (200000)] [-w WARMUP (20000)]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "b:c:n:w:")) != -1) {
        switch (opt) {
        case 'b':
            bytes = (size_t)atol(optarg);
            break;
        case 'c':
            if (sscanf(optarg, "%d,%d", &cpu_a, &cpu_b) != 2)
                usage();
            break;
        case 'n':
            iterations = atol(optarg);
            break;
        case 'w':
            warmup = atol(optarg);
            break;
        default:
            usage();
        }
    }
    int lines = !strcmp(mode, "thread") || !strcmp(mode, "shm");
    if (iterations <= 0 || warmup < 0 || bytes < 1 || bytes > (lines ? 64 : MAX_BYTES))
        usage();
    memset(buf, 0x5a, sizeof buf);
    uint64_t *t = malloc((size_t)iterations * sizeof *t);
    if (!t)
        die("malloc");
    memset(t, 0, (size_t)iterations * sizeof *t);

    pid_t child = -1;
    pthread_t th;
    if (!strcmp(mode, "thread")) {
        L = aligned_alloc(128, sizeof *L);
        memset(L, 0, sizeof *L);
        if (pthread_create(&th, NULL, line_responder, NULL))
            die("pthread_create");
    } else if (!strcmp(mode, "shm")) {
        L = mmap(NULL, sizeof *L, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (L == MAP_FAILED)
            die("mmap");
        child = fork();
        if (child < 0)
            die("fork");
        if (child == 0) {
            line_responder(NULL);
            _exit(0);
        }
    } else {
        child = setup_fd(mode);
        if (child < 0)
            usage();
    }
    pin(cpu_a);

    for (long i = 0; i < warmup; i++)
        lines ? line_trip() : fd_trip();
    double sum = 0;
    for (long i = 0; i < iterations; i++) {
        uint64_t t0 = now_ns();
        if (lines)
            line_trip();
        else
            fd_trip();
        uint64_t t1 = now_ns();
        t[i] = t1 - t0;
        sum += (double)t[i];
    }

    if (lines) {
        atomic_store_explicit(&L->ping.seq, STOP, memory_order_release);
        if (child < 0)
            pthread_join(th, NULL);
    } else {
        close(out_fd);
        if (in_fd != out_fd)
            close(in_fd);
        if (datagram)
            kill(child, SIGTERM);
    }
    if (child > 0)
        waitpid(child, NULL, 0);

    qsort(t, (size_t)iterations, sizeof *t, cmp_u64);
    printf("floor %s rtt_ns p50=%llu min=%llu mean=%.1f iterations=%ld bytes=%zu\n", mode,
           (unsigned long long)t[iterations / 2], (unsigned long long)t[0], sum / (double)iterations,
           iterations, bytes);
    return 0;
}
