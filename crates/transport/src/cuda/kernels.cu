// Device programs of the cuda transport. The PTX the transport loads
// (kernels.ptx, embedded with include_str!) is generated from this file by
// src/transport/cuda/build-ptx.sh with Debian's clang-14; no CUDA toolkit is needed to
// build xferbench or to regenerate it. PTX for sm_70 is JIT-compiled by the
// driver for any newer GPU (Volta .. Hopper and later).
//
// Compiled without the CUDA headers (-nocudainc), so the few intrinsics used
// are spelled as clang's NVPTX builtins.

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef u32 u32x4 __attribute__((ext_vector_type(4)));

__device__ static inline u32 tid() { return __nvvm_read_ptx_sreg_tid_x(); }
__device__ static inline u32 ntid() { return __nvvm_read_ptx_sreg_ntid_x(); }
__device__ static inline u32 ctaid() { return __nvvm_read_ptx_sreg_ctaid_x(); }
__device__ static inline u32 nctaid() { return __nvvm_read_ptx_sreg_nctaid_x(); }

// Nanoseconds on the GPU's global timer: bounds every spin, so a device
// program whose host went away ends by itself.
__device__ static inline u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The responder's added delay (roundtrip --delay): a busy wait on the
// global timer, as the host responders spin.
__device__ static inline void delay(u64 ns) {
  if (ns == 0)
    return;
  u64 start = globaltimer();
  while (globaltimer() - start < ns) {
  }
}

// The IO round trip's device program: no compute. It waits (by stream order)
// for the whole input, then touches the last input byte and writes it to the
// first output byte, so the output depends on the input having arrived.
extern "C" __global__ void xb_echo(const u8 *in, u64 in_len, u8 *out,
                                   u64 out_len, u64 delay_ns) {
  if (tid() != 0 || ctaid() != 0)
    return;
  delay(delay_ns);
  if (out_len > 0)
    out[0] = in_len > 0 ? in[in_len - 1] : 0;
}

