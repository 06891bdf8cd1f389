//! The initiator's end of a plugin device: exchanges become jobs.
//!
//! A round trip is one job (request in, reply out); curve's `stream` window
//! is `window` jobs with no reply, the last completion being the
//! acknowledgement; `bidir` is `window` round trips in flight at once. The
//! device's queue depth bounds what is in flight; a larger window refills
//! the queue as completions come back, as an application would.

use super::device::Device;
use super::ffi::{self, XbCaps, XbCompletion, XbJob, XbJobTimes};
use crate::buffer::PageBuf;
use crate::error::{Error, Result};
use crate::link::{BufferMode, CompletionMode, Link, LinkConfig, Pattern, ReplyShape};
use std::time::{Duration, Instant};

/// Where a buffer lives: the host's page-aligned memory or the plugin's.
enum Mem {
    Host(PageBuf),
    Device(*mut u8, usize),
}

// SAFETY: a device buffer is owned by the link as the device is (see
// Device: calls are serialised by &mut self, moved with the link).
unsafe impl Send for Mem {}

impl Mem {
    fn ptr(&mut self) -> *mut u8 {
        match self {
            Mem::Host(b) => b.as_mut_ptr(),
            Mem::Device(p, _) => *p,
        }
    }
    fn len(&self) -> usize {
        match self {
            Mem::Host(b) => b.len(),
            Mem::Device(_, n) => *n,
        }
    }
    fn slice(&self) -> &[u8] {
        match self {
            Mem::Host(b) => b,
            // SAFETY: the plugin's buffer of n bytes, alive until the device closes.
            Mem::Device(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) },
        }
    }
    fn slice_mut(&mut self) -> &mut [u8] {
        match self {
            Mem::Host(b) => b,
            // SAFETY: as above; the link is the only writer between jobs.
            Mem::Device(p, n) => unsafe { std::slice::from_raw_parts_mut(*p, *n) },
        }
    }
}

/// How block mode sleeps.
enum Sleep {
    /// Poll mode: never.
    Spin,
    /// In the plugin's wait().
    Wait,
    /// In poll(2) on the plugin's completion descriptor.
    Fd(i32),
}

pub struct PluginLink {
    // First field: the device closes (cancelling its jobs) before the host
    // buffers below are freed.
    dev: Device,
    req: Mem,
    rep: Mem,
    mode: u32,
    sleep: Sleep,
    timeout: Duration,
    shape: ReplyShape,
    /// Jobs the device takes at once.
    depth: u32,
    /// Per queue slot, the tag of the job in it (u64::MAX: free).
    slots: Vec<u64>,
    free: Vec<u32>,
    next_tag: u64,
    comps: Vec<XbCompletion>,
    /// Set when a job was lost (timeout): the device is out of step.
    broken: Option<String>,
    /// The device's request and reply limits (its caps).
    max: (u64, u64),
    /// Where the device reports its own time for a job, if it does.
    clock: Clock,
    /// Per queue slot, the device's clock readings for its job (ABI 1.1).
    times: Vec<XbJobTimes>,
    /// The device's time for the jobs of the last exchange, ns.
    device_ns: u64,
}

/// How the device tells its own time for a job.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clock {
    None,
    /// `xb_completion.hw_ns`, a duration.
    HwNs,
    /// `xb_job.times`, two readings of the device's clock.
    Times,
}

