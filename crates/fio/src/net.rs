//! The `net` engine, resolved (its options are `job::net`'s, its I/O the
//! `net` engine's): where a net job's socket goes — its
//! protocol, whether it listens or connects, the address and the socket
//! options — from `hostname=`/`port=`/`protocol=` as fio 3 reads them, or
//! from the older `filename=host/port/proto` form. Everything is checked
//! when the job is prepared, so a job that cannot work stops before any job
//! runs, with one line naming the option and the fix.

use crate::job::{IoEngine, Job, Rw};
use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;

pub use crate::job::net::Proto;

/// Which end of the connection a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Binds a port (or a socket path) and waits for the peer.
    Listen,
    /// Connects (or sends datagrams) to `hostname=`.
    Connect,
}

/// Where the socket binds or connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    /// A host (None: every local address, for a listener) and port.
    Inet { host: Option<String>, port: u16 },
    /// A Unix socket's path.
    Unix(PathBuf),
}

/// Everything the engine needs to open a net job's socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub proto: Proto,
    pub role: Role,
    pub addr: Addr,
    /// The job sends (`rw=write`); otherwise it receives (`rw=read`).
    pub sends: bool,
    /// Every block goes back to the sender before the next one (fio's
    /// latency mode): a sender's I/O is a round trip.
    pub pingpong: bool,
    pub nodelay: bool,
    pub window_size: Option<u32>,
    pub mss: Option<u32>,
    /// The IPv4 multicast group a UDP job sends to or joins.
    pub group: Option<Ipv4Addr>,
    /// The interface multicast goes through (None: the kernel's choice).
    pub interface: Option<Ipv4Addr>,
    /// Outgoing multicast time-to-live (fio's default 1).
    pub ttl: u32,
    /// `netsplice`: TCP blocks go through a pipe with splice(2).
    pub splice: bool,
    /// Read from the old `filename=host/port/proto` form.
    pub legacy: bool,
}

impl Endpoint {
    /// The net engine's reading of `job`, whose filename (after `--map`) is
    /// `filename`: an error names the option and the fix (the caller adds
    /// the job's name).
    pub fn of(job: &Job, filename: &str) -> Result<Endpoint, String> {
        let o = &job.net;
        let sends = sends(job)?;
        let legacy = if o.port.is_none() && o.protocol != Some(Proto::Unix) {
            legacy_form(filename)?
        } else {
            None
        };
        let (proto, host) = proto_and_host(o, filename, legacy.as_ref())?;
        // fio: a TCP job listens only when told to; a UDP or Unix reader is
        // always the bound end (the old filename form listened on every read).
        let role = if o.listen == Some(true) {
            if !proto.is_tcp() && sends {
                return Err(format!(
                    "listen with protocol={} and rw=write: a {} sender sends to hostname=; drop listen (the reading job binds)",
                    proto.name(),
                    proto.name()
                ));
            }
            Role::Listen
        } else if !proto.is_tcp() || legacy.is_some() {
            if sends { Role::Connect } else { Role::Listen }
        } else {
            Role::Connect
        };
        let legacy_port = legacy.as_ref().and_then(|l| l.port);
        let addr = address(job, proto, role, host.as_deref(), legacy_port)?;
        let group = host
            .as_deref()
            .and_then(|h| h.parse::<Ipv4Addr>().ok())
            .filter(|a| a.is_multicast() && proto.is_udp());
        match (&addr, role) {
            (Addr::Inet { host: None, .. }, Role::Connect) => {
                return Err(if sends {
                    "ioengine=net needs hostname= (the receiver's host) to send to".into()
                } else {
                    "ioengine=net needs hostname= to connect to, or listen to wait for a sender (did you forget listen?)".into()
                });
            }
            (Addr::Inet { host: Some(h), .. }, Role::Listen)
                if legacy.is_none() && group.is_none() =>
            {
                return Err(format!(
                    "hostname={h}: a {} takes every address and no hostname=; drop it (a udp reader takes one only to join a multicast group)",
                    if proto.is_tcp() {
                        "listening job"
                    } else {
                        "receiving job"
                    }
                ));
            }
            _ => {}
        }
        let addr = match (addr, role, legacy.is_some()) {
            // The old form's host is the sender's; its reader took every address.
            (Addr::Inet { port, .. }, Role::Listen, true) => Addr::Inet { host: None, port },
            (a, _, _) => a,
        };
        let interface = socket_options(job, proto, group)?;
        Ok(Endpoint {
            proto,
            role,
            addr,
            sends,
            pingpong: o.pingpong.unwrap_or(false),
            nodelay: o.nodelay.unwrap_or(false),
            window_size: o.window_size.filter(|w| *w > 0),
            mss: o.mss.filter(|m| *m > 0),
            group,
            interface,
            ttl: o.ttl.unwrap_or(1),
            splice: job.ioengine == IoEngine::NetSplice,
            legacy: legacy.is_some(),
        })
    }
}

