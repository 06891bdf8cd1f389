//! `xferbench serve`: the responder for initiators on other machines
//! (`-t tcp://HOST:PORT`). It is exposed to a network, so it trusts nothing
//! a client sends: the hello is checked (magic, version, token compared in
//! constant time) before anything else; every length is checked against
//! `--max-message` before any allocation; every read and write has the idle
//! timeout; a bad client loses its own connection, logged with the reason,
//! and the server goes on; sessions are bounded by `--max-sessions`.

use crate::cli::ServeArgs;
use crate::error::{Error, Result};
use crate::transport::remote::{self, Hello, Limits, Status};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use subtle::ConstantTimeEq;

/// The longest responder delay a client may ask for: a client must not be
/// able to park a server thread spinning.
const MAX_DELAY_NS: u64 = 100_000_000;

struct Server {
    token: Option<Vec<u8>>,
    max_message: u64,
    idle: std::time::Duration,
    active: AtomicUsize,
    max_sessions: usize,
    quiet: bool,
}

impl Server {
    fn log(&self, line: &str) {
        if !self.quiet {
            eprintln!("xferbench serve: {line}");
        }
    }

    /// Checks a hello; the status to answer.
    fn judge(&self, h: &Hello) -> Status {
        if h.version != remote::VERSION {
            return Status::BadVersion;
        }
        if let Some(t) = &self.token {
            // Equal lengths and equal bytes, in time that does not depend on
            // where they first differ.
            let same = t.len() == h.token.len() && bool::from(t.as_slice().ct_eq(&h.token));
            if !same {
                return Status::BadToken;
            }
        }
        if h.max_message > self.max_message {
            return Status::TooLarge;
        }
        Status::Ok
    }

    /// One client, from hello to goodbye; the reason it ended.
    fn session(&self, mut s: TcpStream) -> std::result::Result<String, String> {
        s.set_read_timeout(Some(self.idle))
            .and_then(|_| s.set_write_timeout(Some(self.idle)))
            .and_then(|_| s.set_nodelay(true))
            .map_err(|e| format!("setting up the socket: {e}"))?;
        let hello = Hello::read(&mut s)?;
        let status = self.judge(&hello);
        s.write_all(&remote::welcome(status, self.max_message))
            .map_err(|e| format!("answering the hello: {e}"))?;
        if status != Status::Ok {
            return Err(format!("refused: {}", status.reason()));
        }
        let limits = Limits {
            max_message: self.max_message as usize,
            max_delay_ns: MAX_DELAY_NS,
        };
        remote::serve_connection(&s, &limits).map_err(|e| e.to_string())?;
        Ok("done".into())
    }
}

pub fn run(args: &ServeArgs, quiet: bool) -> Result<()> {
    let listener = TcpListener::bind(&args.listen).map_err(|e| {
        Error::usage(format!(
            "cannot listen on {}: {e}; pick another --listen ADDR:PORT",
            args.listen
        ))
    })?;
    let local: SocketAddr = listener
        .local_addr()
        .map_err(|e| Error::io("reading the listening address", e))?;
    let token = args
        .token
        .clone()
        .or_else(|| std::env::var("XFERBENCH_TOKEN").ok())
        .filter(|t| !t.is_empty());
    if token.as_ref().is_some_and(|t| t.len() > remote::MAX_TOKEN) {
        return Err(Error::usage(format!(
            "--token is longer than {} bytes",
            remote::MAX_TOKEN
        )));
    }
    let server = Arc::new(Server {
        token: token.map(String::into_bytes),
        max_message: args.max_message,
        idle: args.idle_timeout,
        active: AtomicUsize::new(0),
        max_sessions: args.max_sessions as usize,
        quiet,
    });
    // Always said, even with --quiet: scripts read the port from it.
    eprintln!(
        "xferbench serve: listening on {local} (max message {} bytes, {} sessions, idle timeout {:?}{})",
        args.max_message,
        args.max_sessions,
        args.idle_timeout,
        if server.token.is_some() {
            ", token required"
        } else {
            ""
        }
    );
    let mut sessions = 0u64;
    for conn in listener.incoming() {
        let s = match conn {
            Ok(s) => s,
            Err(e) => {
                server.log(&format!("accept failed: {e}"));
                continue;
            }
        };
        sessions += 1;
        let id = sessions;
        let peer = s
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        if server.active.fetch_add(1, Ordering::AcqRel) >= server.max_sessions {
            server.active.fetch_sub(1, Ordering::AcqRel);
            let mut s = s;
            let _ = s.set_write_timeout(Some(std::time::Duration::from_secs(1)));
            let _ = s.write_all(&remote::welcome(Status::Busy, server.max_message));
            server.log(&format!(
                "session {id} from {peer}: refused: at --max-sessions"
            ));
            continue;
        }
        let srv = server.clone();
        let handle = std::thread::Builder::new()
            .name(format!("xb-serve-{id}"))
            .spawn(move || {
                let r = srv.session(s);
                srv.active.fetch_sub(1, Ordering::AcqRel);
                match r {
                    Ok(why) => srv.log(&format!("session {id} from {peer}: {why}")),
                    Err(why) => srv.log(&format!("session {id} from {peer}: closed: {why}")),
                }
            })
            .map_err(|e| Error::run(format!("starting a session thread: {e}")))?;
        if args.once {
            let _ = handle.join();
            return Ok(());
        }
    }
    Ok(())
}
