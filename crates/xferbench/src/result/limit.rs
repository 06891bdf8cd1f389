//! The ceiling of each path a run crossed, recorded beside its figures, so a
//! figure reads as a share of what the hardware allows ("52.4 GB/s = 83% of
//! PCIe 5.0 x16") and a figure above its ceiling, or a device on the other
//! NUMA node from the CPUs driving it, is said rather than left for the
//! reader to notice.
//!
//! A run lists one [`PathLimit`] per path (a transport spec, or a stream
//! job's target) in its `limits`; a run written before them has none, and
//! renders as it always did.

use serde::{Deserialize, Serialize};
pub use xferbench_core::limits::Limit;

/// What a figure is read against: how far above its ceiling a bandwidth
/// may be, or below its floor a latency, before the path's figure is
/// called wrong. Timers and rounding put a figure a little past its limit
/// on a run that is right; the contract's 2% (`Limit::exceeded_by`).
pub const SLACK: f64 = 0.02;

/// The limit of one path, and what the run's figures on it came to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathLimit {
    /// The transport spec as the run's points name it (`thread`,
    /// `plugin:path=x.so,pci=…`), or a stream job's name.
    pub spec: String,
    /// The bandwidth ceiling of the path (MB/s, one direction): a PCIe
    /// link's payload rate, a NIC's speed, memory copy bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
    /// The floor of a round trip on the path (ns): the core-to-core
    /// cache-line round trip between the run's CPUs for the paths that stay
    /// in memory, else the clock's floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Limit>,
    /// The run's best figure on the path, beside its limit: what the
    /// headline and the table say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Best>,
    /// Set when a figure is past its limit (a bandwidth above the ceiling,
    /// a round trip below the floor): the link, the clock or the model is
    /// wrong, not the figure good.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exceeded: bool,
    /// On a path in memory, no figure had to cross memory at its copy
    /// bandwidth: its buffers were handed over in place (`thread` or `shm`
    /// with transport-owned buffers), or its messages fit in the last-level
    /// cache, which copies faster than memory. The copy bandwidth then
    /// stands beside the best figure as a reference, not above it as a
    /// ceiling, and nothing is flagged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reference: bool,
    /// The device's NUMA node against the run's CPUs, when they differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<Numa>,
    /// What the figure set against the limit is, where a point's own
    /// figure is not a bandwidth (a flowgraph's samples/s, a mesh's
    /// one-way latency): how it was made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<String>,
}

/// A run's best figure on one path and its share of the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Best {
    /// The figure, in the limit's unit (MB/s for a bandwidth, ns for a
    /// round trip).
    pub value: f64,
    /// Its unit: `MB/s` or `ns`.
    pub unit: String,
    /// The figure over the limit: 0.83 is 83% of the ceiling; for a round
    /// trip, how many times the floor it took.
    pub share: f64,
    /// Which point or job it is.
    pub at: String,
}

