/* A stand-in libcuda.so for the tests of machines without a GPU: the
 * driver calls xferbench makes, with host memory for device memory, one
 * worker thread per stream running its queue in order, events, graph
 * capture, and the four device programs of src/cuda/kernels.cu emulated in
 * C with the same protocols (the latch flag, the mmio doorbell). It checks
 * the host side: argument order, stream order, waits, the doorbell
 * protocol, the capture. It says nothing of real GPU speed.
 *
 * Built by tests/cuda.rs: cc -shared -fPIC -pthread -o libcuda.so libcuda.c
 * Setting XB_FAKE_CUDA_NODEV=1 makes cuInit report no device. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum {
  OK = 0,
  INVALID_VALUE = 1,
  NO_DEVICE = 100,
  NOT_FOUND = 500,
  NOT_READY = 600,
  ILLEGAL_STATE = 401
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Every allocation, so device-side accesses can be bounds-checked: an
 * access outside them aborts (the test then fails) as a GPU would fault. */
#define MAX_ALLOCS 4096
static struct {
  uint64_t p, n;
} allocs[MAX_ALLOCS];
static int nallocs;
static pthread_mutex_t alloc_m = PTHREAD_MUTEX_INITIALIZER;

static void track(void *p, uint64_t n) {
  pthread_mutex_lock(&alloc_m);
  if (nallocs < MAX_ALLOCS) {
    allocs[nallocs].p = (uint64_t)p;
    allocs[nallocs].n = n;
    nallocs++;
  }
  pthread_mutex_unlock(&alloc_m);
}

static void inside(uint64_t p, uint64_t n, const char *what) {
  if (n == 0)
    return;
  pthread_mutex_lock(&alloc_m);
  for (int i = 0; i < nallocs; i++)
    if (p >= allocs[i].p && p + n <= allocs[i].p + allocs[i].n) {
      pthread_mutex_unlock(&alloc_m);
      return;
    }
  pthread_mutex_unlock(&alloc_m);
  fprintf(stderr, "fake libcuda: %s touches %llu bytes at %#llx, outside every allocation\n",
          what, (unsigned long long)n, (unsigned long long)p);
  abort();
}

/* Functions: their index is their identity. */
enum { K_ECHO = 1, K_LATCH, K_COPY, K_MMIO };
static const char *KNAMES[] = {"", "xb_echo", "xb_latch", "xb_copy", "xb_mmio"};
static const int KARGS[] = {0, 5, 3, 3, 5};

typedef struct Event {
  pthread_mutex_t m;
  uint64_t queued, done, t_ns;
} Event;

enum { OP_COPY, OP_KERNEL, OP_RECORD, OP_WAIT };
typedef struct Op {
  int kind;
  uint64_t a[7]; /* the kernel's number, its (at most 5) arguments, its block size */
  Event *ev;
  uint64_t gen;
} Op;

typedef struct Graph {
  Op *ops;
  int n, cap;
} Graph;

typedef struct Stream {
  pthread_mutex_t m;
  pthread_cond_t cv;
  Op *ops;
  int head, tail, cap; /* ring of queued ops */
  int busy;
  Graph *capture;
} Stream;

static void push(Graph *g, Op op) {
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 16;
    g->ops = realloc(g->ops, sizeof(Op) * g->cap);
  }
  g->ops[g->n++] = op;
}

