//! Transports: how bytes move between the initiator and its responder.
//!
//! Each transport is one file filling in [`Transport`], as a fio engine fills in
//! `ioengine_ops`. Experiments see only [`Link`]; transports know nothing of
//! sweeps or statistics.

pub(crate) use xferbench_core::{buffer, error, measure, payload, units, words};

use crate::error::{Error, Result};
use crate::words::{Word, word_enum};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub mod cuda;
mod fd;
pub mod guard;
pub mod mpi;
mod peer;
mod pipe;
pub mod plugin;
pub mod remote;
mod shm;
mod slots;
mod tcp;
mod thread;
pub mod udp;
mod unix;
mod unix_dgram;

pub use cuda::ordinal as cuda_ordinal;
pub use peer::Fault;

word_enum! {
    /// Where the caller's payload lives (the Vollo runtime's three buffer kinds).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum BufferMode {
        /// The caller's own buffer, copied into the transport's memory per message.
        User = "user",
        /// The caller fills memory the transport or device owns (a plugin's
        /// alloc) directly: zero copy.
        Raw = "raw",
        /// The payload is written straight into the doorbell cache lines (the MMIO
        /// analogue): no separate buffer, no copy.
        Inline = "inline",
        /// The request is written into a mapped window: for a plugin, device
        /// memory such as a BAR that the CPU writes into; for cuda, host memory
        /// the GPU reads and writes itself (no DMA copy, no launch per request).
        ///
        /// Its size limit is the window's (`Capabilities::max_inline`).
        Mmio = "mmio",
        /// The copy–program–copy sequence is recorded once and replayed per
        /// request (cuda: a CUDA graph).
        Graph = "graph",
    }
}

word_enum! {
    /// How a waiter learns that its message arrived.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum CompletionMode {
        /// Spin on a flag or a non-blocking call.
        Poll = "poll",
        /// Sleep until the kernel wakes us: futex, blocking syscalls.
        Block = "block",
    }
}

impl BufferMode {
    /// The word that names it in specs, flags and results.
    pub fn name(self) -> &'static str {
        self.word()
    }

    /// Modes whose payload lives in a doorbell or mapped window with a
    /// size limit of its own (`Capabilities::max_inline`).
    pub fn limited(self) -> bool {
        matches!(self, BufferMode::Inline | BufferMode::Mmio)
    }
}

impl CompletionMode {
    /// The word that names it in specs, flags and results.
    pub fn name(self) -> &'static str {
        self.word()
    }
}

/// What a transport can do; `xferbench list` prints this.
#[derive(Clone, Debug, Serialize)]
pub struct Capabilities {
    /// The buffer modes it offers (the first stands in for `user` where it
    /// has no `user`).
    pub buffers: &'static [BufferMode],
    /// The completion modes it offers.
    pub completions: &'static [CompletionMode],
    /// The completion mode used when neither the spec nor a flag names one.
    pub default_completion: CompletionMode,
    /// Largest message either way, in bytes.
    pub max_message: u64,
    /// Largest payload `inline` buffers carry (the doorbell's), or the size
    /// of the `mmio` window, if the transport has either. One field for
    /// both: the JSON of `list` keeps its name, `max_inline`.
    pub max_inline: Option<u64>,
    /// Where the responder runs: "thread" or "process".
    pub responder: &'static str,
    /// Transport-specific spec options: (key, what it does).
    pub options: &'static [(&'static str, &'static str)],
    /// Can carry a 0-byte message (a byte stream cannot: nothing arrives).
    pub empty_messages: bool,
    /// A fast sender cannot overrun the receiver (false: UDP drops datagrams).
    pub flow_control: bool,
    /// Largest reply, where it is less than `max_message` (a device plugin
    /// declares its request and reply limits apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reply: Option<u64>,
}

impl Capabilities {
    /// `user` buffers where the transport has them, else its first mode (a
    /// device plugin may offer only its own memory).
    pub fn user_buffers(&self) -> BufferMode {
        if self.buffers.contains(&BufferMode::User) {
            BufferMode::User
        } else {
            self.buffers[0]
        }
    }
}