/// A device on another NUMA node than the CPUs that drove it: every
/// transfer crosses the link between the sockets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Numa {
    /// The device's node (sysfs `numa_node`).
    pub device_node: u32,
    /// The CPUs the run (or job) used.
    pub cpus: Vec<usize>,
    /// Their nodes, in the order of `cpus` (a CPU no node lists is left
    /// out).
    pub cpu_nodes: Vec<u32>,
    /// CPUs of the device's node, for `--cpus` (empty when sysfs does not
    /// list them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub near_cpus: Vec<usize>,
    /// The run placed stream jobs (`cpus_allowed`) rather than the two
    /// ends of a link (`--cpus`): what the note tells to change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub jobs: bool,
    /// What the far placement cost, when the run measured the path both
    /// ways (jobs on the device's node and off it): 1 − far / near of the
    /// best bandwidth each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl PathLimit {
    /// An entry with no figures judged yet.
    pub fn new(spec: impl Into<String>, limit: Option<Limit>, floor: Option<Limit>) -> PathLimit {
        PathLimit {
            spec: spec.into(),
            limit,
            floor,
            best: None,
            exceeded: false,
            reference: false,
            numa: None,
            figure: None,
        }
    }

    /// Records the best bandwidth (MB/s, one direction) measured on the
    /// path, and whether it is past the ceiling; the warning to give when
    /// it is. Nothing without a ceiling or a figure.
    pub fn judge_bandwidth(&mut self, best: f64, at: &str) -> Option<String> {
        self.reference = false;
        self.judge(best, at)
    }

    /// Records the best bandwidth of a path in memory whose figures did not
    /// cross memory at its copy bandwidth (see `reference`): its share of
    /// the copy bandwidth, never a flag.
    pub fn beside_bandwidth(&mut self, best: f64, at: &str) {
        let _ = self.judge(best, at);
        if self.best.is_some() {
            self.exceeded = false;
            self.reference = true;
        }
    }

    fn judge(&mut self, best: f64, at: &str) -> Option<String> {
        let lim = self.limit.as_ref().filter(|l| l.value > 0.0)?;
        if !(best > 0.0 && best.is_finite()) {
            return None;
        }
        let share = best / lim.value;
        self.best = Some(Best {
            value: best,
            unit: "MB/s".into(),
            share,
            at: at.to_string(),
        });
        if share <= 1.0 + SLACK {
            return None;
        }
        self.exceeded = true;
        Some(format!(
            "{}: {at} moved {}, {:.0}% of {}'s {}: faster than its path — the link, the clock or the device's model is wrong",
            self.spec,
            rate(best),
            share * 100.0,
            lim.what,
            rate(lim.value)
        ))
    }

    /// Records the fastest round trip (ns) on the path beside its floor,
    /// and whether it is below it (the clock is wrong); the warning to give.
    pub fn judge_latency(&mut self, best_ns: f64, at: &str) -> Option<String> {
        let floor = self.floor.as_ref().filter(|l| l.value > 0.0)?;
        if !(best_ns > 0.0 && best_ns.is_finite()) {
            return None;
        }
        let times = best_ns / floor.value;
        if self.best.is_none() {
            self.best = Some(Best {
                value: best_ns,
                unit: "ns".into(),
                share: times,
                at: at.to_string(),
            });
        }
        if times >= 1.0 - SLACK {
            return None;
        }
        self.exceeded = true;
        Some(format!(
            "{}: {at} took {} ns, below {}'s floor of {} ns: the clock or the path is not what it seems",
            self.spec,
            crate::units::si(best_ns),
            floor.what,
            crate::units::si(floor.value)
        ))
    }

    /// The limit's line under a run's table: what the ceiling is, where it
    /// came from, the best figure's share, and what is wrong with the path.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(l) = &self.limit {
            let value = if l.unit == "MB/s" {
                rate(l.value)
            } else {
                format!("{} {}", crate::units::si(l.value), l.unit)
            };
            let mut s = format!("Limit of {}: {value} ({}; {})", self.spec, l.what, l.source);
            if let Some(b) = self.best.as_ref().filter(|b| b.unit == l.unit) {
                s.push_str(&format!(
                    "; best {} = {:.0}% of {} ({})",
                    rate(b.value),
                    b.share * 100.0,
                    l.what,
                    b.at
                ));
            }
            out.push(format!("{s}."));
            if let Some(f) = &self.figure {
                out.push(format!("Limit of {}: the figure is {f}.", self.spec));
            }
            if self.reference {
                out.push(format!(
                    "Limit of {}: no figure crossed memory at its copy bandwidth ({}), so it is a reference here rather than a ceiling{}.",
                    self.spec,
                    if self.figure.is_some() {
                        "its data stayed within the last-level cache"
                    } else {
                        "buffers handed over in place, or messages within the last-level cache"
                    },
                    if self.figure.is_some() {
                        ""
                    } else {
                        "; copies of messages larger than the cache (`--buffers user`) stand under it"
                    }
                ));
            }
            for w in &l.warnings {
                out.push(format!("Limit of {}: {w}.", self.spec));
            }
        }
        if let Some(f) = &self.floor {
            let mut s = format!(
                "Floor of {}: {} ns ({}; {})",
                self.spec,
                crate::units::si(f.value),
                f.what,
                f.source
            );
            if let Some(b) = self.best.as_ref().filter(|b| b.unit == "ns") {
                s.push_str(&format!(
                    "; fastest {} ns = {:.1}× the floor ({})",
                    crate::units::si(b.value),
                    b.share,
                    b.at
                ));
            }
            out.push(format!("{s}."));
        }
        if let Some(n) = &self.numa {
            out.push(n.note(&self.spec));
        }
        out
    }
}

