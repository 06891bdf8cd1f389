//! `stream` results as fio users read them — fio's own formats come from
//! the fio crate ([`crate::fio::output`]) — with xferbench's views after
//! fio's part: the groups table, a block-size sweep table (the aws-fpga
//! "4-X" shape), the run's conditions, CSV.

use super::table::markdown;
use crate::error::Result;
use crate::fio::output::num::{fio_num, usec};
use crate::fio::output::{self, Report};
use crate::result::stream::StreamRun;
use crate::units::format_size;
use std::fmt::Write;

/// The fio view of `run`: its jobs and groups.
fn fio_report(run: &StreamRun) -> Report<'_> {
    // The run's own process wrote its environment with this command line;
    // a saved run read back by another command has another, and no pid.
    let here = run.env.command == std::env::args().collect::<Vec<_>>();
    Report {
        jobs: &run.points,
        groups: &run.extra.groups,
        disk_util: &run.extra.disk_util,
        plus: run.fio_output() == Some(crate::options::FioOutput::JsonPlus),
        global_options: &run.extra.global_options,
        started: humantime::parse_rfc3339(&run.env.timestamp).ok(),
        pid: here.then(std::process::id),
    }
}

/// The people's report: fio's normal text, xferbench's notes on each job,
/// then xferbench's tables and the run's conditions.
pub fn render(run: &StreamRun) -> String {
    let mut out = output::normal::render(&fio_report(run));
    if run.extra.groups.len() > 1 && run.extra.sweep.is_empty() {
        out.push('\n');
        out.push_str(&groups_table(run));
    }
    if !run.extra.sweep.is_empty() {
        out.push('\n');
        out.push_str(&sweep_table(run));
    }
    out.push('\n');
    let skipped: Vec<String> = run.extra.skipped.iter().map(|s| s.label()).collect();
    out.push_str(&super::table::skipped(&skipped));
    out.push_str(&device_lines(run.points.iter()));
    out.push_str(&super::table::conditions(run));
    out
}

/// A `Device:` line per job whose target is a device (a plugin), naming
/// the job: what the other experiments say of their links' devices.
pub fn device_lines<'a>(
    jobs: impl Iterator<Item = &'a crate::result::stream::JobResult>,
) -> String {
    jobs.filter_map(|j| {
        let d = j.device.as_ref()?;
        Some(format!(
            "Job {}: {}",
            j.jobname,
            super::table::device_line(d)
        ))
    })
    .collect()
}

/// fio's JSON (json+ when the run was asked for it), with everything else
/// the run recorded (environment, options, groups, sweep) alongside.
pub fn json(run: &StreamRun) -> Result<String> {
    let mut v = serde_json::to_value(run)
        .map_err(|e| crate::error::Error::run_from("cannot encode results", e))?;
    let mut rest = std::mem::take(v.as_object_mut().expect("a run is an object"));
    rest.remove("points");
    super::json::render(&output::json::document(&fio_report(run), rest))
}

/// fio's terse lines of the run, from its fio JSON.
pub fn terse(run: &StreamRun) -> Result<String> {
    let doc: serde_json::Value = serde_json::from_str(&json(run)?)
        .map_err(|e| crate::error::Error::run_from("cannot read the results back", e))?;
    Ok(output::terse::render(&doc))
}

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// One row per group: what the aws-fpga "4-X" files put in stonewalled groups.
fn groups_table(run: &StreamRun) -> String {
    let limited = crate::result::limit::any_bandwidth(&run.limits);
    let mut header = columns(&[
        "group",
        "jobs",
        "first job",
        "rw",
        "bs",
        "MB/s",
        "MiB/s",
        "IOPS",
        "clat p50 µs",
        "clat p99 µs",
    ]);
    if limited {
        header.insert(6, "% of limit".into());
    }
    let rows = run
        .extra
        .groups
        .iter()
        .map(|g| {
            let first = run.points.iter().find(|r| r.groupid == g.groupid);
            let d = if g.write.agg.total_ios > 0 && g.read.agg.total_ios == 0 {
                &g.write.agg
            } else if g.read.agg.total_ios > 0 && g.write.agg.total_ios == 0 {
                &g.read.agg
            } else if g.trim.agg.total_ios > 0 && g.write.agg.total_ios == 0 {
                &g.trim.agg
            } else {
                &g.write.agg
            };
            let bw = (g.read.agg.bw_bytes + g.write.agg.bw_bytes + g.trim.agg.bw_bytes) as f64;
            // The group against its first job's target: the jobs of a group
            // share one link in the layouts that have one.
            let share = first.map_or("—".into(), |r| {
                crate::result::limit::share_cell(&run.limits, &r.filename, bw / 1e6, 1.0)
            });
            let mut row = vec![
                g.groupid.to_string(),
                g.jobs.to_string(),
                g.jobname.clone(),
                first.map_or("?".into(), |r| r.rw.name().to_string()),
                first.map_or("?".into(), |r| {
                    r.bs_mix.clone().unwrap_or_else(|| format_size(r.bs))
                }),
                format!("{:.0}", bw / 1e6),
                format!("{:.0}", bw / 1048576.0),
                format!(
                    "{:.0}",
                    g.read.agg.iops + g.write.agg.iops + g.trim.agg.iops
                ),
                usec(d.clat_ns.at(50.0) as f64),
                usec(d.clat_ns.at(99.0) as f64),
            ];
            if limited {
                row.insert(6, share);
            }
            row
        })
        .collect::<Vec<_>>();
    markdown(&header, &rows)
}

