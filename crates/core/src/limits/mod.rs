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

pub mod block;
pub mod cache;
pub mod gpu;
pub mod memory;
pub mod net;
pub mod pci;
pub mod pcie;
pub mod sysfs;

use sysfs::Sysfs;

impl Limit {
    /// The share of the ceiling a figure in the same unit reached (0.83
    /// for 83%).
    pub fn share(&self, measured_in_unit: f64) -> f64 {
        measured_in_unit / self.value
    }

    /// Whether a figure lies above the ceiling by more than 2%: the path
    /// cannot carry it, so the link's description or the clock is wrong.
    pub fn exceeded_by(&self, measured: f64) -> bool {
        measured > self.value * 1.02
    }
}

/// The bandwidth ceiling (MB/s, one direction) of the path to `end`: a
/// PCIe link's payload rate for its trained generation and width
/// (warnings when trained below what both the device and its upstream
/// port can do), a NIC's speed (and its PCIe link behind it, the lower of
/// the two), memory copy bandwidth (measured, cached) for
/// [`Endpoint::Memory`] and loopback. None when unknown.
pub fn bandwidth(end: &Endpoint) -> Option<Limit> {
    bandwidth_in(&Sysfs::current(), end)
}

/// [`bandwidth`] read from the tree `sys`.
pub fn bandwidth_in(sys: &Sysfs, end: &Endpoint) -> Option<Limit> {
    let of_pci = |address: String| pci::function(sys, &address)?.limit(sys);
    match end {
        Endpoint::File(p) => of_pci(block::function_of_file(sys, p)?),
        Endpoint::Node(p) => of_pci(block::function_of_node(sys, p)?),
        Endpoint::Pci(a) => of_pci(a.clone()),
        Endpoint::Gpu(id) => of_pci(gpu::function_of(id)?),
        Endpoint::Local(ip) if ip.is_loopback() => Some(memory::copy_limit(&[])),
        Endpoint::Local(ip) => {
            let name = net::interface_of(*ip)?;
            if name == "lo" {
                return Some(memory::copy_limit(&[]));
            }
            net::nic(sys, &name)?.limit(sys)
        }
        Endpoint::Memory(cpus) => Some(memory::copy_limit(cpus)),
    }
}

/// The floor of a round trip between two CPUs (the core-to-core
/// cache-line round trip, ns; measured, cached); for one CPU or none, the
/// clock's floor.
pub fn latency_floor(cpus: &[usize]) -> Option<Limit> {
    match cpus {
        [a, b, ..] if a != b => memory::round_trip_limit(*a, *b),
        _ => Some(memory::clock_limit()),
    }
}

/// The CPUs of NUMA node `node` (sysfs node/nodeN/cpulist), for the NUMA
/// note.
pub fn node_cpus(node: u32) -> Option<Vec<usize>> {
    node_cpus_in(&Sysfs::current(), node)
}

/// [`node_cpus`] read from the tree `sys`.
pub fn node_cpus_in(sys: &Sysfs, node: u32) -> Option<Vec<usize>> {
    sysfs::read_cpus(&sys.path(&format!("devices/system/node/node{node}/cpulist")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use block::Kind;

    fn tree(name: &str) -> Sysfs {
        Sysfs::at(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/data/sysfs")
                .join(name),
        )
    }

    #[test]
    fn a_gen5_card_trained_at_gen4_x8_is_its_limit_and_is_flagged() {
        let sys = tree("gen4x8");
        let l = bandwidth_in(&sys, &Endpoint::Pci("0000:41:00.0".into())).unwrap();
        assert!((l.value - 15_753.8).abs() < 0.1, "{l:?}");
        assert_eq!((l.unit.as_str(), l.what.as_str()), ("MB/s", "PCIe 4.0 x8"));
        assert_eq!(l.numa_node, Some(1));
        assert_eq!(l.warnings.len(), 1, "{l:?}");
        assert!(l.warnings[0].contains("PCIe 5.0 x16"), "{l:?}");
        // The CUDA driver's form of the address finds the same link.
        let g = bandwidth_in(&sys, &Endpoint::Gpu("00000000:41:00.0".into())).unwrap();
        assert_eq!(g, l);
        assert_eq!(gpu::gpus(&sys).len(), 1);
        assert_eq!(
            block::function_of_number(&sys, Kind::Char, 195, 0).as_deref(),
            Some("0000:41:00.0")
        );
        assert_eq!(node_cpus_in(&sys, 1), Some((8..16).collect()));
        assert_eq!(node_cpus_in(&sys, 7), None);
    }

    #[test]
    fn a_gen1_x1_device_carries_250_mbps_and_is_not_a_downgrade() {
        let sys = tree("gen1x1");
        let l = bandwidth_in(&sys, &Endpoint::Pci("01:00.0".into())).unwrap();
        assert_eq!(l.value, 250.0);
        assert!(l.warnings.is_empty(), "{l:?}");
        assert_eq!(l.numa_node, None, "numa_node -1 is not a node");
        assert_eq!(
            block::function_of_number(&sys, Kind::Char, 240, 0).as_deref(),
            Some("0000:01:00.0")
        );
        assert!(l.exceeded_by(1000.0) && !l.exceeded_by(254.0));
        assert_eq!(l.share(200.0), 0.8);
    }

    #[test]
    fn a_25g_nic_is_its_speed_and_a_port_that_is_down_its_link() {
        let sys = tree("nic25g");
        let nics = net::nics(&sys);
        let names: Vec<&str> = nics.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["eth2", "eth3"]);
        let l = nics[0].limit(&sys).unwrap();
        assert_eq!(l.value, 3125.0);
        assert_eq!(l.what, "25 Gb/s Ethernet (eth2)");
        assert_eq!(nics[0].pci.as_deref(), Some("0000:03:00.0"));
        assert_eq!(nics[1].speed_mbit, None);
        let down = nics[1].limit(&sys).unwrap();
        assert_eq!(down.what, "PCIe 3.0 x8");
    }

    #[test]
    fn a_partition_leads_through_its_disk_and_controller_to_the_nvme_function() {
        let sys = tree("nvme4x4");
        for minor in [0, 1] {
            assert_eq!(
                block::function_of_number(&sys, Kind::Block, 259, minor).as_deref(),
                Some("0000:02:00.0")
            );
        }
        let disks = block::disks(&sys);
        assert_eq!(disks.len(), 1, "{disks:?}");
        assert_eq!(disks[0].model.as_deref(), Some("Samsung SSD 980 PRO 1TB"));
        assert_eq!(block::function_of_number(&sys, Kind::Block, 8, 0), None);
    }

    #[test]
    fn a_tree_without_the_device_knows_no_limit() {
        let sys = Sysfs::at("/nonexistent/sysfs");
        assert_eq!(
            bandwidth_in(&sys, &Endpoint::Pci("0000:41:00.0".into())),
            None
        );
        assert_eq!(bandwidth_in(&sys, &Endpoint::Gpu("not an id".into())), None);
        assert!(pci::functions(&sys).is_empty() && net::nics(&sys).is_empty());
        assert_eq!(node_cpus_in(&sys, 0), None);
    }
}