static void kernel(uint64_t *a, int f) {
  switch (f) {
  case K_ECHO: {
    inside(a[0], a[1], "xb_echo input");
    inside(a[2], a[3] ? 1 : 0, "xb_echo output");
    uint64_t start = now_ns();
    while (a[4] && now_ns() - start < a[4]) {
    }
    if (a[3] > 0)
      ((uint8_t *)a[2])[0] = a[1] > 0 ? ((uint8_t *)a[0])[a[1] - 1] : 0;
    break;
  }
  case K_LATCH: {
    inside(a[0], 4, "xb_latch flag");
    inside(a[2], 4, "xb_latch timed_out");
    volatile uint32_t *flag = (volatile uint32_t *)a[0];
    uint64_t start = now_ns();
    while (*flag == 0) {
      if (now_ns() - start > a[1]) {
        *(volatile uint32_t *)a[2] = 1;
        return;
      }
    }
    break;
  }
  case K_COPY:
    inside(a[0], a[2], "xb_copy destination");
    inside(a[1], a[2], "xb_copy source");
    memcpy((void *)a[0], (const void *)a[1], a[2]);
    break;
  case K_MMIO: { /* the LL protocol of kernels.cu's xb_mmio */
    volatile uint64_t *req = (volatile uint64_t *)a[0];
    volatile uint64_t *rep = (volatile uint64_t *)a[1];
    volatile uint64_t *status = (volatile uint64_t *)a[2];
    uint64_t warps = a[5] / 32; /* one poller per warp, each with its copy */
    if (a[5] % 32 || warps < 1 || warps > 8) {
      fprintf(stderr, "fake libcuda: xb_mmio launched with %llu threads\n", (unsigned long long)a[5]);
      abort();
    }
    inside(a[0], 32 * 8 * warps, "xb_mmio's copies of the first 32 words");
    inside(a[2], 8, "xb_mmio status");
    uint32_t last = 0;
    for (;;) {
      /* One host thread stands for the warps: it polls copy (last + 1) %
       * warps, so every copy is read in turn and must be written. */
      volatile uint64_t *copy = req + 32 * ((last + 1) % warps);
      uint64_t since = now_ns(), h;
      for (;;) {
        h = __atomic_load_n(&copy[0], __ATOMIC_ACQUIRE);
        uint32_t seq = (uint32_t)(h >> 32);
        /* Newer than the last answered, as the kernel's is_new: a copy
         * may still hold an older request while the host writes the next. */
        if (seq != 0 && (int32_t)(seq - last) > 0)
          break;
        if (now_ns() - since > a[3]) {
          *status = 2;
          return;
        }
      }
      uint32_t seq = (uint32_t)(h >> 32), lens = (uint32_t)h;
      if (lens == 0xffffffffu) {
        *status = 1;
        return;
      }
      uint32_t in_words = ((lens & 0xffff) + 3) / 4;
      uint32_t out_words = ((lens >> 16) + 3) / 4;
      if (out_words == 0)
        out_words = 1;
      if (in_words >= 32)
        inside(a[0], 8 * (32 * warps + in_words - 31), "xb_mmio input words");
      inside(a[1], 8 * (uint64_t)out_words, "xb_mmio output words");
      uint32_t f = 0;
      for (uint32_t i = 1; i <= in_words; i++) {
        volatile uint64_t *at = i < 32 ? &copy[i] : &req[32 * warps + i - 32];
        uint64_t w;
        while ((uint32_t)((w = __atomic_load_n(at, __ATOMIC_ACQUIRE)) >> 32) != seq) {
        }
        f |= (uint32_t)w;
      }
      uint64_t start = now_ns();
      while (a[4] && now_ns() - start < a[4]) {
      }
      for (uint32_t i = 0; i < out_words; i++)
        __atomic_store_n(&rep[i], ((uint64_t)seq << 32) | f, __ATOMIC_RELEASE);
      last = seq;
    }
  }
  }
}

static void run(Op *op) {
  switch (op->kind) {
  case OP_COPY:
    memcpy((void *)op->a[0], (const void *)op->a[1], op->a[2]);
    break;
  case OP_KERNEL:
    kernel(op->a + 1, (int)op->a[0]);
    break;
  case OP_RECORD:
    pthread_mutex_lock(&op->ev->m);
    op->ev->t_ns = now_ns();
    op->ev->done = op->gen;
    pthread_mutex_unlock(&op->ev->m);
    break;
  case OP_WAIT:
    for (;;) {
      pthread_mutex_lock(&op->ev->m);
      int ready = op->ev->done >= op->gen;
      pthread_mutex_unlock(&op->ev->m);
      if (ready)
        break;
    }
    break;
  }
}

