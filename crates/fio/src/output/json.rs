//! fio's JSON and json+: `jobs[]` with fio's keys (`jobname`, `groupid`,
//! `error`, `read`/`write`/`trim` with `io_bytes`, `bw` in KiB/s, `iops`,
//! `runtime` in ms, `clat_ns` with its percentiles…), groups with
//! `group_reporting` merged as fio merges them, and `clat_ns.bins` only in
//! json+.

use super::Report;
use crate::result::FioJob;
use serde_json::{Map, Value};

/// fio's document for `r`, with `rest` (what the caller records beside
/// fio's keys: environment, options, groups…) alongside. When a group is
/// merged (`group_reporting` over several jobs) `jobs` holds the merged
/// entry and `per_job` every job as it ran.
pub fn document(r: &Report, rest: Map<String, Value>) -> Value {
    let each: Vec<Value> = r
        .jobs
        .iter()
        .filter_map(|j| serde_json::to_value(j).ok())
        .collect();
    let merged_any = r.groups.iter().any(|g| g.group_reporting && g.jobs > 1);
    let mut out = Map::new();
    let jobs: Vec<Value> = if merged_any {
        let mut jobs = Vec::new();
        for g in r.groups {
            let members = r.members(g);
            if g.group_reporting && g.jobs > 1 {
                let parts: Vec<(&FioJob, u64)> =
                    members.iter().map(|j| (&j.fio, j.total_ios())).collect();
                let mut merged = serde_json::json!({
                    "jobname": g.jobname,
                    "groupid": g.groupid,
                    "error": g.error,
                    "jobs": g.jobs,
                    "sweep_bs": g.sweep_bs,
                    "read": g.read.agg,
                    "write": g.write.agg,
                    "trim": g.trim.agg,
                });
                if let (Some(m), Ok(Value::Object(f))) = (
                    merged.as_object_mut(),
                    serde_json::to_value(FioJob::merged(&parts)),
                ) {
                    m.extend(f);
                }
                jobs.push(merged);
            } else {
                jobs.extend(members.iter().filter_map(|j| serde_json::to_value(j).ok()));
            }
        }
        out.insert("per_job".into(), each.into());
        jobs
    } else {
        each
    };
    out.insert("fio version".into(), crate::cmdline::version().into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    out.insert("timestamp".into(), now.as_secs().into());
    out.insert("timestamp_ms".into(), (now.as_millis() as u64).into());
    out.insert(
        "time".into(),
        super::num::ctime(now.as_secs() as i64).into(),
    );
    out.insert("jobs".into(), jobs.into());
    for (k, val) in rest {
        out.entry(k).or_insert(val);
    }
    let mut doc = Value::Object(out);
    if !r.plus {
        drop_bins(&mut doc);
    }
    doc
}

/// Removes every `bins` of the latencies (`clat_ns`, `lat_ns`, `slat_ns`,
/// a sync's `lat_ns`) under `v`.
fn drop_bins(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in ["clat_ns", "lat_ns", "slat_ns"] {
                if let Some(serde_json::Value::Object(c)) = m.get_mut(k) {
                    c.remove("bins");
                }
            }
            m.values_mut().for_each(drop_bins);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_bins),
        _ => {}
    }
}
