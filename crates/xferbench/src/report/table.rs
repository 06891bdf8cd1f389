//! Tables for people, shaped like the Vollo round-trip tables: one per
//! statistic, rows `out\in`, values in µs; then the conditions and caveats.

use crate::measure::stats::Stat;
use crate::result::{Point, PointMeta, Run};
use crate::units::{Unit, format_size, format_us};
use std::fmt::Write;

fn label(bytes: u64, unit: Unit) -> String {
    format_size(bytes / unit.bytes())
}

/// Lays out rows of cells as a Markdown table, right-aligned (numbers).
pub fn markdown(header: &[String], rows: &[Vec<String>]) -> String {
    markdown_with(header, rows, |_| Align::Right)
}

/// How a column's cells line up: numbers right, words left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Words and names.
    Left,
    /// Numbers, so their digits line up.
    Right,
}

/// Lays out rows of cells as a Markdown table, column `i` aligned as
/// `align(i)` says, in the text and in the Markdown separator row alike.
pub fn markdown_with(
    header: &[String],
    rows: &[Vec<String>],
    align: impl Fn(usize) -> Align,
) -> String {
    let cols = header.len();
    let mut w = vec![0usize; cols];
    for r in std::iter::once(header).chain(rows.iter().map(|r| r.as_slice())) {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            let _ = match align(i) {
                Align::Right => write!(s, " {:>width$} |", c, width = w[i]),
                Align::Left => write!(s, " {:<width$} |", c, width = w[i]),
            };
        }
        s.push('\n');
        s
    };
    let mut out = line(header);
    out.push('|');
    for (i, wi) in w.iter().enumerate() {
        let _ = match align(i) {
            Align::Right => write!(out, "{}:|", "-".repeat(wi + 1)),
            Align::Left => write!(out, ":{}|", "-".repeat(wi + 1)),
        };
    }
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

pub fn render(run: &Run, stats: &[Stat], unit: Unit) -> String {
    let mut out = String::new();
    let unit_note = match unit {
        Unit::Bytes => "sizes in bytes".to_string(),
        u => format!(
            "sizes in {} values of {} bytes",
            serde_json::to_value(u)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            u.bytes()
        ),
    };
    for (spec, buffers, completion) in run.configs() {
        let pts: Vec<&Point> = run
            .points
            .iter()
            .filter(|p| p.spec == spec && p.buffers == buffers && p.completion == completion)
            .collect();
        let mut ins: Vec<u64> = pts.iter().map(|p| p.in_bytes).collect();
        let mut outs: Vec<u64> = pts.iter().map(|p| p.out_bytes).collect();
        ins.sort_unstable();
        ins.dedup();
        outs.sort_unstable();
        outs.dedup();
        let _ = writeln!(
            out,
            "## {spec} — {} buffers, {} completion\n\nRound trip in µs ({unit_note}; rows: out, columns: in).\n",
            buffers.name(),
            completion.name()
        );
        for &stat in stats {
            let _ = writeln!(
                out,
                "**{}**{}:\n",
                stat.name(),
                if stat == Stat::Count {
                    " (samples)"
                } else {
                    ""
                }
            );
            out.push_str(&matrix(&pts, &ins, &outs, unit, |p| {
                let v = stat.of(&p.summary);
                Some(if stat == Stat::Count {
                    format!("{v:.0}")
                } else {
                    format_us(v)
                })
            }));
        }
        if pts.iter().any(|p| p.device_time.is_some()) {
            out.push_str(
                "**latency budget** (µs, device + host = round trip; p50, then p99; host = round trip minus the device's own time):\n\n",
            );
            out.push_str(&matrix(&pts, &ins, &outs, unit, |p| {
                p.device_time.as_ref().map(budget_cell)
            }));
        }
        out.push_str(&floor_matrix(
            run,
            &spec,
            &pts,
            (ins.as_slice(), outs.as_slice()),
            unit,
        ));
    }
    let lines: Vec<String> = run.extra.skipped.iter().map(|s| s.label()).collect();
    out.push_str(&skipped(&lines));
    out.push_str(&conditions(run));
    out
}

