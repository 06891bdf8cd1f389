//! `reference show NAME` as a table: each dataset laid out as its source
//! document lays it out, so a reader can hold the output against the document.

use crate::reference::Dataset;
use crate::report::table::markdown;

pub fn render(d: &Dataset) -> String {
    let body = match d.experiment {
        "roundtrip" => roundtrip(d),
        "curve" => curve(d),
        "load" => load(d),
        "stream" => stream(d),
        "flowgraph" if d.col("runtime").is_some() => runtimes(d),
        "flowgraph" if d.col("benchmark").is_some() => kernel(d),
        _ => plain(d),
    };
    format!(
        "# {}\n\nSource: {}\n\n{}\n\n{body}",
        d.title, d.source, d.notes
    )
}

fn all_rows(d: &Dataset) -> Vec<usize> {
    (0..d.rows.len()).collect()
}

fn cell(d: &Dataset, row: usize, col: &str) -> String {
    d.text(row, col).unwrap_or_default().to_string()
}

/// Samples/s as Msamples/s with one decimal: narrow enough for a matrix;
/// JSON and CSV keep the full figures.
fn msps(d: &Dataset, row: usize) -> String {
    d.num(row, "samples_per_s")
        .map_or_else(String::new, |v| format!("{:.1}", v / 1e6))
}

/// Distinct values of `col` over `rows`, in first-seen order.
fn distinct<'a>(d: &'a Dataset, rows: &[usize], col: &str) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for &i in rows {
        let v = d.text(i, col).unwrap_or_default();
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

/// Distinct values of `col`, in numeric order.
fn distinct_sorted<'a>(d: &'a Dataset, rows: &[usize], col: &str) -> Vec<&'a str> {
    let mut v = distinct(d, rows, col);
    let key = |s: &str| s.parse::<f64>().unwrap_or(f64::INFINITY);
    v.sort_by(|a, b| key(a).total_cmp(&key(b)));
    v
}

/// The row among `rows` whose columns hold the given values.
fn lookup(d: &Dataset, rows: &[usize], keys: &[(&str, &str)]) -> Option<usize> {
    rows.iter()
        .copied()
        .find(|&i| keys.iter().all(|&(c, v)| d.text(i, c) == Some(v)))
}

/// A matrix with one line per value of `down` and one column per value of
/// `across`, both in numeric order; cells that no row covers stay empty.
fn pivot(
    d: &Dataset,
    rows: &[usize],
    corner: &str,
    (down, across): (&str, &str),
    value: impl Fn(usize) -> String,
) -> String {
    let acrosses = distinct_sorted(d, rows, across);
    let mut header = vec![corner.to_string()];
    header.extend(acrosses.iter().map(|a| a.to_string()));
    let body: Vec<Vec<String>> = distinct_sorted(d, rows, down)
        .into_iter()
        .map(|dv| {
            let mut line = vec![dv.to_string()];
            line.extend(acrosses.iter().map(|&av| {
                lookup(d, rows, &[(down, dv), (across, av)]).map_or_else(String::new, &value)
            }));
            line
        })
        .collect();
    markdown(&header, &body)
}

/// The Vollo layout: a mean and a p99 matrix, rows out, columns in.
fn roundtrip(d: &Dataset) -> String {
    let rows = all_rows(d);
    let ins = distinct(d, &rows, "in_bytes").len();
    let outs = distinct(d, &rows, "out_bytes").len();
    let mut out = String::from(
        "Round trip in µs as published; rows: output size, columns: input size, in bytes",
    );
    if d.col("in_values").is_some() {
        out.push_str(" (the document counts bf16 values: bytes/2)");
    }
    out.push('.');
    if rows.len() < ins * outs {
        out.push_str(" Empty cells were not published.");
    }
    out.push('\n');
    for (stat, col) in [("mean", "mean_us"), ("p99", "p99_us")] {
        out.push_str(&format!("\n## {stat}\n\n"));
        out.push_str(&pivot(
            d,
            &rows,
            "out\\in",
            ("out_bytes", "in_bytes"),
            |i| cell(d, i, col),
        ));
    }
    out
}

/// The BIP results table.
fn curve(d: &Dataset) -> String {
    let header = ["size (B)", "one-way (µs)", "bandwidth (MB/s)"].map(String::from);
    let body: Vec<Vec<String>> = (0..d.rows.len())
        .map(|i| {
            ["size_bytes", "oneway_us", "bandwidth_MBps"]
                .iter()
                .map(|c| cell(d, i, c))
                .collect()
        })
        .collect();
    markdown(&header, &body)
}

