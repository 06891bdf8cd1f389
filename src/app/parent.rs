//! A measurement outlives what it measures: the command re-executes this
//! binary as a child that measures, and this process only supervises it.
//! A device plugin runs in the measuring process, so its segfault,
//! `abort()` or `exit()` (or the OOM killer) ends that process; this one
//! then writes the child's last checkpoint (the run so far, sent after each
//! point) with `complete: false` and what happened, says it in one line,
//! and exits non-zero: 128 + the signal for a process killed by one, 1 for
//! one that exited without writing its results (never 0).
//!
//! The parent stays off the timing path: it sleeps in `wait` and `read`
//! (no polling); a checkpoint is read, kept and acknowledged between
//! points, and the child waits for the acknowledgement before it goes on.
//! Which device call was in progress, the child's guards keep in memory
//! shared with this process (`transport::guard::Flight`): two stores per
//! call, as before, only in another page.
//!
//! SIGINT, SIGTERM and SIGHUP sent to this process go to the child (which
//! stops and writes its partial results, as ever); a second one kills it,
//! and this process writes the last checkpoint. The child dies with this
//! process (a parent-death signal: SIGHUP, or one of its own under
//! `nohup`, so it still writes its results).

use super::channel::{self, ACK, CHECKPOINT, CLAIMED, DONE, SIGNAL};
use crate::cli::{Cli, Command, PluginAction};
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use xferbench::error::{Error, Result};
use xferbench::options::Output;
use xferbench::transport::guard::Flight;

/// How long the child has, after the signal passed on, to end by itself
/// (it takes half a second at most, plus writing) before it is killed.
const STOPPING: Duration = Duration::from_secs(3);
/// How long a child writing its results may take, after the signal.
const WRITING: Duration = Duration::from_secs(10);
/// How long the last frames may take to arrive once the child is gone (a
/// process it started may hold the pipe open: it is not waited for).
const DRAIN: Duration = Duration::from_secs(2);

/// Writes a measuring command's last checkpoint, marked stopped by the error.
type Writer = fn(&[u8], &Output, &Error) -> Result<()>;

/// What a supervised command writes when its child died.
pub enum Kind {
    /// An experiment: its last checkpoint, where and as it writes its results.
    Run(Output, Writer),
    /// `plugin check`: the verdicts so far, and a FAIL line; JSON or not.
    Check(bool),
}

/// The commands that measure through devices, and `plugin check`: each
/// runs supervised, unless `XFERBENCH_SUPERVISE=0` (a debugger on a
/// plugin), under an MPI launcher (the rank must be the process mpirun
/// started), or already as the measuring child.
pub fn wanted(cli: &Cli) -> Option<Kind> {
    use super::checkpoint::write_sent;
    use xferbench::result::{self as r, Point, RoundtripExtra};
    if std::env::var_os("XFERBENCH_SUPERVISE").is_some_and(|v| v == "0")
        || xferbench::experiment::mesh::launcher_rank().is_some()
        || cli.quick
        || cli.out.is_some()
    {
        return None;
    }
    let run = |out: Output, w: Writer| Some(Kind::Run(out, w));
    match cli.command.as_ref()? {
        Command::Roundtrip(a) => run(
            xferbench::options::RoundtripConfig::from((**a).clone())
                .common
                .out,
            write_sent::<Point, RoundtripExtra>,
        ),
        Command::Curve(a) if a.pairs.is_none() => run(
            xferbench::options::CurveConfig::from((**a).clone())
                .common
                .out,
            write_sent::<r::curve::CurvePoint, r::curve::CurveExtra>,
        ),
        Command::Stream(a) => run(
            xferbench::options::StreamConfig::from((**a).clone()).out,
            write_sent::<xferbench::fio::result::JobResult, r::stream::StreamExtra>,
        ),
        Command::Load(a) => run(
            xferbench::options::LoadConfig::from((**a).clone())
                .common
                .out,
            write_sent::<r::load::LoadPoint, r::load::LoadExtra>,
        ),
        Command::Flowgraph(a) => run(
            xferbench::options::FlowgraphConfig::from((**a).clone()).out,
            write_sent::<r::flowgraph::FlowPoint, r::flowgraph::FlowExtra>,
        ),
        Command::Plugin(p) => match &p.action {
            PluginAction::Check(c) => {
                Some(Kind::Check(c.format == xferbench::format::Format::Json))
            }
        },
        _ => None,
    }
}

