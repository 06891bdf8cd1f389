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
// a request up to 124 B costs the device one PCIe read.
//
// The block is `pollers` warps. Each polls its own copy of the request's
// first 32 words (copy w at words [32w, 32w + 32)): [0] = lengths (in | out
// << 16) and seq, [1..31] = the first input words; input words from 32 on
// follow the copies, once. Lengths of 0xffffffff ask the program to end.
// Reply words: [0..] = output, at least one word (an empty reply is one
// word of zeros). `status` (host memory) says why the program ended: 1
// asked, 2 idle.
//
// Why several warps, each on its own copy: one warp's reads are back to
// back, and the host's next request lands just after the read that follows
// a reply has passed, so one warp sees it a whole PCIe round trip late.
// Warps started a fraction of a round trip apart have reads in flight at
// other moments, and the next to pass sees the request. Their own copies
// keep their reads apart: reads of one address in flight together are
// merged, and warps merged once would poll in step from then on. The first
// warp to see a whole request claims it (a compare-and-swap on the last
// sequence number, so a stale read of an answered request is never taken
// for a new one) and answers it alone.
#define WORDS_PER_POLL 32
#define EXIT_LENS 0xffffffffu
// A PCIe read from the GPU to host memory takes about a microsecond.
#define POLL_SPREAD_NS 1000
// Loads in flight per lane while a warp reads the input past the first 32.
#define UNROLL 8

__device__ static inline u32 lo(u64 w) { return (u32)w; }
__device__ static inline u32 hi(u64 w) { return (u32)(w >> 32); }

// Requests are numbered 1, 2, ... (0 is skipped when the number wraps).
__device__ static inline int is_new(u32 seq, u32 last) {
  return seq != 0 && (int)(seq - last) > 0;
}

__device__ static inline u32 warp_or(u32 v) {
  for (int o = 16; o > 0; o /= 2)
    v |= (u32)__nvvm_shfl_sync_bfly_i32(0xffffffff, (int)v, o, 0x1f);
  return v;
}

// The input words from 32 on (rest[i] is word i), folded: each lane keeps
// UNROLL loads in flight and re-reads a word until it carries `seq`.
__device__ static inline u32 fold_rest(const volatile u64 *rest, u32 words,
                                       u32 seq, u32 lane, u64 idle_ns) {
  u32 fold = 0;
  u64 since = globaltimer();
  for (u32 base = WORDS_PER_POLL; base <= words; base += 32 * UNROLL) {
    u64 v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
      u32 i = base + k * 32 + lane;
      v[k] = i <= words ? rest[i] : 0;
    }
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
      u32 i = base + k * 32 + lane;
      if (i > words)
        continue;
      while (hi(v[k]) != seq && globaltimer() - since < idle_ns)
        v[k] = rest[i];
      fold |= lo(v[k]);
    }
  }
  return fold;
}

extern "C" __global__ void xb_mmio(const u64 *req, u64 *rep,
                                   volatile u64 *status, u64 idle_ns,
                                   u64 delay_ns) {
  // volatile: clang's alias analysis would otherwise let a thread read
  // these before the barrier or the store that publishes them.
  __shared__ volatile u32 s_last;   // the last request claimed
  __shared__ volatile u32 s_quit;   // why the program ends, once it does
  __shared__ volatile u64 s_active; // when the last request was claimed
  u32 t = tid(), lane = t & 31, warp = t >> 5, npoll = ntid() / 32;
  const volatile u64 *copy = (const volatile u64 *)req + warp * WORDS_PER_POLL;
  const volatile u64 *rest =
      (const volatile u64 *)req + (npoll - 1) * WORDS_PER_POLL;
  volatile u64 *out = (volatile u64 *)rep;
  if (t == 0) {
    s_last = 0;
    s_quit = 0;
    s_active = globaltimer();
  }
  __syncthreads();
  delay(warp * (POLL_SPREAD_NS / npoll));
  for (;;) {
    u64 w = copy[lane];
    u32 h_lo = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)lo(w), 0, 0x1f);
    u32 h_hi = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)hi(w), 0, 0x1f);
    if (s_quit)
      return;
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
        if (__nvvm_shfl_sync_idx_i32(0xffffffff, (int)won, 0, 0x1f)) {
          if (quit) {
            if (lane == 0) {
              s_quit = 1;
              *status = 1;
            }
            return;
          }
          u32 fold = lane > 0 && lane <= words ? lo(w) : 0;
          fold = warp_or(fold | fold_rest(rest, words, h_hi, lane, idle_ns));
          delay(delay_ns);
          // The output depends on the input: every word is the input folded.
          u32 out_words = ((h_lo >> 16) + 3) / 4;
          if (out_words == 0)
            out_words = 1;
          u64 word = ((u64)h_hi << 32) | fold;
          for (u32 i = lane; i < out_words; i += 32)
            out[i] = word;
          continue;
        }
      }
    }
    u32 idle = 0;
    // The claim's time first: read after the clock, a claim between the
    // two would be later than "now", and the difference would wrap.
    u64 active = s_active;
    if (lane == 0 && globaltimer() - active > idle_ns) {
      idle = 1;
      s_quit = 2;
      *status = 2;
    }
    if (__nvvm_shfl_sync_idx_i32(0xffffffff, (int)idle, 0, 0x1f))
      return;
  }
}