/// What a UDP socket asks for as SO_SNDBUF and SO_RCVBUF: enough for a
/// packetized megabyte or a window of small messages in flight.
pub const DATAGRAM_BUFFER: u64 = 4 << 20;

/// Why `caps` cannot carry one message of `len` bytes the way `shape` sends
/// it (buffers, packets, window), if it cannot: a sweep skips that size.
pub fn cannot_carry(
    caps: &Capabilities,
    buffers: BufferMode,
    len: u64,
    shape: &ReplyShape,
) -> Option<String> {
    if len == 0 && !caps.empty_messages {
        return Some(if caps.responder == "device" {
            "the device carries no empty requests (no XB_CAP_EMPTY)".into()
        } else {
            "a byte stream cannot carry an empty message".into()
        });
    }
    if buffers.limited() && caps.max_inline.is_some_and(|m| len > m) {
        return Some(format!(
            "over the {} {}",
            crate::units::format_size(caps.max_inline.unwrap_or(0)),
            match buffers {
                BufferMode::Mmio => "mmio window",
                _ => "inline limit",
            }
        ));
    }
    let packet = if shape.chunk == 0 {
        len
    } else {
        (shape.chunk as u64).min(len)
    };
    if let Some(m) = caps.max_reply {
        let reply = match shape.pattern {
            Pattern::Stream => 0, // one short acknowledgement
            _ => shape.reply_len as u64,
        };
        if reply > m {
            return Some(format!(
                "a reply of {reply} bytes is over the {m}-byte reply limit"
            ));
        }
    }
    let whole_reply = match shape.pattern {
        Pattern::Stream => 0,
        _ => shape.reply_len as u64,
    };
    if caps.max_reply.is_none() && shape.chunk == 0 && whole_reply > caps.max_message {
        return Some(format!(
            "a reply of {whole_reply} bytes is over the {}-byte message limit",
            caps.max_message
        ));
    }
    if packet > caps.max_message {
        return Some(format!(
            "over the {}-byte message limit{}",
            caps.max_message,
            // A device takes whole messages; other transports can packetize.
            if shape.chunk == 0 && caps.responder != "device" {
                " (--chunk cuts messages into packets that fit)"
            } else {
                ""
            }
        ));
    }
    if !caps.flow_control {
        let packets = len.div_ceil(packet.max(1)).max(1);
        let messages = match shape.pattern {
            Pattern::Pingpong => 1,
            _ => u64::from(shape.window.max(1)),
        };
        return datagrams_would_drop(messages, packets, packet);
    }
    None
}

/// Reads a number from a sysctl file.
fn sysctl(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// What the kernel charges a socket for one loopback datagram of `packet`
/// bytes (its skb truesize): up to about 16 KiB the datagram sits in one
/// kmalloc'ed buffer, rounded up to a power of two, with its headers and
/// shared info; above, in whole pages behind a small head.
fn datagram_truesize(packet: u64) -> u64 {
    const HEAD: u64 = 28 + 14 + 320; // IPv4 + UDP + link header, skb_shared_info
    if packet + HEAD <= 16 << 10 {
        (packet + HEAD).next_power_of_two() + 256
    } else {
        packet.div_ceil(4096) * 4096 + 1024 + 256
    }
}

/// Without flow control, `messages × packets` datagrams sent back to back
/// must all fit in the receiver's socket buffer and, on loopback, in the
/// per-CPU backlog (net.core.netdev_max_backlog packets) or some are dropped
/// and the exchange never completes. Both are checked with a margin, since
/// a receiver that is not scheduled drains nothing.
fn datagrams_would_drop(messages: u64, packets: u64, packet: u64) -> Option<String> {
    let count = messages * packets;
    if count <= 1 {
        return None; // one datagram always fits: the socket asks for room
    }
    // The socket asks for DATAGRAM_BUFFER; the kernel caps that at
    // net.core.rmem_max and doubles it for bookkeeping.
    let rmem_max = sysctl("/proc/sys/net/core/rmem_max").unwrap_or(212_992);
    let room = 2 * rmem_max.min(DATAGRAM_BUFFER) * 3 / 4;
    let need = count * datagram_truesize(packet);
    let backlog = sysctl("/proc/sys/net/core/netdev_max_backlog").unwrap_or(1000) / 2;
    let fix = if messages == 1 {
        "use larger packets (--chunk) or tcp"
    } else {
        "lower --window or use tcp"
    };
    if need > room {
        Some(format!(
            "no flow control: {count} datagrams in flight need about {need} bytes of socket buffer, over the {room} usable here (raise net.core.rmem_max, up to {DATAGRAM_BUFFER}); {fix}"
        ))
    } else if count > backlog {
        Some(format!(
            "no flow control: {count} datagrams in flight could overrun the loopback backlog (half of net.core.netdev_max_backlog = {backlog}); {fix}"
        ))
    } else {
        None
    }
}

/// A transport as the user named it: `tcp`, `thread:completion=block`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The transport's name, before the first `:` (`tcp`), or a whole
    /// remote address (`tcp://HOST:PORT`).
    pub name: String,
    /// The `key=value` options after it, in the order given.
    pub options: Vec<(String, String)>,
}