/// Each round trip's median as a multiple of its path's floor (the
/// core-to-core round trip, or the clock's floor): how much of the time is
/// the transport's own, beside what the hardware cannot go below. Nothing
/// for a run without a floor, so an older run's table reads as before.
fn floor_matrix(
    run: &Run,
    spec: &str,
    pts: &[&Point],
    (ins, outs): (&[u64], &[u64]),
    unit: Unit,
) -> String {
    use crate::result::limit;
    let Some(f) = limit::of(&run.limits, spec).and_then(|l| l.floor.as_ref()) else {
        return String::new();
    };
    let mut out = format!(
        "**× floor** (p50 over the path's floor of {} ns, {}):\n\n",
        crate::units::si(f.value),
        f.what
    );
    out.push_str(&matrix(pts, ins, outs, unit, |p| {
        Some(limit::floor_cell(
            &run.limits,
            spec,
            p.summary.p50_ns as f64,
        ))
    }));
    out
}

/// The `Skipped:` list every experiment prints after its tables: each
/// cell, size or block size left out and why (nothing when none was), the
/// same for a live run and for `report` of its saved file.
pub fn skipped(lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("Skipped:\n");
    for l in lines {
        let _ = writeln!(out, "- {l}");
    }
    out.push('\n');
    out
}

/// A latency budget in one cell: `device + host` at p50, then at p99, µs
/// (the same in every experiment's table).
pub fn budget_cell(d: &crate::result::DeviceTime) -> String {
    format!(
        "{} + {}; {} + {}",
        format_us(d.device.p50_ns as f64),
        format_us(d.host.p50_ns as f64),
        format_us(d.device.p99_ns as f64),
        format_us(d.host.p99_ns as f64)
    )
}

/// The heading of a budget column or table.
pub const BUDGET: &str = "latency budget (µs, device + host = round trip; p50, then p99; host = round trip minus the device's own time)";

/// One out × in matrix of a configuration's points, a cell each (`—`
/// where a point, or what `cell` shows of it, is missing).
fn matrix(
    pts: &[&Point],
    ins: &[u64],
    outs: &[u64],
    unit: Unit,
    cell: impl Fn(&Point) -> Option<String>,
) -> String {
    let mut header = vec!["out\\in".to_string()];
    header.extend(ins.iter().map(|&i| label(i, unit)));
    let rows: Vec<Vec<String>> = outs
        .iter()
        .map(|&o| {
            let mut r = vec![format!("**{}**", label(o, unit))];
            r.extend(ins.iter().map(|&i| {
                pts.iter()
                    .find(|p| p.in_bytes == i && p.out_bytes == o)
                    .and_then(|p| cell(p))
                    .unwrap_or_else(|| "—".into())
            }));
            r
        })
        .collect();
    let mut out = markdown(&header, &rows);
    out.push('\n');
    out
}

/// The footer: samples, clock, placement, environment, caveats.
pub fn conditions<P: PointMeta, X>(run: &Run<P, X>) -> String {
    let mut out = String::new();
    let e = &run.env;
    let counts: Vec<u64> = run.points.iter().map(|p| p.count()).collect();
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    let warms: Vec<u64> = run.points.iter().map(|p| p.warmup()).collect();
    let warm = match (warms.iter().min(), warms.iter().max()) {
        (Some(a), Some(b)) if a != b => format!("{a}–{b}"),
        (Some(a), _) => a.to_string(),
        _ => "0".to_string(),
    };
    if run.points.is_empty() {
        let _ = writeln!(
            out,
            "No point was measured. Clock: {}, {:.0} ns per read.",
            e.clock.source, e.clock.overhead_ns
        );
    } else {
        samples_line(&mut out, run, (lo, hi), &warm);
    }
    let p = &run.placement;
    let place = match (p.initiator_cpu, p.responder_cpu) {
        (Some(a), Some(b)) => format!("initiator on cpu {a}, responder on cpu {b}"),
        _ => "not pinned".into(),
    };
    let virt = match (
        &e.virtualization.hypervisor,
        e.virtualization.virtual_machine,
    ) {
        (Some(h), _) => format!(", virtual machine ({h})"),
        (None, true) => ", virtual machine".into(),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "Placement: {place}. Machine: {} ({} cpus{virt}), {}; xferbench {}, {}.",
        e.cpu_model, e.cpus_online, e.kernel, e.version, e.timestamp
    );
    for g in &e.gpus {
        let _ = writeln!(out, "{g}.");
    }
    for d in &run.devices {
        out.push_str(&device_line(d));
    }
    out.push_str(&crate::result::limit::lines(&run.limits));
    if !run.complete {
        let partial = run.points.iter().filter(|p| p.partial()).count();
        let _ = writeln!(
            out,
            "\nINCOMPLETE: {} — {}{}.",
            run.stopped_by.as_deref().unwrap_or("stopped early"),
            match run.points.len() {
                0 => "nothing was measured before it".to_string(),
                n => format!("{n} point(s) above were measured before it"),
            },
            if partial > 0 {
                ", the last with fewer samples than asked (partial)".to_string()
            } else {
                String::new()
            }
        );
    }
    let mut caveats: Vec<String> = run.warnings.clone();
    for pt in &run.points {
        for w in pt.warnings() {
            caveats.push(format!("{}: {w}", pt.label()));
        }
    }
    if !caveats.is_empty() {
        out.push_str("\nWarnings:\n");
        out.push_str(&bullets(&caveats));
    }
    out
}

