//! Finding the path each run crossed, and recording its limit beside the
//! run's figures: the path is found, not asked for, wherever the run knows
//! it — a file's or device node's backing device, the NIC a remote host is
//! reached by, a GPU by the bus id its driver reports, a plugin's `pci=`,
//! and memory for everything that stays in the host (threads, processes,
//! pipes, shared memory, loopback sockets).
//!
//! The memory ceilings are measured (`xferbench_core::limits` caches them
//! for the process), so [`warm`] asks for them before the first point and
//! the judging after the last finds them ready: nothing is measured inside
//! a timed loop.

use crate::measure::placement::Placement;
use crate::result::Run;
use crate::result::curve::CurvePoint;
use crate::result::flowgraph::{FlowPoint, FlowRun};
use crate::result::limit::{Numa, PathLimit};
use crate::result::load::LoadPoint;
use crate::result::mesh::{MeshPair, MeshRun, PairsRun, RankInfo};
use crate::result::stream::{JobResult, StreamRun};
use crate::result::{Point, PointMeta};
use crate::transport::{self, Pattern, Spec};
use std::path::Path;
use xferbench_core::limits::{self as core, Endpoint};

/// What one point says of its path.
pub enum Figure {
    /// A bandwidth, MB/s; `directions` is 2 when it adds both ways.
    Bandwidth { mbps: f64, directions: f64 },
    /// A round trip, ns.
    RoundTrip(f64),
}

/// A point that crossed one path: the spec that names it, and its figure.
pub trait OnPath: PointMeta {
    /// The transport spec, as the point records it.
    fn spec(&self) -> &str;
    /// The figure to read against the path's limit, if it has one.
    fn figure(&self) -> Option<Figure>;
    /// Its bytes were copied through memory (see `limit::copied`).
    fn copied(&self) -> bool {
        true
    }
    /// Bytes in one message, when the figure is of messages.
    fn bytes(&self) -> Option<u64> {
        None
    }
}

impl OnPath for Point {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn figure(&self) -> Option<Figure> {
        Some(Figure::RoundTrip(self.summary.p50_ns as f64))
    }
}

impl OnPath for CurvePoint {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn figure(&self) -> Option<Figure> {
        let both = self.mode == Pattern::Bidir || self.spec.contains("dir=bidir");
        Some(Figure::Bandwidth {
            mbps: self.bandwidth_mbps,
            directions: if both { 2.0 } else { 1.0 },
        })
    }
    fn copied(&self) -> bool {
        crate::result::limit::copied(&self.transport, self.buffers)
    }
    fn bytes(&self) -> Option<u64> {
        Some(self.size_bytes)
    }
}

impl OnPath for LoadPoint {
    fn spec(&self) -> &str {
        match self {
            LoadPoint::Closed(p) => &p.spec,
            LoadPoint::Open(p) => &p.spec,
        }
    }
    fn figure(&self) -> Option<Figure> {
        match self {
            LoadPoint::Closed(p) => Some(Figure::Bandwidth {
                mbps: p.req_per_s * p.size_bytes as f64 / 1e6,
                directions: 1.0,
            }),
            LoadPoint::Open(p) => Some(Figure::Bandwidth {
                mbps: p.achieved_per_s * p.size_bytes as f64 / 1e6,
                directions: 1.0,
            }),
        }
    }
    fn copied(&self) -> bool {
        match self {
            LoadPoint::Closed(p) => crate::result::limit::copied(&p.transport, p.buffers),
            LoadPoint::Open(p) => crate::result::limit::copied(&p.transport, p.buffers),
        }
    }
    fn bytes(&self) -> Option<u64> {
        match self {
            LoadPoint::Closed(p) => Some(p.size_bytes),
            LoadPoint::Open(p) => Some(p.size_bytes),
        }
    }
}

/// The CPUs a run drove its path from: the pinned pair, else every CPU it
/// may use.
fn cpus_of(p: &Placement) -> Vec<usize> {
    let mut v: Vec<usize> = [p.initiator_cpu, p.responder_cpu]
        .into_iter()
        .flatten()
        .collect();
    v.dedup();
    if v.is_empty() {
        v = p.allowed_cpus.clone();
    }
    v
}