impl Spec {
    /// The value of option `key`; the last one wins when it is given twice.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A mode option (`buffers=raw`, `completion=block`), if given.
    pub fn mode<T: Word>(&self, key: &str) -> Result<Option<T>> {
        self.get(key)
            .map(|v| {
                words::parse::<T>(v).map_err(|e| {
                    Error::usage(format!(
                        "{}: {key}={v} is not one of {}",
                        self.name,
                        e.valid.join(", ")
                    ))
                })
            })
            .transpose()
    }

    /// A transport-specific boolean option (`1/0`, `on/off`, `true/false`).
    pub fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some("1" | "on" | "true" | "yes") => Ok(true),
            Some("0" | "off" | "false" | "no") => Ok(false),
            Some(v) => Err(Error::usage(format!(
                "{}: option {key}={v} is not a boolean; use {key}=1 or {key}=0",
                self.name
            ))),
        }
    }
}

impl std::fmt::Display for Spec {
    /// Written so that [`parse_specs`] reads it back: a value holding a
    /// separator (`,` or `:`) or a quote is quoted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            write!(f, "{}{k}={}", if i == 0 { ':' } else { ',' }, quoted(v))?;
        }
        Ok(())
    }
}

/// A spec option's value as written in a spec: as it is, or in double
/// quotes (single quotes when it holds a double one) when it holds a
/// separator, a quote, or space at either end.
pub fn quoted(v: &str) -> std::borrow::Cow<'_, str> {
    let plain = !v.contains([',', ':', '"', '\'']) && v.trim() == v;
    if plain {
        v.into()
    } else if v.contains('"') {
        format!("'{v}'").into()
    } else {
        format!("\"{v}\"").into()
    }
}

/// `s` split at each of `seps` outside quotes (`"..."` or `'...'`): the
/// pieces keep their quotes. An unterminated quote runs to the end, and is
/// an error for [`parse_specs`] (see [`balanced`]).
pub fn split_unquoted<'a>(s: &'a str, seps: &[char]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let (mut start, mut quote) = (0, None);
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if seps.contains(&c) => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            None => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Whether every quote in `s` is closed.
pub fn balanced(s: &str) -> bool {
    let mut quote = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None => {}
        }
    }
    quote.is_none()
}

/// A value without the quotes around it, if it is quoted whole.
pub fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2
            && let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q))
        {
            return inner;
        }
    }
    v
}

