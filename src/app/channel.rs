//! The two pipes between the supervising parent (`parent.rs`) and the
//! child it re-executes to measure, and the child's end of them.
//!
//! Child to parent, frames of one tag byte: `C` + length (u32, little
//! endian) + the run so far, serialized (a checkpoint); `W`: the child is
//! writing its results itself; `D` + exit code (i32): it finished and is
//! exiting. Parent to child, single bytes: `A` acknowledges a checkpoint
//! (the child waits for it, so the parent is asleep again before the next
//! point is timed); `S` + a signal number: the parent was signalled.
//!
//! The child learns its descriptors from [`ENV`] (removed at once, so that
//! nothing it starts inherits them).

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The variable that hands the child its descriptors: checkpoint pipe
/// (write end), control pipe (read end) and the device-call region
/// (`transport::guard::Flight`, -1 when there is none).
pub const ENV: &str = "XFERBENCH_SUPERVISOR_FDS";

pub const CHECKPOINT: u8 = b'C';
pub const CLAIMED: u8 = b'W';
pub const DONE: u8 = b'D';
pub const ACK: u8 = b'A';
pub const SIGNAL: u8 = b'S';

/// How long a checkpoint waits for the parent's acknowledgement before
/// the child stops waiting for any (a parent that is stopped, or gone).
const ACK_WAIT: Duration = Duration::from_secs(2);

/// The child's end.
struct Child {
    out: Mutex<std::fs::File>,
    acks: Mutex<Receiver<()>>,
    /// An acknowledgement failed to come once: the others are not awaited.
    deaf: std::sync::atomic::AtomicBool,
}

static CHILD: OnceLock<Child> = OnceLock::new();

/// Makes this process the measuring child if its parent said so (in
/// [`ENV`]); returns whether it is one (then it never supervises a child
/// of its own, even if its ends of the pipes could not be set up). Called
/// first thing in `main`, while this is the only thread.
pub fn attach() -> bool {
    let Some(value) = std::env::var_os(ENV) else {
        return false;
    };
    super::interrupt::supervised();
    // SAFETY: no other thread exists yet (first thing in main), so nothing
    // reads the environment meanwhile.
    unsafe { std::env::remove_var(ENV) };
    let fds: Vec<RawFd> = value
        .to_str()
        .unwrap_or_default()
        .split(',')
        .filter_map(|f| f.parse().ok())
        .collect();
    if let &[out, control, flight] = fds.as_slice()
        && out >= 0
        && control >= 0
    {
        connect(out, control, flight);
    }
    true
}

/// Takes the inherited descriptors and starts listening to the parent.
/// Without them a crash still ends in the parent's line, with nothing
/// written; without the region, the line names no device call.
fn connect(out: RawFd, control: RawFd, flight: RawFd) {
    for fd in [out, control, flight] {
        if fd >= 0 {
            // SAFETY: an inherited descriptor (negative ones skipped); only
            // its close-on-exec flag changes, so nothing this process starts
            // inherits it.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }
    // SAFETY: the parent opened these for this process alone and gave their
    // numbers; nothing else here owns them.
    let (out, control) = unsafe { (OwnedFd::from_raw_fd(out), OwnedFd::from_raw_fd(control)) };
    if flight >= 0 {
        // SAFETY: as above.
        let flight = unsafe { OwnedFd::from_raw_fd(flight) };
        let _ = xferbench::transport::guard::attach(flight);
    }
    let (tx, rx) = channel();
    let control = std::fs::File::from(control);
    let listening = std::thread::Builder::new()
        .name("xb-supervisor".into())
        .spawn(move || listen(control, tx));
    if listening.is_err() {
        return;
    }
    let child = Child {
        out: Mutex::new(std::fs::File::from(out)),
        acks: Mutex::new(rx),
        deaf: Default::default(),
    };
    if CHILD.set(child).is_ok() {
        xferbench::transport::guard::supervised_by(Box::new(Told));
    }
}

/// Reads the parent's bytes: acknowledgements, and signals it received
/// (raised here as if this process had received them).
fn listen(mut control: std::fs::File, acks: Sender<()>) {
    let mut b = [0u8; 1];
    while control.read_exact(&mut b).is_ok() {
        match b[0] {
            ACK => {
                let _ = acks.send(());
            }
            SIGNAL => {
                if control.read_exact(&mut b).is_err() {
                    return;
                }
                super::interrupt::raise(i32::from(b[0]));
            }
            _ => {}
        }
    }
}

/// What the library tells the supervisor goes down the pipe.
struct Told;

impl xferbench::transport::guard::Supervisor for Told {
    fn checkpoint(&self, state: &[u8]) {
        let Some(c) = CHILD.get() else { return };
        let Ok(len) = u32::try_from(state.len()) else {
            return;
        };
        let mut frame = Vec::with_capacity(5 + state.len());
        frame.push(CHECKPOINT);
        frame.extend_from_slice(&len.to_le_bytes());
        frame.extend_from_slice(state);
        let acks = c.acks.lock().unwrap_or_else(|e| e.into_inner());
        // Acknowledgements of checkpoints given up on are not this one's.
        while acks.try_recv().is_ok() {}
        if send(&frame).is_err() || c.deaf.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if acks.recv_timeout(ACK_WAIT).is_err() {
            c.deaf.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    fn claimed(&self) {
        let _ = send(&[CLAIMED]);
    }
}

fn send(frame: &[u8]) -> std::io::Result<()> {
    let Some(c) = CHILD.get() else { return Ok(()) };
    let mut out = c.out.lock().unwrap_or_else(|e| e.into_inner());
    out.write_all(frame)
}

/// Tells the parent that this process finished with `code` and is exiting:
/// whatever happens after (a plugin's exit handler crashing) is not the loss
/// of the results.
pub fn done(code: i32) {
    let mut frame = vec![DONE];
    frame.extend_from_slice(&code.to_le_bytes());
    let _ = send(&frame);
}
