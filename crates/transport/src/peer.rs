//! A responder running as a child process: started by re-executing this binary
//! with the hidden `__respond` subcommand, with its end of the link inherited as
//! fds 3 and 4. A watchdog thread notices when the child exits (pidfd) and kills
//! it when the initiator has waited on it longer than the timeout, so no wait in
//! any transport can hang forever.

use crate::error::{Error, Result};
use crate::link::LinkConfig;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// First fd number the child finds its end of the link at.
pub const CHILD_FD: RawFd = 3;

#[derive(Default)]
pub struct Shared {
    /// The child has exited or was killed.
    pub gone: AtomicBool,
    /// The watchdog killed the child for not answering.
    pub timed_out: AtomicBool,
    /// Odd while the initiator waits on the child; bumped on every entry and exit.
    pub progress: AtomicU64,
    /// Sockets to shut down when the child dies or is killed: a datagram
    /// socket sees no end of file when its peer goes, so a blocked receive
    /// must be woken by hand. Emptied before the fds are closed.
    wake: Mutex<Vec<RawFd>>,
}

impl Shared {
    /// Wakes any receive blocked on the link's sockets (they then read as closed).
    fn wake_waiters(&self) {
        let fds = self.wake.lock().unwrap_or_else(|e| e.into_inner());
        for &fd in fds.iter() {
            // SAFETY: the fds stay open while listed; ENOTSOCK on pipes is harmless.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
    }
}

pub struct Peer {
    child: Child,
    shared: Arc<Shared>,
    watchdog: Option<JoinHandle<()>>,
    stop: OwnedFd,
    timeout: Duration,
    finished: bool,
    /// The link may drop messages (UDP): a timeout then most likely means a
    /// lost datagram, and the error says so.
    pub lossy: bool,
}

impl Peer {
    /// Starts the responder with `fds` as its fds 3, 4, …
    pub fn spawn(cfg: &LinkConfig, fds: &[RawFd]) -> Result<Peer> {
        assert!(fds.len() <= 4);
        let mut cmd = Command::new(&cfg.exe);
        cmd.arg("__respond")
            .arg("--spec")
            .arg(cfg.spec.to_string())
            .arg("--completion")
            .arg(cfg.completion.name());
        if let Some(cpu) = cfg.responder_cpu {
            cmd.arg("--cpu").arg(cpu.to_string());
        }
        // Its own process group: Ctrl-C reaches only the initiator, which then
        // writes partial results and stops the responder itself.
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut src = [-1 as RawFd; 4];
        src[..fds.len()].copy_from_slice(fds);
        let n = fds.len();
        // SAFETY: getpid takes nothing and cannot fail.
        let parent = unsafe { libc::getpid() };
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // Copies above the fds they go to, so that moving one never
                // lands on another not yet moved; as low as that allows,
                // since a low `ulimit -n` refuses any number above it.
                let above = CHILD_FD + n as RawFd;
                let mut tmp = [-1 as RawFd; 4];
                for i in 0..n {
                    tmp[i] = libc::fcntl(src[i], libc::F_DUPFD, above);
                    if tmp[i] < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (i, &fd) in tmp.iter().enumerate().take(n) {
                    if libc::dup2(fd, CHILD_FD + i as RawFd) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::close(fd);
                }
                // Die with the initiator, whatever kills it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("initiator exited"));
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            Error::run_from(
                format!("cannot start the responder {}", cfg.exe.display()),
                e,
            )
        })?;
        let shared = Arc::new(Shared::default());
        let stop = eventfd()?;
        let pid = child.id() as libc::pid_t;
        let watchdog = {
            let shared = shared.clone();
            let stop_fd = stop.as_raw_fd();
            let timeout = cfg.timeout;
            std::thread::Builder::new()
                .name("xb-watchdog".into())
                .spawn(move || watch(pid, stop_fd, &shared, timeout))
                .map_err(|e| Error::run_from("cannot start the watchdog thread", e))?
        };
        Ok(Peer {
            child,
            shared,
            watchdog: Some(watchdog),
            stop,
            timeout: cfg.timeout,
            finished: false,
            lossy: false,
        })
    }

    /// Lists the initiator's fds for the watchdog to wake when the child goes.
    pub fn wake_on_gone(&self, fds: &[RawFd]) {
        *self.shared.wake.lock().unwrap_or_else(|e| e.into_inner()) = fds.to_vec();
    }

    /// Must be called before the listed fds are closed.
    pub fn forget_fds(&self) {
        self.shared
            .wake
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Marks the start of a wait on the child (the watchdog times only these).
    #[inline]
    pub fn enter(&self) {
        self.shared.progress.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub fn leave(&self) {
        self.shared.progress.fetch_add(1, Ordering::Relaxed);
    }

    /// Turns a failed wait into the most useful explanation: the watchdog's
    /// timeout, the child's exit status and last words, or the error itself.
    pub fn failure(&mut self, what: &str, err: impl std::fmt::Display) -> Error {
        // The child may be dying right now; give it a moment to be seen dead.
        let until = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => break None,
            }
        };
        if self.shared.timed_out.load(Ordering::Relaxed) {
            return Error::run(if self.lossy {
                format!(
                    "responder did not answer within {:.1}s and was killed ({what}); over UDP a lost datagram is the likely cause (no flow control: datagrams sent faster than the receiver drains them are dropped), so use fewer or larger packets, a smaller --window, or tcp; else raise --timeout if it is just slow",
                    self.timeout.as_secs_f64()
                )
            } else {
                format!(
                    "responder did not answer within {:.1}s and was killed; raise --timeout if it is just slow",
                    self.timeout.as_secs_f64()
                )
            });
        }
        match status {
            Some(st) => {
                self.finished = true;
                let words = self.last_words();
                Error::run(format!(
                    "responder exited unexpectedly ({st}){}",
                    if words.is_empty() {
                        String::new()
                    } else {
                        format!(": {words}")
                    }
                ))
            }
            None => Error::run(format!("{what}: {err}")),
        }
    }

