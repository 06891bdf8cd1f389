//! fio's `exec`: no I/O, a program run beside the other jobs (a monitor
//! such as turbostat, or `sleep %r` to let a machine cool down between
//! stonewalled groups). `arguments=` is split on spaces after fio's `%r`
//! (the job's runtime in whole seconds) and `%n` (its name) are expanded.
//!
//! The program starts when the job does and runs until `runtime=` passes
//! (or the run is stopped); then it gets SIGTERM, `grace_time=` seconds to
//! go, and SIGKILL — so a program that ignores SIGTERM cannot hold the run.
//! A program that exits by itself ends the job there. The program runs in
//! its own process group and the signals go to the group, so that what it
//! started (a shell's children) stops with it.
//!
//! With `std_redirect` (fio's default) its stdout and stderr go to
//! JOBNAME.stdout and JOBNAME.stderr in the current directory, as in fio;
//! without it they go to xferbench's stderr (fio lets them through to its
//! stdout, where they would break xferbench's JSON).
//!
//! The program also ends with the run when the run cannot stop it: a run
//! abandoned (a hung device call, a signal it could not answer in time)
//! kills its group on the way out, and a run killed outright (SIGKILL)
//! takes the program with it by the parent-death signal.
//!
//! A program that exits by itself with a failure status, or dies by a
//! signal it was not sent, fails the job; one stopped at the end of its
//! runtime does not, whatever it returns then.

use super::{Accounting, Done, Engine, Op};
use crate::error::{Error, Result};
use crate::job::Job;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The longest one queued "I/O" waits, so that the end of the runtime, a
/// stop and the program's own exit are seen within it (fio's 50 ms).
const SLICE: Duration = Duration::from_millis(50);

/// How long to wait for the program to go after SIGKILL before giving up
/// on reaping it (a process stuck in the kernel cannot be waited for).
const AFTER_KILL: Duration = Duration::from_secs(5);

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// Still running.
    Running,
    /// It exited by itself.
    Itself(ExitStatus),
    /// It went after SIGTERM.
    Termed,
    /// It ignored SIGTERM for `grace_time` and was killed.
    Killed,
    /// It did not go even after SIGKILL (not reaped).
    Stuck,
}

pub struct Exec {
    shown: String,
    child: Child,
    grace: Duration,
    redirect: Option<(String, String)>,
    start: Instant,
    ended: Ended,
    span: Duration,
    done: Vec<Done>,
}

impl Exec {
    /// The job's engine: its program started, or, where the program cannot
    /// be found, a job that runs nothing and says so.
    pub fn open(job: &Job) -> Result<Box<dyn Engine>> {
        Ok(match missing(job) {
            Some(why) => Box::new(Absent {
                why,
                none: super::Null::new(1),
            }),
            None => Box::new(Exec::start(job)?),
        })
    }

    /// Starts `program=` with its arguments, as the job begins.
    pub fn start(job: &Job) -> Result<Exec> {
        let o = &job.engine_opts;
        let name = &job.name;
        let program = o.program.clone().unwrap_or_default();
        let (shown, argv) = argv(job);
        if argv.is_empty() {
            return Err(Error::usage(format!(
                "job {name}: program= is empty; name the program to run"
            )));
        }
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).stdin(Stdio::null()).process_group(0);
        let redirect = if o.std_redirect {
            let (out, err) = (format!("{name}.stdout"), format!("{name}.stderr"));
            let open = |path: &str| {
                std::fs::File::create(path).map_err(|e| {
                    Error::usage(format!(
                        "job {name}: std_redirect: cannot create {path}: {e}; run from a writable directory or set std_redirect=0"
                    ))
                    .with_source(e)
                })
            };
            cmd.stdout(open(&out)?).stderr(open(&err)?);
            Some((out, err))
        } else {
            // Kept off xferbench's stdout, which may be JSON.
            cmd.stdout(std::io::stderr()).stderr(std::io::stderr());
            None
        };
        // Ended with the run even when nothing of the run is left to stop
        // it (xferbench killed): the job's thread spawns it and stops it
        // at close, so the parent-death signal comes no earlier.
        let child = crate::children::die_with_parent(&mut cmd).spawn().map_err(|e| {
            Error::usage(format!(
                "job {name}: program={program}: cannot run it: {e}; give the program's path or a program on PATH"
            ))
            .with_source(e)
        })?;
        crate::children::track(child.id());
        Ok(Exec {
            shown,
            child,
            grace: o.grace_time,
            redirect,
            start: Instant::now(),
            ended: Ended::Running,
            span: Duration::ZERO,
            done: Vec::with_capacity(1),
        })
    }

    /// Sees whether the program has exited by itself.
    fn poll(&mut self) {
        if self.ended == Ended::Running
            && let Ok(Some(st)) = self.child.try_wait()
        {
            self.ended = Ended::Itself(st);
            self.span = self.start.elapsed();
        }
    }

    /// Signals the program's process group.
    fn signal(&self, sig: libc::c_int) {
        // The child leads its own group (process_group(0)), so its pid is
        // the group's id.
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals that process group; no
        // memory is touched.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }

    /// Waits up to `limit` for the program to go; whether it went.
    fn wait_for(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
    }

    /// Stops a program still running: SIGTERM, `grace_time`, SIGKILL.
    fn stop(&mut self) {
        self.poll();
        if self.ended != Ended::Running {
            crate::children::forget(self.child.id());
            return;
        }
        self.span = self.start.elapsed();
        self.signal(libc::SIGTERM);
        if self.wait_for(self.grace) {
            self.ended = Ended::Termed;
            // What it started may still ignore SIGTERM: the group goes too.
            self.signal(libc::SIGKILL);
            crate::children::forget(self.child.id());
            return;
        }
        self.signal(libc::SIGKILL);
        self.ended = if self.wait_for(AFTER_KILL) {
            Ended::Killed
        } else {
            Ended::Stuck
        };
        crate::children::forget(self.child.id());
    }
}

