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

pub fn render(run: &Run) -> String {
    let budget = run.points.iter().any(|p| p.device_time.is_some());
    let mut out = String::from(HEADER);
    if budget {
        out.push_str(DEVICE_COLUMNS);
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
        out.push('\n');
    }
    out
}
