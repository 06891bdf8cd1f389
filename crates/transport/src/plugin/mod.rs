//! `plugin`: a device behind the C ABI of `include/xferbench/plugin.h`,
//! loaded at run time (`-t plugin:path=./mydev.so,card=0`). It becomes a
//! transport like the built-in ones, so every experiment runs on it
//! unchanged; `xferbench plugin check` exercises a plugin's promises.
//!
//! A loaded plugin is one `PluginTransport` per spec (library plus its
//! options), created on first use and kept for the process: its
//! capabilities come from the device itself, opened once to ask.

mod device;
pub mod ffi;
mod link;
pub mod values;

pub use device::{Device, Library, kind_name};
pub use link::PluginLink;

use crate::error::{Error, Result};
use crate::link::{BufferMode, Capabilities, CompletionMode, Link, LinkConfig, Spec, Transport};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// The transport name in specs: `plugin:path=FILE.so[,key=value...]`.
pub const NAME: &str = "plugin";

/// Spec keys xferbench keeps for itself; every other goes to the plugin's
/// open. `pci` is the host's, not the device's: a plugin that does not know
/// the key would refuse it, and one that does must not see it change.
pub const HOST_KEYS: [&str; 4] = ["path", "buffers", "completion", "pci"];

/// The spec option naming the PCI function a plugin's device sits on.
pub const PCI: (&str, &str) = (
    "pci",
    "the device's PCI function, DOMAIN:BUS:DEV.FN as lspci -D writes it (0000:01:00.0): results record its link's limit; kept by xferbench, not passed to the plugin",
);

const OPTIONS: &[(&str, &str)] = &[
    ("path", "the plugin's shared library (required)"),
    PCI,
    (
        "KEY",
        "any other key=value goes to the plugin's open; a plugin of ABI 1.1 describes its own, listed by `xferbench list -t plugin:path=FILE.so`",
    ),
];

/// The spec options of one loaded plugin: `path`, then the options it
/// describes (ABI 1.1), or the generic KEY when it describes none.
fn options_of(lib: &Library) -> &'static [(&'static str, &'static str)] {
    if lib.options.is_empty() {
        return OPTIONS;
    }
    let mut v: Vec<(&'static str, &'static str)> = vec![OPTIONS[0], PCI];
    for o in &lib.options {
        let line = o.line();
        let help = line.split_once('=').map_or(line.as_str(), |(_, h)| h);
        v.push((
            Box::leak(o.name.clone().into_boxed_str()),
            Box::leak(help.to_string().into_boxed_str()),
        ));
    }
    Box::leak(v.into_boxed_slice())
}

/// Stands for every plugin in `xferbench list` and before a spec names one.
pub static GENERIC: Generic = Generic;

pub struct Generic;

impl Transport for Generic {
    fn name(&self) -> &'static str {
        NAME
    }
    fn summary(&self) -> &'static str {
        "your device through a shared library with the C ABI of include/xferbench/plugin.h"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            buffers: &[BufferMode::User, BufferMode::Raw, BufferMode::Mmio],
            completions: &[CompletionMode::Poll, CompletionMode::Block],
            default_completion: CompletionMode::Poll,
            max_message: crate::units::MAX_SIZE,
            max_inline: None,
            responder: "device",
            options: OPTIONS,
            empty_messages: false,
            flow_control: true,
            max_reply: None,
        }
    }
    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        resolve(&cfg.spec)?.open(cfg)
    }
    fn check_options(&self, spec: &Spec) -> Result<()> {
        check_spec(spec)
    }
    fn unavailable(&self) -> Option<String> {
        Some("needs -t plugin:path=FILE.so".into())
    }
}

/// A plugin spec must name its library, and a `pci=` its function whole.
pub fn check_spec(spec: &Spec) -> Result<()> {
    match spec.get("path") {
        Some(p) if !p.is_empty() => pci_function(spec).map(drop),
        _ => Err(Error::usage(
            "plugin: name the plugin's library, as in -t plugin:path=./echo.so (options after it go to the plugin)",
        )),
    }
}

