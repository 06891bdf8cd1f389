//! CSV: one row per point, every summary field, for spreadsheets and pandas.

use crate::result::Run;
use std::fmt::Write;

pub const HEADER: &str = "transport,spec,buffers,completion,in_bytes,out_bytes,responder_delay_ns,warmup,count,mean_ns,stddev_ns,min_ns,p50_ns,p90_ns,p99_ns,p999_ns,p9999_ns,max_ns,complete,partial";

/// Quotes a field if it holds a comma, quote or newline (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Columns added when the device reports its own time (the latency budget).
pub const DEVICE_COLUMNS: &str =
    ",device_p50_ns,device_p99_ns,device_mean_ns,host_p50_ns,host_p99_ns,host_mean_ns";

/// The [`DEVICE_COLUMNS`] cells of one point (empty without a budget).
pub fn device_cells(d: Option<&crate::result::DeviceTime>) -> String {
    match d {
        Some(d) => format!(
            ",{},{},{:.1},{},{},{:.1}",
            d.device.p50_ns,
            d.device.p99_ns,
            d.device.mean_ns,
            d.host.p50_ns,
            d.host.p99_ns,
            d.host.mean_ns
        ),
        None => ",,,,,,".into(),
    }
}

/// Columns added when the run recorded its paths' bandwidth ceilings:
/// the ceiling (MB/s, one direction) and the point's share of it.
pub const LIMIT_COLUMNS: &str = ",limit_MBps,pct_of_limit";

/// The [`LIMIT_COLUMNS`] cells of one point: empty when its path has no
/// ceiling. `directions` is 2 for a figure adding both ways (bidir).
pub fn limit_cells(
    limits: &[crate::result::limit::PathLimit],
    spec: &str,
    mbps: f64,
    directions: f64,
) -> String {
    match crate::result::limit::of(limits, spec)
        .and_then(|l| l.limit.as_ref())
        .filter(|l| l.unit == "MB/s" && l.value > 0.0)
    {
        Some(l) => format!(
            ",{:.1},{:.1}",
            l.value,
            100.0 * mbps / (l.value * directions)
        ),
        None => ",,".into(),
    }
}

/// Columns added when the run recorded its paths' round-trip floors: the
/// floor (ns) and the point's median over it.
pub const FLOOR_COLUMNS: &str = ",floor_ns,times_floor";

pub fn render(run: &Run) -> String {
    let budget = run.points.iter().any(|p| p.device_time.is_some());
    let floors = crate::result::limit::any_floor(&run.limits);
    let mut out = String::from(HEADER);
    if budget {
        out.push_str(DEVICE_COLUMNS);
    }
    if floors {
        out.push_str(FLOOR_COLUMNS);
    }
    out.push('\n');
    for p in &run.points {
        let s = &p.summary;
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{:.1},{:.1},{},{},{},{},{},{},{},{},{}",
            field(&p.transport),
            field(&p.spec),
            p.buffers.name(),
            p.completion.name(),
            p.in_bytes,
            p.out_bytes,
            p.responder_delay_ns,
            p.warmup,
            s.count,
            s.mean_ns,
            s.stddev_ns,
            s.min_ns,
            s.p50_ns,
            s.p90_ns,
            s.p99_ns,
            s.p999_ns,
            s.p9999_ns,
            s.max_ns,
            run.complete,
            p.partial
        );
        if budget {
            out.push_str(&device_cells(p.device_time.as_ref()));
        }
        if floors {
            match crate::result::limit::of(&run.limits, &p.spec)
                .and_then(|l| l.floor.as_ref())
                .filter(|f| f.value > 0.0)
            {
                Some(f) => {
                    let _ = write!(out, ",{:.1},{:.2}", f.value, s.p50_ns as f64 / f.value);
                }
                None => out.push_str(",,"),
            }
        }
        out.push('\n');
    }
    out
}