impl Numa {
    /// The note a run gives: where the device and the CPUs are, how to
    /// measure what it costs, and the cost when the run measured both.
    pub fn note(&self, spec: &str) -> String {
        let mut nodes = self.cpu_nodes.clone();
        nodes.sort_unstable();
        nodes.dedup();
        let nodes: Vec<String> = nodes.iter().map(u32::to_string).collect();
        let mut s = format!(
            "NUMA: {spec}'s device is on node {}, the CPUs that drove it ({}) on node {}: every transfer crosses between the sockets.",
            self.device_node,
            crate::measure::placement::compact(&self.cpus),
            nodes.join(",")
        );
        match self.cost {
            Some(c) => s.push_str(&format!(
                " Measured both ways, the far node cost {:.0}% of the bandwidth.",
                c * 100.0
            )),
            None if self.near_cpus.is_empty() => s.push_str(&format!(
                " To measure what it costs, run again on node {}'s CPUs and `xferbench compare` the two runs.",
                self.device_node
            )),
            None => s.push_str(&format!(
                " To measure what it costs, run again with {} (the device's node) and with {} (as here), and `xferbench compare` the two runs.",
                self.placing(&self.near_cpus),
                self.placing(&self.cpus)
            )),
        }
        s
    }

    /// The option that puts a run on `cpus`: a pair for `--cpus`, the
    /// set for a stream job's `--cpus_allowed`.
    fn placing(&self, cpus: &[usize]) -> String {
        if self.jobs {
            return format!(
                "--cpus_allowed={}",
                crate::measure::placement::compact(cpus)
            );
        }
        match cpus {
            [a, b, ..] => format!("--cpus {a},{b}"),
            [a] => format!("--cpus {a},{a}"),
            [] => "--cpus none".into(),
        }
    }
}

/// Whether a figure's bytes were copied through memory: every transport's
/// are but those of `thread` and `shm` with transport-owned buffers (`raw`,
/// `inline`), which hand each message over in place.
pub fn copied(transport: &str, buffers: crate::transport::BufferMode) -> bool {
    buffers == crate::transport::BufferMode::User || !matches!(transport, "thread" | "shm")
}

/// A bandwidth in the unit a reader expects of it: GB/s from 1000 MB/s.
pub fn rate(mbps: f64) -> String {
    if mbps >= 1000.0 {
        format!("{:.1} GB/s", mbps / 1000.0)
    } else {
        format!("{} MB/s", crate::units::si(mbps))
    }
}

/// The limit recorded for `spec`, if any.
pub fn of<'a>(limits: &'a [PathLimit], spec: &str) -> Option<&'a PathLimit> {
    limits.iter().find(|l| l.spec == spec)
}

/// A bandwidth (MB/s) as a share of the path's ceiling, for a table's
/// "% of limit" cell; "—" without one. `directions` is 2 for a figure that
/// adds both directions (bidir), whose ceiling is twice the one-way limit.
pub fn share_cell(limits: &[PathLimit], spec: &str, mbps: f64, directions: f64) -> String {
    match of(limits, spec)
        .and_then(|l| l.limit.as_ref())
        .filter(|l| l.unit == "MB/s" && l.value > 0.0)
    {
        Some(l) => format!("{:.0}%", 100.0 * mbps / (l.value * directions)),
        None => "—".into(),
    }
}

/// A round trip (ns) as a multiple of the path's floor, for a table's
/// "× floor" cell; "—" without one.
pub fn floor_cell(limits: &[PathLimit], spec: &str, ns: f64) -> String {
    match of(limits, spec)
        .and_then(|l| l.floor.as_ref())
        .filter(|l| l.value > 0.0)
    {
        Some(l) => format!("{:.1}×", ns / l.value),
        None => "—".into(),
    }
}

