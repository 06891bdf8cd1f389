//! `cuda`: the Vollo IO round trip on an NVIDIA GPU. The responder is a
//! device program with no compute; a round trip is timed on the host clock
//! from submission to observed completion, as the Vollo runtime does.
//!
//! | buffers | per request                                                    |
//! |---------|----------------------------------------------------------------|
//! | user    | CPU copy into pinned staging, H2D copy, launch, D2H copy, CPU copy back |
//! | raw     | the caller fills pinned memory: H2D copy, launch, D2H copy     |
//! | graph   | the raw sequence captured once as a CUDA graph, one launch     |
//! | mmio    | the CPU writes the input into mapped pinned memory; a persistent device program polls it, and writes the output to mapped memory: no copy engine, no launch |
//!
//! mmio words follow NCCL's LL protocol (see `kernels.cu`): each 8-byte
//! word holds 4 payload bytes and the request's sequence number, stored at
//! once, so either side knows a word has arrived by its flag. A request up
//! to 124 bytes costs the device a single PCIe read; no fence and no
//! separate doorbell or completion flag are needed.
//!
//! `completion=poll` makes the context spin (CU_CTX_SCHED_SPIN) and waits
//! by spinning on cuStreamQuery; `block` makes it sleep on an interrupt
//! (CU_CTX_SCHED_BLOCKING_SYNC) in cuStreamSynchronize. mmio always spins
//! on its doorbell: nothing can wake a sleeper when the device writes host
//! memory.

use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, Pattern, ReplyShape, Spec,
    Transport,
};
pub mod bandwidth;
pub mod driver;

use crate::error::{Error, Result};
use cudarc::driver::sys;
use driver::{self as cuda, Ctx, HostMem, ck};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Cuda;

/// Largest mmio message either way (lengths travel in 16 bits; a payload
/// takes twice its size in LL words).
const MMIO_MAX: u64 = 32 << 10;
const _: () = assert!(MMIO_MAX < 1 << 16, "lengths travel in 16 bits");
/// Request lengths that ask the mmio program to end.
const EXIT_LENS: u64 = 0xffff_ffff;
/// Warps of the mmio program (`pollers=N`), each polling its own copy of
/// the request's first words with a PCIe read in flight, so the host's
/// request is seen by the next read to pass rather than a whole read round
/// trip late (kernels.cu says more).
const MMIO_POLLERS: u32 = 4;
/// LL words of each poller's copy: the header and the first input words.
const POLL_WORDS: usize = 32;

/// The mmio program's polling warps from `pollers=N`.
pub fn pollers(spec: &Spec) -> Result<u32> {
    let most = 8;
    match spec.get("pollers") {
        None => Ok(MMIO_POLLERS),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| {
                Error::usage(format!(
                    "cuda: pollers={v} is not a number of polling warps; use 1 to {most} (default {MMIO_POLLERS})"
                ))
            }),
    }
}

/// The GPU's ordinal from `device=N`.
pub fn ordinal(spec: &Spec) -> Result<i32> {
    match spec.get("device") {
        None => Ok(0),
        Some(v) => v.parse::<i32>().ok().filter(|d| *d >= 0).ok_or_else(|| {
            Error::usage(format!(
                "cuda: device={v} is not a GPU number; use device=0 (see nvidia-smi -L)"
            ))
        }),
    }
}

