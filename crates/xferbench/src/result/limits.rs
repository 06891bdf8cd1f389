//! What `xferbench limits` found: this machine's data paths, each with its
//! ceiling, as the table, JSON, CSV and HTML renderers read it.

use crate::limits::Limit;
use crate::limits::block::Disk;
use crate::limits::net::Nic;
use crate::limits::pci::Function;
use serde::{Deserialize, Serialize};

/// The survey of one machine (or of the sysfs tree `XFERBENCH_SYSFS` names).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Survey {
    /// The sysfs tree read.
    pub sysfs: String,
    /// The host's own paths, measured.
    pub memory: Memory,
    /// Every PCI function with a link that is not a bridge or port.
    pub pci: Vec<Device>,
    /// Network interfaces (loopback is memory).
    pub nics: Vec<NicPath>,
    /// The PCI functions among `pci` that are GPUs.
    pub gpus: Vec<Device>,
    /// Whole disks with the link behind each.
    pub disks: Vec<DiskPath>,
    /// What the survey could not see, said plainly.
    pub notes: Vec<String>,
}

/// The memory paths' ceilings.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Memory {
    /// One core copying.
    pub copy_one_core: Limit,
    /// All allowed cores copying at once.
    pub copy_all_cores: Limit,
    /// The cache-line round trip between the two CPUs a run pins to by
    /// default; None with one CPU, or when the pair never answered.
    pub round_trip: Option<Limit>,
    /// Two back-to-back clock reads.
    pub clock: Limit,
}

/// A PCI function and the ceiling of its path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Device {
    /// What sysfs says of it.
    #[serde(flatten)]
    pub function: Function,
    /// Its class in words.
    pub kind: String,
    /// Trained below what it and its port can do.
    pub downgraded: bool,
    /// The payload ceiling a direction; None for a speed not known.
    pub limit: Option<Limit>,
    /// A GPU as the CUDA driver describes it (ordinal, name, bus id): the
    /// device `-t cuda:device=N` drives over this link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<crate::measure::env::Gpu>,
}

/// A network interface and its ceiling.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NicPath {
    /// What sysfs says of it.
    #[serde(flatten)]
    pub nic: Nic,
    /// The lower of its speed and its PCIe link.
    pub limit: Option<Limit>,
}

/// A disk and its ceiling.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiskPath {
    /// What sysfs says of it.
    #[serde(flatten)]
    pub disk: Disk,
    /// The PCIe link behind it.
    pub limit: Option<Limit>,
}