/// Checks, before any job runs, that `program=` names something to run.
pub fn check(job: &Job) -> Result<()> {
    if argv(job).1.is_empty() {
        return Err(Error::usage(format!(
            "job {}: program= is empty; name the program to run",
            job.name
        )));
    }
    Ok(())
}

/// Why `program=` cannot be started, if it cannot: neither a path to an
/// executable file nor a name found on PATH (as execvp looks).
fn missing(job: &Job) -> Option<String> {
    let (_, argv) = argv(job);
    let prog = argv.first()?;
    let runnable = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if prog.contains('/') {
        runnable(std::path::Path::new(prog))
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| runnable(&d.join(prog))))
    };
    (!found).then(|| {
        format!(
            "exec: program={prog}: no such executable{}, so nothing ran beside the other jobs (they ran, as fio runs them); give the program's path or install it",
            if prog.contains('/') { "" } else { " on PATH" }
        )
    })
}

/// A job whose program cannot be started. fio's exec engine forks, its
/// execvp fails unseen and the rest of the job file runs; here the job
/// ends at once and its warning says why (a missing monitor such as
/// turbostat should not cost the I/O jobs beside it).
struct Absent {
    why: String,
    /// Completes at once whatever the worker hands it before it sees the
    /// job finished.
    none: super::Null,
}

impl Engine for Absent {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.none.queue(op)
    }

    fn commit(&mut self) -> Result<()> {
        self.none.commit()
    }

    fn submission(&self) -> super::Submit {
        self.none.submission()
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        self.none.reap(min, max, timeout, out)
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn accounting(&self) -> Accounting {
        Accounting::Nothing
    }

    fn finished(&self) -> bool {
        true
    }

    fn warnings(&self) -> Vec<String> {
        vec![self.why.clone()]
    }

    fn completion_detail(&self) -> String {
        "exec: nothing ran (the program could not be started; see the warning)".into()
    }
}

/// The program's argv: fio joins `program` and `arguments` with a space,
/// expands `%r` and `%n`, and splits on spaces. Quotes group words here
/// (`-c 'echo hi; sleep 9'` is two arguments), where fio would pass the
/// quote characters on, which no program could want.
fn argv(job: &Job) -> (String, Vec<String>) {
    let o = &job.engine_opts;
    let secs = job.runtime.map_or(0, |r| r.as_secs());
    let args = o
        .arguments
        .as_deref()
        .map(|a| a.replace("%r", &secs.to_string()).replace("%n", &job.name));
    let line = match args {
        Some(a) => format!("{} {a}", o.program.as_deref().unwrap_or_default()),
        None => o.program.clone().unwrap_or_default(),
    };
    let w = words(&line);
    (line, w)
}

/// Splits on spaces, keeping what single or double quotes enclose as one
/// word (the quotes removed).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.get_or_insert_with(String::new);
            }
            (None, ' ' | '\t') => out.extend(cur.take()),
            (None, c) => cur.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(cur);
    out
}

impl Engine for Exec {
    fn queue(&mut self, op: Op) -> Result<()> {
        self.poll();
        if self.ended == Ended::Running {
            std::thread::sleep(SLICE);
            self.poll();
        }
        self.done.push(Done {
            slot: op.slot,
            res: Ok(op.len),
        });
        Ok(())
    }