/// Where a transport spec's data goes, from the spec alone (a GPU's is
/// found from the driver after the run: `gpu_endpoint`). A path in
/// memory is driven by two threads, so its copy ceiling is that of the
/// first two of `cpus`, however many the run may use.
pub fn endpoint(spec: &Spec, cpus: &[usize]) -> Option<Endpoint> {
    let cpus = pair(cpus);
    let name = spec.name.as_str();
    if name.starts_with(transport::remote::SCHEME)
        || name.starts_with(transport::remote::UDP_SCHEME)
    {
        let ip = transport::remote::local_address(name)?;
        return Some(if ip.is_loopback() {
            Endpoint::Memory(cpus.to_vec())
        } else {
            Endpoint::Local(ip)
        });
    }
    match name {
        transport::plugin::NAME => transport::plugin::pci_function(spec)
            .ok()
            .flatten()
            .map(Endpoint::Pci),
        // Both ends in this host: the data crosses memory (and a local
        // socket the loopback interface, which is memory too).
        "thread" | "process" | "pipe" | "unix" | "unix-dgram" | "shm" | "tcp" | "udp" => {
            Some(Endpoint::Memory(cpus.to_vec()))
        }
        _ => None,
    }
}

/// The GPU a cuda spec ran on, by the PCI bus id the driver reported for
/// it (the run's `env.gpus`: the one whose ordinal the spec names, else
/// the first).
fn gpu_endpoint(spec: &Spec, gpus: &[crate::result::Gpu]) -> Option<Endpoint> {
    let ordinal: Option<i64> = spec.get("device").and_then(|d| d.parse().ok());
    let g = gpus
        .iter()
        .find(|g| ordinal.is_none_or(|o| i64::from(g.ordinal) == o))
        .or_else(|| gpus.first())?;
    (!g.pci_bus_id.is_empty()).then(|| Endpoint::Gpu(g.pci_bus_id.clone()))
}

/// The two CPUs (or one) a path between two threads is driven from.
fn pair(cpus: &[usize]) -> &[usize] {
    &cpus[..cpus.len().min(2)]
}

/// Whether data on `end` stays in the host: its round trips' floor is the
/// core-to-core one, not just the clock's.
fn in_memory(end: &Endpoint) -> bool {
    matches!(end, Endpoint::Memory(_))
}

/// The limits of one path: its bandwidth ceiling and its round trips'
/// floor (the core-to-core round trip between `cpus` when the path stays
/// in memory, else the clock's floor).
pub fn path_limit(label: &str, end: Option<&Endpoint>, cpus: &[usize]) -> PathLimit {
    let limit = end.and_then(core::bandwidth);
    let floor = match end {
        Some(e) if in_memory(e) => core::latency_floor(pair(cpus)),
        _ => core::latency_floor(&cpus[..cpus.len().min(1)]),
    };
    let mut p = PathLimit::new(label, limit, floor);
    p.numa = p
        .limit
        .as_ref()
        .and_then(|l| l.numa_node)
        .and_then(|node| numa(node, cpus, false));
    p
}

/// The NUMA note's facts when none of `cpus` is on the device's `node`;
/// None when one is, or when sysfs lists no node for them.
pub fn numa(node: u32, cpus: &[usize], jobs: bool) -> Option<Numa> {
    if cpus.is_empty() {
        return None;
    }
    let near = core::node_cpus(node).unwrap_or_default();
    if cpus.iter().any(|c| near.contains(c)) {
        return None;
    }
    let cpu_nodes: Vec<u32> = cpus.iter().filter_map(|&c| node_of(c)).collect();
    if cpu_nodes.is_empty() {
        return None;
    }
    Some(Numa {
        device_node: node,
        cpus: cpus.to_vec(),
        cpu_nodes,
        near_cpus: near,
        jobs,
        cost: None,
    })
}

/// The NUMA node sysfs lists `cpu` under. Nodes are numbered densely from
/// 0 on every machine Linux runs on but may have holes after hot-removal,
/// so a few absent nodes are passed over before giving up.
fn node_of(cpu: usize) -> Option<u32> {
    let mut missing = 0;
    for n in 0..1024 {
        match core::node_cpus(n) {
            Some(c) if c.contains(&cpu) => return Some(n),
            Some(_) => missing = 0,
            None => {
                missing += 1;
                if missing > 8 {
                    return None;
                }
            }
        }
    }
    None
}

