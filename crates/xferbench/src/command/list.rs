//! `xferbench list`: every transport, what it can do, and whether it really
//! works on this machine (one small round trip each).

use crate::error::{Error, Result};
use crate::format::Format;
use crate::report::table::{Align, markdown_with};
use crate::transport::{self, LinkConfig, ReplyShape};
use crate::transport::{BufferMode, Spec};
use serde::Serialize;
use std::time::Duration;

/// What `xferbench list` is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListOptions {
    /// Table or JSON.
    pub format: Format,
    /// Only these transports (empty: every built-in one).
    pub transports: Vec<Spec>,
    /// Skip the check that each transport really works here.
    pub no_probe: bool,
    /// How long one call of a probe may take (`--timeout`): a device call
    /// (a plugin's open, close) included.
    pub timeout: Duration,
}

impl Default for ListOptions {
    fn default() -> ListOptions {
        ListOptions {
            format: Format::Table,
            transports: Vec::new(),
            no_probe: false,
            timeout: Duration::from_secs(5),
        }
    }
}

#[derive(Serialize)]
struct Entry {
    name: &'static str,
    /// The spec as given with -t (absent for the built-in list).
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<String>,
    /// What a plugin says of itself beyond the common capabilities.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    details: Vec<String>,
    summary: &'static str,
    capabilities: transport::Capabilities,
    /// "ok", "not checked", or why it does not work here.
    status: String,
}

/// Opens a link, runs a few round trips, closes it, each step bounded by
/// `timeout`.
fn probe(t: &dyn transport::Transport, spec: transport::Spec, timeout: Duration) -> Result<()> {
    let caps = t.capabilities();
    let len = caps.max_message.min(64) as usize;
    let cfg = LinkConfig {
        buffers: match spec.mode::<transport::BufferMode>("buffers")? {
            Some(b) => b,
            None => caps.buffers[0],
        },
        completion: match spec.mode::<transport::CompletionMode>("completion")? {
            Some(c) => c,
            None => caps.default_completion,
        },
        spec,
        max_request: len,
        max_reply: len,
        responder_cpu: None,
        timeout,
        exe: std::env::current_exe().map_err(|e| Error::io("finding this executable", e))?,
    };
    transport::check(t, &cfg)?;
    let mut link = t.open(&cfg)?;
    link.configure(&ReplyShape::pingpong(len, len, 0, 3))?;
    for _ in 0..3 {
        link.exchange()?;
    }
    link.close()
}

/// The transports `-t` names, each resolved (a plugin loaded) and probed.
fn named(args: &ListOptions) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for spec in args.transports.iter() {
        let t = transport::resolve(spec)?;
        let details = if spec.name == transport::plugin::NAME {
            transport::plugin::resolve(spec)?.describe()
        } else {
            Vec::new()
        };
        let status = if let Some(why) = t.unavailable() {
            format!("not available ({why})")
        } else if args.no_probe {
            "not checked".into()
        } else {
            match probe(t, spec.clone(), args.timeout) {
                Ok(()) => "ok".into(),
                Err(e) => format!("not available ({e})"),
            }
        };
        out.push(Entry {
            name: t.name(),
            spec: Some(spec.to_string()),
            details,
            summary: t.summary(),
            capabilities: t.capabilities(),
            status,
        });
    }
    Ok(out)
}

