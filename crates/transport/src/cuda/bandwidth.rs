//! `curve -t cuda --mode stream`: host↔device bandwidth over copy size,
//! measured as nvbandwidth does. A one-thread latch program holds the stream
//! while K copies are queued behind it, so they run back to back once it is
//! released; GPU events around the K copies time them; the figure is the
//! median of 3 trials (`--samples` sets the count).
//!
//! Every combination the spec selects is its own curve: direction (h2d,
//! d2h, bidir: both at once on two streams, the sum reported), host memory
//! (pinned, or pageable: the caller's malloc'ed memory, which the driver
//! stages) and engine (ce: the copy engines; sm: a copy program reading or
//! writing mapped pinned memory). Pageable copies are not latched: the
//! driver copies them through its staging buffer while the host waits, so
//! queueing them behind a latch would stall the host; they are timed by
//! events alone, as a program issuing them would see.

use super::driver::{COPY_THREADS, Ctx, HostMem, ck};
use crate::error::{Error, Result};
use crate::link::{CompletionMode, Spec};
use cudarc::driver::sys;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    H2d,
    D2h,
    Bidir,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    Pinned,
    Pageable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Ce,
    Sm,
}

impl Dir {
    fn name(self) -> &'static str {
        match self {
            Dir::H2d => "h2d",
            Dir::D2h => "d2h",
            Dir::Bidir => "bidir",
        }
    }
}

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::Pinned => "pinned",
            Host::Pageable => "pageable",
        }
    }
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Ce => "ce",
            Engine::Sm => "sm",
        }
    }
}

/// The combinations a spec's `dir=`, `host=` and `engine=` select.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub dirs: Vec<Dir>,
    pub hosts: Vec<Host>,
    pub engines: Vec<Engine>,
}

fn pick<T: Copy>(spec: &Spec, key: &str, all: &[(&str, T)]) -> Result<Vec<T>> {
    match spec.get(key) {
        None | Some("all") => Ok(all.iter().map(|(_, v)| *v).collect()),
        Some(v) => all
            .iter()
            .find(|(n, _)| *n == v)
            .map(|(_, t)| vec![*t])
            .ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
                Error::usage(format!(
                    "cuda: {key}={v} is not one of {} or all",
                    names.join(", ")
                ))
            }),
    }
}

impl Selection {
    pub fn from_spec(spec: &Spec) -> Result<Selection> {
        Ok(Selection {
            dirs: pick(
                spec,
                "dir",
                &[("h2d", Dir::H2d), ("d2h", Dir::D2h), ("bidir", Dir::Bidir)],
            )?,
            hosts: pick(
                spec,
                "host",
                &[("pinned", Host::Pinned), ("pageable", Host::Pageable)],
            )?,
            engines: pick(spec, "engine", &[("ce", Engine::Ce), ("sm", Engine::Sm)])?,
        })
    }

    /// Every curve selected, in the order they are measured.
    pub fn curves(&self) -> Vec<(Dir, Host, Engine)> {
        let mut v = Vec::new();
        for &d in &self.dirs {
            for &h in &self.hosts {
                for &e in &self.engines {
                    v.push((d, h, e));
                }
            }
        }
        v
    }
}

/// Why a combination cannot be measured, if it cannot.
pub fn impossible(host: Host, engine: Engine) -> Option<&'static str> {
    (host == Host::Pageable && engine == Engine::Sm)
        .then_some("a copy program cannot reach pageable memory (it is not mapped into the GPU)")
}

/// The spec naming one curve: `cuda:dir=h2d,host=pinned,engine=ce`.
pub fn curve_spec(base: &Spec, d: Dir, h: Host, e: Engine) -> Spec {
    let mut options: Vec<(String, String)> = base
        .options
        .iter()
        .filter(|(k, _)| !["dir", "host", "engine", "buffers"].contains(&k.as_str()))
        .cloned()
        .collect();
    options.push(("dir".into(), d.name().into()));
    options.push(("host".into(), h.name().into()));
    options.push(("engine".into(), e.name().into()));
    Spec {
        name: base.name.clone(),
        options,
    }
}