/// How many samples each point rests on, and the clock's cost.
fn samples_line<P: PointMeta, X>(
    out: &mut String,
    run: &Run<P, X>,
    (lo, hi): (u64, u64),
    warm: &str,
) {
    let e = &run.env;
    let _ = writeln!(
        out,
        "Samples per point: {}{}{} after {} warm-up {} (not recorded). Clock: {}, {:.0} ns per read (each sample includes about one).",
        lo,
        if hi != lo {
            format!("–{hi}")
        } else {
            String::new()
        },
        match run.repeats() {
            k if k > 1 => format!(" in {k} repeats of the whole sweep"),
            _ => String::new(),
        },
        warm,
        run.points
            .first()
            .map_or("round trips", |p| p.sample_noun()),
        e.clock.source,
        e.clock.overhead_ns
    );
    if let (Some(floor), Some(turn)) = (e.clock.sample_floor_ns, e.clock.loop_ns) {
        let _ = writeln!(
            out,
            "The sampler's own cost: {floor:.0} ns in each sample (an exchange that does nothing measures that), {turn:.0} ns a turn of its loop."
        );
    }
}

/// One line for a device record (a plugin: name, ABI, library, modes,
/// counters, and what failed), for the footer.
pub fn device_line(d: &serde_json::Value) -> String {
    let text = |k: &str| d[k].as_str().unwrap_or_default().to_string();
    let mut line = format!(
        "Device: {} (plugin ABI {}, {})",
        text("plugin"),
        text("abi"),
        text("library")
    );
    if let Some(spec) = d["spec"].as_str() {
        line += &format!(" as {spec}, {}/{}", text("buffers"), text("completion"));
    }
    match &d["counters"] {
        serde_json::Value::Null => line += "; no counters",
        c => line += &format!("; counters {c}"),
    }
    for k in ["error", "close"] {
        if let Some(e) = d[k].as_str() {
            line += &format!("; {k}: {e}");
        }
    }
    line + ".\n"
}

/// A Markdown list of the first dozen lines, then how many more the JSON
/// output holds.
pub fn bullets(lines: &[String]) -> String {
    const SHOWN: usize = 12;
    let mut out = String::new();
    for c in lines.iter().take(SHOWN) {
        let _ = writeln!(out, "- {c}");
    }
    if lines.len() > SHOWN {
        let _ = writeln!(
            out,
            "- … and {} more in the JSON output",
            lines.len() - SHOWN
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_shape() {
        let t = markdown(
            &["out\\in".into(), "32".into()],
            &[vec!["**32**".into(), "1.8".into()]],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("|-") && lines[1].ends_with(":|"));
        assert!(lines[2].contains("**32**") && lines[2].contains("1.8"));
    }

    #[test]
    fn left_aligned_columns_pad_on_the_right() {
        let t = markdown_with(
            &["name".into(), "n".into()],
            &[vec!["a".into(), "1000".into()]],
            |i| if i == 0 { Align::Left } else { Align::Right },
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "|:-----|-----:|");
        assert_eq!(lines[2], "| a    | 1000 |");
    }
}