/// `item` with a plugin's `pci=DOMAIN:BUS:DEV.FN` quoted: a PCI address is
/// written with colons, which separate options, and asking for quotes
/// around the form lspci prints would trip every user. The value runs to
/// the next piece that is an option of its own (holds `=`).
fn pci_quoted(item: &str) -> std::borrow::Cow<'_, str> {
    let at = if item.starts_with("pci=") {
        Some(0)
    } else {
        item.find(":pci=").map(|i| i + 1)
    };
    let Some(at) = at else {
        return item.into();
    };
    let start = at + "pci=".len();
    let rest = &item[start..];
    if rest.starts_with(['"', '\'']) || !rest.contains(':') {
        return item.into();
    }
    let pieces: Vec<&str> = rest.split(':').collect();
    let n = pieces.iter().take_while(|p| !p.contains('=')).count();
    let value = pieces[..n].join(":");
    let tail = pieces[n..].join(":");
    let sep = if tail.is_empty() { "" } else { ":" };
    format!("{}\"{value}\"{sep}{tail}", &item[..start]).into()
}

/// Parses `-t` values: specs separated by commas, options after a colon.
/// An item holding `=` continues the options of the spec before it, so
/// `thread:completion=block,buffers=raw,tcp` is two transports. A value
/// holding a comma or a colon is quoted: `plugin:path=x.so,ids="1,2"`.
pub fn parse_specs(s: &str) -> Result<Vec<Spec>> {
    if !balanced(s) {
        return Err(Error::usage(format!(
            "malformed transport list '{s}': a quote is not closed; quote a value whole, as in plugin:path=x.so,ids=\"1,2\""
        )));
    }
    let mut specs: Vec<Spec> = Vec::new();
    for item in split_unquoted(s, &[',']).into_iter().map(str::trim) {
        let quoted_pci = pci_quoted(item);
        let item = quoted_pci.as_ref();
        if item.is_empty() {
            return Err(Error::usage(format!(
                "malformed transport list '{s}': empty item"
            )));
        }
        // A remote address holds colons of its own and takes no options.
        if item.starts_with(remote::SCHEME) || item.starts_with(remote::UDP_SCHEME) {
            specs.push(Spec {
                name: item.to_string(),
                options: Vec::new(),
            });
            continue;
        }
        let head_len = split_unquoted(item, &[':'])[0].len();
        let (head, opts) = if head_len < item.len() {
            (&item[..head_len], Some(&item[head_len + 1..]))
        } else if item.contains('=') {
            ("", Some(item))
        } else {
            (item, None)
        };
        if !head.is_empty() {
            specs.push(Spec {
                name: head.to_string(),
                options: Vec::new(),
            });
        }
        let Some(opts) = opts else { continue };
        let Some(spec) = specs.last_mut() else {
            return Err(Error::usage(format!(
                "malformed transport '{item}': options must follow a transport name, as in tcp:nodelay=0"
            )));
        };
        for kv in split_unquoted(opts, &[':']) {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(Error::usage(format!(
                    "malformed transport option '{kv}' in '{s}': expected key=value, as in tcp:nodelay=0"
                )));
            };
            let k = k.trim();
            // A repeated key is a typo or a pasted spec: which one was meant
            // is not ours to guess (the last would win silently).
            if spec.options.iter().any(|(o, _)| o == k) {
                return Err(Error::usage(format!(
                    "transport '{}' names option '{k}' twice; give it once",
                    spec.name
                )));
            }
            spec.options
                .push((k.to_string(), unquote(v.trim()).to_string()));
        }
    }
    for spec in &specs {
        let t = find(&spec.name)?;
        let caps = t.capabilities();
        for (k, _) in &spec.options {
            // A plugin's own options are its open()'s to judge.
            let known = spec.name == plugin::NAME
                || ["buffers", "completion"].contains(&k.as_str())
                || caps.options.iter().any(|(o, _)| o == k);
            if !known {
                let mut valid: Vec<&str> = vec!["buffers", "completion"];
                valid.extend(caps.options.iter().map(|(o, _)| *o));
                return Err(Error::usage(format!(
                    "{}: unknown option '{k}' (valid: {})",
                    spec.name,
                    valid.join(", ")
                )));
            }
        }
        spec.mode::<BufferMode>("buffers")?;
        spec.mode::<CompletionMode>("completion")?;
        t.check_options(spec)?;
    }
    Ok(specs)
}