/// Before the first point: the limits of the paths `specs` name, so that
/// the memory ceilings are measured (and cached) now, when the machine is
/// quiet and nothing is being timed. The figures are read again, from the
/// cache, by [`attach`].
pub fn warm(specs: &[Spec], requested_cpus: Option<&[usize]>) {
    let Ok(placement) = crate::measure::placement::choose(requested_cpus) else {
        return;
    };
    let cpus = cpus_of(&placement);
    for s in specs {
        let end = endpoint(s, &cpus);
        let _ = path_limit("", end.as_ref(), &cpus);
    }
}

/// Before the first point of a run whose paths are all in memory (a
/// flowgraph, a mesh): memory's figures measured (or read back) now, when
/// nothing is being timed.
pub fn warm_memory() {
    let _ = core::memory::measured(false);
}

/// After the last point: one limit per path the run's points crossed, each
/// with the best figure on it beside it; a figure past its limit flags the
/// path and warns.
pub fn attach<P: OnPath, X>(run: &mut Run<P, X>) {
    let cpus = cpus_of(&run.placement);
    let mut specs: Vec<&str> = Vec::new();
    for p in &run.points {
        if !specs.contains(&p.spec()) {
            specs.push(p.spec());
        }
    }
    let mut limits = Vec::new();
    for text in specs {
        let Some(spec) = transport::parse_specs(text)
            .ok()
            .and_then(|v| v.into_iter().next())
        else {
            continue;
        };
        let end = if spec.name == "cuda" {
            gpu_endpoint(&spec, &run.env.gpus)
        } else {
            endpoint(&spec, &cpus)
        };
        let mut path = path_limit(text, end.as_ref(), &cpus);
        if path.limit.is_none() && path.floor.is_none() {
            continue;
        }
        let in_memory = end.as_ref().is_some_and(in_memory);
        let on: Vec<&P> = run.points.iter().filter(|p| p.spec() == text).collect();
        if let Some(w) = judge(&mut path, &on, in_memory) {
            run.warnings.push(w);
        }
        limits.push(path);
    }
    run.limits = limits;
}

/// Whether a figure on a path in memory had to cross memory at its copy
/// bandwidth: its bytes were copied, in messages larger than the
/// last-level cache (a copy within the cache runs faster than memory's).
fn crosses_memory(copied: bool, bytes: Option<u64>) -> bool {
    let llc = crate::measure::placement::allowed_cpus()
        .first()
        .and_then(|&c| crate::measure::placement::cache_bytes(c, None))
        .map_or(32 << 20, |b| b as u64);
    copied && bytes.is_none_or(|b| b > llc)
}

/// Records the best figure of `points` on `path`; the warning when it is
/// past the limit (see [`judge_figures`]).
fn judge<P: OnPath>(path: &mut PathLimit, points: &[&P], in_memory: bool) -> Option<String> {
    let figures = points
        .iter()
        .filter(|p| !p.partial())
        .filter_map(|p| Some((p.figure()?, p.copied(), p.bytes(), p.label())));
    judge_figures(path, figures, in_memory)
}

/// Records the best of `figures` (figure, copied, bytes in a message,
/// which point) on `path`; the warning when it is past the limit. On a
/// path in memory, the figures that crossed memory (see
/// [`crosses_memory`]) stand under the copy bandwidth; the others only
/// beside it, when there are no such figures. A bandwidth is what is
/// shown; a round trip only where there is none.
fn judge_figures(
    path: &mut PathLimit,
    figures: impl Iterator<Item = (Figure, bool, Option<u64>, String)>,
    in_memory: bool,
) -> Option<String> {
    let mut best_bw: Option<(f64, String)> = None;
    let mut beside: Option<(f64, String)> = None;
    let mut best_rt: Option<(f64, String)> = None;
    for (figure, copied, bytes, label) in figures {
        match figure {
            Figure::Bandwidth { mbps, directions } => {
                let one_way = mbps / directions;
                let slot = if in_memory && !crosses_memory(copied, bytes) {
                    &mut beside
                } else {
                    &mut best_bw
                };
                if slot.as_ref().is_none_or(|(b, _)| one_way > *b) {
                    *slot = Some((one_way, label));
                }
            }
            Figure::RoundTrip(ns) if ns > 0.0 && best_rt.as_ref().is_none_or(|(b, _)| ns < *b) => {
                best_rt = Some((ns, label));
            }
            Figure::RoundTrip(_) => {}
        }
    }
    let flag = match (best_bw, beside) {
        (Some((v, at)), _) => path.judge_bandwidth(v, &at),
        (None, Some((v, at))) => {
            path.beside_bandwidth(v, &at);
            None
        }
        (None, None) => None,
    };
    // A round trip below the floor is flagged even beside a bandwidth.
    let under = best_rt.and_then(|(v, at)| path.judge_latency(v, &at));
    flag.or(under)
}

