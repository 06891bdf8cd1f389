//! `xferbench plugin check FILE.so [key=value...]`: the conformance run a
//! vendor uses while writing a plugin. Every capability the plugin declares
//! is exercised through the ABI directly (not through the experiments), so a
//! failure names the operation that broke its promise: reply lengths and
//! contents, tags, queue depth and XB_BUSY, refusals with messages, delays,
//! jobs that never complete. A watchdog ends the run if a call into the
//! plugin never returns.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::transport::plugin::{self, Device, PluginTransport, ffi, kind_name};
use crate::transport::{CompletionMode, Spec, Transport};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Serialize)]
struct Verdict {
    check: String,
    /// "ok", "FAIL" or "skip".
    result: &'static str,
    detail: String,
}

#[derive(Serialize)]
struct Report {
    plugin: String,
    path: String,
    checks: Vec<Verdict>,
    failed: usize,
    passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<serde_json::Value>,
}

struct Checker {
    verdicts: Vec<Verdict>,
    timeout: Duration,
    /// What the watchdog names if a call hangs; its deadline in ms since start.
    watch: Arc<(std::sync::Mutex<String>, AtomicU64)>,
    start: Instant,
    quiet_table: bool,
}

impl Checker {
    fn record(&mut self, check: impl Into<String>, r: std::result::Result<String, String>) {
        let (result, detail) = match r {
            Ok(d) => ("ok", d),
            Err(d) => ("FAIL", d),
        };
        let v = Verdict {
            check: check.into(),
            result,
            detail,
        };
        if !self.quiet_table {
            println!("{:<5} {}: {}", v.result, v.check, v.detail);
        }
        self.verdicts.push(v);
    }

    fn skip(&mut self, check: impl Into<String>, why: impl Into<String>) {
        let v = Verdict {
            check: check.into(),
            result: "skip",
            detail: why.into(),
        };
        if !self.quiet_table {
            println!("{:<5} {}: {}", v.result, v.check, v.detail);
        }
        self.verdicts.push(v);
    }

    /// Arms the watchdog for a call named `what`: if it is still running
    /// twice the timeout plus a second later, the process ends with exit 1.
    fn arm(&self, what: &str) {
        *self.watch.0.lock().unwrap_or_else(|e| e.into_inner()) = what.to_string();
        let deadline = self.start.elapsed() + self.timeout * 2 + Duration::from_secs(1);
        self.watch
            .1
            .store(deadline.as_millis() as u64, Ordering::Relaxed);
    }

    fn disarm(&self) {
        self.watch.1.store(u64::MAX, Ordering::Relaxed);
    }
}

/// Collects completions until `want` arrived or the timeout passed.
fn reap(
    dev: &mut Device,
    block: bool,
    want: usize,
    timeout: Duration,
) -> std::result::Result<Vec<ffi::XbCompletion>, String> {
    let mut got = Vec::new();
    let mut buf = vec![ffi::XbCompletion::default(); 64];
    let t0 = Instant::now();
    while got.len() < want {
        let left = timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return Err(format!(
                "{} of {want} job(s) never completed within {:.1}s (poll/wait kept returning none)",
                want - got.len(),
                timeout.as_secs_f64()
            ));
        }
        let n = if block && dev.lib.wait().is_some() {
            dev.wait(&mut buf, left.as_nanos() as u64)
        } else {
            // Sleep on the descriptor only after a poll found nothing.
            let first = dev.poll(&mut buf).map_err(|e| e.to_string())?;
            if first > 0 {
                got.extend_from_slice(&buf[..first]);
                continue;
            }
            if block {
                let fd = dev.completion_fd().map_err(|e| e.to_string())?;
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = left.as_millis().clamp(1, 1000) as i32;
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut p, 1, ms) };
            }
            dev.poll(&mut buf)
        }
        .map_err(|e| e.to_string())?;
        got.extend_from_slice(&buf[..n]);
    }
    Ok(got)
}