/// Whether the job sends (rw=write) or receives (rw=read); a net job does
/// nothing else.
fn sends(job: &Job) -> Result<bool, String> {
    let sends = match job.rw {
        Rw::Write => true,
        Rw::Read => false,
        Rw::RandRead | Rw::RandWrite => {
            return Err(format!(
                "rw={}: network I/O cannot be random; use rw=read to receive or rw=write to send",
                job.rw.name()
            ));
        }
        Rw::ReadWrite | Rw::RandRw => {
            return Err(format!(
                "rw={}: a net job either receives (rw=read) or sends (rw=write); make two jobs",
                job.rw.name()
            ));
        }
        Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite => {
            return Err(format!(
                "rw={} needs a file or block device to trim, and ioengine={} is a socket; use rw=read to receive or rw=write to send",
                job.rw.name(),
                job.ioengine.name()
            ));
        }
    };
    if job.verify.is_some() {
        return Err(
            "verify= checks blocks stored in a target; a net job stores nothing (drop verify=)"
                .into(),
        );
    }
    Ok(sends)
}

/// The protocol and host, from the options or the old filename form
/// (which must not contradict `protocol=`).
fn proto_and_host(
    o: &crate::job::net::NetOptions,
    filename: &str,
    legacy: Option<&Legacy>,
) -> Result<(Proto, Option<String>), String> {
    Ok(match legacy {
        Some(l) => {
            if let (Some(given), Some(named)) = (o.protocol, l.proto)
                && given != named
            {
                return Err(format!(
                    "filename={filename} names {} but protocol={}; keep one",
                    named.name(),
                    given.name()
                ));
            }
            let proto = l.proto.or(o.protocol).unwrap_or(Proto::Tcp);
            (proto, l.host.clone())
        }
        None => (
            o.protocol.unwrap_or(Proto::Tcp),
            Some(filename.trim().to_string()).filter(|h| !h.is_empty()),
        ),
    })
}

/// The socket's address: a Unix path, or a host and this clone's port
/// (fio gives each numjobs clone the next port).
fn address(
    job: &Job,
    proto: Proto,
    role: Role,
    host: Option<&str>,
    legacy_port: Option<u16>,
) -> Result<Addr, String> {
    if proto == Proto::Unix {
        if job.net.port.is_some() {
            return Err(
                "port= with protocol=unix: a Unix socket is a path (hostname=/tmp/x.sock); drop port="
                    .into(),
            );
        }
        let Some(path) = host else {
            return Err(
                "protocol=unix needs the socket's path: hostname=/tmp/x.sock (or filename=)".into(),
            );
        };
        return Ok(Addr::Unix(PathBuf::from(path)));
    }
    let Some(port) = legacy_port.or(job.net.port) else {
        return Err(format!(
            "protocol={} needs port= (the port to {})",
            proto.name(),
            if role == Role::Listen {
                "listen on"
            } else {
                "connect to"
            }
        ));
    };
    let port = u16::try_from(u32::from(port) + job.clone).map_err(|_| {
        format!(
            "port={port} with numjobs={}: clone {} would use a port past 65535; use a lower port=",
            job.numjobs, job.clone
        )
    })?;
    Ok(Addr::Inet {
        host: host.map(str::to_string),
        port,
    })
}