/// rk11perf's text table: a read and a write section, rows nblk, a req/s and
/// KB/s column pair per CPU load.
fn load(d: &Dataset) -> String {
    let rows = all_rows(d);
    let loads = distinct(d, &rows, "load");
    let named: Vec<String> = loads
        .iter()
        .filter_map(|&l| {
            let i = lookup(d, &rows, &[("load", l)])?;
            Some(format!("{l} = `{}`", cell(d, i, "cpu_mode")))
        })
        .collect();
    let mut out = format!(
        "Requests/s and KB/s (1 KB = 1024 B) per CPU load during the transfers; \
         loads named as xferbench names them: {} (rk11perf's CPU modes).\n",
        named.join(", ")
    );
    let mut header = vec!["nblk".to_string(), "bytes".to_string()];
    for l in &loads {
        header.push(format!("{l} req/s"));
        header.push(format!("{l} KB/s"));
    }
    for dir in distinct(d, &rows, "direction") {
        let in_dir: Vec<usize> = lookup_all(d, &rows, "direction", dir);
        let body: Vec<Vec<String>> = distinct_sorted(d, &in_dir, "nblk")
            .into_iter()
            .map(|n| {
                let first = lookup(d, &in_dir, &[("nblk", n)]);
                let mut line = vec![
                    n.to_string(),
                    first.map_or_else(String::new, |i| cell(d, i, "size_bytes")),
                ];
                for &l in &loads {
                    let i = lookup(d, &in_dir, &[("nblk", n), ("load", l)]);
                    for c in ["req_per_s", "kb_per_s"] {
                        line.push(i.map_or_else(String::new, |i| cell(d, i, c)));
                    }
                }
                line
            })
            .collect();
        out.push_str(&format!("\n## {dir}\n\n{}", markdown(&header, &body)));
    }
    out
}

fn lookup_all(d: &Dataset, rows: &[usize], col: &str, value: &str) -> Vec<usize> {
    rows.iter()
        .copied()
        .filter(|&i| d.text(i, col) == Some(value))
        .collect()
}

/// The fio results: direction × completion, in MB/s and MiB/s.
fn stream(d: &Dataset) -> String {
    let rows = all_rows(d);
    let completions = distinct(d, &rows, "completion");
    let mut header = vec!["direction".to_string()];
    for c in &completions {
        header.push(format!("{c} MB/s"));
        header.push(format!("{c} MiB/s"));
    }
    let body: Vec<Vec<String>> = distinct(d, &rows, "direction")
        .into_iter()
        .map(|dir| {
            let mut line = vec![dir.to_string()];
            for &c in &completions {
                let i = lookup(d, &rows, &[("direction", dir), ("completion", c)]);
                for col in ["bw_MBps", "bw_MiBps"] {
                    line.push(i.map_or_else(String::new, |i| cell(d, i, col)));
                }
            }
            line
        })
        .collect();
    format!(
        "Aggregate bandwidth of {} jobs with {}-byte blocks.\n\n{}",
        distinct(d, &rows, "jobs").join("/"),
        distinct(d, &rows, "bs_bytes").join("/"),
        markdown(&header, &body)
    )
}

