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
#define WORDS_PER_POLL 32
#define EXIT_LENS 0xffffffffu

__device__ static inline u32 lo(u64 w) { return (u32)w; }
__device__ static inline u32 hi(u64 w) { return (u32)(w >> 32); }

extern "C" __global__ void xb_mmio(const u64 *req, u64 *rep,
                                   volatile u64 *status, u64 idle_ns,
                                   u64 delay_ns) {
  // volatile: clang's alias analysis would otherwise let a thread read
  // these before the barrier that publishes them.
  __shared__ volatile u32 s_seq;
  __shared__ volatile u32 s_lens;
  __shared__ volatile u32 s_quit;
  __shared__ volatile u32 s_fold;
  const volatile u64 *in = (const volatile u64 *)req;
  volatile u64 *out = (volatile u64 *)rep;
  u32 t = tid(), lane = t & 31, last = 0;
  for (;;) {
    u32 mine = 0;
    if (t < 32) {
      // Warp 0 polls the first 32 words in one coalesced read until the
      // header is new and every input word it covers carries its seq.
      u64 since = globaltimer();
      for (;;) {
        u64 w = in[lane];
        u32 h_lo = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)lo(w), 0, 0x1f);
        u32 h_hi = __nvvm_shfl_sync_idx_i32(0xffffffff, (int)hi(w), 0, 0x1f);
        u32 quit = 0;
        if (h_hi != last && h_hi != 0) {
          if (h_lo == EXIT_LENS)
            quit = 1;
          u32 words = ((h_lo & 0xffff) + 3) / 4;
          int ok = lane == 0 || lane > words || hi(w) == h_hi;
          if (quit || __nvvm_vote_all_sync(0xffffffff, ok)) {
            if (lane == 0) {
              s_seq = h_hi;
              s_lens = h_lo;
              s_quit = quit;
              s_fold = 0;
            }
            if (lane > 0 && lane <= words)
              mine = lo(w);
            break;
          }
        }
        if (lane == 0 && globaltimer() - since > idle_ns)
          quit = 2;
        if (__nvvm_shfl_sync_idx_i32(0xffffffff, (int)quit, 0, 0x1f) == 2) {
          if (lane == 0) {
            s_quit = 2;
          }
          break;
        }
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
    u32 out_words = ((lens >> 16) + 3) / 4;
    if (out_words == 0)
      out_words = 1;
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
    // The output depends on the input: every word is the input folded.
    u64 word = ((u64)seq << 32) | s_fold;
    for (u32 i = t; i < out_words; i += ntid())
      out[i] = word;
    last = seq;
    __syncthreads();
  }
}