/// The PCI function a spec's `pci=` names, in sysfs's form (lower case,
/// with the domain: `0000:01:00.0`); lspci's short `01:00.0` is domain 0.
/// None without `pci=`; a malformed one is refused, since a typo would
/// otherwise leave the run without its limit and nothing said.
pub fn pci_function(spec: &Spec) -> Result<Option<String>> {
    let Some(v) = spec.get("pci") else {
        return Ok(None);
    };
    parse_pci(v).map(Some).ok_or_else(|| {
        Error::usage(format!(
            "plugin: pci={v} is not a PCI function; give DOMAIN:BUS:DEV.FN as lspci -D writes it, as in pci=0000:01:00.0"
        ))
    })
}

/// `DOMAIN:BUS:DEV.FN` (or `BUS:DEV.FN`) in sysfs's form: hex fields of
/// at most 4, 2 and 2 digits, a device below 32 and a function below 8.
fn parse_pci(v: &str) -> Option<String> {
    let parts: Vec<&str> = v.trim().split(':').collect();
    let (domain, bus, devfn) = match parts.as_slice() {
        [d, b, df] => (*d, *b, *df),
        [b, df] => ("0", *b, *df),
        _ => return None,
    };
    let (dev, func) = devfn.split_once('.')?;
    let hex = |s: &str, max_len: usize| {
        (!s.is_empty() && s.len() <= max_len && s.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(s, 16).ok())
            .flatten()
    };
    let (domain, bus, dev, func) = (hex(domain, 4)?, hex(bus, 2)?, hex(dev, 2)?, hex(func, 1)?);
    (dev < 32 && func < 8).then(|| format!("{domain:04x}:{bus:02x}:{dev:02x}.{func}"))
}

/// One plugin with its options, as a transport.
pub struct PluginTransport {
    pub lib: &'static Library,
    /// The options its open() gets.
    pub options: Vec<(String, String)>,
    pub caps: ffi::XbCaps,
    capabilities: Capabilities,
    summary: &'static str,
}

impl PluginTransport {
    /// Opens a device of this plugin (poll or block, the CPU for its
    /// worker), each call into it bounded by `timeout`.
    pub fn device(
        &self,
        completion: CompletionMode,
        cpu: Option<usize>,
        timeout: Duration,
    ) -> Result<Device> {
        let mode = match completion {
            CompletionMode::Poll => ffi::COMPLETE_POLL,
            CompletionMode::Block => ffi::COMPLETE_BLOCK,
        };
        Device::open(self.lib, &self.options, mode, cpu, timeout)
    }

    /// The modes and flags as words, for `list` and `plugin check`.
    pub fn describe(&self) -> Vec<String> {
        let c = &self.caps;
        let flags: Vec<&str> = [
            (ffi::CAP_REPLY_LONGER, "reply-longer"),
            (ffi::CAP_DELAY, "delay"),
            (ffi::CAP_ECHO, "echo"),
            (ffi::CAP_EMPTY, "empty"),
            (ffi::CAP_HW_TIMESTAMPS, "hw-timestamps"),
            (ffi::CAP_DEVICE_TIMESTAMPS, "device-timestamps"),
        ]
        .iter()
        .filter(|(b, _)| c.flags & b != 0)
        .map(|(_, n)| *n)
        .collect();
        let lines = vec![
            format!(
                "{} {}.{} from {}",
                self.lib.name,
                self.lib.abi.0,
                self.lib.abi.1,
                self.lib.path.display()
            ),
            format!(
                "max request {} B, max reply {} B{}, alignment {}, {} job(s) in flight",
                c.max_request,
                c.max_reply,
                if c.buffer_modes & ffi::BUF_MMIO != 0 {
                    format!(", mmio window {} B", c.max_mmio)
                } else {
                    String::new()
                },
                c.alignment.max(1),
                c.max_inflight
            ),
            format!(
                "flags: {}; block completion via {}",
                if flags.is_empty() {
                    "none".into()
                } else {
                    flags.join(", ")
                },
                if self.lib.wait().is_some() {
                    "wait()"
                } else if self.lib.completion_fd().is_some() {
                    "completion_fd()"
                } else {
                    "—"
                }
            ),
        ];
        lines
    }

