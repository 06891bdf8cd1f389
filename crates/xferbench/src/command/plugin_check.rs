//! `xferbench plugin check FILE.so [key=value...]`: the conformance run a
//! vendor uses while writing a plugin. Every capability the plugin declares
//! is exercised through the ABI directly (not through the experiments), so a
//! failure names the operation that broke its promise: reply lengths and
//! contents, tags, queue depth and XB_BUSY, refusals with messages, delays,
//! jobs that never complete.
//!
//! A call into the plugin that never returns is judged as everywhere else
//! (`transport::guard`): one call running past `--timeout` is hung, however
//! long the whole check takes, so a slow device whose completions keep
//! arriving passes. The stuck call cannot be cancelled; the guard names it,
//! the supervisor ends the process, and the writer registered here prints
//! the verdicts so far with a FAIL line naming the call.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::transport::plugin::{self, Device, PluginTransport, ffi, kind_name};
use crate::transport::{CompletionMode, Spec, Transport, guard};
use serde::Serialize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Clone, Serialize)]
struct Verdict {
    check: String,
    /// "ok", "FAIL" or "skip".
    result: &'static str,
    detail: String,
}

/// One option the plugin describes (ABI 1.1 option_info), for the JSON.
#[derive(Clone, Serialize)]
struct Described {
    name: String,
    kind: &'static str,
    default: Option<String>,
    help: String,
}

#[derive(Serialize)]
struct Report<'a> {
    plugin: &'a str,
    path: &'a str,
    /// The options given for the plugin's open, as `key=value`.
    options: &'a [String],
    /// The options the plugin says it takes (empty for a 1.0 plugin or one
    /// that does not describe them).
    described_options: &'a [Described],
    checks: &'a [Verdict],
    failed: usize,
    passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<&'a serde_json::Value>,
    /// Why the check ended before its last check (a signal, a call that
    /// hung, the plugin ending the process).
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<String>,
}

/// What the check has found so far. Shared with the writer the supervisor
/// calls when a call into the plugin never returns: this thread is then
/// stuck in that call, and the writer prints the verdict in its place.
#[derive(Default)]
struct Found {
    verdicts: Vec<Verdict>,
    /// The check under way: what the FAIL line of a hung call is named.
    doing: String,
    /// The plugin's name, once loaded.
    plugin: String,
    described: Vec<Described>,
}

/// What the verdict's header says, apart from what is found.
#[derive(Clone)]
struct Head {
    path: String,
    options: Vec<String>,
    json: bool,
}

struct Checker {
    found: Arc<Mutex<Found>>,
    timeout: Duration,
    head: Head,
}

fn lock(found: &Mutex<Found>) -> MutexGuard<'_, Found> {
    found.lock().unwrap_or_else(|e| e.into_inner())
}

/// Prints a verdict line (table format) and keeps it; under the lock, so
/// lines from the check and from the abandon writer never interleave.
fn add(found: &mut Found, head: &Head, v: Verdict) {
    if !head.json {
        println!("{}", line(v.result, &v.check, &v.detail));
    }
    found.verdicts.push(v);
    keep(found, head);
}

/// One verdict, as the table prints it.
fn line(result: &str, check: &str, detail: &str) -> String {
    format!("{result:<5} {check}: {detail}")
}

/// Hands what was found so far to the process supervising this one, if
/// any: what it prints, with a FAIL line, if the plugin ends the process
/// (a crash, `exit()`); see [`died`].
fn keep(found: &Found, head: &Head) {
    if !guard::supervised() {
        return;
    }
    let Ok(report) = serde_json::to_value(report(found, head, None, None)) else {
        return;
    };
    let state = serde_json::json!({ "doing": found.doing, "report": report });
    guard::checkpoint(state.to_string().as_bytes());
}