impl Transport for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn summary(&self) -> &'static str {
        "NVIDIA GPU: H2D copy, a no-compute device program, D2H copy (or mapped-memory doorbell)"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[
                BufferMode::User,
                BufferMode::Raw,
                BufferMode::Mmio,
                BufferMode::Graph,
            ],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Poll,
            max_message: crate::units::MAX_SIZE,
            max_inline: Some(MMIO_MAX),
            responder: "GPU",
            options: &[
                ("device", "GPU number (default 0)"),
                (
                    "dir",
                    "curve --mode stream: h2d, d2h, bidir or all (default all)",
                ),
                (
                    "host",
                    "curve --mode stream: pinned, pageable or all (default all)",
                ),
                (
                    "engine",
                    "curve --mode stream: ce (copy engine), sm (copy kernel) or all (default all)",
                ),
                (
                    "pollers",
                    "buffers=mmio: warps polling the request, each with a PCIe read in flight (1..8, default 4)",
                ),
            ],
            empty_messages: true,
            flow_control: true,
            max_reply: None,
        }
    }

    fn unavailable(&self) -> Option<String> {
        cuda::unavailable()
    }

    fn ensure_available(&self) -> Result<()> {
        cuda::unavailable().map_or(Ok(()), |why| Err(cuda::not_here(&why)))
    }

    fn check_options(&self, spec: &Spec) -> Result<()> {
        ordinal(spec)?;
        pollers(spec)?;
        bandwidth::Selection::from_spec(spec)?;
        Ok(())
    }

    fn check_link(&self, cfg: &LinkConfig) -> Result<()> {
        if cfg.buffers == BufferMode::Mmio && cfg.completion == CompletionMode::Block {
            return Err(Error::usage(
                "cuda: mmio completes through a flag the GPU writes in host memory, which can only be polled; use completion=poll",
            ));
        }
        Ok(())
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        self.check_link(cfg)?;
        Ok(Box::new(CudaLink::open(cfg)?))
    }
}

/// The persistent program of the mmio mode and its LL words.
struct Mmio {
    /// Request words: one copy per poller of `[0]` lengths and seq and
    /// `[1..32]` the first input words, then the input words from 32 on.
    req: HostMem,
    /// Reply words: the output (at least one word).
    rep: HostMem,
    /// Why the program ended: 1 asked, 2 idle (written by the device).
    status: HostMem,
    stream: sys::CUstream,
    /// Last sequence number sent (never 0: the program starts at 0).
    seq: u32,
    /// The delay the running program was started with.
    delay_ns: u64,
    /// Warps that poll the request words.
    pollers: u32,
    running: bool,
}