    fn name_of(&self) -> &str {
        &self.lib.name
    }
}

impl Transport for PluginTransport {
    fn name(&self) -> &'static str {
        NAME
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }
    fn open(&self, cfg: &LinkConfig) -> Result<Box<dyn Link>> {
        let dev = self.device(cfg.completion, cfg.responder_cpu, cfg.timeout)?;
        Ok(Box::new(PluginLink::open(dev, &self.caps, cfg)?))
    }
    fn check_options(&self, spec: &Spec) -> Result<()> {
        check_spec(spec)
    }
    fn device(&self) -> Option<serde_json::Value> {
        Some(self.lib.record())
    }
    fn check_link(&self, cfg: &LinkConfig) -> Result<()> {
        let c = &self.caps;
        let name = self.name_of();
        if cfg.max_request as u64 > c.max_request {
            return Err(Error::usage(format!(
                "plugin {name} takes requests of at most {} bytes; {} was asked for",
                c.max_request, cfg.max_request
            )));
        }
        if cfg.max_reply as u64 > c.max_reply {
            return Err(Error::usage(format!(
                "plugin {name} sends replies of at most {} bytes; {} was asked for",
                c.max_reply, cfg.max_reply
            )));
        }
        if cfg.buffers == BufferMode::Mmio && cfg.max_request as u64 > c.max_mmio {
            return Err(Error::usage(format!(
                "plugin {name}'s mmio window takes at most {} bytes; {} was asked for",
                c.max_mmio, cfg.max_request
            )));
        }
        Ok(())
    }
}

/// A plugin's own options, in the spec's order.
type Options = Vec<(String, String)>;

/// Plugins loaded so far: libraries by path, transports by library and options.
struct Loaded {
    libs: Vec<&'static Library>,
    transports: Vec<(PathBuf, Options, &'static PluginTransport)>,
}

static LOADED: Mutex<Loaded> = Mutex::new(Loaded {
    libs: Vec::new(),
    transports: Vec::new(),
});

/// The library at `path`, loaded once per process.
pub fn library(path: &std::path::Path) -> Result<&'static Library> {
    let abs = std::fs::canonicalize(path).ok();
    {
        let l = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lib) = l.libs.iter().find(|lib| Some(&lib.path) == abs.as_ref()) {
            return Ok(lib);
        }
    }
    let lib: &'static Library = Box::leak(Box::new(Library::load(path)?));
    LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .libs
        .push(lib);
    Ok(lib)
}

/// Opens a device of `lib` to ask it what it can do: in the completion mode
/// named (`completion=` of the spec; poll if none), and in the other if the
/// plugin says it does not open that way (XB_E_UNSUPPORTED); then the second
/// open's reason is the one to show. Each call is bounded by
/// [`guard::default_bound`](crate::guard::default_bound).
pub fn probe(
    lib: &'static Library,
    options: &[(String, String)],
    completion: Option<&str>,
) -> Result<Device> {
    let first = match completion {
        Some("block") => ffi::COMPLETE_BLOCK,
        _ => ffi::COMPLETE_POLL,
    };
    let other = first ^ (ffi::COMPLETE_POLL | ffi::COMPLETE_BLOCK);
    let bound = crate::guard::default_bound();
    match Device::open(lib, options, first, None, bound) {
        Ok(d) => Ok(d),
        Err(e) if e.to_string().contains("(XB_E_UNSUPPORTED)") => {
            Device::open(lib, options, other, None, bound)
        }
        Err(e) => Err(e),
    }
}