/// What the supervising process prints when the process that ran the
/// check died (`state`: the last `keep`, empty if none came): the
/// verdicts so far with a FAIL line for the check under way, or, when it
/// was `interrupted`, the verdict so far. `json` as `--format json`.
pub fn died(state: &[u8], why: &str, interrupted: bool, json: bool) -> String {
    use serde_json::{Value, json};
    let state: Value = serde_json::from_slice(state).unwrap_or(Value::Null);
    let doing = state["doing"]
        .as_str()
        .filter(|d| !d.is_empty())
        .unwrap_or("a call into the plugin");
    let mut report = match &state["report"] {
        Value::Object(o) => Value::Object(o.clone()),
        _ => json!({}),
    };
    let mut checks = report["checks"].as_array().cloned().unwrap_or_default();
    if !interrupted {
        checks.push(json!({ "check": doing, "result": "FAIL", "detail": why }));
    }
    let failed = checks.iter().filter(|c| c["result"] == "FAIL").count();
    let total = checks.len();
    if json {
        report["checks"] = Value::Array(checks);
        report["failed"] = failed.into();
        report["passed"] = false.into();
        report["stopped_by"] = why.into();
        return serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
    }
    if interrupted {
        return format!("verdict: INTERRUPTED ({total} checks done, {failed} failed)\n");
    }
    format!(
        "{}\nverdict: FAIL ({failed} of {total} checks failed; the plugin ended the process, so the check stopped there)\n",
        line("FAIL", doing, why)
    )
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
        add(&mut lock(&self.found), &self.head, v);
    }

    fn skip(&mut self, check: impl Into<String>, why: impl Into<String>) {
        let v = Verdict {
            check: check.into(),
            result: "skip",
            detail: why.into(),
        };
        add(&mut lock(&self.found), &self.head, v);
    }

    /// Names the check under way, for the FAIL line if a call in it hangs
    /// (or crashes the process).
    fn doing(&self, what: impl Into<String>) {
        let mut f = lock(&self.found);
        f.doing = what.into();
        keep(&f, &self.head);
    }
}

/// The verdicts, written by the supervisor's thread when a call into the
/// plugin did not return (`e` names it): the check under way fails with
/// that message, then the verdict (or the JSON report) as at a normal end.
fn write_abandoned(found: &Mutex<Found>, head: &Head, e: &Error) {
    let mut f = lock(found);
    if matches!(e, Error::Interrupted) {
        // A signal: the verdict so far, no check failed for it.
        let failed = f.verdicts.iter().filter(|v| v.result == "FAIL").count();
        let total = f.verdicts.len();
        if head.json {
            let r = report(&f, head, None, Some(e.to_string()));
            if let Ok(text) = serde_json::to_string_pretty(&r) {
                let _ = crate::output::emit(&(text + "\n"), None);
            }
        } else {
            println!("verdict: INTERRUPTED ({total} checks done, {failed} failed)");
        }
        return;
    }
    let check = match f.doing.as_str() {
        "" => "a call into the plugin".to_string(),
        d => d.to_string(),
    };
    let v = Verdict {
        check,
        result: "FAIL",
        detail: e.to_string(),
    };
    add(&mut f, head, v);
    let failed = f.verdicts.iter().filter(|v| v.result == "FAIL").count();
    let total = f.verdicts.len();
    if head.json {
        if let Ok(text) = report_json(&f, head, None) {
            let _ = crate::output::emit(&text, None);
        }
    } else {
        println!(
            "verdict: FAIL ({failed} of {total} checks failed{})",
            hung_note(&f)
        );
    }
}

/// The operation a guard's message says did not return ("plugin x:
/// wait() did not return within 2.0s…" → "wait"), for the verdict line.
fn hung_call(detail: &str) -> Option<&str> {
    let (before, _) = detail.split_once("() did not return")?;
    before.rsplit([' ', ':']).next().filter(|c| !c.is_empty())
}

/// "; wait() never returned, so the check stopped there" when a check
/// failed on a call that hung; nothing otherwise.
fn hung_note(f: &Found) -> String {
    f.verdicts
        .iter()
        .filter(|v| v.result == "FAIL")
        .find_map(|v| hung_call(&v.detail))
        .map_or(String::new(), |c| {
            format!("; {c}() never returned, so the check stopped there")
        })
}

/// The JSON report of what was found.
fn report_json(f: &Found, head: &Head, counters: Option<&serde_json::Value>) -> Result<String> {
    serde_json::to_string_pretty(&report(f, head, counters, None))
        .map(|t| t + "\n")
        .map_err(|e| Error::run_from("encoding JSON", e))
}

