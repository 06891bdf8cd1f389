//! `xferbench limits`: this machine's data paths and their ceilings on one
//! screen, so a figure can be read against what its path can carry and a
//! link trained below its card can be seen before anything is measured.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::limits::pci::Function;
use crate::limits::sysfs::Sysfs;
use crate::limits::{block, gpu, memory, net, pci};
use crate::result::limits::{Device, DiskPath, Memory, NicPath, Survey};
use std::path::PathBuf;

/// What `xferbench limits` is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitsOptions {
    /// Table, JSON or CSV.
    pub format: Format,
    /// Write there instead of stdout.
    pub output: Option<PathBuf>,
    /// Also write the HTML page there.
    pub html: Option<PathBuf>,
    /// Measure the memory figures again, whatever is kept.
    pub refresh: bool,
}

impl Default for LimitsOptions {
    fn default() -> LimitsOptions {
        LimitsOptions {
            format: Format::Table,
            output: None,
            html: None,
            refresh: false,
        }
    }
}

fn device(sys: &Sysfs, f: Function) -> Device {
    Device {
        kind: f.kind().into(),
        downgraded: f.downgraded(),
        limit: f.limit(sys),
        function: f,
        cuda: None,
    }
}

/// The GPUs: each the CUDA driver lists, on the link sysfs has at its bus
/// id (only its address where sysfs has none there), then the display and
/// 3D controllers sysfs lists that the driver does not (another vendor's,
/// or no driver loaded).
fn gpus(sys: &Sysfs) -> Vec<Device> {
    let mut out: Vec<Device> = Vec::new();
    for g in crate::transport::cuda::driver::devices() {
        let address = gpu::function_of(&g.pci_bus_id).unwrap_or_else(|| g.pci_bus_id.clone());
        let mut d = match pci::function(sys, &address) {
            Some(f) => device(sys, f),
            None => Device {
                kind: "GPU".into(),
                downgraded: false,
                limit: None,
                function: Function::at(address),
                cuda: None,
            },
        };
        d.kind = format!("GPU {}: {}", g.ordinal, g.name);
        d.cuda = Some(g);
        out.push(d);
    }
    for f in gpu::gpus(sys) {
        if !out.iter().any(|d| d.function.address == f.address) {
            out.push(device(sys, f));
        }
    }
    out
}

/// Surveys the machine: memory measured (or read back from the cache),
/// every link in sysfs (or the tree `XFERBENCH_SYSFS` names).
pub fn survey(refresh: bool) -> Survey {
    let sys = Sysfs::current();
    memory::measured(refresh);
    // The CPUs a run pins to when not told (`--cpus`' default).
    let pair = crate::measure::placement::choose(Some(&[]))
        .ok()
        .and_then(|p| Some((p.initiator_cpu?, p.responder_cpu?)))
        .filter(|(a, b)| a != b);
    let functions = pci::functions(&sys);
    let with_link: Vec<Function> = functions
        .iter()
        .filter(|f| !f.is_bridge() && (f.current.is_some() || f.capable.is_some()))
        .cloned()
        .collect();
    let mut notes = Vec::new();
    if functions.is_empty() {
        notes.push(format!(
            "no PCI functions under {}: PCIe, NIC and disk limits are unknown here",
            sys.path("bus/pci/devices").display()
        ));
    } else if with_link.is_empty() {
        notes.push(format!(
            "none of the {} PCI functions here reports a link speed (a virtual machine's virtio devices do not): the PCIe limits are unknown on this machine; memory's are measured",
            functions.len()
        ));
    }
    if pair.is_none() {
        notes.push(
            "only one CPU is available: no core-to-core round trip; latency's floor is the clock's"
                .into(),
        );
    }
    Survey {
        sysfs: sys.root().display().to_string(),
        memory: Memory {
            copy_one_core: memory::copy_limit(&[]),
            copy_all_cores: memory::copy_all_limit(),
            round_trip: pair.and_then(|(a, b)| memory::round_trip_limit(a, b)),
            clock: memory::clock_limit(),
        },
        gpus: gpus(&sys),
        pci: with_link.into_iter().map(|f| device(&sys, f)).collect(),
        nics: net::nics(&sys)
            .into_iter()
            .map(|n| NicPath {
                limit: n.limit(&sys),
                nic: n,
            })
            .collect(),
        disks: block::disks(&sys)
            .into_iter()
            .map(|d| DiskPath {
                limit: d
                    .pci
                    .as_deref()
                    .and_then(|a| pci::function(&sys, a))
                    .and_then(|f| f.limit(&sys)),
                disk: d,
            })
            .collect(),
        notes,
    }
}

/// Surveys and writes the survey as asked.
pub fn run(o: &LimitsOptions) -> Result<()> {
    crate::output::check_writable(o.output.as_deref())?;
    if let Some(h) = &o.html {
        crate::output::check_writable(Some(h))?;
    }
    let tree = Sysfs::current();
    if !tree.root().is_dir() {
        return Err(Error::usage(format!(
            "{}={} is not a directory: name a tree in sysfs's layout (as tests/data/sysfs/gen4x8), or unset it to read /sys",
            crate::limits::sysfs::VAR,
            tree.root().display()
        )));
    }
    let s = survey(o.refresh);
    let text = match o.format {
        Format::Table => crate::report::inert(crate::report::limits::table(&s)),
        Format::Json => crate::report::limits::json(&s)?,
        Format::Csv => crate::report::inert(crate::report::limits::csv(&s)),
    };
    if let Some(h) = &o.html {
        crate::output::emit(&crate::report::limits::html(&s), Some(h))?;
    }
    crate::output::emit(&text, o.output.as_deref())
}
