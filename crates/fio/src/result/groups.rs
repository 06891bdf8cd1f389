//! Reporting groups (fio's `new_group`, `stonewall`, `group_reporting`):
//! each group's jobs pooled into one aggregate per direction, the "Run
//! status group" figures, and each job's share of its group (`bw_agg`).

use super::{DirStats, FioDir, JobResult};
use crate::measure::stats::Recorder;
use crate::worker::Recorded;
use serde::{Deserialize, Serialize};

/// A reporting group's aggregate, as fio's "Run status group" line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupResult {
    /// The group's number (`groupid` of its jobs).
    pub groupid: u32,
    /// The sweep block size the group ran at, when `--bs` gave several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_bs: Option<u64>,
    /// Name of the group's first job (fio names a merged entry so).
    pub jobname: String,
    /// Jobs in the group, clones included.
    pub jobs: u32,
    /// Some job of the group asked for `group_reporting`.
    pub group_reporting: bool,
    /// 1 when any job of the group failed, else 0.
    pub error: i32,
    /// The group's reads.
    pub read: GroupDir,
    /// The group's writes.
    pub write: GroupDir,
    /// The group's trims.
    pub trim: GroupDir,
}

/// One direction of a group: aggregate bandwidth is all bytes over the
/// longest runtime; min and max are the jobs' own.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GroupDir {
    /// Every member's I/Os together, over the longest member's runtime
    /// (flattened into this object in JSON).
    #[serde(flatten)]
    pub agg: DirStats,
    /// The slowest member's bandwidth, bytes/s (members with no I/O this way
    /// left out; 0 when none has any).
    pub min_bw_bytes: u64,
    /// The fastest member's bandwidth, bytes/s.
    pub max_bw_bytes: u64,
    /// The shortest member's runtime, ms, rounded up.
    pub min_runtime: u64,
    /// The longest member's runtime, ms, rounded up.
    pub max_runtime: u64,
}

impl GroupDir {
    /// One direction of a group measured K times: the aggregate as a job's
    /// ([`DirStats::merge_repeats`]), the slowest and fastest member and
    /// the shortest and longest runtime over every repeat.
    pub fn merge_repeats(parts: &[&GroupDir]) -> GroupDir {
        let with: Vec<&&GroupDir> = parts.iter().filter(|g| g.agg.total_ios > 0).collect();
        GroupDir {
            agg: DirStats::merge_repeats(&parts.iter().map(|g| &g.agg).collect::<Vec<_>>()),
            min_bw_bytes: with.iter().map(|g| g.min_bw_bytes).min().unwrap_or(0),
            max_bw_bytes: with.iter().map(|g| g.max_bw_bytes).max().unwrap_or(0),
            min_runtime: with.iter().map(|g| g.min_runtime).min().unwrap_or(0),
            max_runtime: with.iter().map(|g| g.max_runtime).max().unwrap_or(0),
        }
    }
}

impl GroupResult {
    /// A group measured K times (at least one).
    pub fn merge_repeats(parts: &[&GroupResult]) -> GroupResult {
        let first = parts[0];
        let dir = |f: fn(&GroupResult) -> &GroupDir| {
            GroupDir::merge_repeats(&parts.iter().map(|g| f(g)).collect::<Vec<_>>())
        };
        GroupResult {
            group_reporting: parts.iter().any(|g| g.group_reporting),
            error: parts.iter().map(|g| g.error).max().unwrap_or(0),
            read: dir(|g| &g.read),
            write: dir(|g| &g.write),
            trim: dir(|g| &g.trim),
            ..first.clone()
        }
    }
}

