//! The transports xferbench knows, by name: the built-in ones in
//! [`all`]'s order, and the ones a spec names by form (a remote address,
//! `mpi`, a plugin); parsing `-t` (which checks each name and option
//! against its transport) and the checks made before a link opens. The
//! top of the crate: it names every transport, and no transport imports it.

use crate::error::{Error, Result};
use crate::link::{
    BufferMode, CompletionMode, LinkConfig, Spec, Transport, balanced, split_unquoted, unquote,
};
use crate::{cuda, mpi, pipe, plugin, remote, shm, tcp, thread, udp, unix, unix_dgram};

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

#[cfg(test)]
mod tests {
    use super::*;

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