/// Where a stream job's data goes: its target's backing device, a device
/// node, or the transport an `xfer:` target names.
fn job_endpoint(filename: &str, cpus: &[usize]) -> Option<Endpoint> {
    if let Some(spec) = crate::fio::engine::transport_spec(filename) {
        return endpoint(&spec.ok()?, cpus);
    }
    use std::os::unix::fs::FileTypeExt;
    let path = Path::new(filename);
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_block_device() || t.is_char_device() {
        Some(Endpoint::Node(path.to_path_buf()))
    } else {
        Some(Endpoint::File(path.to_path_buf()))
    }
}

/// Whether an `xfer:` target hands its buffers over without a copy: a
/// stream job's link takes transport-owned buffers unless its spec says
/// `buffers=user` (see `limit::copied`).
fn handed_over(filename: &str) -> bool {
    let Some(Ok(spec)) = crate::fio::engine::transport_spec(filename) else {
        return false;
    };
    let buffers = spec
        .mode::<transport::BufferMode>("buffers")
        .ok()
        .flatten()
        .unwrap_or(transport::BufferMode::Raw);
    !crate::result::limit::copied(&spec.name, buffers)
}

/// The CPUs a job was confined to, as fio reads its options: the last of
/// `cpus_allowed`, `cpumask` and `numa_cpu_nodes` given (in `[global]`,
/// then the job's own section), else every CPU the process may use. A
/// node's CPUs are read from the same sysfs as the device's node
/// (`XFERBENCH_SYSFS`), so the NUMA note compares like with like.
fn job_cpus(run: &StreamRun, j: &JobResult) -> Vec<usize> {
    let mut cpus = None;
    let given = run
        .extra
        .global_options
        .0
        .iter()
        .chain(&j.fio.job_options.0);
    for (k, v) in given {
        match k.as_str() {
            "numa_cpu_nodes" => {
                cpus = crate::units::parse_cpu_list(v).ok().flatten().map(|nodes| {
                    let of = |n: usize| core::node_cpus(n as u32).unwrap_or_default();
                    nodes.into_iter().flat_map(of).collect()
                });
            }
            "cpus_allowed" | "cpumask" => {
                let mut job = crate::fio::job::Job::default();
                if job.set(k, Some(v)).is_ok() {
                    cpus = job.cpus_allowed;
                }
            }
            _ => {}
        }
    }
    cpus.filter(|c: &Vec<usize>| !c.is_empty())
        .unwrap_or_else(crate::measure::placement::allowed_cpus)
}

/// A stream run's limits: one per target (jobs on one target share it),
/// each beside the best job on it; a job past its target's ceiling flags
/// it. When jobs drove one device both from its NUMA node and from
/// another, the note gives what the far node cost.
pub fn attach_stream(run: &mut StreamRun) {
    let mut limits: Vec<PathLimit> = Vec::new();
    // Per target: (best MB/s from near CPUs, best from far ones).
    let mut both: Vec<(f64, f64)> = Vec::new();
    for j in &run.points {
        let cpus = job_cpus(run, j);
        let Some(end) = job_endpoint(&j.filename, &cpus) else {
            continue;
        };
        let i = match limits.iter().position(|l| l.spec == j.filename) {
            Some(i) => i,
            None => {
                let mut p = path_limit(&j.filename, Some(&end), &cpus);
                // The note a job gets is said in its own terms
                // (`cpus_allowed`), set per job below.
                p.numa = None;
                if p.limit.is_none() {
                    continue;
                }
                limits.push(p);
                both.push((0.0, 0.0));
                limits.len() - 1
            }
        };
        let far = limits[i]
            .limit
            .as_ref()
            .and_then(|l| l.numa_node)
            .and_then(|n| numa(n, &cpus, true));
        // One direction at a time: a mixed job's reads and writes each
        // stand against the one-way ceiling.
        let mbps = [&j.read, &j.write, &j.trim]
            .iter()
            .map(|d| d.bw_bytes as f64 / 1e6)
            .fold(0.0, f64::max);
        let slot = if far.is_some() {
            &mut both[i].1
        } else {
            &mut both[i].0
        };
        *slot = slot.max(mbps);
        if limits[i].numa.is_none() {
            limits[i].numa = far;
        }
        let beats = limits[i].best.as_ref().is_none_or(|b| mbps > b.value);
        if beats && !j.partial {
            let at = format!("job {} bs {}", j.jobname, crate::units::format_size(j.bs));
            let mut trial = limits[i].clone();
            trial.exceeded = false;
            let w = if in_memory(&end) && !crosses_memory(!handed_over(&j.filename), Some(j.bs)) {
                trial.beside_bandwidth(mbps, &at);
                None
            } else {
                trial.judge_bandwidth(mbps, &at)
            };
            trial.exceeded |= limits[i].exceeded;
            limits[i] = trial;
            if let Some(w) = w
                && !run.warnings.contains(&w)
            {
                run.warnings.push(w);
            }
        }
    }
    for (l, (near, far)) in limits.iter_mut().zip(both) {
        if let Some(n) = l.numa.as_mut()
            && near > 0.0
            && far > 0.0
        {
            n.cost = Some(1.0 - far / near);
        }
    }
    run.limits = limits;
}