impl PluginLink {
    pub fn open(dev: Device, caps: &XbCaps, cfg: &LinkConfig) -> Result<PluginLink> {
        let mut dev = dev;
        let align = caps.alignment;
        // Buffers as large as the run asks, within what the device takes: a
        // curve's largest size may be over its limit (that point is skipped).
        let mut cfg = cfg.clone();
        cfg.max_request = cfg.max_request.min(caps.max_request as usize);
        cfg.max_reply = cfg.max_reply.min(caps.max_reply as usize);
        if cfg.buffers == BufferMode::Mmio {
            cfg.max_request = cfg.max_request.min(caps.max_mmio as usize);
        }
        let (mode, req, rep) = match cfg.buffers {
            BufferMode::User => (
                ffi::BUF_USER,
                Mem::Host(PageBuf::zeroed(cfg.max_request.max(1))),
                Mem::Host(PageBuf::zeroed(cfg.max_reply.max(1))),
            ),
            BufferMode::Raw => {
                let (q, r) = (cfg.max_request.max(1), cfg.max_reply.max(1));
                let req = Mem::Device(dev.alloc(ffi::BUF_RAW, q as u64, align)?, q);
                let rep = Mem::Device(dev.alloc(ffi::BUF_RAW, r as u64, align)?, r);
                (ffi::BUF_RAW, req, rep)
            }
            BufferMode::Mmio => {
                let q = cfg.max_request.max(1);
                let req = Mem::Device(dev.alloc(ffi::BUF_MMIO, q as u64, align)?, q);
                let r = cfg.max_reply.max(1);
                // Replies land in DMA-able memory when the device has it.
                let rep = if caps.buffer_modes & ffi::BUF_RAW != 0 {
                    Mem::Device(dev.alloc(ffi::BUF_RAW, r as u64, align)?, r)
                } else {
                    Mem::Host(PageBuf::zeroed(r))
                };
                (ffi::BUF_MMIO, req, rep)
            }
            other => {
                return Err(Error::usage(format!(
                    "plugin {}: {} buffers are not a plugin mode (user, raw, mmio)",
                    dev.lib.name,
                    other.name()
                )));
            }
        };
        let sleep = match cfg.completion {
            CompletionMode::Poll => Sleep::Spin,
            CompletionMode::Block if dev.lib.wait().is_some() => Sleep::Wait,
            CompletionMode::Block => Sleep::Fd(dev.completion_fd()?),
        };
        let depth = caps.max_inflight.clamp(1, 1 << 16);
        let clock = if caps.flags & ffi::CAP_HW_TIMESTAMPS != 0 {
            Clock::HwNs
        } else if caps.flags & ffi::CAP_DEVICE_TIMESTAMPS != 0 {
            Clock::Times
        } else {
            Clock::None
        };
        Ok(PluginLink {
            dev,
            req,
            rep,
            mode,
            sleep,
            timeout: cfg.timeout,
            shape: ReplyShape::default(),
            depth,
            slots: vec![u64::MAX; depth as usize],
            free: (0..depth).rev().collect(),
            next_tag: 0,
            comps: vec![XbCompletion::default(); depth.min(256) as usize],
            broken: None,
            max: (caps.max_request, caps.max_reply),
            clock,
            times: vec![
                XbJobTimes::default();
                if clock == Clock::Times {
                    depth as usize
                } else {
                    0
                }
            ],
            device_ns: 0,
        })
    }

    /// Submits one job into a free queue slot: `Ok(false)` when the device
    /// is busy.
    #[inline]
    fn submit(&mut self, request_len: usize, reply_len: usize) -> Result<bool> {
        let Some(&slot) = self.free.last() else {
            return Ok(false);
        };
        let tag = self.next_tag * u64::from(self.depth) + u64::from(slot);
        let job = XbJob {
            struct_size: std::mem::size_of::<XbJob>() as u32,
            mode: self.mode,
            tag,
            request: self.req.ptr().cast_const().cast(),
            request_len: request_len as u64,
            reply: self.rep.ptr().cast(),
            reply_len: reply_len as u64,
            device_offset: 0,
            times: match self.clock {
                Clock::Times => &mut self.times[slot as usize],
                _ => std::ptr::null_mut(),
            },
        };
        if !self.dev.submit(&job)? {
            return Ok(false);
        }
        self.free.pop();
        self.slots[slot as usize] = tag;
        self.next_tag += 1;
        Ok(true)
    }

    /// Checks one completion against the jobs in flight and frees its slot.
    #[inline]
    fn complete(&mut self, c: XbCompletion, reply_len: usize) -> Result<()> {
        let slot = (c.tag % u64::from(self.depth)) as usize;
        if self.slots[slot] != c.tag {
            let inflight = self.depth as usize - self.free.len();
            return Err(self.dev.misuse(
                "poll",
                format!(
                    "returned a completion with tag {}, which no job in flight has ({inflight} in flight)",
                    c.tag
                ),
            ));
        }
        self.slots[slot] = u64::MAX;
        self.free.push(slot as u32);
        self.device_ns += match self.clock {
            Clock::None => 0,
            Clock::HwNs => c.hw_ns,
            Clock::Times => {
                let t = self.times[slot];
                t.reply_sent_ns.saturating_sub(t.request_seen_ns)
            }
        };
        if c.status < 0 {
            let text = self.dev.message();
            return Err(Error::run(format!(
                "plugin {}: job {} failed ({}): {}",
                self.dev.lib.name,
                c.tag,
                ffi::status_name(c.status as i32),
                if text.is_empty() {
                    "the plugin gave no message"
                } else {
                    &text
                }
            )));
        }
        if c.status as u64 != reply_len as u64 {
            return Err(self.dev.misuse(
                "poll",
                format!(
                    "completed job {} with {} reply bytes; {reply_len} were asked for",
                    c.tag, c.status
                ),
            ));
        }
        Ok(())
    }