/// What the child told, read by [`listen`].
#[derive(Default)]
struct Heard {
    /// The last checkpoint.
    last: Option<Vec<u8>>,
    /// The child started writing its results.
    claimed: bool,
    /// The child finished with this exit code.
    done: Option<i32>,
}

enum Event {
    /// The child ended (not yet reaped: its pid is still its own).
    Exited,
    Signal(i32),
    /// The child's end of the pipe closed: every frame is in.
    Drained,
}

/// Runs this command line again as a child and supervises it; its exit
/// code, or None when no child could be started (the caller measures here).
pub fn run(kind: Kind) -> Option<i32> {
    let (tx, rx) = channel();
    // Read before anything here catches SIGHUP. It also picks the child's
    // parent-death signal: SIGHUP, which stops a run as SIGTERM does but
    // never ends it at once when it comes again. It does come again: the
    // kernel sends it each time the child's parent *thread* goes, and a
    // process killed outright loses its threads one by one, the child
    // passed to the next each time; a second SIGTERM would end the child on
    // the spot, leaving what it started running. Where SIGHUP is ignored
    // (the child inherits that), a signal of its own that the child takes
    // the same way (`interrupt::DEATH_UNDER_NOHUP`).
    let hup_ignored = super::interrupt::ignored(libc::SIGHUP);
    let death = if hup_ignored {
        super::interrupt::DEATH_UNDER_NOHUP
    } else {
        libc::SIGHUP
    };
    // Before the child exists: a signal from now on is passed on, not fatal.
    // A SIGHUP ignored (`nohup`) is left ignored, here and in the child,
    // which inherits it through exec (a caught signal would reach it as
    // the default again, and a hang-up would stop the run).
    let mut caught = vec![signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];
    if !hup_ignored {
        caught.push(signal_hook::consts::SIGHUP);
    }
    let signals = signal_hook::iterator::Signals::new(caught);
    // What the child starts and leaves behind when it dies (an exec
    // program's own children, once the program went by its parent-death
    // signal) comes to this process rather than to init: see `end_orphans`.
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let started = signals.and_then(|s| start(s, &tx, death));
    let (mut child, control, flight, heard) = match started {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "xferbench: warning: cannot start the measuring process ({e}); measuring in this one: a crash of a device now loses the results"
            );
            return None;
        }
    };
    let signalled = watch(child.id(), &control, &heard, &rx);
    let status = child.wait().ok();
    end_orphans();
    let heard = std::mem::take(&mut *heard.lock().unwrap_or_else(|e| e.into_inner()));
    Some(outcome(&kind, status, &heard, signalled, flight.as_ref()))
}

/// How long the processes the measuring child left are given to go.
const ORPHANS: Duration = Duration::from_secs(3);