/// The block-size sweep: per size, all jobs together.
fn sweep_table(run: &StreamRun) -> String {
    // All jobs together stand against one ceiling only when they share
    // one target.
    let one = match run.limits.as_slice() {
        [l] if l.limit.is_some() => Some(l.spec.as_str()),
        _ => None,
    };
    let mut header = columns(&[
        "bs",
        "jobs",
        "MB/s",
        "MiB/s",
        "IOPS",
        "clat p50 µs",
        "clat p99 µs",
        "io",
        "wall ms",
        "errors",
    ]);
    if one.is_some() {
        header.insert(3, "% of limit".into());
    }
    let rows = run
        .extra
        .sweep
        .iter()
        .map(|r| {
            let mut row = vec![
                format_size(r.bs),
                r.jobs.to_string(),
                format!("{:.0}", r.bw_bytes / 1e6),
                format!("{:.0}", r.bw_bytes / 1048576.0),
                format!("{:.0}", r.iops),
                usec(r.clat_p50_ns as f64),
                usec(r.clat_p99_ns as f64),
                fio_num(r.io_bytes as f64, true, "B"),
                format!("{:.1}", r.wall_ns as f64 / 1e6),
                r.errors.to_string(),
            ];
            if let Some(spec) = one {
                row.insert(
                    3,
                    crate::result::limit::share_cell(&run.limits, spec, r.bw_bytes / 1e6, 1.0),
                );
            }
            row
        })
        .collect::<Vec<_>>();
    format!(
        "Block-size sweep (all jobs together; MB/s = 10^6 B/s over the span from the first job's start to the last one's end)\n\n{}",
        markdown(&header, &rows)
    )
}

/// One CSV row per job.
pub fn csv(run: &StreamRun) -> String {
    let limited = crate::result::limit::any_bandwidth(&run.limits);
    let mut out = String::from(
        "sweep_bs,groupid,jobname,clone,filename,rw,bs,iodepth,ioengine,completion,dir,io_bytes,bw_bytes,iops,runtime_ns,clat_mean_ns,clat_p50_ns,clat_p99_ns,clat_p999_ns,error",
    );
    if limited {
        out.push_str(super::csv::LIMIT_COLUMNS);
    }
    out.push('\n');
    for r in &run.points {
        for (dir, d) in [("read", &r.read), ("write", &r.write), ("trim", &r.trim)] {
            if d.total_ios == 0 {
                continue;
            }
            let c = &d.clat_ns;
            let _ = write!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{dir},{},{},{:.1},{},{:.1},{},{},{},{}",
                r.sweep_bs.map_or(String::new(), |b| b.to_string()),
                r.groupid,
                super::csv::field(&r.jobname),
                r.clone,
                super::csv::field(&r.filename),
                r.rw.name(),
                r.bs,
                r.iodepth,
                r.ioengine.name(),
                r.completion.name(),
                d.io_bytes,
                d.bw_bytes,
                d.iops,
                d.runtime_ns,
                c.mean,
                c.at(50.0),
                c.at(99.0),
                c.at(99.9),
                super::csv::field(r.error_text.as_deref().unwrap_or(""))
            );
            if limited {
                out.push_str(&super::csv::limit_cells(
                    &run.limits,
                    &r.filename,
                    d.bw_bytes as f64 / 1e6,
                    1.0,
                ));
            }
            out.push('\n');
        }
    }
    out
}

impl crate::report::Render for StreamRun {
    fn table(&self) -> String {
        render(self)
    }
    fn json(&self) -> crate::error::Result<String> {
        json(self)
    }
    fn csv(&self) -> String {
        csv(self)
    }
    fn points(&self) -> usize {
        self.points.len()
    }
    /// fio's terse lines where the JSON would be, when the run was asked
    /// for them (`--output-format=terse`).
    fn render(&self, format: crate::format::Format) -> crate::error::Result<String> {
        match format {
            crate::format::Format::Table => Ok(super::inert(render(self))),
            crate::format::Format::Csv => Ok(super::inert(csv(self))),
            crate::format::Format::Json
                if self.fio_output() == Some(crate::options::FioOutput::Terse) =>
            {
                terse(self)
            }
            crate::format::Format::Json => json(self),
        }
    }
}