/// Copies per trial: enough that a trial is long against the events'
/// ~0.5 µs resolution, few enough that they all fit in the stream's queue
/// behind the latch (a full queue would block the host until the latch
/// gave up).
pub fn copies_per_trial(size: u64) -> u32 {
    let want = (256u64 << 20).div_ceil(size.max(1));
    want.clamp(16, 256) as u32
}

/// Buffers and streams for one configuration, sized for the largest copy.
pub struct Rig {
    ctx: Ctx,
    streams: [sys::CUstream; 2],
    events: [sys::CUevent; 3],
    /// Device buffers, one per direction (bidir uses both).
    dev: [sys::CUdeviceptr; 2],
    pinned: [HostMem; 2],
    pageable: [Vec<u8>; 2],
    /// The latch flag and its timed-out word, in mapped pinned memory.
    latch: HostMem,
    timeout: Duration,
}

impl Rig {
    /// Allocates everything one configuration needs, for copies up to `largest` bytes.
    pub fn new(
        ordinal: i32,
        completion: CompletionMode,
        largest: usize,
        pageable: bool,
        timeout: Duration,
    ) -> Result<Rig> {
        let ctx = Ctx::new(ordinal, completion)?;
        let streams = [ctx.stream()?, ctx.stream()?];
        // Timing events (blocking-sync in block mode, like the context).
        let events = [ctx.event()?, ctx.event()?, ctx.event()?];
        let dev = [ctx.device(largest)?, ctx.device(largest)?];
        let pinned = [ctx.host(largest)?, ctx.host(largest)?];
        let pageable = if pageable {
            // Touched, so the pages exist before the first copy.
            [vec![1u8; largest.max(1)], vec![1u8; largest.max(1)]]
        } else {
            [Vec::new(), Vec::new()]
        };
        let latch = ctx.host(64)?;
        Ok(Rig {
            ctx,
            streams,
            events,
            dev,
            pinned,
            pageable,
            latch,
            timeout,
        })
    }

    fn flag(&self, i: usize) -> &AtomicU32 {
        // SAFETY: 64 bytes of 4-aligned pinned memory, accessed as whole words.
        unsafe { &*(self.latch.ptr as *const AtomicU32).add(i) }
    }

    /// Queues the latch on stream `s`.
    fn latch(&self, s: usize) -> Result<()> {
        super::driver::launch(
            self.ctx.kernels.latch,
            1,
            1,
            self.streams[s],
            &[
                self.latch.dev,
                self.timeout.as_nanos() as u64,
                self.latch.dev + 4,
            ],
        )
    }

    /// Queues one copy of `n` bytes on stream `s` going `dir` (h2d or d2h).
    fn copy(&mut self, s: usize, dir: Dir, host: Host, engine: Engine, n: usize) -> Result<()> {
        let stream = self.streams[s];
        let dev = self.dev[s];
        match (engine, host) {
            (Engine::Ce, _) => {
                let h: *mut u8 = match host {
                    Host::Pinned => self.pinned[s].ptr,
                    Host::Pageable => self.pageable[s].as_mut_ptr(),
                };
                // SAFETY: every buffer holds at least the largest size.
                let r = unsafe {
                    match dir {
                        Dir::H2d => sys::cuMemcpyHtoDAsync_v2(dev, h as *const _, n, stream),
                        _ => sys::cuMemcpyDtoHAsync_v2(h as *mut _, dev, n, stream),
                    }
                };
                ck(r, "queueing a copy (cuMemcpyAsync)")
            }
            (Engine::Sm, _) => {
                let host_dev = self.pinned[s].dev;
                let (dst, src) = match dir {
                    Dir::H2d => (dev, host_dev),
                    _ => (host_dev, dev),
                };
                super::driver::launch(
                    self.ctx.kernels.copy,
                    self.ctx.copy_blocks(n),
                    COPY_THREADS,
                    stream,
                    &[dst, src, n as u64],
                )
            }
        }
    }

    fn record(&self, e: usize, s: usize) -> Result<()> {
        // SAFETY: live event and stream of this context.
        ck(
            unsafe { sys::cuEventRecord(self.events[e], self.streams[s]) },
            "cuEventRecord",
        )
    }