/// The report of what was found, stopped early by `stopped_by` if given.
fn report<'a>(
    f: &'a Found,
    head: &'a Head,
    counters: Option<&'a serde_json::Value>,
    stopped_by: Option<String>,
) -> Report<'a> {
    let failed = f.verdicts.iter().filter(|v| v.result == "FAIL").count();
    Report {
        plugin: &f.plugin,
        path: &head.path,
        options: &head.options,
        described_options: &f.described,
        checks: &f.verdicts,
        failed,
        passed: failed == 0 && stopped_by.is_none(),
        counters,
        stopped_by,
    }
}

/// A job's failure as the plugin reported it: the status's name and the
/// plugin's own message, as every other failed call is shown.
fn job_failed(dev: &mut Device, what: &str, status: i64) -> String {
    let m = dev.message();
    format!(
        "{what} completed with {} ({status}): {}",
        ffi::status_name(i32::try_from(status).unwrap_or(i32::MIN)),
        if m.is_empty() {
            "the plugin gave no message"
        } else {
            &m
        }
    )
}

/// Collects completions until `want` arrived, giving up when none came for
/// `timeout`: the wait restarts at each completion (as a run's links do), so
/// a slow device whose completions keep arriving is slow, not lost.
fn reap(
    dev: &mut Device,
    block: bool,
    want: usize,
    timeout: Duration,
) -> std::result::Result<Vec<ffi::XbCompletion>, String> {
    let mut got = Vec::new();
    let mut buf = vec![ffi::XbCompletion::default(); 64];
    let mut since = Instant::now();
    while got.len() < want {
        let left = timeout.saturating_sub(since.elapsed());
        if left.is_zero() {
            return Err(format!(
                "{} of {want} job(s) never completed: none came back for {:.1}s (poll/wait kept returning none)",
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
                since = Instant::now();
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
        if n > 0 {
            got.extend_from_slice(&buf[..n]);
            since = Instant::now();
        }
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
        let t0 = Instant::now();
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
        let round_trip = t0.elapsed().as_nanos() as u64;
        if c.len() != 1 {
            return Err(format!(
                "one job in flight, {} completions came back",
                c.len()
            ));
        }
        let c = c[0];
        if caps.flags & ffi::CAP_HW_TIMESTAMPS != 0 && c.hw_ns > round_trip {
            return Err(format!(
                "job {j}: hw_ns is {} ns, longer than the whole round trip the host measured ({round_trip} ns, submit to completion): hw_ns must be the job's duration on the device, not a clock reading (XB_CAP_HW_TIMESTAMPS)",
                c.hw_ns
            ));
        }
        if c.tag != tag {
            return Err(format!(
                "completion tag {:#x}, the job's was {tag:#x}",
                c.tag
            ));
        }
        if c.status < 0 {
            return Err(job_failed(
                dev,
                &format!("job {j} (tag {tag:#x})"),
                c.status,
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
        if c.status < 0 {
            return Err(job_failed(dev, &format!("job {}", c.tag), c.status));
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
    ck.doing("refuses a request over max_request");
    let r = dev.configure(caps.max_request.saturating_add(1), 1, 0);
    expect_refusal(ck, "refuses a request over max_request", r);
    if caps.flags & ffi::CAP_REPLY_LONGER == 0 {
        let name = "refuses a reply longer than the request (no XB_CAP_REPLY_LONGER)";
        ck.doing(name);
        let r = dev.configure(64.min(caps.max_request), 64.min(caps.max_request) + 1, 0);
        expect_refusal(ck, name, r);
    }
    if caps.flags & ffi::CAP_DELAY == 0 {
        let name = "refuses a delay (no XB_CAP_DELAY)";
        ck.doing(name);
        let r = dev.configure(1, 1, 1_000_000);
        expect_refusal(ck, name, r);
    }
    if caps.flags & ffi::CAP_EMPTY == 0 {
        let name = "refuses an empty request (no XB_CAP_EMPTY)";
        ck.doing(name);
        let r = dev.configure(0, 1, 0);
        expect_refusal(ck, name, r);
    }
}

/// What a device's `counters` gave: nothing (NULL), or its JSON.
type Counters = Option<Result<serde_json::Value>>;

/// Whether the check goes on after a device was closed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Closed {
    Cleanly,
    /// Its close did not return: the plugin has a thread that will not
    /// stop, and every further device would wait as long again.
    Hung,
}

/// Closes a device a check opened, freeing its buffers when nothing is in
/// flight (`idle`); a close that does not return within the timeout is a
/// FAIL line naming close() (the guard's message) and ends the check.
fn close(ck: &mut Checker, dev: &mut Device, label: &str, idle: bool) -> Closed {
    ck.doing(format!("{label} close"));
    match dev.shutdown(idle) {
        Ok(()) => Closed::Cleanly,
        Err(m) => {
            ck.record(format!("{label} close"), Err(m));
            Closed::Hung
        }
    }
}

/// One buffer mode with one completion mode: shapes, depth, delay, then
/// close. The first device that ran every check has its counters read into
/// `counters` (one device open at a time: some hardware allows no more).
fn mode_checks(
    ck: &mut Checker,
    t: &PluginTransport,
    kind: u32,
    cm: CompletionMode,
    counters: &mut Option<Counters>,
) -> Closed {
    let label = format!("{}/{}", kind_name(kind), cm.name());
    ck.doing(format!("{label} open"));
    let mut dev = match t.device(cm, None, ck.timeout) {
        Ok(d) => d,
        Err(e) => {
            ck.record(format!("{label} open"), Err(e.to_string()));
            return Closed::Cleanly;
        }
    };
    let idle = mode_jobs(ck, t, &mut dev, kind, cm, &label);
    if idle && counters.is_none() {
        ck.doing(format!("{label} counters"));
        *counters = Some(dev.counters());
    }
    close(ck, &mut dev, &label, idle)
}

/// The jobs of [`mode_checks`] on an open device; true when every check
/// passed (nothing is left in flight, so close may free the buffers).
fn mode_jobs(
    ck: &mut Checker,
    t: &PluginTransport,
    dev: &mut Device,
    kind: u32,
    cm: CompletionMode,
    label: &str,
) -> bool {
    let block = cm == CompletionMode::Block;
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
    ck.doing(format!("{label} buffers"));
    let bufs = buffer(dev, kind, limit, caps.alignment)
        .and_then(|q| Ok((q, buffer(dev, reply_kind, room, caps.alignment)?)));
    let (req, rep) = match bufs {
        Ok(b) => b,
        Err(e) => {
            ck.record(format!("{label} buffers"), Err(e.to_string()));
            return false;
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
        ck.doing(name.as_str());
        let r = shape_check(
            dev,
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
        let failed = r.is_err();
        ck.record(name, r);
        if failed {
            // The device may be out of step: a fresh one for the rest.
            return false;
        }
    }
    if block && dev.lib.wait().is_some() {
        let name = format!("{label} wait(0) with nothing in flight");
        ck.doing(name.as_str());
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
        ck.record(name, r);
    }
    let name = format!("{label} queue depth {}", caps.max_inflight);
    ck.doing(name.as_str());
    let r = depth_check(dev, &caps, kind, block, req, rep, ck.timeout);
    let failed = r.is_err();
    ck.record(name, r);
    if failed {
        return false;
    }
    if caps.flags & ffi::CAP_DELAY != 0 {
        let name = format!("{label} delay 2 ms");
        ck.doing(name.as_str());
        let r = delay_check(dev, kind, block, req, rep, ck.timeout);
        let failed = r.is_err();
        ck.record(name, r);
        if failed {
            return false;
        }
    }
    true
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
        let c = reap(dev, block, 1, timeout)?;
        shortest = shortest.min(t0.elapsed());
        if let Some(c) = c.first().filter(|c| c.status < 0) {
            return Err(job_failed(dev, &format!("job {}", c.tag), c.status));
        }
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

/// The defaults of everything but the plugin, whose `path` is left empty
/// for the caller to fill in.
impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            path: std::path::PathBuf::new(),
            options: Vec::new(),
            timeout: Duration::from_secs(2),
            format: Format::Table,
        }
    }
}

/// Runs every check; an error when any fails.
pub fn run(args: &CheckOptions) -> Result<()> {
    if args.format == Format::Csv {
        return Err(Error::usage(
            "plugin check prints verdict lines (--format table) or JSON (--format json), not CSV",
        ));
    }
    let spec = spec_of(args)?;
    // Every call, the probes' too, is bounded by the check's timeout.
    guard::set_default_bound(args.timeout);
    let mut ck = Checker::start(args);
    let Some(t) = load(&mut ck, args, &spec)? else {
        return finish(ck, None);
    };
    let ck_timeout = ck.timeout;
    ck.doing("refusals (open)");
    match t.device(t.capabilities().default_completion, None, ck_timeout) {
        Ok(mut d) => {
            refusals(&mut ck, &mut d, &t.caps);
            if close(&mut ck, &mut d, "refusals", true) == Closed::Hung {
                return finish(ck, None);
            }
        }
        Err(e) => ck.record("refusals (open)", Err(e.to_string())),
    }
    let mut read: Option<Counters> = None;
    for kind in [ffi::BUF_USER, ffi::BUF_RAW, ffi::BUF_MMIO] {
        for (bit, cm) in [
            (ffi::COMPLETE_POLL, CompletionMode::Poll),
            (ffi::COMPLETE_BLOCK, CompletionMode::Block),
        ] {
            if t.caps.buffer_modes & kind == 0 || t.caps.completion_modes & bit == 0 {
                continue;
            }
            if mode_checks(&mut ck, t, kind, cm, &mut read) == Closed::Hung {
                return finish(ck, None);
            }
        }
    }
    if close_in_flight(&mut ck, t) == Closed::Hung {
        return finish(ck, None);
    }
    let counters = counters(&mut ck, t, read);
    finish(ck, counters)
}

/// The plugin's spec: its path and the `key=value` options given.
fn spec_of(args: &CheckOptions) -> Result<Spec> {
    let mut options = vec![("path".to_string(), args.path.display().to_string())];
    for kv in &args.options {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(Error::usage(format!(
                "plugin check: option '{kv}' is not key=value (as in depth=4)"
            )));
        };
        options.push((k.to_string(), v.to_string()));
    }
    Ok(Spec {
        name: plugin::NAME.into(),
        options,
    })
}

impl Checker {
    /// A checker for `args`, its heading printed (table) and a device the
    /// guard abandons recorded as the verdict it is.
    fn start(args: &CheckOptions) -> Checker {
        let head = Head {
            path: args.path.display().to_string(),
            options: args.options.clone(),
            json: args.format == Format::Json,
        };
        let found = Arc::new(Mutex::new(Found::default()));
        {
            let (found, head) = (found.clone(), head.clone());
            crate::transport::guard::on_abandon(Box::new(move |e| {
                write_abandoned(&found, &head, e)
            }));
        }
        if !head.json {
            let mut line = format!("plugin check {}", head.path);
            for o in &head.options {
                line += " ";
                line += o;
            }
            println!("{line}");
        }
        Checker {
            found,
            timeout: args.timeout,
            head,
        }
    }
}

/// Loads the plugin, opens and closes one device, then resolves it as a
/// transport: the loaded plugin, or None when a check failed already (the
/// verdicts say which). Loading problems are the file's (exit 2), said in
/// one line as always; a plugin that loads but breaks a promise fails the
/// check (exit 1).
fn load(
    ck: &mut Checker,
    args: &CheckOptions,
    spec: &Spec,
) -> Result<Option<&'static PluginTransport>> {
    ck.doing("load");
    let lib = plugin::library(&args.path)?;
    describe(ck, lib);
    let given: Vec<(String, String)> = spec
        .options
        .iter()
        .filter(|(k, _)| !plugin::HOST_KEYS.contains(&k.as_str()))
        .cloned()
        .collect();
    // A device opened and closed first, apart from the transport's own
    // probe (which can only warn of a close that hangs): a plugin whose
    // close never returns is named for it, and stopped, within --timeout.
    ck.doing("open and close");
    let probed = plugin::probe(lib, &given, None).map(|mut d| d.shutdown(true));
    let loaded = match probed {
        Ok(Err(m)) => {
            ck.record("close", Err(m));
            return Ok(None);
        }
        Ok(Ok(())) => {
            ck.doing("open and caps");
            plugin::resolve(spec)
        }
        Err(e) => Err(e),
    };
    let t = match loaded {
        Ok(t) => t,
        // The file is not a plugin, or an option is bad (the plugin's open
        // refused it as XB_E_INVAL): the user's to fix, exit 2.
        Err(e @ Error::Usage { .. })
            if !e.to_string().contains("failed (XB_E")
                || e.to_string().contains("open failed (XB_E_INVAL)") =>
        {
            return Err(e);
        }
        Err(e) => {
            ck.record("open and caps", Err(e.to_string()));
            return Ok(None);
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
    Ok(Some(t))
}

/// A run cut short leaves jobs in flight: close must cancel them.
fn close_in_flight(ck: &mut Checker, t: &PluginTransport) -> Closed {
    let name = "close with a job in flight";
    ck.doing(name);
    let r = (|| -> std::result::Result<String, String> {
        let mut dev = t
            .device(t.capabilities().default_completion, None, ck.timeout)
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
    let hung = r
        .as_ref()
        .is_err_and(|m| m.contains("close() did not return"));
    ck.record(name, r);
    if hung { Closed::Hung } else { Closed::Cleanly }
}

/// Counters of a device that has run jobs (`read` by the mode checks), so
/// they show something; a device opened for them otherwise.
fn counters(
    ck: &mut Checker,
    t: &PluginTransport,
    read: Option<Counters>,
) -> Option<serde_json::Value> {
    ck.doing("counters");
    let read = match read {
        Some(c) => Ok(c),
        None => t
            .device(t.capabilities().default_completion, None, ck.timeout)
            .map(|mut d| {
                let c = d.counters();
                let _ = close(ck, &mut d, "counters", true);
                c
            }),
    };
    match read {
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
    }
}

/// Keeps the plugin's name and the options it describes, and lists them
/// under the header (table): what `key=value` the plugin takes.
fn describe(ck: &Checker, lib: &plugin::Library) {
    let mut f = lock(&ck.found);
    f.plugin = lib.name.clone();
    f.described = lib
        .options
        .iter()
        .map(|o| Described {
            name: o.name.clone(),
            kind: plugin::values::kind_words(o.kind).0,
            default: o.default.clone(),
            help: o.help.clone(),
        })
        .collect();
    if !ck.head.json && !lib.options.is_empty() {
        println!(
            "{} takes (ABI {}.{} option_info):",
            lib.name, lib.abi.0, lib.abi.1
        );
        for o in &lib.options {
            println!("  {}", o.line());
        }
    }
}

/// The verdict, unless the supervisor is writing it already (a call into
/// the plugin hung and this thread came back from it too late).
fn finish(ck: Checker, counters: Option<serde_json::Value>) -> Result<()> {
    if !crate::transport::guard::claim() {
        // The watch wrote the verdict and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let f = lock(&ck.found);
    let failed = f.verdicts.iter().filter(|v| v.result == "FAIL").count();
    let total = f.verdicts.len();
    if ck.head.json {
        crate::output::emit(&report_json(&f, &ck.head, counters.as_ref())?, None)?;
    } else if failed == 0 {
        println!("verdict: PASS ({total} checks)");
    } else {
        println!(
            "verdict: FAIL ({failed} of {total} checks failed{})",
            hung_note(&f)
        );
    }
    match f.verdicts.iter().find(|v| v.result == "FAIL") {
        None => Ok(()),
        Some(first) => Err(Error::run(format!(
            "plugin check: {failed} of {total} checks failed, the first: {}",
            first.check
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hung_call_is_read_from_the_guards_message() {
        let m = "plugin faulty: wait() did not return within 0.3s (last job submitted: tag 7); the device was abandoned (wait() must return by its timeout_ns)";
        assert_eq!(hung_call(m), Some("wait"));
        assert_eq!(
            hung_call("plugin x: close() did not return within 2.0s; the device was abandoned"),
            Some("close")
        );
        assert_eq!(hung_call("job 3 completed with XB_E_IO (-5): halted"), None);
    }
}