    /// Collects completions, or fails once the wait that `since` started is
    /// older than the timeout. Returns how many jobs completed. The clock
    /// starts only when a wait begins (at once when sleeping, after 64 empty
    /// polls when spinning), so a round trip that completes quickly reads no
    /// clock beyond the sampler's own.
    #[inline]
    fn reap(
        &mut self,
        reply_len: usize,
        since: &mut Option<Instant>,
        spins: &mut u32,
    ) -> Result<usize> {
        let mut comps = std::mem::take(&mut self.comps);
        let got = match self.sleep {
            Sleep::Spin => self.dev.poll(&mut comps),
            Sleep::Wait => {
                let left = self
                    .timeout
                    .saturating_sub(since.get_or_insert_with(Instant::now).elapsed());
                self.dev.wait(&mut comps, left.as_nanos() as u64)
            }
            // Sleep on the descriptor only when a poll found nothing: the
            // plugin drains it in poll, so a wakeup is never lost.
            Sleep::Fd(fd) => match self.dev.poll(&mut comps) {
                Ok(0) => {
                    let left = self
                        .timeout
                        .saturating_sub(since.get_or_insert_with(Instant::now).elapsed());
                    let mut p = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
                    // SAFETY: one valid pollfd.
                    let r = unsafe { libc::poll(&mut p, 1, ms) };
                    if r < 0
                        && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                    {
                        self.comps = comps;
                        return Err(Error::os(format!(
                            "plugin {}: poll(2) on the completion fd",
                            self.dev.lib.name
                        )));
                    }
                    self.dev.poll(&mut comps)
                }
                other => other,
            },
        };
        let got = match got {
            Ok(n) => n,
            Err(e) => {
                self.comps = comps;
                return Err(e);
            }
        };
        let mut result = Ok(got);
        for &c in &comps[..got] {
            if let Err(e) = self.complete(c, reply_len) {
                result = Err(e);
                break;
            }
        }
        self.comps = comps;
        if got == 0 {
            *spins += 1;
            // The clock is read only now and then while spinning.
            if (*spins & 63 == 0 || !matches!(self.sleep, Sleep::Spin))
                && since.get_or_insert_with(Instant::now).elapsed() >= self.timeout
            {
                return Err(self.lost());
            }
        }
        result
    }

    /// The error for jobs that never completed; the link is unusable after.
    fn lost(&mut self) -> Error {
        let inflight = self.depth as usize - self.free.len();
        let m = if inflight == 0 {
            format!(
                "plugin {}: submit kept returning XB_BUSY with no job in flight for {:.1}s",
                self.dev.lib.name,
                self.timeout.as_secs_f64()
            )
        } else {
            format!(
                "plugin {}: {inflight} job(s) did not complete within {:.1}s; raise --timeout if the device is just slow",
                self.dev.lib.name,
                self.timeout.as_secs_f64()
            )
        };
        self.broken = Some(m.clone());
        Error::run(m)
    }

    /// Runs `jobs` jobs of one shape, keeping the queue full.
    #[inline]
    fn run_jobs(&mut self, jobs: u64, request_len: usize, reply_len: usize) -> Result<()> {
        if let Some(m) = &self.broken {
            return Err(Error::run(format!("{m} (the device is out of step)")));
        }
        let (mut submitted, mut done) = (0u64, 0u64);
        self.device_ns = 0;
        let mut since: Option<Instant> = None;
        let mut spins = 0u32;
        while done < jobs {
            while submitted < jobs && self.submit(request_len, reply_len)? {
                submitted += 1;
            }
            let got = self.reap(reply_len, &mut since, &mut spins)?;
            if got > 0 {
                // Progress: the next wait is timed from its own start.
                done += got as u64;
                since = None;
                spins = 0;
            }
        }
        Ok(())
    }
}