/// Everything a transport needs to open a link.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// The transport as named, with its own options.
    pub spec: Spec,
    /// Where the payload lives, as resolved from the spec and flags.
    pub buffers: BufferMode,
    /// How both ends wait, as resolved from the spec and flags.
    pub completion: CompletionMode,
    /// Largest request and reply this link will carry (buffers are sized to these).
    pub max_request: usize,
    /// Largest reply this link will carry, bytes.
    pub max_reply: usize,
    /// CPU for the initiator (already pinned by the caller) and for the responder.
    pub responder_cpu: Option<usize>,
    /// Every wait gives up after this long without progress.
    pub timeout: Duration,
    /// The binary that child-process responders re-execute.
    pub exe: PathBuf,
}

word_enum! {
    /// How one exchange moves messages.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Pattern {
        /// One request, one reply.
        #[default]
        Pingpong = "pingpong",
        /// `window` requests back to back one way, then one short acknowledgement.
        Stream = "stream",
        /// `window` messages each way at the same time.
        Bidir = "bidir",
    }
}

impl Pattern {
    /// The word that names it in `--mode` and results.
    pub fn name(self) -> &'static str {
        self.word()
    }
}

/// What the responder does for the next `exchanges` exchanges: wait for the
/// last of `request_len` bytes, busy-wait `delay_ns`, then send `reply_len`
/// bytes (in `pingpong`; see [`Pattern`] for the others).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplyShape {
    /// Bytes in each request (initiator to responder).
    pub request_len: usize,
    /// Bytes in each reply (in `stream`, the acknowledgement).
    pub reply_len: usize,
    /// Responder's busy-wait between a request and its reply, ns.
    pub delay_ns: u64,
    /// Exchanges announced by this configure; the responder then waits for
    /// the next control frame.
    pub exchanges: u64,
    /// How one exchange moves messages.
    pub pattern: Pattern,
    /// Messages per exchange in `stream` and `bidir`.
    pub window: u32,
    /// Messages travel as packets of this many bytes sent back to back; 0 = whole.
    pub chunk: usize,
    /// Fill-check seed: the responder checks every request value and fills
    /// every reply (see `payload`).
    pub check: Option<u64>,
}

impl ReplyShape {
    /// A plain request/reply shape.
    pub fn pingpong(request_len: usize, reply_len: usize, delay_ns: u64, exchanges: u64) -> Self {
        ReplyShape {
            request_len,
            reply_len,
            delay_ns,
            exchanges,
            ..ReplyShape::default()
        }
    }

    /// Messages one exchange carries each way it goes.
    pub fn messages(&self) -> u64 {
        match self.pattern {
            Pattern::Pingpong => 1,
            _ => u64::from(self.window.max(1)),
        }
    }

    /// The packet size for a message of `len` bytes.
    pub fn packet(&self, len: usize) -> usize {
        if self.chunk == 0 {
            len
        } else {
            self.chunk.min(len)
        }
    }

    /// Bytes of [`encode`](Self::encode)'s output: eight little-endian u64 words.
    pub const WIRE_LEN: usize = 64;

