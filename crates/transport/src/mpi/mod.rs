//! `mpi`: ranks 0 and 1 of an MPI job (`mpirun -n 2 xferbench curve -t
//! mpi`) ping-pong with MPI_Send/MPI_Recv, as OSU and NetPIPE's MPI module
//! do. Both ranks run the same command line; rank 1 becomes the responder
//! when the link opens and leaves once rank 0 closes it, so only rank 0
//! reports. Built with the `mpi` cargo feature (Debian: openmpi-bin,
//! libopenmpi-dev, libclang); without it the transport says so.

use crate::error::{Error, Result};
use crate::link::{BufferMode, Capabilities, CompletionMode, Link, LinkConfig, Transport};

pub struct Mpi;

pub static MPI: Mpi = Mpi;

impl Transport for Mpi {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn summary(&self) -> &'static str {
        "MPI ranks 0 and 1 (run under mpirun -n 2; cargo feature `mpi`); `mesh -t mpi` spans every rank"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User],
            completions: &[CompletionMode::Block],
            default_completion: CompletionMode::Block,
            max_message: crate::units::MAX_SIZE,
            max_inline: None,
            responder: "MPI rank 1",
            options: &[],
            empty_messages: true,
            flow_control: true,
            max_reply: None,
        }
    }

    #[cfg(not(feature = "mpi"))]
    fn open(&self, _cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        Err(Error::usage(NOT_BUILT))
    }

    #[cfg(feature = "mpi")]
    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        imp::open(cfg)
    }
}

#[cfg(feature = "mpi")]
pub mod group;
#[cfg(feature = "mpi")]
pub mod world;

/// What a build without the `mpi` feature says when MPI is asked for.
#[cfg_attr(feature = "mpi", allow(dead_code))]
pub const NOT_BUILT: &str = "this xferbench was built without MPI; rebuild with `cargo build --release --features mpi` (needs Debian's openmpi-bin, libopenmpi-dev and libclang) and run under `mpirun -n N`";

/// This process's rank, once MPI is initialised.
pub fn rank() -> Option<usize> {
    #[cfg(feature = "mpi")]
    {
        use mpi::traits::Communicator;
        world::initialised().map(|w| w.rank() as usize)
    }
    #[cfg(not(feature = "mpi"))]
    None
}

/// Ends the whole MPI job with `code` once rank 0 has written what it could:
/// a rank that stopped answering cannot be waited for, and MPI_Finalize
/// would. Without MPI, exits.
pub fn abort(code: i32) -> ! {
    #[cfg(feature = "mpi")]
    if world::initialised().is_some() {
        world::abort(code)
    }
    std::process::exit(code)
}

/// Tells rank 0 that a signal (`signal`) stopped this rank and it leaves
/// the job, so that rank 0 writes its results naming this rank before the
/// launcher ends the job. Does nothing on rank 0 or without MPI.
pub fn leave(signal: i32) {
    #[cfg(feature = "mpi")]
    world::leave(signal);
    #[cfg(not(feature = "mpi"))]
    let _ = signal;
}

/// At the end of the process: rank 0 releases rank 1 and both finalise MPI.
/// Does nothing when MPI was never used.
pub fn shutdown() {
    #[cfg(feature = "mpi")]
    imp::shutdown();
}

#[cfg(feature = "mpi")]
mod imp {
    use super::*;
    use crate::buffer::PageBuf;
    use crate::link::{Pattern, ReplyShape};
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use std::time::Instant;

    const TAG_CTRL: i32 = 1;
    const TAG_DATA: i32 = 2;
    const CTRL_CONFIGURE: u8 = 1;
    /// One link ends; the responder waits for the next.
    const CTRL_QUIT: u8 = 2;
    /// The initiator's process ends; so does the responder's.
    const CTRL_EXIT: u8 = 3;

    use super::world::{finalize, world};

    /// Rank 0 opened a link: rank 1 serves until told to exit.
    static LINKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    pub fn shutdown() {
        if let Some(w) = super::world::initialised() {
            // Only a `-t mpi` link leaves rank 1 waiting for the word.
            if LINKED.load(std::sync::atomic::Ordering::Relaxed) && w.rank() == 0 {
                w.process_at_rank(1)
                    .send_with_tag(&control(CTRL_EXIT, &ReplyShape::default())[..], TAG_CTRL);
            }
            finalize();
        }
    }

    struct MpiLink {
        world: SimpleCommunicator,
        req: PageBuf,
        rep: PageBuf,
        shape: ReplyShape,
    }

