//! PCI Express generations and what a link of each carries: the line rate
//! a lane signals at, less what its encoding spends, is the most payload
//! the link can move a direction. TLP and DLLP headers are not subtracted:
//! this is the link's ceiling, which real DMA reaches 80-90% of.

use serde::{Deserialize, Serialize};

/// How a generation spends its line rate, which is what turns GT/s into
/// bytes a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Encoding {
    /// 8 bits in 10 symbols (PCIe 1.x and 2.x): 80% of the line rate.
    B8b10b,
    /// 128 bits in 130 (PCIe 3.0 to 5.0): a 2-bit sync header per block.
    B128b130b,
    /// Fixed 256-byte flits (PCIe 6.0 on, PAM4): 236 bytes of TLPs and 6 of
    /// DLLPs per flit, the other 14 are CRC (8) and FEC (6).
    Flit,
}

impl Encoding {
    /// The share of the line rate left for data.
    pub fn efficiency(self) -> f64 {
        match self {
            Encoding::B8b10b => 8.0 / 10.0,
            Encoding::B128b130b => 128.0 / 130.0,
            Encoding::Flit => 242.0 / 256.0,
        }
    }

    /// As the specification names it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::B8b10b => "8b/10b",
            Encoding::B128b130b => "128b/130b",
            Encoding::Flit => "FLIT (242 of 256 bytes)",
        }
    }
}

/// One generation of the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Generation {
    /// As products name it: "1.0", "4.0".
    pub name: &'static str,
    /// Line rate of one lane, GT/s (one transfer is one bit on the wire
    /// for NRZ, and PAM4 from 6.0 on carries two per unit interval).
    pub gts: f64,
    /// How the line rate is spent.
    pub encoding: Encoding,
    /// The specification that introduced the rate.
    pub spec: &'static str,
}

/// Every generation Linux reports a speed for, slowest first.
pub const GENERATIONS: [Generation; 7] = [
    Generation {
        name: "1.0",
        gts: 2.5,
        encoding: Encoding::B8b10b,
        spec: "PCI Express Base Specification 1.0a",
    },
    Generation {
        name: "2.0",
        gts: 5.0,
        encoding: Encoding::B8b10b,
        spec: "PCI Express Base Specification 2.0",
    },
    Generation {
        name: "3.0",
        gts: 8.0,
        encoding: Encoding::B128b130b,
        spec: "PCI Express Base Specification 3.0",
    },
    Generation {
        name: "4.0",
        gts: 16.0,
        encoding: Encoding::B128b130b,
        spec: "PCI Express Base Specification 4.0",
    },
    Generation {
        name: "5.0",
        gts: 32.0,
        encoding: Encoding::B128b130b,
        spec: "PCI Express Base Specification 5.0",
    },
    Generation {
        name: "6.0",
        gts: 64.0,
        encoding: Encoding::Flit,
        spec: "PCI Express Base Specification 6.0",
    },
    Generation {
        name: "7.0",
        gts: 128.0,
        encoding: Encoding::Flit,
        spec: "PCI Express Base Specification 7.0",
    },
];

impl Generation {
    /// The generation signalling at `gts`, if it is one of the table's.
    pub fn of(gts: f64) -> Option<&'static Generation> {
        GENERATIONS.iter().find(|g| (g.gts - gts).abs() < 0.01)
    }

    /// The payload one lane carries a direction, MB/s (10^6 B/s): line
    /// rate × encoding efficiency / 8 bits.
    pub fn lane_mbps(&self) -> f64 {
        self.gts * 1000.0 * self.encoding.efficiency() / 8.0
    }
}

/// A link's speed and width, as trained or as capable.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Line rate, GT/s.
    pub gts: f64,
    /// Lanes.
    pub width: u32,
}

impl Link {
    /// The link's payload ceiling a direction, MB/s; None for a speed the
    /// table does not know.
    pub fn payload_mbps(&self) -> Option<f64> {
        Some(Generation::of(self.gts)?.lane_mbps() * f64::from(self.width))
    }

    /// "PCIe 4.0 x8" (or "PCIe 12.5 GT/s x8" for a speed the table lacks).
    pub fn name(&self) -> String {
        match Generation::of(self.gts) {
            Some(g) => format!("PCIe {} x{}", g.name, self.width),
            None => format!("PCIe {} GT/s x{}", self.gts, self.width),
        }
    }