    /// One trial: K copies of `n` bytes (each way for bidir); their GPU
    /// time in ns.
    /// Times `k` copies of `n` bytes queued back to back; ns per trial.
    pub fn trial(&mut self, dir: Dir, host: Host, engine: Engine, n: usize, k: u32) -> Result<f64> {
        self.ctx.enter()?;
        let latched = host == Host::Pinned;
        self.flag(0).store(0, Ordering::Release);
        self.flag(1).store(0, Ordering::Release);
        let ways: &[(usize, Dir)] = match dir {
            Dir::Bidir => &[(0, Dir::H2d), (1, Dir::D2h)],
            d => &[(0, d)],
        };
        let queued = (|| -> Result<()> {
            for &(s, _) in ways {
                if latched {
                    self.latch(s)?;
                }
            }
            self.record(0, 0)?;
            if ways.len() == 2 {
                // The second stream starts when the first does.
                // SAFETY: live stream and event.
                ck(
                    unsafe { sys::cuStreamWaitEvent(self.streams[1], self.events[0], 0) },
                    "cuStreamWaitEvent",
                )?;
            }
            for _ in 0..k {
                for &(s, d) in ways {
                    self.copy(s, d, host, engine, n)?;
                }
            }
            if ways.len() == 2 {
                self.record(2, 1)?;
                // SAFETY: live stream and event.
                ck(
                    unsafe { sys::cuStreamWaitEvent(self.streams[0], self.events[2], 0) },
                    "cuStreamWaitEvent",
                )?;
            }
            self.record(1, 0)
        })();
        // Released whatever happened, so nothing stays latched.
        self.flag(0).store(1, Ordering::Release);
        let completion = self.ctx.completion;
        let waited = self
            .streams
            .iter()
            .try_for_each(|&s| super::driver::wait(s, completion, self.timeout));
        queued?;
        waited?;
        if self.flag(1).load(Ordering::Acquire) != 0 {
            return Err(Error::run(format!(
                "cuda: the latch gave up before {k} copies were queued behind it; the host could not queue them in {}",
                humantime::format_duration(self.timeout)
            )));
        }
        let mut ms = 0f32;
        // SAFETY: both events completed (the streams were waited for).
        ck(
            unsafe { sys::cuEventElapsedTime(&mut ms, self.events[0], self.events[1]) },
            "cuEventElapsedTime",
        )?;
        Ok(f64::from(ms) * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_specs;

    #[test]
    fn selection_defaults_to_every_combination() {
        let s = Selection::from_spec(&parse_specs("cuda").unwrap()[0]).unwrap();
        assert_eq!(s.curves().len(), 3 * 2 * 2);
        let s = Selection::from_spec(&parse_specs("cuda:dir=h2d:engine=ce").unwrap()[0]).unwrap();
        assert_eq!(
            s.curves(),
            vec![
                (Dir::H2d, Host::Pinned, Engine::Ce),
                (Dir::H2d, Host::Pageable, Engine::Ce)
            ]
        );
        let e = parse_specs("cuda:host=wc").unwrap_err().to_string();
        assert!(e.contains("pinned, pageable or all"), "{e}");
    }

    #[test]
    fn pageable_memory_has_no_copy_program() {
        assert!(impossible(Host::Pageable, Engine::Sm).is_some());
        assert!(impossible(Host::Pinned, Engine::Sm).is_none());
        assert!(impossible(Host::Pageable, Engine::Ce).is_none());
    }

    #[test]
    fn curve_specs_name_their_combination() {
        let base = &parse_specs("cuda:device=1,dir=all").unwrap()[0];
        let s = curve_spec(base, Dir::D2h, Host::Pinned, Engine::Sm);
        assert_eq!(s.to_string(), "cuda:device=1,dir=d2h,host=pinned,engine=sm");
    }

    #[test]
    fn trials_hold_enough_copies_and_fit_the_queue() {
        assert_eq!(copies_per_trial(4), 256);
        assert_eq!(copies_per_trial(1 << 20), 256);
        assert_eq!(copies_per_trial(4 << 20), 64);
        assert_eq!(copies_per_trial(512 << 20), 16);
        assert_eq!(copies_per_trial(0), 256);
    }
}