/// A flowgraph's limits: per core count N, N cores copying memory at once,
/// beside the bytes its saxpy blocks moved (each block reads and writes
/// 4 B a sample, so samples/s × 4 B × M). Its buffers usually stay within
/// the last-level cache, which moves data faster than memory: the copy
/// bandwidth then stands beside the figure as a reference; a flowgraph
/// whose buffers in flight outgrow the cache stands under it.
pub fn attach_flowgraph(run: &mut FlowRun) {
    let mut cores: Vec<usize> = run.points.iter().map(|p| p.cores).collect();
    cores.sort_unstable();
    cores.dedup();
    let mut limits = Vec::new();
    for n in cores {
        let on: Vec<&FlowPoint> = run.points.iter().filter(|p| p.cores == n).collect();
        let cpus = on.first().map(|p| p.cpus.clone()).unwrap_or_default();
        let label = format!(
            "flowgraph N={n} (cpus {})",
            crate::measure::placement::compact(&cpus)
        );
        let mut path = PathLimit::new(label, Some(core::memory::copy_limit_of_cores(n)), None);
        path.figure = Some(
            "the bytes the saxpy blocks moved: samples/s × 4 B × M (each block reads and writes every sample)"
                .into(),
        );
        let figures = on.iter().filter(|p| !p.partial).map(|p| {
            let mbps = p.samples_per_s * 4.0 * p.blocks as f64 / 1e6;
            let resident = p.buffers as u64 * p.buffer_bytes;
            (
                Figure::Bandwidth {
                    mbps,
                    directions: 1.0,
                },
                true,
                Some(resident),
                p.label(),
            )
        });
        if let Some(w) = judge_figures(&mut path, figures, true) {
            run.warnings.push(w);
        }
        limits.push(path);
    }
    run.limits = limits;
}

/// The ranks of `ranks` on the host of rank 0 (the one that assembles the
/// result and whose memory figures these are).
fn on_this_host(ranks: &[RankInfo]) -> Vec<&RankInfo> {
    let host = ranks.first().map(|r| r.host.as_str());
    ranks
        .iter()
        .filter(|r| Some(r.host.as_str()) == host)
        .collect()
}

/// What is said of a mesh's paths between hosts: MPI picks its fabric
/// (InfiniBand, a second NIC, shared memory), which xferbench cannot see.
const BETWEEN_HOSTS: &str =
    "pairs between hosts carry no limit: MPI picks its own fabric, which xferbench does not see";

