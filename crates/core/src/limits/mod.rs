//! How fast a data path can go at best, so that every figure can stand
//! beside its ceiling: the PCIe link a device trained at (read from sysfs,
//! with the generation's encoding), a NIC's speed, and for the paths that
//! stay in the host the memory's own ceilings, measured (copy bandwidth,
//! the core-to-core cache-line round trip, the clock's floor). A bring-up
//! bug is often in the link rather than the figure (a x16 card trained at
//! x8, a device on the other NUMA node), so a limit also carries what is
//! wrong with its path.
//!
//! `XFERBENCH_SYSFS=DIR` reads a tree in sysfs's layout instead of `/sys`,
//! which is how the tests model machines they do not have.

use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::PathBuf;

/// The ceiling of one path, as a result records it (`limit` in the JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// The ceiling, in `unit`.
    pub value: f64,
    /// `MB/s` (10^6 bytes a second, one direction) for a bandwidth, `ns`
    /// for a latency floor.
    pub unit: String,
    /// What the ceiling is, as a headline says it: "PCIe 4.0 x8",
    /// "25 Gb/s Ethernet (eth0)", "memory copy, 1 core",
    /// "core-to-core round trip, CPUs 0 and 1".
    pub what: String,
    /// Where the figure came from: the sysfs function or interface it was
    /// read from, or "measured" with how it was cached.
    pub source: String,
    /// What is wrong with the path itself: "trained at PCIe 4.0 x8, card
    /// and slot capable of PCIe 5.0 x16".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The NUMA node of the device at the far end, when sysfs knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
}

/// Where a run's data goes, as far as the run knows it: what the limit of
/// its path is found from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A regular file or directory: the block device behind its filesystem.
    File(PathBuf),
    /// A character or block device node (`/dev/xdma0_h2c_0`, `/dev/nvme0n1`).
    Node(PathBuf),
    /// A socket's local address: the interface that holds it (loopback is
    /// memory).
    Local(IpAddr),
    /// A PCI function the user named (a plugin's `pci=DOMAIN:BUS:DEV.FN`).
    Pci(String),
    /// A GPU, by the PCI bus id its driver reports.
    Gpu(String),
    /// Memory between the CPUs a run uses (threads, shared memory, pipes,
    /// loopback sockets).
    Memory(Vec<usize>),
}