/// A buffer for one direction: the host's, or the plugin's of `kind`.
fn buffer(dev: &mut Device, kind: u32, len: usize, align: u32) -> Result<*mut u8> {
    if kind == ffi::BUF_USER {
        let b = crate::buffer::PageBuf::zeroed(len.max(1));
        // Leaked for the check's short life: the device may hold it until close.
        Ok(Box::leak(Box::new(b)).as_mut_ptr())
    } else {
        dev.alloc(kind, len.max(1) as u64, align)
    }
}

const CANARY: u8 = 0xA5;

/// A job of `mode` tagged `tag`, `rq` bytes from `req`, `rp` into `rep`.
fn job(
    (mode, tag): (u32, u64),
    (req, rq): (*mut u8, u64),
    (rep, rp): (*mut u8, u64),
) -> ffi::XbJob {
    ffi::XbJob {
        struct_size: std::mem::size_of::<ffi::XbJob>() as u32,
        mode,
        tag,
        request: req.cast_const().cast(),
        request_len: rq,
        reply: rep.cast(),
        reply_len: rp,
        device_offset: 0,
        times: std::ptr::null_mut(),
    }
}

/// Runs `jobs` round trips of one shape, one at a time, checking tags,
/// lengths, contents (if the device echoes) and the bytes past the reply.
#[allow(clippy::too_many_arguments)]
fn shape_check(
    dev: &mut Device,
    caps: &ffi::XbCaps,
    kind: u32,
    block: bool,
    req: *mut u8,
    rep: *mut u8,
    (rq, rp): (usize, usize),
    room: usize,
    jobs: u64,
    timeout: Duration,
) -> std::result::Result<String, String> {
    dev.configure(rq as u64, rp as u64, 0)
        .map_err(|e| e.to_string())?;
    let echo = caps.flags & ffi::CAP_ECHO != 0;
    for j in 0..jobs {
        // SAFETY: both buffers hold at least rq and room bytes.
        let (rqs, rps) = unsafe {
            (
                std::slice::from_raw_parts_mut(req, rq),
                std::slice::from_raw_parts_mut(rep, room),
            )
        };
        for (i, b) in rqs.iter_mut().enumerate() {
            *b = (i as u64).wrapping_mul(31).wrapping_add(j * 7 + 1) as u8;
        }
        rps.fill(CANARY);
        let tag = 0x5eed_0000 + j;
        let job = job((kind, tag), (req, rq as u64), (rep, rp as u64));
        match dev.submit(&job) {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "submit returned XB_BUSY with no job in flight (job {j})"
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
        let c = reap(dev, block, 1, timeout)?;
        if c.len() != 1 {
            return Err(format!(
                "one job in flight, {} completions came back",
                c.len()
            ));
        }
        let c = c[0];
        if c.tag != tag {
            return Err(format!(
                "completion tag {:#x}, the job's was {tag:#x}",
                c.tag
            ));
        }
        if c.status < 0 {
            return Err(format!(
                "job failed ({}): {}",
                ffi::status_name(c.status as i32),
                dev.message()
            ));
        }
        if c.status as usize != rp {
            return Err(format!(
                "completion says {} reply bytes; {rp} were asked for",
                c.status
            ));
        }
        // SAFETY: as above; the job completed, the device is done with it.
        let rps = unsafe { std::slice::from_raw_parts(rep, room) };
        if let Some(i) = rps[rp..].iter().position(|&b| b != CANARY) {
            return Err(format!(
                "wrote past reply_len: byte {} of the reply buffer changed",
                rp + i
            ));
        }
        if echo {
            // SAFETY: as above.
            let rqs = unsafe { std::slice::from_raw_parts(req, rq) };
            let n = rq.min(rp);
            if let Some(i) = (0..n).find(|&i| rps[i] != rqs[i]) {
                return Err(format!(
                    "job {j}: reply byte {i} is {:#04x}, the request's was {:#04x} (the plugin declares XB_CAP_ECHO)",
                    rps[i], rqs[i]
                ));
            }
        }
    }
    Ok(format!(
        "{jobs} jobs, tags, lengths{} and bytes past the reply checked",
        if echo { ", echoed contents" } else { "" }
    ))
}

/// Fills the queue to its declared depth, expects XB_BUSY one past it, then
/// checks every tag comes back exactly once.
fn depth_check(
    dev: &mut Device,
    caps: &ffi::XbCaps,
    kind: u32,
    block: bool,
    req: *mut u8,
    rep: *mut u8,
    timeout: Duration,
) -> std::result::Result<String, String> {
    let depth = caps.max_inflight.min(1024) as u64;
    dev.configure(1, 1, 0).map_err(|e| e.to_string())?;
    let mut accepted = 0u64;
    for t in 0..depth {
        let job = job((kind, 1_000 + t), (req, 1), (rep, 1));
        match dev.submit(&job) {
            Ok(true) => accepted += 1,
            // A device may fill before its depth when it completes nothing
            // yet: take what came back, then continue.
            Ok(false) => {
                let _ = reap(dev, block, accepted as usize, timeout);
                return Err(format!(
                    "submit returned XB_BUSY after {} job(s); caps declare max_inflight {}",
                    t, caps.max_inflight
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut extra = String::new();
    if caps.max_inflight as u64 == depth {
        let job = job((kind, 1_000 + depth), (req, 1), (rep, 1));
        match dev.submit(&job) {
            Ok(false) => extra = ", XB_BUSY one past it".into(),
            Ok(true) => {
                // Drain it too before failing, so close finds a quiet device.
                let _ = reap(dev, block, accepted as usize + 1, timeout);
                return Err(format!(
                    "submit accepted job {} with max_inflight {} already queued: it must return XB_BUSY",
                    depth + 1,
                    caps.max_inflight
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let got = reap(dev, block, accepted as usize, timeout)?;
    let mut seen = vec![false; accepted as usize];
    for c in &got {
        let i = c.tag.wrapping_sub(1_000);
        if i >= accepted {
            return Err(format!("completion with tag {}, which no job had", c.tag));
        }
        if std::mem::replace(&mut seen[i as usize], true) {
            return Err(format!("tag {} completed twice", c.tag));
        }
        if c.status != 1 {
            return Err(format!(
                "job {} completed with status {}; 1 byte was asked for",
                c.tag, c.status
            ));
        }
    }
    Ok(format!(
        "{accepted} jobs in flight{extra}, every tag back once"
    ))
}

/// The refusals the plugin owes: over-long requests, shapes or delays it
/// does not declare, each with a message.
fn refusals(ck: &mut Checker, dev: &mut Device, caps: &ffi::XbCaps) {
    let expect_refusal = |ck: &mut Checker, name: &str, r: Result<()>| {
        ck.record(
            name,
            match r {
                Ok(()) => Err("accepted it; it must return a negative status".into()),
                Err(e) if e.to_string().contains("the plugin gave no message") => {
                    Err(format!("refused without a message: {e}"))
                }
                Err(e) => Ok(format!("refused: {e}")),
            },
        )
    };
    ck.arm("configure");
    let r = dev.configure(caps.max_request.saturating_add(1), 1, 0);
    expect_refusal(ck, "refuses a request over max_request", r);
    if caps.flags & ffi::CAP_REPLY_LONGER == 0 {
        let r = dev.configure(64.min(caps.max_request), 64.min(caps.max_request) + 1, 0);
        expect_refusal(
            ck,
            "refuses a reply longer than the request (no XB_CAP_REPLY_LONGER)",
            r,
        );
    }
    if caps.flags & ffi::CAP_DELAY == 0 {
        let r = dev.configure(1, 1, 1_000_000);
        expect_refusal(ck, "refuses a delay (no XB_CAP_DELAY)", r);
    }
    if caps.flags & ffi::CAP_EMPTY == 0 {
        let r = dev.configure(0, 1, 0);
        expect_refusal(ck, "refuses an empty request (no XB_CAP_EMPTY)", r);
    }
    ck.disarm();
}

/// What a device's `counters` gave: nothing (NULL), or its JSON.
type Counters = Option<Result<serde_json::Value>>;

/// One buffer mode with one completion mode: shapes, depth, delay. The
/// first device that ran every check has its counters read into `counters`
/// (one device open at a time: some hardware allows no more).
fn mode_checks(
    ck: &mut Checker,
    t: &PluginTransport,
    kind: u32,
    cm: CompletionMode,
    counters: &mut Option<Counters>,
) {
    let label = format!("{}/{}", kind_name(kind), cm.name());
    let block = cm == CompletionMode::Block;
    ck.arm("open");
    let dev = t.device(cm, None, ck.timeout);
    ck.disarm();
    let mut dev = match dev {
        Ok(d) => d,
        Err(e) => {
            ck.record(format!("{label} open"), Err(e.to_string()));
            return;
        }
    };
    let caps = t.caps;
    let maxq = caps.max_request.min(64 << 10) as usize;
    let maxp = caps.max_reply.min(64 << 10) as usize;
    let limit = if kind == ffi::BUF_MMIO {
        caps.max_mmio.min(maxq as u64) as usize
    } else {
        maxq
    };
    let room = maxp + 64;
    let reply_kind = if kind == ffi::BUF_USER || caps.buffer_modes & ffi::BUF_RAW == 0 {
        ffi::BUF_USER
    } else {
        ffi::BUF_RAW
    };
    ck.arm("alloc");
    let bufs = buffer(&mut dev, kind, limit, caps.alignment)
        .and_then(|q| Ok((q, buffer(&mut dev, reply_kind, room, caps.alignment)?)));
    ck.disarm();
    let (req, rep) = match bufs {
        Ok(b) => b,
        Err(e) => {
            ck.record(format!("{label} buffers"), Err(e.to_string()));
            return;
        }
    };
    let mut shapes = vec![
        (1usize.min(limit), 1usize.min(maxp)),
        (64.min(limit), 64.min(maxp)),
    ];
    shapes.push((limit, limit.min(maxp)));
    shapes.push((64.min(limit), 0));
    if caps.flags & ffi::CAP_REPLY_LONGER != 0 {
        shapes.push((16.min(limit), maxp));
    }
    if caps.flags & ffi::CAP_EMPTY != 0 {
        shapes.push((0, 64.min(maxp)));
    }
    shapes.dedup();
    for (rq, rp) in shapes {
        let name = format!("{label} request {rq} reply {rp}");
        ck.arm(&format!("{name} (submit/poll/wait)"));
        let r = shape_check(
            &mut dev,
            &caps,
            kind,
            block,
            req,
            rep,
            (rq, rp),
            room,
            8,
            ck.timeout,
        );
        ck.disarm();
        let failed = r.is_err();
        ck.record(name, r);
        if failed {
            // The device may be out of step: a fresh one for the rest.
            return;
        }
    }
    if block && dev.lib.wait().is_some() {
        ck.arm(&format!("{label} wait(0)"));
        let t0 = Instant::now();
        let mut buf = [ffi::XbCompletion::default(); 4];
        let r = match dev.wait(&mut buf, 0) {
            Ok(0) if t0.elapsed() < Duration::from_millis(100) => Ok(format!(
                "returned at once ({:.0} µs)",
                t0.elapsed().as_secs_f64() * 1e6
            )),
            Ok(0) => Err(format!(
                "took {:.0} ms with nothing in flight and timeout 0; it must return at once",
                t0.elapsed().as_secs_f64() * 1e3
            )),
            Ok(n) => Err(format!("returned {n} completions with no job in flight")),
            Err(e) => Err(e.to_string()),
        };
        ck.disarm();
        ck.record(format!("{label} wait(0) with nothing in flight"), r);
    }
    ck.arm(&format!("{label} queue depth"));
    let r = depth_check(&mut dev, &caps, kind, block, req, rep, ck.timeout);
    ck.disarm();
    let failed = r.is_err();
    ck.record(format!("{label} queue depth {}", caps.max_inflight), r);
    if failed {
        return;
    }
    if caps.flags & ffi::CAP_DELAY != 0 {
        ck.arm(&format!("{label} delay"));
        let r = delay_check(&mut dev, kind, block, req, rep, ck.timeout);
        ck.disarm();
        ck.record(format!("{label} delay 2 ms"), r);
    }
    if counters.is_none() {
        *counters = Some(dev.counters());
    }
    if let Err(m) = dev.shutdown(true) {
        ck.record(format!("{label} close"), Err(m));
    }
}

/// A 2 ms delay must make a job take at least 2 ms.
fn delay_check(
    dev: &mut Device,
    kind: u32,
    block: bool,
    req: *mut u8,
    rep: *mut u8,
    timeout: Duration,
) -> std::result::Result<String, String> {
    let delay = Duration::from_millis(2);
    dev.configure(1, 1, delay.as_nanos() as u64)
        .map_err(|e| e.to_string())?;
    let mut shortest = Duration::MAX;
    for j in 0..3 {
        let job = job((kind, 77 + j), (req, 1), (rep, 1));
        let t0 = Instant::now();
        if !dev.submit(&job).map_err(|e| e.to_string())? {
            return Err("submit returned XB_BUSY with no job in flight".into());
        }
        reap(dev, block, 1, timeout)?;
        shortest = shortest.min(t0.elapsed());
    }
    dev.configure(1, 1, 0).map_err(|e| e.to_string())?;
    if shortest < delay {
        return Err(format!(
            "the fastest of 3 jobs took {:.3} ms: the device does not wait the delay it declares",
            shortest.as_secs_f64() * 1e3
        ));
    }
    Ok(format!(
        "fastest of 3 jobs {:.3} ms",
        shortest.as_secs_f64() * 1e3
    ))
}

/// What `xferbench plugin check` is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// The plugin's shared library.
    pub path: std::path::PathBuf,
    /// Options for the plugin's open, as `key=value`.
    pub options: Vec<String>,
    /// A job not completed after this long fails the check.
    pub timeout: Duration,
    /// Verdict lines (table) or one JSON object.
    pub format: Format,
}

/// Runs every check; an error when any fails.
pub fn run(args: &CheckOptions) -> Result<()> {
    if args.format == Format::Csv {
        return Err(Error::usage(
            "plugin check prints verdict lines (--format table) or JSON (--format json), not CSV",
        ));
    }
    let mut options = vec![("path".to_string(), args.path.display().to_string())];
    for kv in &args.options {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(Error::usage(format!(
                "plugin check: option '{kv}' is not key=value (as in depth=4)"
            )));
        };
        options.push((k.to_string(), v.to_string()));
    }
    let spec = Spec {
        name: plugin::NAME.into(),
        options,
    };
    let watch = Arc::new((
        std::sync::Mutex::new(String::new()),
        AtomicU64::new(u64::MAX),
    ));
    let start = Instant::now();
    {
        let w = watch.clone();
        std::thread::Builder::new()
            .name("xb-watchdog".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_millis(100));
                let due = w.1.load(Ordering::Relaxed);
                if due != u64::MAX && start.elapsed().as_millis() as u64 > due {
                    let what = w.0.lock().map(|s| s.clone()).unwrap_or_default();
                    eprintln!("FAIL  {what}: the call into the plugin never returned (hang)");
                    eprintln!("verdict: FAIL (the plugin hung; every call must return, wait() within its timeout)");
                    std::process::exit(1);
                }
            })
            .map_err(|e| Error::run(format!("cannot start the watchdog: {e}")))?;
    }
    let mut ck = Checker {
        verdicts: Vec::new(),
        timeout: args.timeout,
        watch,
        start,
        quiet_table: args.format == Format::Json,
    };
    if args.format != Format::Json {
        println!("plugin check {}", args.path.display());
    }
    // Loading problems are the file's (exit 2), said in one line as always;
    // a plugin that loads but breaks a promise fails the check (exit 1).
    ck.arm("load/open/caps");
    let loaded = plugin::library(&args.path).and_then(|_| plugin::resolve(&spec));
    ck.disarm();
    let t = match loaded {
        Ok(t) => t,
        // The file is not a plugin, or an option is bad (the plugin's open
        // refused it as XB_E_INVAL): the user's to fix, exit 2.
        Err(e @ Error::Usage(_))
            if !e.to_string().contains("failed (XB_E")
                || e.to_string().contains("open failed (XB_E_INVAL)") =>
        {
            return Err(e);
        }
        Err(e) => {
            ck.record("open and caps", Err(e.to_string()));
            return finish(ck, args, String::new(), None);
        }
    };
    ck.record(
        "load",
        Ok(format!(
            "{} (ABI {}.{}, entry xferbench_plugin_v1){}",
            t.lib.name,
            t.lib.abi.0,
            t.lib.abi.1,
            if t.lib.description.is_empty() {
                String::new()
            } else {
                format!(": {}", t.lib.description)
            }
        )),
    );
    ck.record("caps", Ok(t.describe()[1..].join("; ")));
    let mut dev = t.device(t.capabilities().default_completion, None, ck.timeout);
    if let Ok(d) = &mut dev {
        refusals(&mut ck, d, &t.caps);
    }
    drop(dev);
    let mut read: Option<Counters> = None;
    for kind in [ffi::BUF_USER, ffi::BUF_RAW, ffi::BUF_MMIO] {
        for (bit, cm) in [
            (ffi::COMPLETE_POLL, CompletionMode::Poll),
            (ffi::COMPLETE_BLOCK, CompletionMode::Block),
        ] {
            if t.caps.buffer_modes & kind == 0 || t.caps.completion_modes & bit == 0 {
                continue;
            }
            mode_checks(&mut ck, t, kind, cm, &mut read);
        }
    }
    // A run cut short leaves jobs in flight: close must cancel them.
    ck.arm("close with a job in flight");
    let ck_timeout = ck.timeout;
    let r = (|| -> std::result::Result<String, String> {
        let mut dev = t
            .device(t.capabilities().default_completion, None, ck_timeout)
            .map_err(|e| e.to_string())?;
        let n = t.caps.max_request.min(64) as usize;
        let kind = if t.caps.buffer_modes & ffi::BUF_USER != 0 {
            ffi::BUF_USER
        } else {
            ffi::BUF_RAW
        };
        let req = buffer(&mut dev, kind, n, t.caps.alignment).map_err(|e| e.to_string())?;
        let rep = buffer(&mut dev, kind, n, t.caps.alignment).map_err(|e| e.to_string())?;
        dev.configure(n as u64, n as u64, 0)
            .map_err(|e| e.to_string())?;
        let job = job((kind, 9), (req, n as u64), (rep, n as u64));
        dev.submit(&job).map_err(|e| e.to_string())?;
        dev.shutdown(false)?;
        Ok("closed cleanly".into())
    })();
    ck.disarm();
    ck.record("close with a job in flight", r);
    // Counters of a device that has run jobs, so they show something.
    let read = match read {
        Some(c) => Ok(c),
        None => t
            .device(t.capabilities().default_completion, None, ck.timeout)
            .map(|mut d| d.counters()),
    };
    let counters = match read {
        Ok(c) => match c {
            None => {
                ck.skip("counters", "the plugin keeps none (counters is NULL)");
                None
            }
            Some(Ok(v)) => {
                ck.record("counters", Ok(v.to_string()));
                Some(v)
            }
            Some(Err(e)) => {
                ck.record("counters", Err(e.to_string()));
                None
            }
        },
        Err(e) => {
            ck.record("counters", Err(e.to_string()));
            None
        }
    };
    let name = t.lib.name.clone();
    finish(ck, args, name, counters)
}

fn finish(
    ck: Checker,
    args: &CheckOptions,
    name: String,
    counters: Option<serde_json::Value>,
) -> Result<()> {
    let failed = ck.verdicts.iter().filter(|v| v.result == "FAIL").count();
    let total = ck.verdicts.len();
    if args.format == Format::Json {
        let r = Report {
            plugin: name,
            path: args.path.display().to_string(),
            failed,
            passed: failed == 0,
            checks: ck.verdicts,
            counters,
        };
        let text = serde_json::to_string_pretty(&r)
            .map_err(|e| Error::run(format!("encoding JSON: {e}")))?;
        crate::report::emit(&(text + "\n"), None)?;
    } else if failed == 0 {
        println!("verdict: PASS ({total} checks)");
    } else {
        println!("verdict: FAIL ({failed} of {total} checks failed)");
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(Error::run(format!(
            "plugin check: {failed} of {total} checks failed"
        )))
    }
}