static void *worker(void *p) {
  Stream *s = p;
  /* Free of the creating thread's pinning, as the GPU is of the host's. */
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c < CPU_SETSIZE; c++)
    CPU_SET(c, &all);
  sched_setaffinity(0, sizeof all, &all);
  pthread_mutex_lock(&s->m);
  for (;;) {
    while (s->head == s->tail)
      pthread_cond_wait(&s->cv, &s->m);
    Op op = s->ops[s->head % s->cap];
    pthread_mutex_unlock(&s->m);
    run(&op);
    pthread_mutex_lock(&s->m);
    s->head++;
    pthread_cond_broadcast(&s->cv);
  }
  return NULL;
}

static CUresult enqueue(Stream *s, Op op) {
  if (!s)
    return INVALID_VALUE; /* xferbench never uses the legacy stream */
  pthread_mutex_lock(&s->m);
  if (s->capture) {
    push(s->capture, op);
    pthread_mutex_unlock(&s->m);
    return OK;
  }
  while (s->tail - s->head == s->cap)
    pthread_cond_wait(&s->cv, &s->m); /* a full queue blocks, as a real one does */
  s->ops[s->tail % s->cap] = op;
  s->tail++;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->m);
  return OK;
}

CUresult cuInit(unsigned f) {
  (void)f;
  return getenv("XB_FAKE_CUDA_NODEV") ? NO_DEVICE : OK;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return OK;
}
CUresult cuDeviceGet(int *d, int o) {
  if (o != 0)
    return INVALID_VALUE;
  *d = 0;
  return OK;
}
CUresult cuGetErrorName(CUresult r, const char **p) {
  static char buf[64];
  snprintf(buf, sizeof buf, "FAKE_CUDA_ERROR_%d", r);
  *p = buf;
  return OK;
}
CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  (void)d;
  *v = a == 16 ? 4 : a == 75 ? 7 : a == 76 ? 0 : 1; /* SMs, cc 7.0 */
  return OK;
}
CUresult cuDeviceGetName(char *b, int n, int d) {
  (void)d;
  snprintf(b, n, "xferbench fake GPU");
  return OK;
}
CUresult cuDeviceGetPCIBusId(char *b, int n, int d) {
  (void)d;
  snprintf(b, n, "00000000:41:00.0");
  return OK;
}
CUresult cuDriverGetVersion(int *v) {
  *v = 12020;
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *m, int d) {
  (void)d;
  *m = 1ull << 30;
  return OK;
}

static __thread void *current;
CUresult cuCtxCreate_v2(void **c, unsigned flags, int d) {
  (void)d;
  if ((flags & 7) != 1 && (flags & 7) != 4)
    return INVALID_VALUE; /* xferbench always names spin or blocking sync */
  *c = malloc(16);
  current = *c;
  return OK;
}
CUresult cuCtxDestroy_v2(void *c) {
  if (current == c)
    current = NULL;
  return OK; /* memory and stream threads are left to the process's end */
}
CUresult cuCtxGetCurrent(void **c) {
  *c = current;
  return OK;
}
CUresult cuCtxSetCurrent(void *c) {
  current = c;
  return OK;
}

CUresult cuModuleLoadData(void **m, const void *image) {
  const char *ptx = image;
  for (int k = 1; k <= 4; k++)
    if (!strstr(ptx, KNAMES[k]))
      return INVALID_VALUE;
  *m = (void *)1;
  return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)m;
  for (long k = 1; k <= 4; k++)
    if (!strcmp(name, KNAMES[k])) {
      *f = (void *)k;
      return OK;
    }
  return NOT_FOUND;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  if (!current)
    return ILLEGAL_STATE;
  if (flags & 4)
    return INVALID_VALUE; /* write-combined: the CPU must not read it */
  /* Exactly n bytes count as allocated, whatever the rounding. */
  *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  if (*p)
    track(*p, n);
  return *p ? OK : 2;
}
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned f) {
  (void)f;
  *d = (CUdeviceptr)p;
  return OK;
}
CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n) {
  if (!current)
    return ILLEGAL_STATE;
  void *p = aligned_alloc(256, (n + 255) / 256 * 256);
  if (p)
    track(p, n);
  *d = (CUdeviceptr)p;
  return p ? OK : 2;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  memset((void *)d, v, n);
  return OK;
}