    /// The control frame's body, shared by every transport's protocol.
    pub fn encode(&self) -> [u8; Self::WIRE_LEN] {
        let words = [
            self.request_len as u64,
            self.reply_len as u64,
            self.delay_ns,
            self.exchanges,
            self.pattern as u64 | (u64::from(self.window) << 8),
            self.chunk as u64,
            u64::from(self.check.is_some()),
            self.check.unwrap_or(0),
        ];
        let mut b = [0u8; Self::WIRE_LEN];
        for (i, w) in words.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Reads back what [`encode`](Self::encode) wrote; `None` for an unknown
    /// pattern or a length this machine's `usize` cannot hold.
    pub fn decode(b: &[u8; Self::WIRE_LEN]) -> Option<ReplyShape> {
        let w = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        let pattern = match w(4) & 0xff {
            0 => Pattern::Pingpong,
            1 => Pattern::Stream,
            2 => Pattern::Bidir,
            _ => return None,
        };
        Some(ReplyShape {
            request_len: usize::try_from(w(0)).ok()?,
            reply_len: usize::try_from(w(1)).ok()?,
            delay_ns: w(2),
            exchanges: w(3),
            pattern,
            window: u32::try_from(w(4) >> 8).ok()?,
            chunk: usize::try_from(w(5)).ok()?,
            check: (w(6) != 0).then(|| w(7)),
        })
    }
}

/// The initiator's end of a link. The timed loop calls only `exchange`.
pub trait Link: Send {
    /// Where the caller writes the request payload (at least `max_request` long).
    /// In `user` mode this is the caller's own memory; in `raw` and `inline`
    /// modes it is the transport's.
    fn request_buf(&mut self) -> &mut [u8];
    /// The last reply's payload (`reply_len` bytes).
    fn reply(&self) -> &[u8];
    /// Untimed control path: sets the shape of the next `exchanges` round trips
    /// and waits for the responder to acknowledge.
    fn configure(&mut self, shape: &ReplyShape) -> Result<()>;
    /// One round trip: send the request, wait for the whole reply.
    fn exchange(&mut self) -> Result<()>;
    /// Stops the responder and reports whether it ended cleanly.
    fn close(self: Box<Self>) -> Result<()>;
    /// What the far end says of itself, for transports whose far end is a
    /// device (a plugin: its name, ABI, library and `counters`): recorded in
    /// the run beside the points.
    fn counters(&mut self) -> Option<serde_json::Value> {
        None
    }
    /// The device's own time for the last exchange's jobs, ns, when the
    /// device reports it (a plugin with `XB_CAP_HW_TIMESTAMPS`): the
    /// sampler splits each round trip into device time and host time.
    /// `None` for a far end that keeps no time of its own.
    #[inline]
    fn device_time(&self) -> Option<u64> {
        None
    }
}

/// Arguments of the hidden `__respond` subcommand that child responders run.
#[derive(Clone, Debug)]
pub struct ResponderArgs {
    /// The transport spec the initiator opened.
    pub spec: Spec,
    /// How the responder waits for requests.
    pub completion: CompletionMode,
    /// CPU the responder was pinned to (before `respond` runs), if any.
    pub cpu: Option<usize>,
}

/// One transport module. `open` starts the responder; `respond` is the
/// responder's side when it runs in a child process.
pub trait Transport: Sync {
    /// The name specs use for it (`tcp`, `shm`…).
    fn name(&self) -> &'static str;
    /// One line saying what it is, for `xferbench list`.
    fn summary(&self) -> &'static str;
    /// What it can do: modes, limits and spec options.
    fn capabilities(&self) -> Capabilities;
    /// Starts the responder (thread, child process or remote session) and
    /// returns the initiator's end.
    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>>;
    /// Checks the values of this transport's own spec options, so a bad one
    /// is a usage error before anything runs.
    fn check_options(&self, _spec: &Spec) -> Result<()> {
        Ok(())
    }
    /// Refuses mode combinations this transport cannot run, before any
    /// link opens (the generic checks are in [`check`]).
    fn check_link(&self, _cfg: &LinkConfig) -> Result<()> {
        Ok(())
    }
    /// Why this transport cannot work on this machine at all (no driver,
    /// no device), before anything is opened; `list` says it as is.
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// What a device behind this transport is, known before a link opens
    /// (a plugin: name, description, ABI, library), so a run records it
    /// even when opening the device fails or hangs; `None` for the rest.
    fn device(&self) -> Option<serde_json::Value> {
        None
    }
    /// `unavailable` as the error a command stops with, naming the fix.
    fn ensure_available(&self) -> Result<()> {
        match self.unavailable() {
            Some(why) => Err(Error::run(format!(
                "{}: not available ({why})",
                self.name()
            ))),
            None => Ok(()),
        }
    }
    /// Serves the initiator from a child process (the hidden `__respond`
    /// subcommand) until told to stop; a usage error for transports whose
    /// responder is not a child.
    fn respond(&self, args: &ResponderArgs) -> Result<()> {
        let _ = args;
        Err(Error::usage(format!(
            "{} has no child-process responder",
            self.name()
        )))
    }
}

static REGISTRY: &[&dyn Transport] = &[
    &thread::Thread,
    &shm::Shm,
    &pipe::Pipe,
    &unix::Unix,
    &unix_dgram::UnixDgram,
    &tcp::Tcp,
    &udp::Udp,
    &cuda::Cuda,
];

/// Every transport, in the order `list` prints them.
pub fn all() -> &'static [&'static dyn Transport] {
    REGISTRY
}