/// LL words for `bytes` payload bytes.
fn ll_words(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// Request words for `pollers` copies and `words` input words.
fn req_words(pollers: u32, words: usize) -> usize {
    pollers as usize * POLL_WORDS + words.saturating_sub(POLL_WORDS - 1)
}

/// Where input word `k` (1-based; 0 is the header) lives: in every copy
/// below 32, once after the copies from 32 on.
fn input_slots(pollers: u32, k: usize) -> impl Iterator<Item = usize> {
    let copies = pollers as usize;
    let (first, n) = if k < POLL_WORDS {
        (k, copies)
    } else {
        (copies * POLL_WORDS + k - POLL_WORDS, 1)
    };
    (0..n).map(move |c| first + c * POLL_WORDS)
}

/// Stores `header` into every poller's copy, after everything before it.
fn post_header(req: &[AtomicU64], pollers: u32, header: u64) {
    for c in 0..pollers as usize {
        req[c * POLL_WORDS].store(header, Ordering::Release);
    }
}

fn words(m: &HostMem) -> &[AtomicU64] {
    // SAFETY: page-aligned pinned memory that host and device access only
    // as whole 8-byte words.
    unsafe { std::slice::from_raw_parts(m.ptr as *const AtomicU64, m.len / 8) }
}

impl Mmio {
    fn next_seq(&mut self) -> u64 {
        self.seq = self.seq.wrapping_add(1).max(1);
        u64::from(self.seq)
    }
}

struct CudaLink {
    buffers: BufferMode,
    completion: CompletionMode,
    timeout: Duration,
    stream: sys::CUstream,
    /// Largest request and reply the buffers were sized for.
    max: (usize, usize),
    /// Pinned input and output, mapped into the GPU (raw, graph; user
    /// stages here; mmio uses its LL words instead).
    h_in: HostMem,
    h_out: HostMem,
    d_in: sys::CUdeviceptr,
    d_out: sys::CUdeviceptr,
    /// The caller's pageable memory in user mode.
    user_in: Vec<u8>,
    user_out: Vec<u8>,
    shape: ReplyShape,
    graph: Option<(sys::CUgraph, sys::CUgraphExec)>,
    mmio: Option<Mmio>,
    /// Declared last so it is dropped last: it owns everything above.
    ctx: Ctx,
}

// SAFETY: the raw handles belong to `ctx`, which `enter` makes current on
// whichever thread uses the link; a link is used by one thread at a time.
unsafe impl Send for CudaLink {}

impl CudaLink {
    fn open(cfg: &LinkConfig) -> Result<CudaLink> {
        let ctx = Ctx::new(ordinal(&cfg.spec)?, cfg.completion)?;
        let (nin, nout) = (cfg.max_request.max(1), cfg.max_reply.max(1));
        let stream = ctx.stream()?;
        let is_mmio = cfg.buffers == BufferMode::Mmio;
        // The caller's own memory, copied per request: user, and mmio (the
        // CPU writes it into the words, as an MMIO write would).
        let copies = matches!(cfg.buffers, BufferMode::User | BufferMode::Mmio);
        let (h_in, h_out, d_in, d_out) = if is_mmio {
            (ctx.host(0)?, ctx.host(0)?, 0, 0)
        } else {
            (
                ctx.host(nin)?,
                ctx.host(nout)?,
                ctx.device(nin)?,
                ctx.device(nout)?,
            )
        };
        let mmio = if is_mmio {
            Some(Mmio {
                req: ctx.host(8 * req_words(pollers(&cfg.spec)?, ll_words(nin)))?,
                rep: ctx.host(8 * ll_words(nout).max(1))?,
                status: ctx.host(64)?,
                stream: ctx.stream()?,
                seq: 0,
                delay_ns: 0,
                pollers: pollers(&cfg.spec)?,
                running: false,
            })
        } else {
            None
        };
        let mut link = CudaLink {
            buffers: cfg.buffers,
            completion: cfg.completion,
            timeout: cfg.timeout,
            stream,
            max: (nin, nout),
            h_in,
            h_out,
            d_in,
            d_out,
            // Written: calloc's untouched pages all read the kernel's zero
            // page, from cache, and would flatter the staging copy.
            user_in: if copies { vec![0x5a; nin] } else { Vec::new() },
            user_out: if copies { vec![0x5a; nout] } else { Vec::new() },
            shape: ReplyShape::default(),
            graph: None,
            mmio,
            ctx,
        };
        if link.mmio.is_some() {
            link.start_mmio(0)?;
        }
        Ok(link)
    }

    /// H2D copy, the echo program, D2H copy: queued, not waited for.
    fn enqueue(&self) -> Result<()> {
        let (nin, nout) = (self.shape.request_len, self.shape.reply_len);
        if nin > 0 {
            // SAFETY: both buffers hold at least nin bytes (checked at configure).
            ck(
                unsafe {
                    sys::cuMemcpyHtoDAsync_v2(
                        self.d_in,
                        self.h_in.ptr as *const _,
                        nin,
                        self.stream,
                    )
                },
                "copying the input to the GPU (cuMemcpyHtoDAsync)",
            )?;
        }
        cuda::launch(
            self.ctx.kernels.echo,
            1,
            1,
            self.stream,
            &[
                self.d_in,
                nin as u64,
                self.d_out,
                nout as u64,
                self.shape.delay_ns,
            ],
        )?;
        if nout > 0 {
            // SAFETY: both buffers hold at least nout bytes.
            ck(
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        self.h_out.ptr as *mut _,
                        self.d_out,
                        nout,
                        self.stream,
                    )
                },
                "copying the output to the host (cuMemcpyDtoHAsync)",
            )?;
        }
        Ok(())
    }

    /// Records the sequence once for this shape as a CUDA graph.
    fn capture(&mut self) -> Result<()> {
        self.drop_graph();
        // SAFETY: a live stream of the current context.
        ck(
            unsafe {
                sys::cuStreamBeginCapture_v2(
                    self.stream,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            },
            "starting a graph capture (cuStreamBeginCapture)",
        )?;
        let queued = self.enqueue();
        let mut graph = std::ptr::null_mut();
        // SAFETY: ends the capture begun above, whatever enqueue did.
        let ended = unsafe { sys::cuStreamEndCapture(self.stream, &mut graph) };
        queued?;
        ck(ended, "ending the graph capture (cuStreamEndCapture)")?;
        let mut exec = std::ptr::null_mut();
        // SAFETY: graph was just captured.
        ck(
            unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) },
            "instantiating the graph (cuGraphInstantiate)",
        )?;
        self.graph = Some((graph, exec));
        Ok(())
    }

    fn drop_graph(&mut self) {
        if let Some((g, e)) = self.graph.take() {
            // SAFETY: ours, not running (every launch was waited for).
            unsafe {
                sys::cuGraphExecDestroy(e);
                sys::cuGraphDestroy(g);
            }
        }
    }

    /// Starts the persistent mmio program (stopping a running one first).
    fn start_mmio(&mut self, delay_ns: u64) -> Result<()> {
        self.stop_mmio()?;
        let idle_ns = self.timeout.max(Duration::from_secs(60)).as_nanos() as u64;
        let kernel = self.ctx.kernels.mmio;
        let m = self.mmio.as_mut().expect("mmio link");
        // No stale flag may match the sequence numbers to come.
        for mem in [&m.req, &m.rep, &m.status] {
            words(mem)
                .iter()
                .for_each(|w| w.store(0, Ordering::Relaxed));
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        m.seq = 0;
        cuda::launch(
            kernel,
            1,
            32 * m.pollers,
            m.stream,
            &[m.req.dev, m.rep.dev, m.status.dev, idle_ns, delay_ns],
        )?;
        m.delay_ns = delay_ns;
        m.running = true;
        Ok(())
    }

    /// Asks the mmio program to end and waits for it (bounded).
    fn stop_mmio(&mut self) -> Result<()> {
        let timeout = self.timeout;
        let Some(m) = self.mmio.as_mut() else {
            return Ok(());
        };
        if !m.running {
            return Ok(());
        }
        let seq = m.next_seq();
        post_header(words(&m.req), m.pollers, EXIT_LENS | seq << 32);
        m.running = false;
        cuda::wait(m.stream, CompletionMode::Poll, timeout)
    }

    /// Has the mmio program ended by itself (idle timeout)?
    fn mmio_ended(&self) -> bool {
        self.mmio.as_ref().is_some_and(|m| {
            // SAFETY: a live stream of the current context.
            m.running && unsafe { sys::cuStreamQuery(m.stream) } == sys::CUresult::CUDA_SUCCESS
        })
    }

    /// One mmio request: the CPU writes the input words and the header,
    /// then spins until every reply word carries this request's number.
    fn ring(&mut self) -> Result<()> {
        let (nin, nout) = (self.shape.request_len, self.shape.reply_len);
        let timeout = self.timeout;
        let m = self.mmio.as_mut().expect("mmio link");
        let seq = m.next_seq();
        let req = words(&m.req);
        for (k, chunk) in self.user_in[..nin].chunks(4).enumerate() {
            let mut b = [0u8; 4];
            b[..chunk.len()].copy_from_slice(chunk);
            let word = u64::from(u32::from_le_bytes(b)) | seq << 32;
            for at in input_slots(m.pollers, k + 1) {
                req[at].store(word, Ordering::Relaxed);
            }
        }
        post_header(req, m.pollers, (nin | nout << 16) as u64 | seq << 32);
        let rep = &words(&m.rep)[..ll_words(nout).max(1)];
        let mut spins = 0u32;
        let mut start: Option<Instant> = None;
        for w in rep {
            while w.load(Ordering::Acquire) >> 32 != seq {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) {
                    let s = start.get_or_insert_with(Instant::now);
                    if s.elapsed() > timeout {
                        let why = match words(&m.status)[0].load(Ordering::Acquire) {
                            2 => "the device program ended after its idle timeout",
                            1 => "the device program was asked to end",
                            _ => "no answer from the device program",
                        };
                        return Err(Error::run(format!(
                            "cuda: mmio request not answered within {} ({why})",
                            humantime::format_duration(timeout)
                        )));
                    }
                }
                std::hint::spin_loop();
            }
        }
        for (chunk, w) in self.user_out[..nout].chunks_mut(4).zip(rep) {
            let v = (w.load(Ordering::Relaxed) as u32).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        Ok(())
    }
}