CUresult cuStreamCreate(void **out, unsigned flags) {
  (void)flags;
  Stream *s = calloc(1, sizeof *s);
  pthread_mutex_init(&s->m, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->cap = 1024;
  s->ops = calloc(s->cap, sizeof(Op));
  pthread_t t;
  pthread_create(&t, NULL, worker, s);
  pthread_detach(t);
  *out = s;
  return OK;
}
CUresult cuStreamQuery(void *p) {
  Stream *s = p;
  pthread_mutex_lock(&s->m);
  int idle = s->head == s->tail;
  pthread_mutex_unlock(&s->m);
  return idle ? OK : NOT_READY;
}
CUresult cuStreamSynchronize(void *p) {
  Stream *s = p;
  pthread_mutex_lock(&s->m);
  while (s->head != s->tail)
    pthread_cond_wait(&s->cv, &s->m);
  pthread_mutex_unlock(&s->m);
  return OK;
}

CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  Event *ev = calloc(1, sizeof *ev);
  pthread_mutex_init(&ev->m, NULL);
  *e = ev;
  return OK;
}
CUresult cuEventRecord(void *e, void *s) {
  Event *ev = e;
  pthread_mutex_lock(&ev->m);
  uint64_t gen = ++ev->queued;
  pthread_mutex_unlock(&ev->m);
  Op op = {.kind = OP_RECORD, .ev = ev, .gen = gen};
  return enqueue(s, op);
}
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) {
  (void)f;
  Event *ev = e;
  pthread_mutex_lock(&ev->m);
  uint64_t gen = ev->queued;
  pthread_mutex_unlock(&ev->m);
  Op op = {.kind = OP_WAIT, .ev = ev, .gen = gen};
  return enqueue(s, op);
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  Event *x = a, *y = b;
  if (x->done < x->queued || y->done < y->queued || !x->done || !y->done)
    return NOT_READY;
  *ms = (float)((double)(int64_t)(y->t_ns - x->t_ns) / 1e6);
  return OK;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, void *s) {
  inside(d, n, "a host-to-device copy");
  Op op = {.kind = OP_COPY, .a = {d, (uint64_t)h, n}};
  return enqueue(s, op);
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, void *s) {
  inside(d, n, "a device-to-host copy");
  Op op = {.kind = OP_COPY, .a = {(uint64_t)h, d, n}};
  return enqueue(s, op);
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shm,
                        void *s, void **params, void **extra) {
  long k = (long)f;
  if (k < 1 || k > 4 || !params || extra || gx == 0 || bx == 0 || bx > 1024 ||
      gy != 1 || gz != 1 || by != 1 || bz != 1 || shm)
    return INVALID_VALUE;
  Op op = {.kind = OP_KERNEL};
  op.a[0] = (uint64_t)k;
  for (int i = 0; i < KARGS[k]; i++)
    op.a[1 + i] = *(uint64_t *)params[i];
  op.a[1 + KARGS[k]] = bx;
  return enqueue(s, op);
}

CUresult cuStreamBeginCapture_v2(void *p, int mode) {
  (void)mode;
  Stream *s = p;
  s->capture = calloc(1, sizeof(Graph));
  return OK;
}
CUresult cuStreamEndCapture(void *p, void **g) {
  Stream *s = p;
  if (!s->capture)
    return ILLEGAL_STATE;
  *g = s->capture;
  s->capture = NULL;
  return OK;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *g,
                                     unsigned long long f) {
  (void)f;
  *exec = g;
  return OK;
}
CUresult cuGraphLaunch(void *exec, void *s) {
  Graph *g = exec;
  for (int i = 0; i < g->n; i++) {
    CUresult r = enqueue(s, g->ops[i]);
    if (r)
      return r;
  }
  return OK;
}
CUresult cuGraphExecDestroy(void *e) {
  (void)e;
  return OK;
}
CUresult cuGraphDestroy(void *g) {
  Graph *x = g;
  free(x->ops);
  free(x);
  return OK;
}
