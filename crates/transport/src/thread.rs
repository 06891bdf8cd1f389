//! `thread`: the responder is a second thread of this process; the two exchange
//! through cache-line-aligned doorbells and data areas on the heap. The floor
//! every other transport is measured against.

use super::slots::{self, Initiator, Layout, Region, WaitError};
use crate::error::{Error, Result};
use crate::link::{
    BufferMode, Capabilities, CompletionMode, Link, LinkConfig, ReplyShape, Transport,
};
use crate::peer::Fault;
use std::alloc::{Layout as AllocLayout, alloc_zeroed, dealloc};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

pub struct Thread;

impl Transport for Thread {
    fn name(&self) -> &'static str {
        "thread"
    }

    fn summary(&self) -> &'static str {
        "two threads, cache-line doorbells in shared heap memory"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User, BufferMode::Raw, BufferMode::Inline],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Poll,
            max_message: crate::units::MAX_SIZE,
            max_inline: Some(slots::MAX_INLINE as u64),
            responder: "thread",
            options: &[],
            empty_messages: true,
            flow_control: true,
            max_reply: None,
        }
    }

    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let layout = Layout::new(cfg.buffers, cfg.max_request, cfg.max_reply);
        let mem = HeapRegion::new(layout.len)?;
        // SAFETY: fresh zeroed, page-aligned memory of layout.len bytes.
        let region = unsafe { Region::init(mem.ptr, layout) };
        let gone = Arc::new(AtomicBool::new(false));
        let (cpu, completion) = (cfg.responder_cpu, cfg.completion);
        let g = gone.clone();
        let handle = std::thread::Builder::new()
            .name("xb-responder".into())
            .spawn(move || {
                // Marks the responder gone however the thread ends, panics included.
                struct Gone(Arc<AtomicBool>);
                impl Drop for Gone {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::Relaxed);
                    }
                }
                let _g = Gone(g.clone());
                if let Some(c) = cpu {
                    crate::measure::placement::pin_current(c)?;
                }
                slots::respond(
                    region,
                    completion,
                    &AtomicBool::new(false),
                    &mut Fault::from_env(),
                )
                .map(|_| ())
            })
            .map_err(|e| Error::run_from("cannot start the responder thread", e))?;
        let init = Initiator::new(region, cfg.buffers, cfg.completion, cfg.timeout);
        Ok(Box::new(ThreadLink {
            init,
            gone,
            handle: Some(handle),
            timeout: cfg.timeout,
            _mem: mem,
        }))
    }
}

/// Page-aligned zeroed heap memory, freed on drop.
struct HeapRegion {
    ptr: *mut u8,
    layout: AllocLayout,
}

// SAFETY: the region is owned; moving its owner (a link) to another thread
// moves the initiator's accesses with it. The responder thread's accesses
// follow the doorbell protocol whichever thread the initiator runs on.
unsafe impl Send for HeapRegion {}

impl HeapRegion {
    fn new(len: usize) -> Result<HeapRegion> {
        let layout = AllocLayout::from_size_align(len, 4096)
            .map_err(|e| Error::run_from("region layout", e))?;
        // SAFETY: non-zero size (Layout::new always reserves pages).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::run(format!(
                "cannot allocate {len} bytes for the thread transport"
            )));
        }
        Ok(HeapRegion { ptr, layout })
    }
}

impl Drop for HeapRegion {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: allocated above with this layout.
            unsafe { dealloc(self.ptr, self.layout) }
        }
    }
}

struct ThreadLink {
    init: Initiator,
    gone: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<()>>>,
    timeout: std::time::Duration,
    // Last field: dropped after the responder thread was joined or abandoned.
    _mem: HeapRegion,
}

impl ThreadLink {
    fn failure(&mut self, e: WaitError) -> Error {
        match e {
            WaitError::TimedOut => Error::run(format!(
                "responder thread did not answer within {:.1}s; raise --timeout if it is just slow",
                self.timeout.as_secs_f64()
            )),
            WaitError::Gone => match self.handle.take().map(|h| h.join()) {
                Some(Ok(Err(e))) => e,
                Some(Err(_)) => Error::run("responder thread panicked"),
                _ => Error::run("responder thread ended unexpectedly"),
            },
        }
    }
}

impl Link for ThreadLink {
    fn request_buf(&mut self) -> &mut [u8] {
        self.init.request_buf()
    }

    fn reply(&self) -> &[u8] {
        self.init.reply()
    }

    fn configure(&mut self, shape: &ReplyShape) -> Result<()> {
        self.init
            .configure(shape, &self.gone)
            .map_err(|e| self.failure(e))
    }

    #[inline]
    fn exchange(&mut self) -> Result<()> {
        self.init.exchange(&self.gone).map_err(|e| self.failure(e))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        self.init.quit(&self.gone).map_err(|e| self.failure(e))?;
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::run("responder thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for ThreadLink {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            // Tell it to stop; if it cannot hear us (hung), leak the memory
            // rather than free it under a live thread.
            if self.init.quit(&self.gone).is_ok() {
                let _ = h.join();
            } else if !h.is_finished() {
                std::mem::forget(std::mem::replace(
                    &mut self._mem,
                    HeapRegion {
                        ptr: std::ptr::null_mut(),
                        layout: AllocLayout::new::<u8>(),
                    },
                ));
            }
        }
    }
}