/// Reporting groups' aggregates, in group order: each job's figures
/// pooled with the latencies its worker recorded (`recs`, in job order).
pub fn groups(results: &[JobResult], recs: &[Recorded], sweep_bs: Option<u64>) -> Vec<GroupResult> {
    let mut ids: Vec<u32> = results.iter().map(|r| r.groupid).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|g| {
            let members: Vec<usize> = (0..results.len())
                .filter(|&i| results[i].groupid == g)
                .collect();
            let first = &results[members[0]];
            let timeline = crate::intervals::Timeline::merge(
                &members
                    .iter()
                    .map(|&i| &recs[i].timeline)
                    .collect::<Vec<_>>(),
            );
            // fio splits a group's latency by priority where a member has
            // cmdprio_* or the members' own priorities differ.
            let split = members.iter().any(|&i| {
                recs[i].prios.iter().any(|p| !p.is_empty())
                    || recs[i].ioprio != recs[members[0]].ioprio
            });
            let dir = |d: usize| {
                let mut merged = Recorder::new();
                let mut prios: Vec<(u16, Recorder)> = Vec::new();
                let mut bytes = 0;
                let mut bws = Vec::new();
                let mut runs = Vec::new();
                let mut fios = Vec::new();
                for &i in &members {
                    let s = match d {
                        0 => &results[i].read,
                        1 => &results[i].write,
                        _ => &results[i].trim,
                    };
                    if s.total_ios == 0 {
                        continue;
                    }
                    merged.merge(&recs[i].recs[d]);
                    if split {
                        merge_prios(&mut prios, &recs[i], d);
                    }
                    fios.push(&recs[i].fio);
                    bytes += s.io_bytes;
                    bws.push(s.bw_bytes);
                    runs.push(s.runtime_ns);
                }
                let longest = runs.iter().copied().max().unwrap_or(0);
                let mut agg = DirStats::of(&merged, bytes, longest)
                    .with(timeline.spread(d, &merged))
                    .with_prios(&prios)
                    .with_fio(FioDir::group(&fios, d, first.percentiles));
                agg.fio.set_agg(agg.bw_bytes);
                GroupDir {
                    agg,
                    min_bw_bytes: bws.iter().copied().min().unwrap_or(0),
                    max_bw_bytes: bws.iter().copied().max().unwrap_or(0),
                    min_runtime: runs.iter().copied().min().unwrap_or(0).div_ceil(1_000_000),
                    max_runtime: longest.div_ceil(1_000_000),
                }
            };
            GroupResult {
                groupid: g,
                sweep_bs,
                jobname: first.jobname.clone(),
                jobs: members.len() as u32,
                group_reporting: members.iter().any(|&i| results[i].group_reporting),
                error: members.iter().map(|&i| results[i].error).max().unwrap_or(0),
                read: dir(0),
                write: dir(1),
                trim: dir(2),
            }
        })
        .collect()
}

/// Adds a member's latency per priority to a group's; a member without
/// cmdprio_* counts all its I/Os under its own priority, as fio does.
fn merge_prios(into: &mut Vec<(u16, Recorder)>, rec: &Recorded, d: usize) {
    let mut add = |p: u16, r: &Recorder| match into.iter_mut().find(|(q, _)| *q == p) {
        Some((_, m)) => m.merge(r),
        None => into.push((p, r.clone())),
    };
    if rec.prios[d].is_empty() {
        add(rec.ioprio, &rec.recs[d]);
    }
    for (p, r) in &rec.prios[d] {
        add(*p, r);
    }
}

/// Each job's `bw_agg`: its mean bandwidth sample as a share of its
/// reporting group's bandwidth that way, as fio gives it.
pub fn set_bw_agg(results: &mut [JobResult], groups: &[GroupResult]) {
    for r in results {
        let Some(g) = groups
            .iter()
            .find(|g| g.groupid == r.groupid && g.sweep_bs == r.sweep_bs)
        else {
            continue;
        };
        r.read.fio.set_agg(g.read.agg.bw_bytes);
        r.write.fio.set_agg(g.write.agg.bw_bytes);
        r.trim.fio.set_agg(g.trim.agg.bw_bytes);
    }
}