// nvbandwidth's latch: holds its stream until the host sets *flag, so the
// copies queued behind it start back to back once released. Gives up after
// timeout_ns and says so in *timed_out (the measurement is then discarded).
extern "C" __global__ void xb_latch(const volatile u32 *flag, u64 timeout_ns,
                                    volatile u32 *timed_out) {
  if (tid() != 0 || ctaid() != 0)
    return;
  u64 start = globaltimer();
  while (*flag == 0) {
    if (globaltimer() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

// The SM copy engine: a grid-stride copy in 16-byte vectors, then the tail
// bytes. Either side may be device memory or mapped pinned host memory.
extern "C" __global__ void xb_copy(u8 *dst, const u8 *src, u64 n) {
  u64 stride = (u64)ntid() * nctaid();
  u64 first = (u64)ctaid() * ntid() + tid();
  u64 vectors = n / 16;
  u32x4 *d = (u32x4 *)dst;
  const u32x4 *s = (const u32x4 *)src;
  for (u64 i = first; i < vectors; i += stride)
    d[i] = s[i];
  for (u64 i = vectors * 16 + first; i < n; i += stride)
    dst[i] = src[i];
}

// mmio speaks NCCL's LL protocol over mapped pinned host memory: every
// 8-byte word carries 4 bytes of payload and the request's 32-bit sequence
// number, written in one store, so a word whose flag matches is a word that
// arrived; no doorbell read, no fence and no separate "done" are needed, and
// a small request costs the device one PCIe read.
//
// Request words: [0] = lengths (in | out << 16) and seq; [1..] = input.
// Lengths of 0xffffffff ask the program to end. Reply words: [0..] =
// output, at least one word (an empty reply is one word of zeros).
// `status` (host memory) says why the program ended: 1 asked, 2 idle.
//
// `pollers` warps poll the first 32 words, each with its own read in
// flight, started a fraction of a read's round trip apart. One warp's
// reads are back to back, and the host's next request lands just after the
// read that follows a reply has passed: that warp then sees it a whole
// PCIe round trip late. With several warps the next read to pass comes
// sooner. The warp that sees a whole request first claims it (a
// compare-and-swap on the last sequence number, so a stale read of an
// answered request is never answered twice) and, when the request fits the
// one read, answers it alone; a longer one, or the request to end, is
// handed to the whole block.
#define WORDS_PER_POLL 32
#define EXIT_LENS 0xffffffffu
// A PCIe read from the GPU to host memory takes about a microsecond.
#define POLL_SPREAD_NS 1000

__device__ static inline u32 lo(u64 w) { return (u32)w; }
__device__ static inline u32 hi(u64 w) { return (u32)(w >> 32); }
// Requests are numbered 1, 2, ... (0 is skipped when the number wraps): a
// header is new when its number is past the last one claimed, so a stale
// read of an answered request is never taken for a new one.
__device__ static inline int is_new(u32 seq, u32 last) {
  return seq != 0 && (int)(seq - last) > 0;
}

__device__ static inline u32 warp_or(u32 v) {
  for (int o = 16; o > 0; o /= 2)
    v |= (u32)__nvvm_shfl_sync_bfly_i32(0xffffffff, (int)v, o, 0x1f);
  return v;
}

// The output depends on the input: every word is the input folded.
__device__ static inline void reply(volatile u64 *out, u32 seq, u32 fold,
                                    u32 lens, u32 first, u32 step) {
  u32 out_words = ((lens >> 16) + 3) / 4;
  if (out_words == 0)
    out_words = 1;
  u64 word = ((u64)seq << 32) | fold;
  for (u32 i = first; i < out_words; i += step)
    out[i] = word;
}

extern "C" __global__ void xb_mmio(const u64 *req, u64 *rep,
                                   volatile u64 *status, u64 idle_ns,
                                   u64 delay_ns, u64 pollers) {
  // volatile: clang's alias analysis would otherwise let a thread read
  // these before the barrier or the flag that publishes them.
  __shared__ volatile u32 s_last;  // the last request claimed
  __shared__ volatile u32 s_block; // a request (or the end) for the block
  __shared__ volatile u32 s_seq;
  __shared__ volatile u32 s_lens;
  __shared__ volatile u32 s_quit;
  __shared__ volatile u32 s_fold;
  __shared__ volatile u64 s_active; // when the last request was claimed
  const volatile u64 *in = (const volatile u64 *)req;
  volatile u64 *out = (volatile u64 *)rep;
  u32 t = tid(), lane = t & 31, warp = t >> 5;
  u32 npoll = ntid() / 32;
  if (pollers >= 1 && pollers < npoll)
    npoll = (u32)pollers;
  if (t == 0) {
    s_last = 0;
    s_block = 0;
    s_quit = 0;
    s_active = globaltimer();
  }
  __syncthreads();
  for (;;) {
    u32 mine = 0;
    if (warp < npoll) {
      delay(warp * (POLL_SPREAD_NS / npoll));
      for (;;) {
        u64 w = in[lane];
        u32 h_lo = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)lo(w), 0, 0x1f);
        u32 h_hi = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)hi(w), 0, 0x1f);
        if (s_block)
          break;
        u32 last = s_last;
        if (is_new(h_hi, last)) {
          u32 quit = h_lo == EXIT_LENS;
          u32 words = ((h_lo & 0xffff) + 3) / 4;
          int ok = quit || lane == 0 || lane > words || hi(w) == h_hi;
          if (__nvvm_vote_all_sync(0xffffffff, ok)) {
            u32 won = 0;
            if (lane == 0) {
              won = (u32)__nvvm_atom_cas_gen_i((int *)&s_last, (int)last,
                                               (int)h_hi) == last;
              if (won)
                s_active = globaltimer();
            }
            won = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)won, 0, 0x1f);
            if (won) {
              u32 payload = lane > 0 && lane <= words ? lo(w) : 0;
              if (!quit && words < WORDS_PER_POLL) {
                u32 fold = warp_or(payload);
                delay(delay_ns);
                reply(out, h_hi, fold, h_lo, lane, 32);
                continue;
              }
              mine = payload;
              if (lane == 0) {
                s_seq = h_hi;
                s_lens = h_lo;
                s_quit = quit;
                s_fold = 0;
                __nvvm_membar_cta();
                s_block = 1;
              }
              break;
            }
          }
        }
        u32 idle = 0;
        if (lane == 0 && globaltimer() - s_active > idle_ns) {
          idle = 1;
          s_quit = 2;
          __nvvm_membar_cta();
          s_block = 1;
        }
        if (__nvvm_shfl_sync_idx_i32(0xffffffff, (int)idle, 0, 0x1f))
          break;
      }
    }
    __syncthreads();
    if (s_quit) {
      if (t == 0)
        *status = s_quit;
      return;
    }
    u32 seq = s_seq, lens = s_lens;
    u32 in_words = ((lens & 0xffff) + 3) / 4;
    // Input words past the first poll: each thread waits for its own.
    u64 since = globaltimer();
    for (u32 i = WORDS_PER_POLL + t; i <= in_words; i += ntid()) {
      u64 w;
      while (hi(w = in[i]) != seq) {
        if (globaltimer() - since > idle_ns)
          break;
      }
      mine ^= lo(w);
    }
    if (mine)
      __nvvm_atom_or_gen_i((int *)&s_fold, (int)mine);
    __syncthreads();
    if (t == 0)
      delay(delay_ns);
    __syncthreads();
    reply(out, seq, s_fold, lens, t, ntid());
    __syncthreads();
    if (t == 0)
      s_block = 0;
    __syncthreads();
  }
}
