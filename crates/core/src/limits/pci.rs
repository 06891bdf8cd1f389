//! PCI functions and the links they trained: what sysfs says of each
//! (`bus/pci/devices/BDF`: ids, class, driver, NUMA node, current and
//! capable link) and of the ports above it, whose links the data crosses
//! too. A function's real directory sits inside its upstream port's, so
//! the path to the root complex is the chain of parent directories.

use super::Limit;
use super::pcie::{Link, format_mbps};
use super::sysfs::{self, Sysfs};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A port above a function, nearest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Port {
    /// Its PCI address.
    pub address: String,
    /// The link it trained (downstream for a downstream or root port).
    pub current: Option<Link>,
    /// The link it can train.
    pub capable: Option<Link>,
}

/// One PCI function as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// `0000:41:00.0`.
    pub address: String,
    /// PCI vendor id.
    pub vendor: Option<u32>,
    /// PCI device id.
    pub device: Option<u32>,
    /// Class code, 24 bits (`0x030200`: 3D controller).
    pub class: Option<u32>,
    /// The bound driver's name.
    pub driver: Option<String>,
    /// The NUMA node the function is attached to (None: not known, or a
    /// machine of one node that says -1).
    pub numa_node: Option<u32>,
    /// The link as trained.
    pub current: Option<Link>,
    /// The best link the function can train.
    pub capable: Option<Link>,
    /// The ports between it and the root complex, nearest first.
    pub upstream: Vec<Port>,
}

/// The canonical form of a PCI address: `41:00.0`, `0000:41:00.0` and the
/// CUDA driver's `00000000:41:00.0` all name `0000:41:00.0`; lower case.
/// None for what is not an address.
pub fn normalise(address: &str) -> Option<String> {
    let a = address.trim().to_ascii_lowercase();
    let parts: Vec<&str> = a.split(':').collect();
    let (domain, bus, devfn) = match parts.as_slice() {
        [bus, devfn] => ("0", *bus, *devfn),
        [domain, bus, devfn] => (*domain, *bus, *devfn),
        _ => return None,
    };
    let domain = u32::from_str_radix(domain, 16).ok()?;
    let candidate = format!("{domain:04x}:{bus}:{devfn}");
    sysfs::is_bdf(&candidate).then_some(candidate)
}

/// Every PCI function of the tree, by address.
pub fn functions(sys: &Sysfs) -> Vec<Function> {
    let Ok(dir) = std::fs::read_dir(sys.path("bus/pci/devices")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| sysfs::is_bdf(n))
        .collect();
    names.sort();
    names.iter().filter_map(|n| function(sys, n)).collect()
}

/// The function at `address` (any form [`normalise`] takes), if the tree
/// has it.
pub fn function(sys: &Sysfs, address: &str) -> Option<Function> {
    let address = normalise(address)?;
    let link = sys.path("bus/pci/devices").join(&address);
    let dir = sysfs::real(&link)?;
    let f = |name: &str| dir.join(name);
    let mut upstream = Vec::new();
    let mut up = dir.parent();
    while let Some(p) = up {
        let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            break;
        };
        if !sysfs::is_bdf(&name) {
            break;
        }
        upstream.push(Port {
            address: name,
            current: link_of(p, "current"),
            capable: link_of(p, "max"),
        });
        up = p.parent();
    }
    Some(Function {
        vendor: sysfs::read_hex(&f("vendor")),
        device: sysfs::read_hex(&f("device")),
        class: sysfs::read_hex(&f("class")),
        driver: sysfs::link_name(&f("driver")),
        numa_node: sysfs::read_u64(&f("numa_node")).and_then(|n| u32::try_from(n).ok()),
        current: link_of(&dir, "current"),
        capable: link_of(&dir, "max"),
        upstream,
        address,
    })
}

/// `current_link_*` or `max_link_*` of a function's directory.
fn link_of(dir: &Path, which: &str) -> Option<Link> {
    Link::parse(
        &sysfs::read(&dir.join(format!("{which}_link_speed")))?,
        &sysfs::read(&dir.join(format!("{which}_link_width")))?,
    )
}

/// The PCI function a device's directory belongs to: the nearest one at
/// or above `path` (a NIC's, a disk's, a DMA channel's real directory).
pub fn function_above(sys: &Sysfs, path: &Path) -> Option<String> {
    let dir = sysfs::real(path)?;
    let top = sys.real_root();
    let mut p = Some(dir.as_path());
    while let Some(d) = p {
        if top.as_deref().is_some_and(|t| !d.starts_with(t) || d == t) {
            return None;
        }
        if let Some(name) = d.file_name().map(|n| n.to_string_lossy())
            && sysfs::is_bdf(&name)
        {
            return Some(name.into_owned());
        }
        p = d.parent();
    }
    None
}

impl Function {
    /// A function known by its address alone (a GPU the driver lists at a
    /// bus id sysfs does not have).
    pub fn at(address: String) -> Function {
        Function {
            address,
            vendor: None,
            device: None,
            class: None,
            driver: None,
            numa_node: None,
            current: None,
            capable: None,
            upstream: Vec::new(),
        }
    }