impl Link for CudaLink {
    fn request_buf(&mut self) -> &mut [u8] {
        if matches!(self.buffers, BufferMode::User | BufferMode::Mmio) {
            &mut self.user_in
        } else {
            self.h_in.slice_mut()
        }
    }

    fn reply(&self) -> &[u8] {
        let n = self.shape.reply_len;
        if matches!(self.buffers, BufferMode::User | BufferMode::Mmio) {
            &self.user_out[..n]
        } else {
            &self.h_out.slice()[..n]
        }
    }

    fn configure(&mut self, shape: &ReplyShape) -> Result<()> {
        self.ctx.enter()?;
        if shape.pattern != Pattern::Pingpong || shape.chunk != 0 {
            return Err(Error::usage(
                "cuda: a round trip is one request and one reply; bandwidth is `curve -t cuda --mode stream` (H2D, D2H and both ways)",
            ));
        }
        if shape.check.is_some() {
            return Err(Error::usage(
                "cuda: the device program computes nothing, so it cannot fill-check payloads; drop --payload fill-check",
            ));
        }
        if shape.request_len > self.max.0 || shape.reply_len > self.max.1 {
            return Err(Error::run(format!(
                "cuda: {} B in / {} B out is over the buffers opened ({} / {})",
                shape.request_len, shape.reply_len, self.max.0, self.max.1
            )));
        }
        let changed = (shape.request_len, shape.reply_len, shape.delay_ns)
            != (
                self.shape.request_len,
                self.shape.reply_len,
                self.shape.delay_ns,
            );
        self.shape = *shape;
        match self.buffers {
            BufferMode::Graph if changed || self.graph.is_none() => self.capture()?,
            BufferMode::Mmio => {
                let delay = self.mmio.as_ref().map_or(0, |m| m.delay_ns);
                if delay != shape.delay_ns || self.mmio_ended() {
                    self.start_mmio(shape.delay_ns)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn exchange(&mut self) -> Result<()> {
        self.ctx.enter()?;
        match self.buffers {
            BufferMode::User => {
                let n = self.shape.request_len;
                self.h_in.slice_mut()[..n].copy_from_slice(&self.user_in[..n]);
                self.enqueue()?;
                cuda::wait(self.stream, self.completion, self.timeout)?;
                let n = self.shape.reply_len;
                self.user_out[..n].copy_from_slice(&self.h_out.slice()[..n]);
                Ok(())
            }
            BufferMode::Raw => {
                self.enqueue()?;
                cuda::wait(self.stream, self.completion, self.timeout)
            }
            BufferMode::Graph => {
                let (_, exec) = self
                    .graph
                    .ok_or_else(|| Error::run("cuda: not configured"))?;
                // SAFETY: an instantiated graph of this context.
                ck(
                    unsafe { sys::cuGraphLaunch(exec, self.stream) },
                    "launching the graph (cuGraphLaunch)",
                )?;
                cuda::wait(self.stream, self.completion, self.timeout)
            }
            BufferMode::Mmio => self.ring(),
            BufferMode::Inline => Err(Error::usage("cuda has no inline buffers; use mmio")),
        }
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.ctx.enter()?;
        let stopped = self.stop_mmio();
        self.drop_graph();
        // The context goes with self and frees what it owns.
        stopped
    }
}

impl Drop for CudaLink {
    fn drop(&mut self) {
        // A link dropped without close (an error mid-run) still stops the
        // persistent program before its context is destroyed.
        if self.ctx.enter().is_ok() {
            let _ = self.stop_mmio();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_specs;

    #[test]
    fn options_are_checked_before_anything_runs() {
        assert!(parse_specs("cuda:device=0,buffers=mmio").is_ok());
        assert!(parse_specs("cuda:dir=h2d:host=pinned:engine=sm").is_ok());
        let e = parse_specs("cuda:device=-1").unwrap_err().to_string();
        assert!(e.contains("device=-1"), "{e}");
        assert!(parse_specs("cuda:buffers=mmio,pollers=8").is_ok());
        for bad in ["0", "9", "many"] {
            let e = parse_specs(&format!("cuda:pollers={bad}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("pollers={bad}")) && e.contains("1 to 8"),
                "{e}"
            );
        }
        let e = parse_specs("cuda:dir=sideways").unwrap_err().to_string();
        assert!(e.contains("h2d, d2h, bidir"), "{e}");
        let e = parse_specs("cuda:buffers=inline,completion=poll").unwrap();
        assert_eq!(e[0].get("buffers"), Some("inline"));
    }

    #[test]
    fn mode_support_is_declared() {
        let caps = Cuda.capabilities();
        for b in [
            BufferMode::User,
            BufferMode::Raw,
            BufferMode::Mmio,
            BufferMode::Graph,
        ] {
            assert!(caps.buffers.contains(&b), "{b:?}");
        }
        assert!(!caps.buffers.contains(&BufferMode::Inline));
        // mmio lengths travel in 16 bits of the header word.
        assert_eq!(caps.max_inline, Some(MMIO_MAX));
        let big = MMIO_MAX + 1;
        let shape = ReplyShape::pingpong(big as usize, 64, 0, 1);
        assert!(super::super::cannot_carry(&caps, BufferMode::Mmio, big, &shape).is_some());
        assert!(super::super::cannot_carry(&caps, BufferMode::Raw, big, &shape).is_none());
        assert_eq!(
            (ll_words(0), ll_words(1), ll_words(4), ll_words(5)),
            (0, 1, 1, 2)
        );
        // Each poller's copy holds the header and words 1..31; the rest
        // follow the copies once, and every slot is inside the buffer.
        assert_eq!(req_words(4, 31), 128);
        assert_eq!(req_words(4, 33), 130);
        assert_eq!(input_slots(4, 1).collect::<Vec<_>>(), [1, 33, 65, 97]);
        assert_eq!(input_slots(4, 31).collect::<Vec<_>>(), [31, 63, 95, 127]);
        assert_eq!(input_slots(4, 32).collect::<Vec<_>>(), [128]);
        assert_eq!(input_slots(1, 40).collect::<Vec<_>>(), [40]);
        for p in 1..=8 {
            for words in [0, 1, 31, 32, 33, 8192] {
                let n = req_words(p, words);
                assert!((1..=words).flat_map(|k| input_slots(p, k)).all(|at| at < n));
                let mut all: Vec<_> = (1..=words).flat_map(|k| input_slots(p, k)).collect();
                all.extend((0..p as usize).map(|c| c * POLL_WORDS));
                all.sort_unstable();
                all.dedup();
                assert_eq!(
                    all.len(),
                    words.min(31) * p as usize + words.saturating_sub(31) + p as usize
                );
            }
        }
    }

    #[test]
    fn open_without_a_gpu_is_one_clear_error() {
        if cuda::unavailable().is_none() {
            eprintln!("skipped: a GPU is present");
            return;
        }
        let cfg = LinkConfig {
            spec: parse_specs("cuda").unwrap().remove(0),
            buffers: BufferMode::Raw,
            completion: CompletionMode::Poll,
            max_request: 64,
            max_reply: 64,
            responder_cpu: None,
            timeout: Duration::from_secs(1),
            exe: std::path::PathBuf::from("/bin/true"),
        };
        let e = Cuda.open(&cfg).err().expect("no GPU").to_string();
        assert!(e.starts_with("cuda: not available ("), "{e}");
        // mmio with block completion is refused whether or not a GPU exists.
        let cfg = LinkConfig {
            buffers: BufferMode::Mmio,
            completion: CompletionMode::Block,
            ..cfg
        };
        let e = Cuda.open(&cfg).err().expect("refused").to_string();
        assert!(e.contains("completion=poll"), "{e}");
    }
}