/// The options that suit only some sockets (multicast's interface= and
/// ttl=, TCP's nodelay= and mss=, UDP's datagram size), checked against
/// this one; the multicast interface, if given.
fn socket_options(
    job: &Job,
    proto: Proto,
    group: Option<Ipv4Addr>,
) -> Result<Option<Ipv4Addr>, String> {
    let o = &job.net;
    if group.is_some() && proto == Proto::Udpv6 {
        return Err("multicast is supported on IPv4 only (as in fio); use protocol=udp".into());
    }
    let interface = match &o.interface {
        None => None,
        Some(_) if group.is_none() => {
            return Err(
                "interface= picks the interface for UDP multicast; this job is not multicast (hostname= is not a 224.0.0.0/4 group): drop interface="
                    .into(),
            );
        }
        Some(i) => Some(i.parse::<Ipv4Addr>().map_err(|_| {
            format!("interface={i}: give the interface's IPv4 address, as in interface=10.0.0.2")
        })?),
    };
    if o.ttl.is_some() && group.is_none() {
        return Err(
            "ttl= sets the time-to-live of UDP multicast; this job is not multicast (hostname= is not a 224.0.0.0/4 group): drop ttl="
                .into(),
        );
    }
    if !proto.is_tcp() {
        for (k, given) in [("nodelay", o.nodelay.is_some()), ("mss", o.mss.is_some())] {
            if given {
                return Err(format!(
                    "{k}= is a TCP option; drop it for protocol={}",
                    proto.name()
                ));
            }
        }
    }
    if proto.is_udp() && job.bs > crate::transport::udp::MAX_DATAGRAM {
        return Err(format!(
            "bs={} is over the largest UDP datagram ({} bytes); use bs=64k or less, or protocol=tcp",
            job.bs,
            crate::transport::udp::MAX_DATAGRAM
        ));
    }
    Ok(interface)
}

/// Shown as the job's file: fio's `host/port/proto` (a listener's host is
/// the address it binds), or the socket's path.
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.addr {
            Addr::Unix(p) => write!(f, "{}/unix", p.display()),
            Addr::Inet { host, port } => {
                let any = if self.proto.is_v6() { "::" } else { "0.0.0.0" };
                write!(
                    f,
                    "{}/{port}/{}",
                    host.as_deref().unwrap_or(any),
                    self.proto.name()
                )
            }
        }
    }
}

/// What the old `filename=` form named.
#[derive(Debug, PartialEq, Eq)]
struct Legacy {
    host: Option<String>,
    port: Option<u16>,
    proto: Option<Proto>,
}