pub fn run(args: &ListOptions) -> Result<()> {
    // A plugin's device, opened to read what it can do, is bounded too.
    transport::guard::set_default_bound(args.timeout);
    if !args.transports.is_empty() {
        return render(args, named(args)?);
    }
    let mut entries: Vec<Entry> = transport::all()
        .iter()
        .map(|t| Entry {
            name: t.name(),
            spec: None,
            details: Vec::new(),
            summary: t.summary(),
            capabilities: t.capabilities(),
            status: if let Some(why) = t.unavailable() {
                format!("not available ({why})")
            } else if args.no_probe {
                "not checked".into()
            } else {
                match probe(
                    *t,
                    transport::Spec {
                        name: t.name().into(),
                        options: Vec::new(),
                    },
                    args.timeout,
                ) {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("not available ({e})"),
                }
            },
        })
        .collect();
    // Transports whose other end is not started by xferbench: said, not probed.
    let remote: [(&'static dyn transport::Transport, String); 4] = [
        (
            &transport::remote::REMOTE,
            "needs `xferbench serve` at HOST:PORT".into(),
        ),
        (
            &transport::remote::REMOTE_UDP,
            "needs `xferbench serve` at HOST:PORT".into(),
        ),
        (
            &transport::mpi::MPI,
            if cfg!(feature = "mpi") {
                "needs `mpirun -n 2`".into()
            } else {
                "not available (built without the mpi feature: cargo build --release --features mpi)"
                    .into()
            },
        ),
        (
            &transport::plugin::GENERIC,
            "needs -t plugin:path=FILE.so (see `xferbench plugin check`)".into(),
        ),
    ];
    entries.extend(remote.into_iter().map(|(t, status)| Entry {
        name: t.name(),
        spec: None,
        details: Vec::new(),
        summary: t.summary(),
        capabilities: t.capabilities(),
        status,
    }));
    render(args, entries)
}

fn render(args: &ListOptions, entries: Vec<Entry>) -> Result<()> {
    let text = match args.format {
        Format::Json => {
            serde_json::to_string_pretty(&entries)
                .map_err(|e| Error::run_from("encoding JSON", e))?
                + "\n"
        }
        Format::Csv => {
            let mut s = String::from(
                "transport,responder,buffers,completion,default_completion,max_message,max_inline,status\n",
            );
            for e in &entries {
                let c = &e.capabilities;
                s += &format!(
                    "{},{},{},{},{},{},{},\"{}\"\n",
                    e.name,
                    c.responder,
                    names(c.buffers.iter().map(|b| b.name()), "|"),
                    names(c.completions.iter().map(|b| b.name()), "|"),
                    c.default_completion.name(),
                    c.max_message,
                    c.max_inline.map_or(String::new(), |v| v.to_string()),
                    e.status.replace('"', "\"\"")
                );
            }
            s
        }
        Format::Table => {
            let header: Vec<String> = [
                "transport",
                "responder",
                "buffers",
                "completion",
                "max message",
                "works here",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|e| {
                    let c = &e.capabilities;
                    let comp: Vec<String> = c
                        .completions
                        .iter()
                        .map(|m| {
                            if *m == c.default_completion {
                                format!("{}*", m.name())
                            } else {
                                m.name().to_string()
                            }
                        })
                        .collect();
                    vec![
                        e.spec.clone().unwrap_or_else(|| e.name.to_string()),
                        // "remote (xferbench serve)": the note below says how.
                        c.responder
                            .split_once(" (")
                            .map_or(c.responder, |(r, _)| r)
                            .to_string(),
                        names(c.buffers.iter().map(|b| b.name()), ","),
                        comp.join(","),
                        match (c.max_inline, c.max_reply) {
                            (Some(i), None) => {
                                format!("{} ({} {})", human(c.max_message), limited(c), human(i))
                            }
                            (Some(i), Some(r)) => format!(
                                "{} ({} {}, reply {})",
                                human(c.max_message),
                                limited(c),
                                human(i),
                                human(r)
                            ),
                            (None, Some(r)) => {
                                format!("{} (reply {})", human(c.max_message), human(r))
                            }
                            (None, None) => human(c.max_message),
                        },
                        short_status(&e.status).to_string(),
                    ]
                })
                .collect();
            let mut s = markdown_with(&header, &rows, |_| Align::Left);
            s += "\n* default completion. Buffers: user = caller's buffer copied in and out;\nraw = transport-owned memory, zero copy; inline = payload in the doorbell\ncache lines (MMIO analogue); mmio = a mapped window the CPU writes the\nrequest into (a plugin's BAR, cuda's mapped host memory).\n\n";
            for e in &entries {
                s += &format!("- {}: {}\n", e.spec.as_deref().unwrap_or(e.name), e.summary);
                if short_status(&e.status) != e.status {
                    s += &format!("  - {} here: {}\n", e.name, e.status);
                }
                for d in &e.details {
                    s += &format!("  - {d}\n");
                }
                for (k, v) in e.capabilities.options {
                    s += &format!("  - option {k}: {v}\n");
                }
            }
            s
        }
    };
    crate::output::emit(&text, None)
}

/// What the size limit of `inline` or `mmio` buffers (`max_inline`) is
/// called: a doorbell's inline payload is not a device's mapped window.
fn limited(c: &crate::transport::Capabilities) -> &'static str {
    let has = |m| c.buffers.contains(&m);
    match (has(BufferMode::Inline), has(BufferMode::Mmio)) {
        (true, true) => "inline / mmio window",
        (false, true) => "mmio window",
        _ => "inline",
    }
}

/// The table's word for a status; the whole reason goes in the notes below
/// it, so the table stays narrower than a terminal.
fn short_status(status: &str) -> &str {
    if status.starts_with("not available") {
        "no (see below)"
    } else if status.starts_with("needs") {
        "needs setup"
    } else {
        status
    }
}

fn names<'a>(it: impl Iterator<Item = &'a str>, sep: &str) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() {
        "—".into()
    } else {
        v.join(sep)
    }
}

fn human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}