/// Ends whatever the measuring child left running, now that it is gone.
/// A child killed outright (SIGKILL, the OOM killer, a crash) cannot stop
/// what it started: the parent-death signal ends the leaders of its
/// process groups (an exec program, a load command, a responder), not what
/// they started in turn. Those, orphaned, came to this process (a
/// subreaper): each is killed with its process group, and reaped, until
/// none is left (the children of one killed come here in turn).
fn end_orphans() {
    // SAFETY: getpid and getpgrp take nothing and cannot fail.
    let (me, my_group) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let until = Instant::now() + ORPHANS;
    loop {
        let orphans = children_of(me);
        if orphans.is_empty() || Instant::now() > until {
            return;
        }
        for pid in orphans {
            // SAFETY: integer arguments only; each pid is this process's
            // child, unreaped, so still its own.
            unsafe {
                let group = libc::getpgid(pid);
                // Never this process's own group (the user's job).
                if group > 0 && group != my_group {
                    libc::kill(-group, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
        // SAFETY: a null status pointer is allowed; WNOHANG never blocks.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    }
}

/// The live children of process `pid` (zombies are left to be reaped).
fn children_of(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                let mut f = stat.rsplit_once(')').map_or("", |x| x.1).split_whitespace();
                let state = f.next().unwrap_or("Z");
                let ppid = f.next().and_then(|x| x.parse::<libc::pid_t>().ok());
                ppid == Some(pid) && !state.starts_with(['Z', 'X'])
            })
        })
        .collect()
}

/// The child started, with the threads that report on it.
type Started = (
    std::process::Child,
    Arc<Mutex<PipeWriter>>,
    Option<Flight>,
    Arc<Mutex<Heard>>,
);

/// Starts the child (this binary, these arguments) with its ends of the
/// pipes and of the device-call region, and the threads that wait for it,
/// read its frames and catch signals.
fn start(
    mut signals: signal_hook::iterator::Signals,
    tx: &Sender<Event>,
    death: libc::c_int,
) -> std::io::Result<Started> {
    let (from_child, child_out) = std::io::pipe()?;
    let (child_in, to_child) = std::io::pipe()?;
    let flight = Flight::create().ok();
    let flight_fd: RawFd = flight.as_ref().map_or(-1, |f| f.fd().as_raw_fd());
    let inherit = [child_out.as_raw_fd(), child_in.as_raw_fd(), flight_fd];
    let exe = if std::path::Path::new("/proc/self/exe").exists() {
        std::path::PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe()?
    };
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new(exe);
    if let Some(a0) = args.next() {
        cmd.arg0(a0);
    }
    cmd.args(args).env(
        channel::ENV,
        format!("{},{},{}", inherit[0], inherit[1], inherit[2]),
    );
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec only async-signal-safe calls (fcntl,
    // prctl, getppid) and no allocation.
    unsafe {
        cmd.pre_exec(move || {
            for fd in inherit {
                if fd >= 0 && libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Dies with this process, by a signal that stops it, so that
            // it writes what it has and ends what it started.
            libc::prctl(libc::PR_SET_PDEATHSIG, death);
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop((child_out, child_in));
    let pid = child.id() as libc::pid_t;
    let heard = Arc::new(Mutex::new(Heard::default()));
    let control = Arc::new(Mutex::new(to_child));
    let t = tx.clone();
    std::thread::Builder::new()
        .name("xb-wait".into())
        .spawn(move || {
            // SAFETY: a zeroed siginfo_t is valid; waitid fills it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // WNOWAIT: the child stays unreaped, so its pid cannot be
            // reused before the watch is done signalling it.
            // SAFETY: a child's pid and a valid siginfo_t.
            while unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            } != 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
            let _ = t.send(Event::Exited);
        })?;
    let (t, h, c) = (tx.clone(), heard.clone(), control.clone());
    std::thread::Builder::new()
        .name("xb-frames".into())
        .spawn(move || {
            listen(from_child, &c, &h);
            let _ = t.send(Event::Drained);
        })?;
    let t = tx.clone();
    std::thread::Builder::new()
        .name("xb-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let _ = t.send(Event::Signal(sig));
            }
        })?;
    Ok((child, control, flight, heard))
}

/// Reads the child's frames until its end closes.
fn listen(mut from: PipeReader, control: &Mutex<PipeWriter>, heard: &Mutex<Heard>) {
    let mut tag = [0u8; 1];
    let mut word = [0u8; 4];
    while from.read_exact(&mut tag).is_ok() {
        match tag[0] {
            CHECKPOINT => {
                if from.read_exact(&mut word).is_err() {
                    return;
                }
                let len = u32::from_le_bytes(word) as u64;
                let mut state = Vec::new();
                match (&mut from).take(len).read_to_end(&mut state) {
                    Ok(n) if n as u64 == len => {}
                    _ => return,
                }
                heard.lock().unwrap_or_else(|e| e.into_inner()).last = Some(state);
                let _ = control
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .write_all(&[ACK]);
            }
            CLAIMED => heard.lock().unwrap_or_else(|e| e.into_inner()).claimed = true,
            DONE => {
                if from.read_exact(&mut word).is_err() {
                    return;
                }
                heard.lock().unwrap_or_else(|e| e.into_inner()).done =
                    Some(i32::from_le_bytes(word));
            }
            _ => return,
        }
    }
}

/// Waits for the child to end, passing signals on; returns the first
/// signal this process received.
fn watch(
    pid: u32,
    control: &Mutex<PipeWriter>,
    heard: &Mutex<Heard>,
    rx: &Receiver<Event>,
) -> Option<i32> {
    let mut signalled = None;
    let mut deadline: Option<Instant> = None;
    let mut writing = false;
    let mut drained = false;
    loop {
        let event = match deadline {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
        };
        match event {
            Ok(Event::Exited) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Event::Drained) => drained = true,
            Ok(Event::Signal(sig)) if signalled.is_none() => {
                signalled = Some(sig);
                let _ = control
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .write_all(&[SIGNAL, sig as u8]);
                deadline = Some(Instant::now() + STOPPING);
            }
            // Writing its results after the signal: given the time for it.
            Err(RecvTimeoutError::Timeout)
                if !writing && heard.lock().unwrap_or_else(|e| e.into_inner()).claimed =>
            {
                writing = true;
                deadline = Some(Instant::now() + WRITING);
            }
            // A second signal: at once, as without a supervisor.
            Ok(Event::Signal(_)) | Err(RecvTimeoutError::Timeout) => {
                // SAFETY: signals our child, unreaped until this returns
                // (so the pid is still its own).
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                deadline = None;
            }
        }
    }
    let until = Instant::now() + DRAIN;
    while !drained {
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Event::Drained) => drained = true,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    signalled
}

/// What this process does once the child is gone: its exit code passed on
/// when it finished, else what it measured written and what happened said.
fn outcome(
    kind: &Kind,
    status: Option<ExitStatus>,
    heard: &Heard,
    signalled: Option<i32>,
    flight: Option<&Flight>,
) -> i32 {
    let status_code = status.and_then(|s| s.code());
    let died_by = status.and_then(|s| s.signal());
    let place = flight.map(|f| f.read()).unwrap_or_default();
    if let Some(done) = heard.done {
        let Some(sig) = died_by else {
            return status_code.filter(|&c| c != 0).unwrap_or(done);
        };
        clear_bar();
        eprintln!(
            "xferbench: error: the measuring process was killed by {} after it finished{}",
            signal_words(sig),
            place.phrase()
        );
        return 128 + sig;
    }
    clear_bar();
    // Ended by the signal passed on (or by the kill that follows a second
    // one), not by a crash of its own meanwhile.
    let interrupted = signalled.filter(|&s| died_by.is_none_or(|d| d == s || d == libc::SIGKILL));
    let code = match (interrupted, died_by, kind) {
        (Some(sig), ..) => 128 + sig,
        // A plugin that ends the check fails it.
        (None, _, Kind::Check(_)) => 1,
        (None, Some(sig), _) => 128 + sig,
        // Never a success, whatever status a plugin's exit() gave.
        (None, None, _) => 1,
    };
    let when = match kind {
        _ if heard.claimed => "while it was writing its results (they may be incomplete)",
        Kind::Check(_) => "before the check finished",
        Kind::Run(..) => "before writing its results",
    };
    let why = match (interrupted, died_by) {
        (Some(sig), _) => {
            xferbench::error::INTERRUPTED_BY.store(sig, std::sync::atomic::Ordering::Relaxed);
            Error::Interrupted
        }
        (None, Some(sig)) => Error::run(format!(
            "the measuring process was killed by {} {when}{}",
            signal_words(sig),
            place.phrase()
        )),
        (None, None) => Error::run(format!(
            "the measuring process exited with status {} {when}{}{}",
            status_code.map_or("unknown".to_string(), |n| n.to_string()),
            place.phrase(),
            if place.calls.is_empty() {
                ""
            } else {
                ": a plugin must return from its calls, never call exit()"
            }
        )),
    };
    // Results written (or half written) by the child, or by its watch:
    // nothing of ours goes over them.
    if !heard.claimed {
        write_last(kind, heard.last.as_deref(), &why);
    }
    match why {
        Error::Interrupted => eprintln!("xferbench: interrupted"),
        e => eprintln!(
            "xferbench: error: {}",
            xferbench::error::capped(&e.to_string())
        ),
    }
    code
}

/// Writes the child's last checkpoint as the command would have.
fn write_last(kind: &Kind, last: Option<&[u8]>, why: &Error) {
    match (kind, last) {
        (Kind::Run(out, write), Some(state)) => {
            if let Err(e) = write(state, out, why) {
                eprintln!("xferbench: error: writing the partial results: {e}");
            }
        }
        (Kind::Run(..), None) => {}
        (Kind::Check(json), state) => {
            let text = xferbench::command::plugin_check::died(
                state.unwrap_or_default(),
                &why.to_string(),
                matches!(why, Error::Interrupted),
                *json,
            );
            let _ = xferbench::output::emit(&text, None);
        }
    }
}

/// "SIGSEGV (a segmentation fault)", or the number of a signal unnamed.
fn signal_words(sig: i32) -> String {
    let name = signal_hook::low_level::signal_name(sig)
        .map_or_else(|| format!("signal {sig}"), str::to_string);
    let what = match sig {
        libc::SIGSEGV => " (a segmentation fault)",
        libc::SIGBUS => " (a bus error)",
        libc::SIGABRT => " (abort())",
        libc::SIGILL => " (an illegal instruction)",
        libc::SIGFPE => " (an arithmetic fault)",
        libc::SIGKILL => " (kill -9, or the kernel's OOM killer)",
        _ => "",
    };
    format!("{name}{what}")
}

/// Ends the child's progress bar line, if it drew one, before a line of ours.
fn clear_bar() {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
}