/// The transport a `plugin:path=...` spec names: the library loaded and a
/// device opened once to read its capabilities.
pub fn resolve(spec: &Spec) -> Result<&'static PluginTransport> {
    check_spec(spec)?;
    let path = PathBuf::from(spec.get("path").unwrap_or_default());
    let options: Vec<(String, String)> = spec
        .options
        .iter()
        .filter(|(k, _)| !HOST_KEYS.contains(&k.as_str()))
        .cloned()
        .collect();
    let lib = library(&path)?;
    {
        let l = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, t)) = l
            .transports
            .iter()
            .find(|(p, o, _)| *p == lib.path && *o == options)
        {
            return Ok(t);
        }
    }
    let mut dev = probe(lib, &options, spec.get("completion"))?;
    let caps = dev.caps();
    // A close that hangs is not said here: the library remembers it, and
    // the run's own closes say it once, without waiting for it again.
    let _ = dev.close_probe();
    let caps = caps?;
    let mut buffers = Vec::new();
    for (bit, mode) in [
        (ffi::BUF_USER, BufferMode::User),
        (ffi::BUF_RAW, BufferMode::Raw),
        (ffi::BUF_MMIO, BufferMode::Mmio),
    ] {
        if caps.buffer_modes & bit != 0 {
            buffers.push(mode);
        }
    }
    let mut completions = Vec::new();
    if caps.completion_modes & ffi::COMPLETE_POLL != 0 {
        completions.push(CompletionMode::Poll);
    }
    if caps.completion_modes & ffi::COMPLETE_BLOCK != 0 {
        completions.push(CompletionMode::Block);
    }
    let summary: &'static str = Box::leak(
        if lib.description.is_empty() {
            format!("plugin {}", lib.name)
        } else {
            format!("{} (plugin {})", lib.description, lib.name)
        }
        .into_boxed_str(),
    );
    let capabilities = Capabilities {
        default_completion: completions[0],
        buffers: Box::leak(buffers.into_boxed_slice()),
        completions: Box::leak(completions.into_boxed_slice()),
        // Requests are the messages; replies have their own limit.
        max_message: caps.max_request,
        max_inline: (caps.buffer_modes & ffi::BUF_MMIO != 0).then_some(caps.max_mmio),
        responder: "device",
        options: options_of(lib),
        empty_messages: caps.flags & ffi::CAP_EMPTY != 0,
        flow_control: true,
        max_reply: Some(caps.max_reply),
    };
    let t: &'static PluginTransport = Box::leak(Box::new(PluginTransport {
        lib,
        options: options.clone(),
        caps,
        capabilities,
        summary,
    }));
    LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .transports
        .push((lib.path.clone(), options, t));
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pci_function_is_read_in_sysfs_form_and_a_malformed_one_refused() {
        assert_eq!(parse_pci("0000:01:00.0").as_deref(), Some("0000:01:00.0"));
        assert_eq!(parse_pci("0000:AF:1f.7").as_deref(), Some("0000:af:1f.7"));
        assert_eq!(parse_pci("3b:00.1").as_deref(), Some("0000:3b:00.1"));
        for bad in [
            "",
            "0000:01:00",
            "0000:01:20.0",
            "0000:01:00.8",
            "zz:00.0",
            "00000:01:00.0",
            "0000:01:00.0:1",
        ] {
            assert!(parse_pci(bad).is_none(), "{bad}");
        }
        let spec = |v: &str| Spec {
            name: NAME.into(),
            options: vec![("path".into(), "x.so".into()), ("pci".into(), v.into())],
        };
        let e = check_spec(&spec("01:00")).unwrap_err().to_string();
        assert!(e.contains("pci=01:00") && e.contains("DOMAIN:BUS:DEV.FN") && !e.contains('\n'));
        assert_eq!(
            pci_function(&spec("01:00.0")).unwrap().as_deref(),
            Some("0000:01:00.0")
        );
    }
}