/// The transport a spec's name names: a built-in one, a remote address
/// (`tcp://`, `udp://`), `mpi` or a plugin; a usage error listing the
/// known names otherwise.
pub fn find(name: &str) -> Result<&'static dyn Transport> {
    if name.starts_with(remote::SCHEME) {
        return Ok(&remote::REMOTE);
    }
    if name.starts_with(remote::UDP_SCHEME) {
        return Ok(&remote::REMOTE_UDP);
    }
    if name == "mpi" {
        return Ok(&mpi::MPI);
    }
    if name == plugin::NAME {
        return Ok(&plugin::GENERIC);
    }
    REGISTRY
        .iter()
        .copied()
        .find(|t| t.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = REGISTRY.iter().map(|t| t.name()).collect();
            Error::usage(format!(
                "unknown transport '{name}' (known: {}, plugin:path=FILE.so; see 'xferbench list')",
                names.join(", ")
            ))
        })
}

/// The transport a spec names, with what only the spec says: a plugin's
/// library is loaded and its device asked for its capabilities.
pub fn resolve(spec: &Spec) -> Result<&'static dyn Transport> {
    if spec.name == plugin::NAME {
        return Ok(plugin::resolve(spec)?);
    }
    find(&spec.name)
}

/// Checks that the transport can carry these modes and sizes, before anything starts.
pub fn check(t: &dyn Transport, cfg: &LinkConfig) -> Result<()> {
    let caps = t.capabilities();
    let name = t.name();
    if !caps.buffers.contains(&cfg.buffers) {
        let have: Vec<&str> = caps.buffers.iter().map(|b| b.name()).collect();
        return Err(Error::usage(format!(
            "{name} does not support {} buffers (it supports: {})",
            cfg.buffers.name(),
            have.join(", ")
        )));
    }
    if !caps.completions.contains(&cfg.completion) {
        let have: Vec<&str> = caps.completions.iter().map(|b| b.name()).collect();
        return Err(Error::usage(format!(
            "{name} does not support {} completion (it supports: {})",
            cfg.completion.name(),
            have.join(", ")
        )));
    }
    let limit = match caps.max_inline {
        Some(inl) if cfg.buffers.limited() => inl.min(caps.max_message),
        _ => caps.max_message,
    };
    if let Some(m) = caps.max_reply
        && cfg.max_reply as u64 > m
    {
        return Err(Error::usage(format!(
            "{name} sends replies of at most {m} bytes; {} was asked for",
            cfg.max_reply
        )));
    }
    let largest = match caps.max_reply {
        Some(_) => cfg.max_request as u64,
        None => cfg.max_request.max(cfg.max_reply) as u64,
    };
    if largest > limit {
        return Err(Error::usage(format!(
            "{name} with {} buffers carries at most {} bytes per message; {largest} was asked for",
            cfg.buffers.name(),
            limit
        )));
    }
    t.check_link(cfg)
}