/// fio's older spellings of a net job's peer, `host/port[/proto]` and
/// `host,port[,proto]` (`/tmp/fio.sock,,unix` for a Unix socket), if
/// `filename` is one; any other name is a plain host.
fn legacy_form(filename: &str) -> Result<Option<Legacy>, String> {
    let parts: Vec<&str> = if filename.contains(',') {
        filename.split(',').map(str::trim).collect()
    } else {
        let p: Vec<&str> = filename.split('/').collect();
        let port_like =
            p.len() >= 2 && !p[1].is_empty() && p[1].bytes().all(|b| b.is_ascii_digit());
        if !(p.len() == 2 || p.len() == 3) || p[0].is_empty() || !port_like {
            return Ok(None);
        }
        p
    };
    if parts.len() > 3 {
        return Err(format!(
            "filename={filename}: expected host,port[,protocol] (as in localhost,8888,tcp)"
        ));
    }
    let proto = parts
        .get(2)
        .filter(|p| !p.is_empty())
        .map(|p| Proto::parse(p).map_err(|e| format!("filename={filename}: {e}")))
        .transpose()?;
    let host = Some(parts[0].to_string()).filter(|h| !h.is_empty());
    let port_text = parts.get(1).copied().unwrap_or("");
    if proto == Some(Proto::Unix) {
        if !port_text.is_empty() {
            return Err(format!(
                "filename={filename}: a Unix socket takes no port; write {},,unix",
                parts[0]
            ));
        }
        return Ok(Some(Legacy {
            host,
            port: None,
            proto,
        }));
    }
    let port = port_text
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("filename={filename}: the port must be a number from 1 to 65535"))?;
    Ok(Some(Legacy {
        host,
        port: Some(port),
        proto,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::net::NetOptions;

    fn job(lines: &[(&str, Option<&str>)]) -> Job {
        let mut j = Job::default();
        j.set("ioengine", Some("net")).unwrap();
        for (k, v) in lines {
            j.set(k, *v).unwrap();
        }
        j
    }

    fn ep(lines: &[(&str, Option<&str>)]) -> Result<Endpoint, String> {
        let j = job(lines);
        Endpoint::of(&j, j.filename.as_deref().unwrap_or(""))
    }

    #[test]
    fn netio_fio_receiver_and_sender() {
        let common = [("port", Some("8888")), ("protocol", Some("tcp"))];
        let r = ep(&[common[0], common[1], ("listen", None), ("rw", Some("read"))]).unwrap();
        assert_eq!(
            (r.role, r.sends, r.proto),
            (Role::Listen, false, Proto::Tcp)
        );
        assert_eq!(
            r.addr,
            Addr::Inet {
                host: None,
                port: 8888
            }
        );
        assert_eq!(r.to_string(), "0.0.0.0/8888/tcp");
        let s = ep(&[
            common[0],
            common[1],
            ("hostname", Some("localhost")),
            ("rw", Some("write")),
        ])
        .unwrap();
        assert_eq!((s.role, s.sends), (Role::Connect, true));
        assert_eq!(s.to_string(), "localhost/8888/tcp");
        assert!(!s.nodelay && !s.pingpong && !s.splice);
    }

    #[test]
    fn old_filename_forms_listen_on_reads() {
        let r = ep(&[
            ("filename", Some("localhost,8888,tcp")),
            ("rw", Some("read")),
        ])
        .unwrap();
        assert_eq!((r.role, r.legacy), (Role::Listen, true));
        assert_eq!(
            r.addr,
            Addr::Inet {
                host: None,
                port: 8888
            }
        );
        let w = ep(&[
            ("filename", Some("localhost/9000/udp")),
            ("rw", Some("write")),
        ])
        .unwrap();
        assert_eq!((w.role, w.proto), (Role::Connect, Proto::Udp));
        assert_eq!(
            w.addr,
            Addr::Inet {
                host: Some("localhost".into()),
                port: 9000
            }
        );
        let u = ep(&[
            ("filename", Some("/tmp/fio.sock,,unix")),
            ("rw", Some("read")),
        ])
        .unwrap();
        assert_eq!(u.addr, Addr::Unix("/tmp/fio.sock".into()));
        assert_eq!(u.role, Role::Listen);
        // A plain host is not the old form: it needs port=.
        assert!(
            ep(&[("hostname", Some("h")), ("rw", Some("write"))])
                .unwrap_err()
                .contains("needs port=")
        );
        let e = ep(&[("filename", Some("h,0,tcp")), ("rw", Some("write"))]).unwrap_err();
        assert!(e.contains("1 to 65535"), "{e}");
        let e = ep(&[
            ("filename", Some("h,80,tcp")),
            ("protocol", Some("udp")),
            ("rw", Some("write")),
        ])
        .unwrap_err();
        assert!(e.contains("keep one"), "{e}");
    }

    #[test]
    fn roles_by_protocol() {
        // UDP and Unix readers bind by themselves, as in fio.
        let r = ep(&[
            ("port", Some("9")),
            ("protocol", Some("udp")),
            ("rw", Some("read")),
        ])
        .unwrap();
        assert_eq!(r.role, Role::Listen);
        let u = ep(&[
            ("protocol", Some("unix")),
            ("hostname", Some("/tmp/s")),
            ("rw", Some("write")),
        ])
        .unwrap();
        assert_eq!(
            (u.role, u.to_string()),
            (Role::Connect, "/tmp/s/unix".into())
        );
        // A TCP listener may send, a connecting TCP job may receive.
        let l = ep(&[("port", Some("9")), ("listen", None), ("rw", Some("write"))]).unwrap();
        assert_eq!((l.role, l.sends), (Role::Listen, true));
        let c = ep(&[
            ("port", Some("9")),
            ("hostname", Some("h")),
            ("rw", Some("read")),
        ])
        .unwrap();
        assert_eq!((c.role, c.sends), (Role::Connect, false));
        // numjobs clones take the next ports.
        let mut j = job(&[("port", Some("65535")), ("listen", None)]);
        j.clone = 1;
        assert!(Endpoint::of(&j, "").unwrap_err().contains("past 65535"));
        j.net.port = Some(8000);
        assert_eq!(
            Endpoint::of(&j, "").unwrap().addr,
            Addr::Inet {
                host: None,
                port: 8001
            }
        );
    }

    #[test]
    fn refusals_name_the_fix() {
        type Lines<'a> = &'a [(&'a str, Option<&'a str>)];
        let cases: &[(Lines, &str)] = &[
            (
                &[
                    ("port", Some("9")),
                    ("listen", None),
                    ("rw", Some("randread")),
                ],
                "cannot be random",
            ),
            (
                &[("port", Some("9")), ("listen", None), ("rw", Some("rw"))],
                "make two jobs",
            ),
            (
                &[("port", Some("9")), ("rw", Some("read"))],
                "did you forget listen",
            ),
            (
                &[("port", Some("9")), ("rw", Some("write"))],
                "needs hostname=",
            ),
            (&[("listen", None)], "needs port="),
            (
                &[
                    ("port", Some("9")),
                    ("listen", None),
                    ("hostname", Some("localhost")),
                ],
                "drop it",
            ),
            (
                &[
                    ("protocol", Some("unix")),
                    ("port", Some("9")),
                    ("hostname", Some("/s")),
                ],
                "drop port=",
            ),
            (
                &[("protocol", Some("unix")), ("listen", None)],
                "socket's path",
            ),
            (
                &[
                    ("protocol", Some("udp")),
                    ("port", Some("9")),
                    ("hostname", Some("h")),
                    ("rw", Some("write")),
                    ("listen", None),
                ],
                "drop listen",
            ),
            (
                &[
                    ("protocol", Some("udp")),
                    ("port", Some("9")),
                    ("hostname", Some("h")),
                    ("rw", Some("write")),
                    ("ttl", Some("2")),
                ],
                "drop ttl=",
            ),
            (
                &[
                    ("port", Some("9")),
                    ("hostname", Some("h")),
                    ("rw", Some("write")),
                    ("interface", Some("10.0.0.1")),
                ],
                "drop interface=",
            ),
            (
                &[
                    ("protocol", Some("udp")),
                    ("port", Some("9")),
                    ("hostname", Some("239.1.1.1")),
                    ("rw", Some("write")),
                    ("interface", Some("eth0")),
                ],
                "IPv4 address",
            ),
            (
                &[
                    ("protocol", Some("udp")),
                    ("port", Some("9")),
                    ("hostname", Some("h")),
                    ("rw", Some("write")),
                    ("mss", Some("1000")),
                ],
                "TCP option",
            ),
            (
                &[
                    ("protocol", Some("udp")),
                    ("port", Some("9")),
                    ("hostname", Some("h")),
                    ("rw", Some("write")),
                    ("bs", Some("128k")),
                ],
                "largest UDP datagram",
            ),
            (
                &[
                    ("port", Some("9")),
                    ("listen", None),
                    ("verify", Some("crc32c")),
                ],
                "drop verify=",
            ),
        ];
        for (lines, want) in cases {
            let e = ep(lines).unwrap_err();
            assert!(e.contains(want), "{lines:?}: {e}");
        }
    }

    #[test]
    fn multicast_and_options() {
        let base = [
            ("protocol", Some("udp")),
            ("port", Some("10000")),
            ("hostname", Some("239.0.0.0")),
            ("ttl", Some("1")),
            ("interface", Some("127.0.0.1")),
        ];
        let mut reader = base.to_vec();
        reader.extend([("pingpong", Some("1")), ("rw", Some("read"))]);
        let r = ep(&reader).unwrap();
        assert_eq!(r.role, Role::Listen);
        assert_eq!(r.group, Some(Ipv4Addr::new(239, 0, 0, 0)));
        assert_eq!(r.interface, Some(Ipv4Addr::LOCALHOST));
        assert!(r.pingpong);
        let mut writer = base.to_vec();
        writer.push(("rw", Some("write")));
        assert_eq!(ep(&writer).unwrap().role, Role::Connect);
        let t = ep(&[
            ("port", Some("9")),
            ("hostname", Some("h")),
            ("rw", Some("write")),
            ("nodelay", None),
            ("window_size", Some("256k")),
            ("mss", Some("1400")),
        ])
        .unwrap();
        assert_eq!(
            (t.nodelay, t.window_size, t.mss),
            (true, Some(256 << 10), Some(1400))
        );
        let mut j = job(&[
            ("ioengine", Some("netsplice")),
            ("port", Some("9")),
            ("listen", None),
        ]);
        assert!(Endpoint::of(&j, "").unwrap().splice);
        j.set("protocol", Some("udpv6")).unwrap();
        j.net.listen = None;
        assert!(
            Endpoint::of(&j, "239.1.1.1")
                .unwrap_err()
                .contains("IPv4 only")
        );
    }

    #[test]
    fn options_parse_through_job_set() {
        let mut j = Job::default();
        for (k, v) in [
            ("port", Some("8888")),
            ("proto", Some("udpv6")),
            ("listen", None),
            ("pingpong", Some("1")),
            ("nodelay", Some("0")),
            ("window_size", Some("1m")),
            ("mss", Some("1400")),
            ("interface", Some("10.0.0.2")),
            ("ttl", Some("4")),
            ("hostname", Some("fe80::1")),
        ] {
            assert_eq!(j.set(k, v).unwrap(), crate::job::SetOutcome::Applied, "{k}");
        }
        let n = &j.net;
        assert_eq!(n.port, Some(8888));
        assert_eq!(n.protocol, Some(Proto::Udpv6));
        assert_eq!(
            (n.listen, n.pingpong, n.nodelay),
            (Some(true), Some(true), Some(false))
        );
        assert_eq!(
            (n.window_size, n.mss, n.ttl),
            (Some(1 << 20), Some(1400), Some(4))
        );
        assert_eq!(n.interface.as_deref(), Some("10.0.0.2"));
        // hostname= is the job's filename, colons and all, as in fio.
        assert_eq!(j.filename.as_deref(), Some("fe80::1"));
        assert_eq!(n.first_given(), Some("hostname"));
        assert_eq!(NetOptions::default().first_given(), None);
        let err = |k: &str, v: &str| Job::default().set(k, Some(v)).unwrap_err().to_string();
        assert!(err("port", "0").contains("from 1 to 65535"));
        assert!(err("port", "65536").contains("from 1 to 65535"));
        assert_eq!(
            err("protocol", "sctp"),
            "protocol=sctp: unknown protocol; use tcp, tcpv6, udp, udpv6 or unix"
        );
        assert!(err("window_size", "4g").contains("at most 2g"));
        assert!(err("listen", "maybe").contains("expected a boolean"));
        assert!(err("ttl", "256").contains("from 0 to 255"));
        let mut j = Job::default();
        j.set("ioengine", Some("netsplice")).unwrap();
        assert_eq!(j.ioengine, IoEngine::NetSplice);
        assert_eq!(j.ioengine.name(), "netsplice");
    }

    #[test]
    fn protocol_words() {
        assert_eq!(Proto::parse("TCPv6"), Ok(Proto::Tcpv6));
        assert!(Proto::parse("vsock").unwrap_err().contains("not supported"));
        assert!(Proto::parse("sctp").unwrap_err().contains("use tcp"));
    }
}