    // SAFETY: one thread at a time calls MPI (a link is used by one thread
    // at a time, and only while the thread that initialised MPI waits on
    // it); see `world::world` for why MPI runs at MPI_THREAD_SINGLE.
    unsafe impl Send for MpiLink {}

    pub fn open(cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let world = world()?;
        if world.size() != 2 {
            return Err(Error::usage(format!(
                "-t mpi needs exactly two ranks; run it as `mpirun -n 2 xferbench …` (this job has {})",
                world.size()
            )));
        }
        if world.rank() == 1 {
            if let Some(c) = cfg.responder_cpu {
                crate::measure::placement::pin_current(c)?;
            }
            let r = respond(&world);
            finalize();
            // The responder has no results of its own to print.
            std::process::exit(if r.is_ok() { 0 } else { 1 });
        }
        LINKED.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(Box::new(MpiLink {
            world,
            // Written, not calloc's untouched pages: a send from those reads
            // the kernel's one zero page, from cache, and inflates bandwidth.
            req: PageBuf::filled(cfg.max_request, 0x5a),
            rep: PageBuf::filled(cfg.max_reply, 0x5a),
            shape: ReplyShape::default(),
        }))
    }

    fn control(kind: u8, s: &ReplyShape) -> [u8; 1 + ReplyShape::WIRE_LEN] {
        let mut b = [0u8; 1 + ReplyShape::WIRE_LEN];
        b[0] = kind;
        b[1..].copy_from_slice(&s.encode());
        b
    }

    fn respond(world: &SimpleCommunicator) -> Result<()> {
        let peer = world.process_at_rank(0);
        let mut buf = PageBuf::zeroed(0);
        loop {
            let mut frame = [0u8; 1 + ReplyShape::WIRE_LEN];
            peer.receive_into_with_tag(&mut frame[..], TAG_CTRL);
            let body: &[u8; ReplyShape::WIRE_LEN] = frame[1..].try_into().expect("sized");
            let shape = ReplyShape::decode(body)
                .ok_or_else(|| Error::run("mpi responder: malformed control message"))?;
            match frame[0] {
                CTRL_EXIT => return Ok(()),
                CTRL_QUIT => {
                    peer.send_with_tag(&[1u8][..], TAG_CTRL);
                    continue;
                }
                _ => peer.send_with_tag(&[1u8][..], TAG_CTRL),
            }
            let need = shape.request_len.max(shape.reply_len);
            buf.grow(need, 0x5a);
            for _ in 0..shape.exchanges {
                for _ in 0..shape.messages() {
                    peer.receive_into_with_tag(&mut buf[..shape.request_len], TAG_DATA);
                }
                if shape.delay_ns != 0 {
                    let t = Instant::now();
                    while (t.elapsed().as_nanos() as u64) < shape.delay_ns {
                        std::hint::spin_loop();
                    }
                }
                peer.send_with_tag(&buf[..shape.reply_len], TAG_DATA);
            }
        }
    }

    impl MpiLink {
        fn control(&mut self, kind: u8, s: &ReplyShape) {
            let peer = self.world.process_at_rank(1);
            peer.send_with_tag(&control(kind, s)[..], TAG_CTRL);
            let mut ack = [0u8; 1];
            peer.receive_into_with_tag(&mut ack[..], TAG_CTRL);
        }
    }

    impl Link for MpiLink {
        fn request_buf(&mut self) -> &mut [u8] {
            &mut self.req
        }

        fn reply(&self) -> &[u8] {
            &self.rep[..self.shape.reply_len]
        }

        fn configure(&mut self, shape: &ReplyShape) -> Result<()> {
            if shape.pattern == Pattern::Bidir {
                return Err(Error::usage(
                    "mpi runs pingpong and stream; bidir is not implemented over MPI",
                ));
            }
            if shape.chunk != 0 || shape.check.is_some() {
                return Err(Error::usage(
                    "mpi sends whole messages without fill-check; drop --chunk and --payload check",
                ));
            }
            self.control(CTRL_CONFIGURE, shape);
            self.shape = *shape;
            Ok(())
        }

        #[inline]
        fn exchange(&mut self) -> Result<()> {
            let sh = self.shape;
            let peer = self.world.process_at_rank(1);
            for _ in 0..sh.messages() {
                peer.send_with_tag(&self.req[..sh.request_len], TAG_DATA);
            }
            peer.receive_into_with_tag(&mut self.rep[..sh.reply_len], TAG_DATA);
            Ok(())
        }

        fn close(mut self: Box<Self>) -> Result<()> {
            self.control(CTRL_QUIT, &ReplyShape::default());
            Ok(())
        }
    }
}
