//! The `net` engine, the job's part: its options as a job sets them
//! (`hostname=`, `port=`, `protocol=`, `listen`…). One concept in three
//! places, each in its layer: the options here, what they resolve to (an
//! endpoint, checked when the job is prepared) in the top-level `net` module, and the
//! socket's I/O in the engines' `net` engine.

use super::spec::{Kind, Spec};
use serde::Serialize;

/// The options of fio's `net` and `netsplice` engines.
pub static NET: &[Spec] = &[
    // hostname= is the peer, kept as the filename as fio keeps it, so
    // --map can point it elsewhere; an IPv6 address keeps its colons.
    Spec::set("hostname", Kind::Text("localhost"), |j, o| {
        j.filename = Some(o.value()?.to_string());
        j.filenames.clear();
        j.net.hostname = j.filename.clone();
        Ok(())
    })
    .help("net: the peer's host, multicast group or Unix socket path")
    .no_def(),
    Spec::set("port", Kind::Int, |j, o| {
        j.net.port = Some(o.int()? as u16);
        Ok(())
    })
    .help("net: TCP or UDP port (each numjobs clone takes the next)")
    .no_def()
    .range(1, 65535),
    Spec::set(
        "protocol",
        Kind::Words(&[
            ("tcp", "TCP over IPv4"),
            ("tcpv6", "TCP over IPv6"),
            ("udp", "UDP over IPv4"),
            ("udpv6", "UDP over IPv6"),
            ("unix", "A Unix stream socket"),
        ]),
        |j, o| {
            j.net.protocol = Some(Proto::parse(o.value()?).map_err(|e| o.bad(&e))?);
            Ok(())
        },
    )
    .help("net: tcp, tcpv6, udp, udpv6 or unix")
    .def("tcp")
    .alias(&["proto"]),
    Spec::set("listen", Kind::Flag, |j, o| {
        j.net.listen = Some(o.bool()?);
        Ok(())
    })
    .help("net: wait for the connection instead of making it"),
    Spec::set("pingpong", Kind::Flag, |j, o| {
        j.net.pingpong = Some(o.bool()?);
        Ok(())
    })
    .help("net: every block goes back to the sender before the next"),
    Spec::set("nodelay", Kind::Bool, |j, o| {
        j.net.nodelay = Some(o.bool()?);
        Ok(())
    })
    .help("net: TCP_NODELAY on the socket")
    .no_def(),
    Spec::set("window_size", Kind::Size, |j, o| {
        let max = o.bounds().max;
        j.net.window_size = Some(
            u32::try_from(o.size()?)
                .ok()
                .filter(|w| i64::from(*w) <= max)
                .ok_or_else(|| o.bad(&format!("a socket buffer is at most 2g ({max} bytes)")))?,
        );
        Ok(())
    })
    .help("net: socket buffer size")
    .no_def()
    .range(0, i32::MAX as i64),
    Spec::set("mss", Kind::Int, |j, o| {
        j.net.mss = Some(o.int()?);
        Ok(())
    })
    .help("net: TCP maximum segment size")
    .no_def()
    .range(0, 65535),
    Spec::set("interface", Kind::Text("127.0.0.1"), |j, o| {
        j.net.interface = Some(o.value()?.to_string());
        Ok(())
    })
    .help("net: the interface a multicast job joins or sends through")
    .no_def(),
    Spec::set("ttl", Kind::Int, |j, o| {
        j.net.ttl = Some(o.int()?);
        Ok(())
    })
    .help("net: time-to-live of multicast datagrams")
    .def("1")
    .range(0, 255),
];

/// fio's `protocol=` (`proto=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    Tcp,
    Tcpv6,
    Udp,
    Udpv6,
    /// A Unix stream socket at a path (`hostname=` or `filename=`).
    Unix,
}

impl Proto {
    /// Reads fio's word for a protocol.
    pub fn parse(s: &str) -> Result<Proto, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "tcp" => Proto::Tcp,
            "tcpv6" => Proto::Tcpv6,
            "udp" => Proto::Udp,
            "udpv6" => Proto::Udpv6,
            "unix" => Proto::Unix,
            "vsock" => {
                return Err(
                    "vsock (virtio sockets between a VM and its host) is not supported by xferbench; use tcp to the host's or guest's address".into(),
                );
            }
            _ => return Err("unknown protocol; use tcp, tcpv6, udp, udpv6 or unix".into()),
        })
    }

    /// fio's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Tcpv6 => "tcpv6",
            Proto::Udp => "udp",
            Proto::Udpv6 => "udpv6",
            Proto::Unix => "unix",
        }
    }

    pub fn is_tcp(self) -> bool {
        matches!(self, Proto::Tcp | Proto::Tcpv6)
    }

    pub fn is_udp(self) -> bool {
        matches!(self, Proto::Udp | Proto::Udpv6)
    }

    pub fn is_v6(self) -> bool {
        matches!(self, Proto::Tcpv6 | Proto::Udpv6)
    }
}

/// The net engine's own options as the job set them (None: not given). The
/// peer's host or socket path is the job's `filename` — fio's `hostname=`
/// sets it — so `--map` can point a job file at another host.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetOptions {
    /// `hostname=` as given (the job's filename holds it).
    pub hostname: Option<String>,
    pub port: Option<u16>,
    pub protocol: Option<Proto>,
    pub listen: Option<bool>,
    pub pingpong: Option<bool>,
    pub nodelay: Option<bool>,
    /// `window_size=`: SO_RCVBUF on a receiver, SO_SNDBUF on a sender, both
    /// with pingpong.
    pub window_size: Option<u32>,
    /// `mss=`: TCP_MAXSEG.
    pub mss: Option<u32>,
    /// `interface=`: the IPv4 address of the interface multicast goes through.
    pub interface: Option<String>,
    /// `ttl=`: outgoing multicast time-to-live.
    pub ttl: Option<u32>,
}

impl NetOptions {
    /// The first option that was set, for refusing it on a job of another engine.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            ("hostname", self.hostname.is_some()),
            ("port", self.port.is_some()),
            ("protocol", self.protocol.is_some()),
            ("listen", self.listen.is_some()),
            ("pingpong", self.pingpong.is_some()),
            ("nodelay", self.nodelay.is_some()),
            ("window_size", self.window_size.is_some()),
            ("mss", self.mss.is_some()),
            ("interface", self.interface.is_some()),
            ("ttl", self.ttl.is_some()),
        ]
        .into_iter()
        .find_map(|(k, set)| set.then_some(k))
    }
}