/// The qsdr runtime plots as tables: the single-core benchmark, then one
/// blocks × cores matrix per runtime and scheduler.
fn runtimes(d: &Dataset) -> String {
    let rows = all_rows(d);
    let single = lookup_all(d, &rows, "scheduler", "single-core");
    let mut out = String::from(
        "Throughput in Msamples/s (1 decimal); matrices: rows saxpy blocks M, columns cores N.\n",
    );
    if !single.is_empty() {
        let body: Vec<Vec<String>> = single
            .iter()
            .map(|&i| vec![cell(d, i, "runtime"), msps(d, i)])
            .collect();
        let header = ["runtime".to_string(), "Msps".to_string()];
        out.push_str(&format!(
            "\n## single-core benchmark\n\n{}",
            markdown(&header, &body)
        ));
    }
    let multi: Vec<usize> = rows
        .iter()
        .copied()
        .filter(|i| !single.contains(i))
        .collect();
    let mut groups: Vec<(String, String)> = Vec::new();
    for &i in &multi {
        let key = (cell(d, i, "runtime"), cell(d, i, "scheduler"));
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (runtime, scheduler) in groups {
        let these: Vec<usize> = multi
            .iter()
            .copied()
            .filter(|&i| {
                d.text(i, "runtime") == Some(&runtime) && d.text(i, "scheduler") == Some(&scheduler)
            })
            .collect();
        out.push_str(&format!(
            "\n## {runtime}, {scheduler} scheduler\n\n{}",
            pivot(d, &these, "M\\N", ("blocks", "cores"), |i| msps(d, i))
        ));
    }
    out
}

/// Splits `multi-kernel-async-M7` into (`multi-kernel-async`, 7).
fn kernel_family(benchmark: &str) -> (&str, Option<u32>) {
    benchmark
        .rsplit_once("-M")
        .and_then(|(family, m)| Some((family, Some(m.parse().ok()?))))
        .unwrap_or((benchmark, None))
}

/// The saxpy kernel benchmarks: one table per family without a block count
/// (the buffer-size scan), then the M-kernel rings side by side per family.
fn kernel(d: &Dataset) -> String {
    let rows = all_rows(d);
    let mut out = String::from("Throughput in Msamples/s (1 decimal).\n");
    let family = |i: usize| kernel_family(d.text(i, "benchmark").unwrap_or_default());
    let (ringed, plain): (Vec<usize>, Vec<usize>) =
        rows.iter().partition(|&&i| family(i).1.is_some());
    for name in distinct(d, &plain, "benchmark") {
        let mut these = lookup_all(d, &plain, "benchmark", name);
        these.sort_by(|&a, &b| {
            let key = |i| (d.num(i, "cores"), d.num(i, "buffer_bytes"));
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let header = ["cores", "buffer (B)", "Msps"].map(String::from);
        let body: Vec<Vec<String>> = these
            .iter()
            .map(|&i| vec![cell(d, i, "cores"), cell(d, i, "buffer_bytes"), msps(d, i)])
            .collect();
        out.push_str(&format!("\n## {name}\n\n{}", markdown(&header, &body)));
    }
    if ringed.is_empty() {
        return out;
    }
    let mut families: Vec<&str> = Vec::new();
    let mut keys: Vec<(u32, u32, String, String)> = Vec::new();
    for &i in &ringed {
        let (f, m) = family(i);
        if !families.contains(&f) {
            families.push(f);
        }
        let cores = d.num(i, "cores").unwrap_or_default() as u32;
        let key = (
            cores,
            m.unwrap_or_default(),
            cell(d, i, "buffers"),
            cell(d, i, "buffer_bytes"),
        );
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.sort();
    let mut header: Vec<String> = ["cores N", "blocks M", "buffers", "buffer (B)"]
        .map(String::from)
        .to_vec();
    header.extend(families.iter().map(|f| format!("{f} Msps")));
    let body: Vec<Vec<String>> = keys
        .iter()
        .map(|(n, m, buffers, bytes)| {
            let mut line = vec![n.to_string(), m.to_string(), buffers.clone(), bytes.clone()];
            for f in &families {
                let name = format!("{f}-M{m}");
                let i = lookup(
                    d,
                    &ringed,
                    &[
                        ("benchmark", &name),
                        ("cores", &n.to_string()),
                        ("buffers", buffers),
                    ],
                );
                line.push(i.map_or_else(String::new, |i| msps(d, i)));
            }
            line
        })
        .collect();
    out.push_str(&format!(
        "\n## M kernels in a ring on N cores\n\n{}",
        markdown(&header, &body)
    ));
    out
}

/// Any other dataset: its columns as they are.
fn plain(d: &Dataset) -> String {
    let header: Vec<String> = d.columns.iter().map(|c| c.to_string()).collect();
    markdown(&header, &d.rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{all, find};

    #[test]
    fn every_dataset_renders_every_cell() {
        for d in all() {
            let text = render(&d);
            assert!(text.contains(d.source), "{}", d.name);
            // Every published figure that the layout shows as published text.
            for col in ["mean_us", "p99_us", "oneway_us", "req_per_s", "bw_MiBps"] {
                for i in 0..d.rows.len() {
                    if let Some(v) = d.text(i, col) {
                        assert!(text.contains(&format!(" {v} |")), "{} {col} {v}", d.name);
                    }
                }
            }
        }
    }

    #[test]
    fn vollo_matrix_is_out_by_in() {
        let text = render(&find("vollo-ia420f-user").unwrap());
        // Seed, user buffers, mean: out 32 values (64 B) row starts 1.8 1.8 1.9;
        // out 8192 values row ends 4.7 4.5 5.1.
        let line = |start: &str| {
            text.lines()
                .find(|l| l.replace(' ', "").starts_with(start))
                .unwrap_or_else(|| panic!("no line {start}"))
                .replace(' ', "")
        };
        assert!(line("|64|").starts_with("|64|1.8|1.8|1.9|1.9|"));
        assert!(line("|16384|").ends_with("|4.7|4.5|5.1|"));
        assert!(line("|out\\in|").starts_with("|out\\in|64|128|"));
    }

    #[test]
    fn runtimes_are_msps_matrices() {
        let text = render(&find("qsdr-kv260").unwrap());
        // futuresdr custom: N=1, M=1 is 588770000 samples/s.
        let sec = text.split("## futuresdr, custom scheduler").nth(1).unwrap();
        let row = sec.lines().find(|l| l.replace(' ', "").starts_with("|1|"));
        assert!(
            row.unwrap().replace(' ', "").starts_with("|1|588.8|"),
            "{sec}"
        );
        assert!(text.contains("## single-core benchmark"));
    }

    #[test]
    fn kernel_families_split_on_block_count() {
        assert_eq!(
            kernel_family("multi-kernel-async-M12"),
            ("multi-kernel-async", Some(12))
        );
        assert_eq!(
            kernel_family("scan-buffer-size"),
            ("scan-buffer-size", None)
        );
        let text = render(&find("qsdr-kv260-kernel").unwrap());
        assert!(text.contains("multi-kernel-async Msps"));
        assert!(text.contains("## scan-buffer-size"));
    }
}