    fn last_words(&mut self) -> String {
        let mut s = String::new();
        if let Some(err) = self.child.stderr.as_mut() {
            let _ = err.take(4096).read_to_string(&mut s);
        }
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Waits for the child to exit after it was told to stop.
    pub fn finish(mut self) -> Result<()> {
        let until =
            Instant::now() + Duration::from_secs(2).max(self.timeout.min(Duration::from_secs(10)));
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => {
                    self.finished = true;
                    if st.success() {
                        return Ok(());
                    }
                    let words = self.last_words();
                    return Err(Error::run(format!(
                        "responder ended with {st}{}",
                        if words.is_empty() {
                            String::new()
                        } else {
                            format!(": {words}")
                        }
                    )));
                }
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(1)),
                Ok(None) => {
                    return Err(Error::run("responder did not stop when told to; killed it"));
                }
                Err(e) => return Err(Error::io("waiting for the responder", e)),
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our own eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
    }
}

fn eventfd() -> Result<OwnedFd> {
    // SAFETY: plain syscall; the fd is owned from here on.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::os("eventfd"));
    }
    // SAFETY: fd ≥ 0 is the eventfd just made, open and owned by no one else;
    // the OwnedFd is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: plain syscall; the fd is owned from here on.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    // SAFETY: fd ≥ 0 is the pidfd just made, open and owned by no one else;
    // the OwnedFd is its only owner and closes it once.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

fn exited(pid: libc::pid_t) -> bool {
    // WNOWAIT: look without reaping, so `Child` can still collect the status.
    // SAFETY: siginfo_t is plain C data (integers, a union of them): all
    // zeroes is valid, and si_pid 0 means "no child changed state".
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a live, writable siginfo_t; waitid writes only into it.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid reads the union's child-status fields, which waitid
    // fills for a WEXITED report and which are zero (from above) otherwise.
    r != 0 || unsafe { info.si_pid() } == pid
}

fn watch(pid: libc::pid_t, stop: RawFd, shared: &Shared, timeout: Duration) {
    let pidfd = pidfd_open(pid);
    // Without a pidfd we must look for the child's exit ourselves, so tick often.
    let tick = if pidfd.is_some() {
        (timeout / 4).clamp(Duration::from_millis(50), Duration::from_millis(2500))
    } else {
        Duration::from_millis(100)
    };
    let mut last = shared.progress.load(Ordering::Relaxed);
    let mut stuck = Duration::ZERO;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: stop,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: fds is a valid array of two pollfds.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, tick.as_millis() as i32) };
        if r > 0 && fds[0].revents != 0 {
            return;
        }
        if (r > 0 && fds[1].revents != 0) || (pidfd.is_none() && exited(pid)) {
            shared.gone.store(true, Ordering::Relaxed);
            shared.wake_waiters();
            return;
        }
        let now = shared.progress.load(Ordering::Relaxed);
        if now % 2 == 1 && now == last {
            stuck += tick;
            if stuck >= timeout {
                shared.timed_out.store(true, Ordering::Relaxed);
                // SAFETY: the child is ours and not yet reaped (Drop reaps).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                shared.gone.store(true, Ordering::Relaxed);
                shared.wake_waiters();
                return;
            }
        } else {
            stuck = Duration::ZERO;
        }
        last = now;
    }
}

/// Test hook: `XFERBENCH_RESPONDER_FAULT=exit-after:N` or `hang-after:N` makes
/// a responder die or stop answering after N requests, so the initiator's
/// handling of a dead or hung peer can be tested end to end; `flip-bit:N`
/// flips one bit in the middle of its Nth reply (counting from 1), the
/// corruption fill-check must catch.
pub struct Fault {
    exit_after: u64,
    hang_after: u64,
    flip_at: u64,
    served: u64,
}

impl Fault {
    /// No fault at all.
    pub fn none() -> Fault {
        Fault {
            exit_after: u64::MAX,
            hang_after: u64::MAX,
            flip_at: u64::MAX,
            served: 0,
        }
    }

    /// The fault `XFERBENCH_RESPONDER_FAULT` asks for; none when it is unset
    /// or not understood.
    pub fn from_env() -> Fault {
        let mut f = Fault::none();
        if let Ok(v) = std::env::var("XFERBENCH_RESPONDER_FAULT")
            && let Some((kind, n)) = v.split_once(':')
        {
            let n = n.parse().unwrap_or(u64::MAX);
            match kind {
                "exit-after" => f.exit_after = n,
                "hang-after" => f.hang_after = n,
                "flip-bit" => f.flip_at = n,
                _ => {}
            }
        }
        f
    }

    /// Called on each reply before it is sent, and in stream mode on each
    /// request before it is checked: flip-bit:N damages the N-th exchange's
    /// data in transit (`tick` counts exchanges afterwards).
    #[inline]
    pub fn corrupt(&self, reply: &mut [u8]) {
        if self.served + 1 == self.flip_at && !reply.is_empty() {
            reply[reply.len() / 2] ^= 1;
        }
    }

    /// Called after each request served; true when the responder must stop now
    /// (a child process exits with status 3, a thread just returns).
    #[inline]
    pub fn tick(&mut self) -> bool {
        self.served += 1;
        if self.served >= self.hang_after {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        self.served >= self.exit_after
    }
}

/// Ends a child responder the way an injected fault asks for.
pub fn fault_exit(served: &Fault) -> ! {
    eprintln!(
        "responder: injected fault: exiting after {} requests",
        served.served
    );
    std::process::exit(3);
}