/// A mesh's limit: the pairs of ranks on rank 0's host cross memory, so
/// one core's copy bandwidth stands over (or, for messages within the
/// last-level cache, beside) the best pair's bandwidth, and the round trip
/// of a cache line between the fastest pair's CPUs under its ping-pong.
/// Pairs between hosts cross a fabric MPI chose: no limit is guessed for
/// them.
pub fn attach_mesh(run: &mut MeshRun) {
    let here = on_this_host(&run.extra.ranks);
    let local = |r: usize| here.iter().any(|x| x.rank == r);
    let pairs: Vec<&MeshPair> = run
        .points
        .iter()
        .filter(|p| p.intra_host && !p.missing && local(p.from) && local(p.to))
        .collect();
    let Some(host) = here.first().map(|r| r.host.clone()) else {
        return;
    };
    if pairs.is_empty() {
        return;
    }
    let cpu = |r: usize| here.iter().find(|x| x.rank == r).and_then(|x| x.cpu);
    // The fastest pair's round trip (twice its one-way median) against the
    // floor between its CPUs.
    let fastest = pairs
        .iter()
        .filter_map(|p| Some((p.latency.first()?.oneway.p50_ns as f64 * 2.0, *p)))
        .filter(|(ns, _)| *ns > 0.0)
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let floor = fastest.and_then(|(_, p)| match (cpu(p.from), cpu(p.to)) {
        (Some(a), Some(b)) if a != b => core::latency_floor(&[a, b]),
        _ => None,
    });
    let mut path = PathLimit::new(
        format!("mesh within {host}"),
        Some(core::memory::copy_limit_of_cores(1)),
        floor,
    );
    path.figure = Some(format!(
        "a pair's bandwidth beside one core's copy, and twice its one-way median latency (a round trip) beside the floor; {BETWEEN_HOSTS}"
    ));
    let bandwidths = pairs.iter().flat_map(|p| {
        p.bandwidth.iter().map(move |b| {
            let at = format!(
                "{} at {}",
                p.label(),
                crate::units::format_size(b.size_bytes)
            );
            let figure = Figure::Bandwidth {
                mbps: b.bandwidth_mbps,
                directions: 1.0,
            };
            (figure, true, Some(b.size_bytes), at)
        })
    });
    let round_trip = fastest.map(|(ns, p)| (Figure::RoundTrip(ns), true, None, p.label()));
    if let Some(w) = judge_figures(&mut path, bandwidths.chain(round_trip), true) {
        run.warnings.push(w);
    }
    run.limits = vec![path];
}

/// `curve -t mpi --pairs K`'s limit: when every sender and receiver is on
/// rank 0's host, K cores copying at once (the aggregate moves K streams
/// through memory together).
pub fn attach_pairs(run: &mut PairsRun) {
    let k = run.extra.pairs;
    let busy = &run.extra.ranks[..(2 * k).min(run.extra.ranks.len())];
    if k == 0 || on_this_host(busy).len() != busy.len() {
        return;
    }
    let host = busy[0].host.clone();
    let mut path = PathLimit::new(
        format!("{k} pair{} within {host}", if k == 1 { "" } else { "s" }),
        Some(core::memory::copy_limit_of_cores(k)),
        None,
    );
    path.figure = Some("the aggregate bandwidth of the pairs streaming at once".into());
    let figures = run.points.iter().filter(|p| !p.partial).map(|p| {
        let figure = Figure::Bandwidth {
            mbps: p.aggregate_mbps,
            directions: 1.0,
        };
        (figure, true, Some(p.size_bytes), p.label())
    });
    if let Some(w) = judge_figures(&mut path, figures, true) {
        run.warnings.push(w);
    }
    run.limits = vec![path];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Spec {
        transport::parse_specs(s).unwrap().remove(0)
    }

    #[test]
    fn paths_in_the_host_are_memory_and_a_plugin_is_its_pci_function() {
        assert_eq!(
            endpoint(&spec("thread"), &[0, 1]),
            Some(Endpoint::Memory(vec![0, 1]))
        );
        assert_eq!(
            endpoint(&spec("tcp"), &[2]),
            Some(Endpoint::Memory(vec![2]))
        );
        assert_eq!(
            endpoint(&spec("plugin:path=x.so,pci=0000:3B:00.0"), &[0]),
            Some(Endpoint::Pci("0000:3b:00.0".into()))
        );
        assert_eq!(endpoint(&spec("plugin:path=x.so"), &[0]), None);
        // Loopback is memory, whichever way it is named.
        assert_eq!(
            endpoint(&spec("tcp://127.0.0.1:9"), &[1]),
            Some(Endpoint::Memory(vec![1]))
        );
    }

    #[test]
    fn a_device_node_and_a_file_are_told_apart() {
        assert_eq!(
            job_endpoint("/dev/null", &[]),
            Some(Endpoint::Node("/dev/null".into()))
        );
        let f = std::env::temp_dir().join(format!("xb-limits-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let p = f.to_str().unwrap();
        let found = job_endpoint(p, &[]);
        let _ = std::fs::remove_file(&f);
        assert_eq!(found, Some(Endpoint::File(p.into())));
        assert_eq!(
            job_endpoint("xfer:shm", &[3]),
            Some(Endpoint::Memory(vec![3]))
        );
    }
}