/// Whether any path has a bandwidth ceiling: the table's "% of limit"
/// column is there only then, so a run without limits reads as before.
pub fn any_bandwidth(limits: &[PathLimit]) -> bool {
    limits
        .iter()
        .any(|l| l.limit.as_ref().is_some_and(|l| l.unit == "MB/s"))
}

/// Whether any path has a latency floor.
pub fn any_floor(limits: &[PathLimit]) -> bool {
    limits.iter().any(|l| l.floor.is_some())
}

/// Every path's lines, for the conditions under a table.
pub fn lines(limits: &[PathLimit]) -> String {
    let mut out = String::new();
    for l in limits {
        for s in l.lines() {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(value: f64) -> Limit {
        Limit {
            value,
            unit: "MB/s".into(),
            what: "PCIe 1.0 x1".into(),
            source: "sysfs 0000:01:00.0".into(),
            warnings: Vec::new(),
            numa_node: Some(1),
        }
    }

    #[test]
    fn a_figure_above_its_link_is_flagged_and_one_below_is_not() {
        let mut p = PathLimit::new("plugin", Some(link(250.0)), None);
        let w = p.judge_bandwidth(1000.0, "bs=1M");
        assert!(p.exceeded && w.unwrap().contains("faster than its path"));
        assert!((p.best.as_ref().unwrap().share - 4.0).abs() < 1e-9);
        let mut q = PathLimit::new("plugin", Some(link(250.0)), None);
        assert!(q.judge_bandwidth(200.0, "bs=1M").is_none());
        assert!(!q.exceeded);
        // Within the slack: a timer's rounding, not a wrong link.
        assert!(q.judge_bandwidth(252.0, "bs=1M").is_none());
    }

    #[test]
    fn a_path_that_copies_nothing_is_beside_the_copy_bandwidth_not_under_it() {
        let mut p = PathLimit::new("thread", Some(link(4000.0)), None);
        p.beside_bandwidth(40_000.0, "64k");
        assert!(!p.exceeded && p.reference);
        assert!((p.best.as_ref().unwrap().share - 10.0).abs() < 1e-9);
        assert!(p.lines().iter().any(|l| l.contains("reference")));
        use crate::transport::BufferMode;
        assert!(!copied("thread", BufferMode::Raw) && copied("thread", BufferMode::User));
        assert!(copied("tcp", BufferMode::Raw));
    }

    #[test]
    fn a_round_trip_below_its_floor_is_flagged() {
        let mut floor = link(100.0);
        floor.unit = "ns".into();
        let mut p = PathLimit::new("thread", None, Some(floor.clone()));
        assert!(p.judge_latency(50.0, "64 B").is_some() && p.exceeded);
        let mut q = PathLimit::new("thread", None, Some(floor));
        assert!(q.judge_latency(300.0, "64 B").is_none());
        assert_eq!(floor_cell(&[q], "thread", 300.0), "3.0×");
    }

    #[test]
    fn the_share_cell_is_blank_without_a_limit_and_bidir_counts_both_ways() {
        let l = vec![PathLimit::new("tcp", Some(link(1000.0)), None)];
        assert_eq!(share_cell(&l, "tcp", 500.0, 1.0), "50%");
        assert_eq!(share_cell(&l, "tcp", 500.0, 2.0), "25%");
        assert_eq!(share_cell(&l, "shm", 500.0, 1.0), "—");
        assert!(any_bandwidth(&l) && !any_bandwidth(&[]));
    }

    #[test]
    fn the_numa_note_says_how_to_measure_the_cost_until_it_is_measured() {
        let mut n = Numa {
            device_node: 1,
            cpus: vec![0, 1],
            cpu_nodes: vec![0, 0],
            near_cpus: vec![8, 9, 10],
            jobs: false,
            cost: None,
        };
        let s = n.note("plugin");
        assert!(s.contains("node 1") && s.contains("--cpus 8,9") && s.contains("--cpus 0,1"));
        n.jobs = true;
        assert!(
            n.note("plugin").contains("--cpus_allowed=8-10"),
            "{}",
            n.note("plugin")
        );
        n.cost = Some(0.25);
        assert!(n.note("plugin").contains("cost 25%"));
    }
}