/// Busy-waits `ns` nanoseconds from `from`: the responder's added delay. A
/// sleep would be late by the scheduler's granularity; the delay must be exact.
#[inline]
pub fn spin_until(from: Instant, ns: u64) {
    if ns == 0 {
        return;
    }
    let d = Duration::from_nanos(ns);
    while from.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Waits until `ns` nanoseconds after `from`, sleeping all but the last
/// `max_spin_ns` and spinning those: a server's delay, exact to within the
/// wake-up's lateness past that margin, and a long one costs no CPU.
pub fn sleep_then_spin(from: Instant, ns: u64, max_spin_ns: u64) {
    let d = Duration::from_nanos(ns);
    let sleep = d
        .saturating_sub(from.elapsed())
        .saturating_sub(Duration::from_nanos(max_spin_ns));
    if !sleep.is_zero() {
        std::thread::sleep(sleep);
    }
    spin_until(from, ns);
}

/// Configurations name their transport in debug output.
impl std::fmt::Debug for dyn Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagram_accounting() {
        // Small datagrams round up to a power-of-two buffer, large ones to pages.
        assert_eq!(datagram_truesize(256), 1024 + 256);
        assert_eq!(datagram_truesize(4096), 8192 + 256);
        assert_eq!(datagram_truesize(32 << 10), (32 << 10) + 1280);
        assert!(datagram_truesize(65_507) >= 65_507);
        // One datagram always goes; a flood never does, whatever the sysctls.
        assert_eq!(datagrams_would_drop(1, 1, 65_507), None);
        let r = datagrams_would_drop(1, 1 << 20, 1024).unwrap();
        assert!(r.contains("use larger packets"), "{r}");
        let r = datagrams_would_drop(1 << 16, 1, 60_000).unwrap();
        assert!(r.contains("lower --window"), "{r}");
        // Windows and packets both count toward what is in flight.
        assert_eq!(
            datagrams_would_drop(4, 8, 4096).is_some(),
            datagrams_would_drop(1, 32, 4096).is_some()
        );
    }

    #[test]
    fn spec_parsing() {
        let s = parse_specs("thread:completion=block,buffers=raw,tcp:nodelay=0").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "thread");
        assert_eq!(s[0].get("completion"), Some("block"));
        assert_eq!(s[0].get("buffers"), Some("raw"));
        assert_eq!(s[1].get("nodelay"), Some("0"));
        assert_eq!(s[0].to_string(), "thread:completion=block,buffers=raw");
        assert!(parse_specs("nosuch").is_err());
        // A plugin's PCI function holds colons, as lspci writes it.
        for given in [
            "plugin:path=x.so,pci=0000:01:00.0",
            "plugin:pci=0000:01:00.0:path=x.so",
            "plugin:path=x.so,pci=\"0000:01:00.0\"",
        ] {
            let s = parse_specs(given).unwrap();
            assert_eq!(s.len(), 1, "{given}");
            assert_eq!(s[0].get("pci"), Some("0000:01:00.0"), "{given}");
            assert_eq!(s[0].get("path"), Some("x.so"), "{given}");
        }
        assert!(parse_specs("tcp:bogus=1").is_err());
        assert!(parse_specs("tcp:nodelay").is_err());
        assert!(parse_specs("completion=poll").is_err());
        // A quoted value keeps its commas and colons, and is written back
        // quoted, so the spec a run records reads back the same.
        let s = parse_specs("plugin:path=x.so,ids=\"1,2\",mode='a:b',tcp").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].get("ids"), Some("1,2"));
        assert_eq!(s[0].get("mode"), Some("a:b"));
        assert_eq!(parse_specs(&s[0].to_string()).unwrap()[0], s[0]);
        assert_eq!(
            split_unquoted("a=\"1,2\",b='x:y',c", &[',']),
            ["a=\"1,2\"", "b='x:y'", "c"]
        );
        assert_eq!(unquote("\"1,2\""), "1,2");
        assert_eq!(unquote("'say \"hi\"'"), "say \"hi\"");
        assert_eq!(unquote("\""), "\"");
        let spec = Spec {
            name: "plugin".into(),
            options: vec![
                ("path".into(), "x.so".into()),
                ("ids".into(), "1,2:3".into()),
                ("msg".into(), "say \"hi\"".into()),
            ],
        };
        assert_eq!(
            spec.to_string(),
            "plugin:path=x.so,ids=\"1,2:3\",msg='say \"hi\"'"
        );
        assert!(!balanced("plugin:path=x.so,ids=\"1,2"));
        assert!(parse_specs("tcp:nodelay=\"0").is_err());
        assert!(parse_specs("tcp,,udp").is_err());
    }
}