impl PluginLink {
    /// Closes the device first; if its close hangs, or a call before it
    /// did (the device abandoned), the host buffers it may still write are
    /// leaked rather than freed under it.
    fn shutdown(&mut self) -> Result<()> {
        let idle = self.free.len() == self.depth as usize;
        let closed = self.dev.shutdown(idle);
        if closed.is_err() || self.dev.abandoned() {
            for m in [&mut self.req, &mut self.rep] {
                if let Mem::Host(b) = std::mem::replace(m, Mem::Device(std::ptr::null_mut(), 0)) {
                    std::mem::forget(b);
                }
            }
        }
        closed.map_err(Error::run)
    }
}

impl Drop for PluginLink {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!(
                "xferbench: warning: {}",
                crate::error::inert(&e.to_string())
            );
        }
    }
}

impl Link for PluginLink {
    fn request_buf(&mut self) -> &mut [u8] {
        self.req.slice_mut()
    }

    fn reply(&self) -> &[u8] {
        let n = match self.shape.pattern {
            Pattern::Stream => 0,
            _ => self.shape.reply_len,
        };
        &self.rep.slice()[..n.min(self.rep.len())]
    }

    fn configure(&mut self, shape: &ReplyShape) -> Result<()> {
        let name = &self.dev.lib.name;
        if shape.check.is_some() {
            return Err(Error::usage(format!(
                "plugin {name}: --payload fill-check needs a responder that checks and fills xferbench's values; a device plugin does not (`xferbench plugin check` verifies an echo device's replies)"
            )));
        }
        if shape.chunk != 0 {
            return Err(Error::usage(format!(
                "plugin {name}: a device takes whole messages as jobs; drop --chunk"
            )));
        }
        if shape.request_len as u64 > self.max.0 {
            return Err(Error::usage(format!(
                "plugin {name} takes requests of at most {} bytes; {} was asked for",
                self.max.0, shape.request_len
            )));
        }
        if shape.reply_len as u64 > self.max.1 && shape.pattern != Pattern::Stream {
            return Err(Error::usage(format!(
                "plugin {name} sends replies of at most {} bytes; {} was asked for",
                self.max.1, shape.reply_len
            )));
        }
        if shape.request_len > self.req.len() || shape.reply_len > self.rep.len() {
            return Err(Error::run(format!(
                "plugin {name}: a request of {} and a reply of {} bytes are over the buffers this link was opened with ({} and {} bytes)",
                shape.request_len,
                shape.reply_len,
                self.req.len(),
                self.rep.len()
            )));
        }
        // A stream's requests need no reply: their completions are the
        // acknowledgement.
        let reply = match shape.pattern {
            Pattern::Stream => 0,
            _ => shape.reply_len,
        };
        self.dev
            .configure(shape.request_len as u64, reply as u64, shape.delay_ns)?;
        self.dev.guard.set_context(format!(
            "jobs of request {} B, reply {reply} B{}",
            shape.request_len,
            match shape.pattern {
                Pattern::Pingpong => String::new(),
                _ => format!(", {} in flight", shape.window.max(1)),
            }
        ));
        self.shape = *shape;
        Ok(())
    }

    #[inline]
    fn exchange(&mut self) -> Result<()> {
        let s = self.shape;
        match s.pattern {
            Pattern::Pingpong => self.run_jobs(1, s.request_len, s.reply_len),
            Pattern::Stream => self.run_jobs(u64::from(s.window.max(1)), s.request_len, 0),
            Pattern::Bidir => self.run_jobs(u64::from(s.window.max(1)), s.request_len, s.reply_len),
        }
    }

    fn device_time(&self) -> Option<u64> {
        (self.clock != Clock::None).then_some(self.device_ns)
    }

    fn counters(&mut self) -> Option<serde_json::Value> {
        let counters = match self.dev.counters() {
            None => serde_json::Value::Null,
            Some(Ok(v)) => v,
            Some(Err(e)) => serde_json::json!({ "error": e.to_string() }),
        };
        let mut record = self.dev.lib.record();
        record["counters"] = counters;
        Some(record)
    }

    /// Only the close's own outcome: what broke the link before it is the
    /// run's error already, recorded as such; a close that returned is not
    /// a failed close.
    fn close(mut self: Box<Self>) -> Result<()> {
        self.shutdown()
    }
}