    /// Parses sysfs's pair of files: a speed such as "16.0 GT/s PCIe" (or
    /// "2.5 GT/s", "Unknown") and a width such as "8" (0 when the link is
    /// down). None for a link that is not up or not reported.
    pub fn parse(speed: &str, width: &str) -> Option<Link> {
        let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
        let (_, unit) = speed.split_once(' ')?;
        if !unit.trim_start().starts_with("GT/s") || gts <= 0.0 {
            return None;
        }
        let width: u32 = width.trim().trim_start_matches(['x', 'X']).parse().ok()?;
        (width > 0).then_some(Link { gts, width })
    }
}

/// MB/s as a person reads it: "15.75 GB/s", "121.0 GB/s", "3125 MB/s",
/// "250 MB/s" (two decimals of GB/s, so Gen4 x8 reads as it is quoted).
pub fn format_mbps(mbps: f64) -> String {
    if mbps >= 100_000.0 {
        format!("{:.1} GB/s", mbps / 1000.0)
    } else if mbps >= 10_000.0 {
        format!("{:.2} GB/s", mbps / 1000.0)
    } else if mbps >= 100.0 {
        format!("{mbps:.0} MB/s")
    } else {
        format!("{mbps:.1} MB/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each generation's lane against the per-direction figures PCI-SIG
    /// publishes (and Wikipedia's table repeats): 250, 500, 984.6, 1969,
    /// 3938, 7563 MB/s.
    #[test]
    fn each_lane_carries_the_published_payload() {
        let lane = |gts: f64| Generation::of(gts).unwrap().lane_mbps();
        assert_eq!(lane(2.5), 250.0);
        assert_eq!(lane(5.0), 500.0);
        assert!((lane(8.0) - 984.6).abs() < 0.05, "{}", lane(8.0));
        assert!((lane(16.0) - 1969.2).abs() < 0.05, "{}", lane(16.0));
        assert!((lane(32.0) - 3938.5).abs() < 0.05, "{}", lane(32.0));
        assert!((lane(64.0) - 7562.5).abs() < 0.05, "{}", lane(64.0));
        assert!((lane(128.0) - 15125.0).abs() < 0.05, "{}", lane(128.0));
        assert!(Generation::of(12.0).is_none());
    }

    #[test]
    fn whole_links_match_the_published_totals() {
        let mbps = |gts, width| Link { gts, width }.payload_mbps().unwrap();
        // x16 Gen5: 63.0 GB/s a direction; Gen4 x8: 15.75 GB/s; Gen6 x16: 121 GB/s.
        assert!((mbps(32.0, 16) - 63_015.4).abs() < 0.1);
        assert!((mbps(16.0, 8) - 15_753.8).abs() < 0.1);
        assert!((mbps(64.0, 16) - 121_000.0).abs() < 0.1);
        assert_eq!(mbps(2.5, 1), 250.0);
        assert_eq!(format_mbps(mbps(16.0, 8)), "15.75 GB/s");
        assert_eq!(format_mbps(mbps(32.0, 16)), "63.02 GB/s");
        assert_eq!(format_mbps(mbps(64.0, 16)), "121.0 GB/s");
        assert_eq!(format_mbps(3125.0), "3125 MB/s");
        assert_eq!(format_mbps(250.0), "250 MB/s");
    }

    #[test]
    fn sysfs_speeds_parse_and_unknown_ones_do_not() {
        let l = Link::parse("16.0 GT/s PCIe\n", "8\n").unwrap();
        assert_eq!(
            l,
            Link {
                gts: 16.0,
                width: 8
            }
        );
        assert_eq!(l.name(), "PCIe 4.0 x8");
        assert_eq!(Link::parse("2.5 GT/s", "1").unwrap().name(), "PCIe 1.0 x1");
        assert_eq!(Link::parse("8 GT/s", "x4").unwrap().width, 4);
        assert_eq!(Link::parse("Unknown", "8"), None);
        assert_eq!(Link::parse("Unknown speed", "8"), None);
        assert_eq!(Link::parse("16.0 GT/s PCIe", "0"), None);
        assert_eq!(Link::parse("", ""), None);
        assert_eq!(
            Link {
                gts: 12.5,
                width: 2
            }
            .name(),
            "PCIe 12.5 GT/s x2",
            "a speed outside the table is still named"
        );
    }
}
