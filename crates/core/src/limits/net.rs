//! Network interfaces: the one holding a socket's local address
//! (getifaddrs), its speed (`class/net/IF/speed`, Mb/s; -1 or unreadable
//! when the link is down or the driver does not say, as virtio's does not)
//! and the PCI function behind it (`class/net/IF/device`).

use super::Limit;
use super::pci;
use super::sysfs::{self, Sysfs};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// One network interface as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Nic {
    /// `eth0`.
    pub name: String,
    /// The link's speed, Mb/s (None: down, or not reported).
    pub speed_mbit: Option<u64>,
    /// The PCI function behind it, when it has one.
    pub pci: Option<String>,
    /// The bound driver's name.
    pub driver: Option<String>,
    /// `operstate`: up, down, unknown.
    pub state: Option<String>,
}

/// Every interface of the tree with hardware behind it (a `device` link),
/// by name: loopback, bridges, veth pairs and tunnels have none and are
/// memory or another interface's path.
pub fn nics(sys: &Sysfs) -> Vec<Nic> {
    let Ok(dir) = std::fs::read_dir(sys.path("class/net")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lo" && sys.path("class/net").join(n).join("device").exists())
        .collect();
    names.sort();
    names.iter().filter_map(|n| nic(sys, n)).collect()
}

/// The interface `name`, if the tree has it.
pub fn nic(sys: &Sysfs, name: &str) -> Option<Nic> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    let dir = sys.path("class/net").join(name);
    if !dir.exists() {
        return None;
    }
    let device = dir.join("device");
    Some(Nic {
        name: name.to_string(),
        speed_mbit: sysfs::read_u64(&dir.join("speed")).filter(|&s| s > 0),
        pci: pci::function_above(sys, &device),
        driver: sysfs::link_name(&device.join("driver")),
        state: sysfs::read(&dir.join("operstate")),
    })
}

impl Nic {
    /// The interface's ceiling a direction: its speed, or the PCIe link
    /// behind it when that is slower (a 100G NIC in a Gen3 x8 slot).
    pub fn limit(&self, sys: &Sysfs) -> Option<Limit> {
        let link = self
            .pci
            .as_deref()
            .and_then(|a| pci::function(sys, a))
            .and_then(|f| f.limit(sys));
        let Some(mbit) = self.speed_mbit else {
            return link;
        };
        let mbps = mbit as f64 / 8.0;
        let own = Limit {
            value: mbps,
            unit: "MB/s".into(),
            what: format!("{} Ethernet ({})", speed_name(mbit), self.name),
            source: sys
                .path("class/net")
                .join(&self.name)
                .join("speed")
                .display()
                .to_string(),
            warnings: Vec::new(),
            numa_node: None,
        };
        Some(match link {
            Some(mut l) if l.value < mbps => {
                l.warnings.push(format!(
                    "{} runs at {} but its PCIe link carries only {:.0} MB/s a direction",
                    self.name,
                    speed_name(mbit),
                    l.value
                ));
                l
            }
            Some(l) => Limit {
                warnings: l.warnings,
                numa_node: l.numa_node,
                ..own
            },
            None => own,
        })
    }
}

/// "25 Gb/s", "100 Mb/s".
fn speed_name(mbit: u64) -> String {
    if mbit >= 1000 && mbit.is_multiple_of(1000) {
        format!("{} Gb/s", mbit / 1000)
    } else if mbit >= 1000 {
        format!("{:.1} Gb/s", mbit as f64 / 1000.0)
    } else {
        format!("{mbit} Mb/s")
    }
}

/// The name of the interface that holds `addr` (getifaddrs); None when no
/// interface does (an address of another host, or an unspecified one).
pub fn interface_of(addr: IpAddr) -> Option<String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `list`, which we free
    // with freeifaddrs below and do not use after.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut p = list;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, alive
        // until freeifaddrs.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr whose
        // family says which larger struct it is; each is read as its own.
        let here = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(
                        u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                    ))
                }
                libc::AF_INET6 => {
                    let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(sin6.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if here == Some(addr) {
            // SAFETY: ifa_name is a non-null NUL-terminated string owned by
            // the list, copied out before the list is freed.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_are_on_an_interface_and_foreign_ones_are_not() {
        // Every Linux machine has lo with 127.0.0.1 (a container too).
        assert!(interface_of("127.0.0.1".parse().unwrap()).is_some());
        assert_eq!(interface_of("192.0.2.77".parse().unwrap()), None);
    }

    #[test]
    fn speeds_are_named_as_people_say_them() {
        assert_eq!(speed_name(25_000), "25 Gb/s");
        assert_eq!(speed_name(2_500), "2.5 Gb/s");
        assert_eq!(speed_name(100), "100 Mb/s");
    }
}