    /// What the function is, as `lspci` says it at a glance: its class
    /// in words where it is a common one.
    pub fn kind(&self) -> &'static str {
        match self.class.map(|c| c >> 8) {
            Some(0x0108) => "NVMe controller",
            Some(0x0100..=0x01ff) => "storage controller",
            Some(0x0200) => "Ethernet controller",
            Some(0x0207) => "InfiniBand controller",
            Some(0x0280) => "network controller",
            Some(0x0300) => "VGA controller",
            Some(0x0302) => "3D controller",
            Some(0x0380) => "display controller",
            Some(0x0600) => "host bridge",
            Some(0x0604) => "PCI bridge",
            Some(0x1200) => "processing accelerator",
            Some(0x0b40) => "co-processor",
            Some(0x0c03) => "USB controller",
            Some(0xff00) | None => "unclassified device",
            _ => "device",
        }
    }

    /// Whether the function is a GPU: a VGA, 3D or other display controller.
    pub fn is_gpu(&self) -> bool {
        matches!(self.class.map(|c| c >> 8), Some(0x0300 | 0x0302 | 0x0380))
    }

    /// Whether the function is a bridge or port (its links are other
    /// functions' paths, not endpoints of their own).
    pub fn is_bridge(&self) -> bool {
        self.class.is_some_and(|c| c >> 16 == 0x06)
    }

    /// The best link both the function and the port it hangs from can
    /// train: what it should have trained at.
    pub fn attainable(&self) -> Option<Link> {
        let own = self.capable?;
        let port = self.upstream.first().and_then(|p| p.capable);
        Some(match port {
            Some(p) => Link {
                gts: own.gts.min(p.gts),
                width: own.width.min(p.width),
            },
            None => own,
        })
    }

    /// Whether it trained below what it and its port can do: the first
    /// thing to look at when a figure disappoints.
    pub fn downgraded(&self) -> bool {
        match (self.current, self.attainable()) {
            (Some(c), Some(a)) => c.gts < a.gts - 0.01 || c.width < a.width,
            _ => false,
        }
    }

    /// The link's payload ceiling a direction, with what is wrong with the
    /// path: the slowest link between the function and the root complex
    /// (its own as trained, or a narrower one upstream). None when no link
    /// on the way reports a speed the table knows (a virtual machine's
    /// virtio devices, a root-complex integrated function).
    pub fn limit(&self, sys: &Sysfs) -> Option<Limit> {
        let mut hops: Vec<(Option<&str>, Link)> = Vec::new();
        if let Some(c) = self.current {
            hops.push((None, c));
        }
        for p in &self.upstream {
            if let Some(c) = p.current {
                hops.push((Some(&p.address), c));
            }
        }
        let (at, link, mbps) = hops
            .iter()
            .filter_map(|(at, l)| Some((*at, *l, l.payload_mbps()?)))
            .min_by(|a, b| a.2.total_cmp(&b.2))?;
        let mut warnings = Vec::new();
        if self.downgraded()
            && let (Some(c), Some(a)) = (self.current, self.attainable())
        {
            let port = match self.upstream.first() {
                Some(p) => format!("the device and its port {}", p.address),
                None => "the device".to_string(),
            };
            let best = a
                .payload_mbps()
                .map(|m| format!(" ({} a direction)", format_mbps(m)))
                .unwrap_or_default();
            warnings.push(format!(
                "{}: trained at {}; {port} can do {}{best}: reseat the card, check the slot's lanes and the BIOS link settings",
                self.address,
                c.name(),
                a.name()
            ));
        }
        let what = match at {
            None => link.name(),
            Some(port) => {
                warnings.push(format!(
                    "the path is narrower upstream than {}'s own link: {port} trained at {}",
                    self.address,
                    link.name()
                ));
                format!("{} (upstream, at {port})", link.name())
            }
        };
        Some(Limit {
            value: mbps,
            unit: "MB/s".into(),
            what,
            source: sys
                .path("bus/pci/devices")
                .join(&self.address)
                .display()
                .to_string(),
            warnings,
            numa_node: self.numa_node,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_normalise_from_every_form_a_driver_gives() {
        assert_eq!(normalise("0000:41:00.0").as_deref(), Some("0000:41:00.0"));
        assert_eq!(
            normalise("00000000:41:00.0").as_deref(),
            Some("0000:41:00.0")
        );
        assert_eq!(normalise("41:00.0").as_deref(), Some("0000:41:00.0"));
        assert_eq!(normalise("0000:C1:00.1").as_deref(), Some("0000:c1:00.1"));
        assert_eq!(normalise("10000:01:00.0").as_deref(), Some("10000:01:00.0"));
        assert_eq!(normalise("gpu0"), None);
        assert_eq!(normalise("0000:41:00"), None);
        assert_eq!(normalise(""), None);
    }
}