    fn reap(
        &mut self,
        _min: usize,
        _max: usize,
        _timeout: Duration,
        out: &mut Vec<Done>,
    ) -> Result<()> {
        out.append(&mut self.done);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn accounting(&self) -> Accounting {
        Accounting::Nothing
    }

    fn finished(&self) -> bool {
        self.ended != Ended::Running
    }

    fn close(&mut self) -> Result<()> {
        self.stop();
        match self.ended {
            Ended::Itself(st) if !st.success() => Err(Error::run(match st.code() {
                Some(c) => format!("program `{}` exited with status {c}", self.shown),
                None => format!(
                    "program `{}` was killed by signal {}",
                    self.shown,
                    st.signal().unwrap_or(0)
                ),
            })),
            _ => Ok(()),
        }
    }

    fn warnings(&self) -> Vec<String> {
        match self.ended {
            Ended::Stuck => vec![format!(
                "exec: program `{}` (pid {}) did not go even after SIGKILL; it was left running",
                self.shown,
                self.child.id()
            )],
            _ => Vec::new(),
        }
    }

    fn completion_detail(&self) -> String {
        let how = match self.ended {
            Ended::Running => "still running".to_string(),
            Ended::Itself(st) => match st.code() {
                Some(c) => format!("exited by itself with status {c}"),
                None => format!("died by signal {}", st.signal().unwrap_or(0)),
            },
            Ended::Termed => "stopped by SIGTERM at the end of the runtime".into(),
            Ended::Killed => format!(
                "ignored SIGTERM and was killed (SIGKILL) after grace_time={} s",
                self.grace.as_secs()
            ),
            Ended::Stuck => "ignored SIGKILL too; left running".into(),
        };
        format!(
            "exec: ran `{}` (pid {}) for {:.2} s; it {how}{}",
            self.shown,
            self.child.id(),
            self.span.as_secs_f64(),
            self.redirect
                .as_ref()
                .map_or(String::new(), |(o, e)| format!(
                    "; stdout in {o}, stderr in {e}"
                ))
        )
    }
}

impl Drop for Exec {
    /// A job that failed before its end still leaves no program behind.
    fn drop(&mut self) {
        if self.ended == Ended::Running {
            self.signal(libc::SIGKILL);
            self.wait_for(AFTER_KILL);
        }
        crate::children::forget(self.child.id());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(lines: &[(&str, &str)]) -> Job {
        let mut j = Job {
            name: "x".into(),
            ..Job::default()
        };
        for (k, v) in lines {
            j.set(k, Some(v)).unwrap();
        }
        j
    }

    #[test]
    fn expands_runtime_and_name_and_splits_on_spaces() {
        let j = job(&[
            ("ioengine", "exec"),
            ("program", "/bin/echo"),
            ("arguments", "-n  %n ran %r s"),
            ("runtime", "2m"),
        ]);
        assert_eq!(argv(&j).1, ["/bin/echo", "-n", "x", "ran", "120", "s"]);
        assert_eq!(
            words(r#"sh -c 'echo hi; sleep %r' "a b"c ''"#),
            ["sh", "-c", "echo hi; sleep %r", "a bc", ""]
        );
    }

    #[test]
    fn a_program_that_ignores_sigterm_is_killed_after_the_grace_time() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("ignore-term.sh");
        std::fs::write(&script, "#!/bin/sh\ntrap '' TERM\nsleep 30\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = script.display().to_string();
        let j = job(&[
            ("ioengine", "exec"),
            ("program", &path),
            ("grace_time", "0"),
            ("std_redirect", "0"),
        ]);
        let mut e = Exec::start(&j).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        e.close().unwrap();
        assert_eq!(e.ended, Ended::Killed);
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(e.completion_detail().contains("SIGKILL"));
    }

    #[test]
    fn a_failing_program_fails_the_job_and_a_missing_one_runs_nothing() {
        let j = job(&[
            ("ioengine", "exec"),
            ("program", "false"),
            ("std_redirect", "0"),
        ]);
        let mut e = Exec::start(&j).unwrap();
        assert!(e.wait_for(Duration::from_secs(10)));
        e.poll();
        let err = e.close().unwrap_err().to_string();
        assert!(err.contains("exited with status 1"), "{err}");
        let mut j3 = j.clone();
        j3.engine_opts.program = Some("/nonexistent/prog".into());
        let err = Exec::start(&j3).err().unwrap().to_string();
        assert!(
            err.contains("program=/nonexistent/prog: cannot run it"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        let why = missing(&j3).unwrap();
        assert!(why.contains("no such executable, so nothing ran"), "{why}");
        assert!(missing(&j).is_none());
        j3.engine_opts.program = Some("no-such-monitor-xb".into());
        assert!(missing(&j3).unwrap().contains("on PATH"));
        let e = Exec::open(&j3).unwrap();
        assert!(e.finished() && e.warnings()[0].contains("no-such-monitor-xb"));
        assert!(check(&j).is_ok());
        j3.engine_opts.program = Some(String::new());
        assert!(
            check(&j3)
                .unwrap_err()
                .to_string()
                .contains("program= is empty")
        );
    }
}
