// Device programs of the cuda transport. The PTX the transport loads
// (kernels.ptx, embedded with include_str!) is generated from this file by
// src/cuda/build-ptx.sh with Debian's clang-14; no CUDA toolkit is needed to
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

// The doorbell of the mmio mode, in mapped pinned host memory. The host
// writes `bell` in one 8-byte store: sequence (16 bits), input length and
// output length (24 bits each), so one load gives the device all three.
// The device answers in `done`, on its own cache line.
struct Doorbell {
  u64 bell;
  u64 exit;
  u64 pad0[6];
  u64 done;
  u64 stopped;
  u64 pad1[6];
};

// mmio: one persistent block polls the doorbell, reads the input through
// the mapped pointer, writes the output to mapped host memory, fences, and
// rings back. No copy engine and no launch per request. Ends when the host
// sets `exit` or after idle_ns without a request; `stopped` says which.
extern "C" __global__ void xb_mmio(volatile struct Doorbell *db,
                                   const u8 *in, u8 *out, u64 idle_ns,
                                   u64 delay_ns) {
  // volatile: clang's alias analysis would otherwise let a thread read
  // these before the barrier that publishes them.
  __shared__ volatile u64 bell;
  __shared__ volatile u32 quit;
  __shared__ volatile u32 folded;
  u64 last = 0;
  for (;;) {
    if (tid() == 0) {
      u64 since = globaltimer();
      u32 q = 0;
      u64 b;
      for (;;) {
        b = db->bell;
        if ((b & 0xffff) != (last & 0xffff))
          break;
        if (db->exit) {
          q = 1;
          break;
        }
        if (globaltimer() - since > idle_ns) {
          q = 2;
          break;
        }
      }
      bell = b;
      quit = q;
      folded = 0;
    }
    __syncthreads();
    if (quit) {
      if (tid() == 0)
        db->stopped = quit;
      return;
    }
    u64 b = bell;
    u64 in_len = (b >> 16) & 0xffffff;
    u64 out_len = b >> 40;
    // Read every input byte through the mapped pointer (uncached loads).
    u32 acc = 0;
    const volatile u32x4 *in16 = (const volatile u32x4 *)in;
    for (u64 i = tid(); i < in_len / 16; i += ntid()) {
      u32x4 v = in16[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (u64 i = in_len / 16 * 16 + tid(); i < in_len; i += ntid())
      acc ^= ((const volatile u8 *)in)[i];
    if (acc)
      __nvvm_atom_or_gen_i((int *)&folded, (int)acc);
    __syncthreads();
    if (tid() == 0)
      delay(delay_ns);
    __syncthreads();
    // The output depends on the input: every word is the input folded.
    u32 f = folded;
    u32x4 w = {f, f, f, f};
    volatile u32x4 *out16 = (volatile u32x4 *)out;
    for (u64 i = tid(); i < out_len / 16; i += ntid())
      out16[i] = w;
    for (u64 i = out_len / 16 * 16 + tid(); i < out_len; i += ntid())
      ((volatile u8 *)out)[i] = (u8)f;
    // Output before the answer: the host reads it once `done` moves.
    __nvvm_membar_sys();
    __syncthreads();
    if (tid() == 0)
      db->done = b & 0xffff;
    last = b;
  }
}
