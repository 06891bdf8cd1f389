//! Published figures from five benchmark documents, embedded in the binary as
//! named datasets, so a measurement can be set beside what others measured
//! without the documents at hand (and without `data/` at run time).
//!
//! Each dataset carries its provenance (`source`, `notes`) and uses the column
//! names standardised for its experiment (see [`standard_columns`]), so code that
//! compares a run with a dataset needs to know the experiment, not the document.
//! Cells stay as the published text, so `show` reproduces them exactly and no
//! float round trip can change a figure; [`Dataset::num`] parses on demand.

mod catalog;
mod csv;

use crate::error::{Error, Result};

/// One table of published figures, with where it came from.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Stable public name, used by `reference show` and `--compare`.
    pub name: &'static str,
    /// The xferbench experiment it compares with: "roundtrip", "curve",
    /// "stream", "load" or "flowgraph".
    pub experiment: &'static str,
    /// One-line human description, shown by `reference show` and in comparisons.
    pub title: &'static str,
    /// Provenance: document, board, date as known.
    pub source: &'static str,
    /// How the numbers were measured, from the document or the data README.
    pub notes: &'static str,
    /// The standardised columns first, then any extras.
    pub columns: Vec<&'static str>,
    /// Cells as published; an empty cell means "not applicable".
    pub rows: Vec<Vec<String>>,
}

impl Dataset {
    /// Index of the column called `name`.
    pub fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| *c == name)
    }

    /// The cell in `row` under column `col`, as published.
    pub fn text(&self, row: usize, col: &str) -> Option<&str> {
        let c = self.col(col)?;
        self.rows.get(row)?.get(c).map(String::as_str)
    }

    /// The cell parsed as a number; `None` for an empty or non-numeric cell.
    pub fn num(&self, row: usize, col: &str) -> Option<f64> {
        parse_num(self.text(row, col)?)
    }
}

/// A finite number, or `None` (Rust would otherwise accept "inf" and "NaN").
pub(crate) fn parse_num(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The columns every dataset of `experiment` has, so comparison code can read
/// any of them alike. For all but flowgraph they are also the first columns, in
/// this order. Flowgraph datasets share only `cores` and `samples_per_s`: the
/// runtime figures are keyed by runtime, scheduler and block count, the
/// kernel-only figures by benchmark name.
pub fn standard_columns(experiment: &str) -> Option<&'static [&'static str]> {
    Some(match experiment {
        "roundtrip" => &["in_bytes", "out_bytes", "mean_us", "p99_us"],
        "curve" => &["size_bytes", "oneway_us", "bandwidth_MBps"],
        "load" => &[
            "direction",
            "size_bytes",
            "nblk",
            "load",
            "cpu_mode",
            "req_per_s",
            "kb_per_s",
        ],
        "stream" => &[
            "direction",
            "completion",
            "jobs",
            "bs_bytes",
            "bw_MBps",
            "bw_MiBps",
        ],
        "flowgraph" => &["cores", "samples_per_s"],
        _ => return None,
    })
}

/// xferbench's load name for an rk11perf CPU mode: what the CPU does while the
/// transfers run is what xferbench's `--load` imitates on the host.
pub fn load_for_cpu_mode(cpu_mode: &str) -> Option<&'static str> {
    Some(match cpu_mode {
        "wait" => "wait",
        "inc r1" => "alu",
        "ashc" => "slow",
        "mov" => "memcopy",
        _ => return None,
    })
}

/// Every dataset, in a stable order (by document, then as the document has them).
pub fn all() -> Vec<Dataset> {
    catalog::all()
}

/// The dataset names, in the order of [`all`].
pub fn names() -> Vec<&'static str> {
    all().iter().map(|d| d.name).collect()
}

/// The dataset called `name`; a usage error naming the known ones otherwise.
pub fn find(name: &str) -> Result<Dataset> {
    let mut all = all();
    match all.iter().position(|d| d.name == name) {
        Some(i) => Ok(all.swap_remove(i)),
        None => Err(Error::usage(format!(
            "unknown reference dataset '{name}'; known: {} (see xferbench reference list)",
            all.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_reach_cells() {
        let d = find("bip-myrinet").unwrap();
        assert_eq!(d.col("oneway_us"), Some(1));
        assert_eq!(d.text(1, "size_bytes"), Some("4"));
        assert_eq!(d.num(1, "oneway_us"), Some(4.70473));
        assert_eq!(d.num(1, "nope"), None);
        assert_eq!(d.num(999, "oneway_us"), None);
        let k = find("qsdr-kv260-kernel").unwrap();
        let scan = (0..k.rows.len())
            .find(|&i| k.text(i, "benchmark") == Some("scan-buffer-size"))
            .unwrap();
        assert_eq!(k.text(scan, "buffers"), Some(""));
        assert_eq!(k.num(scan, "buffers"), None);
    }

    #[test]
    fn num_rejects_words_that_rust_would_parse() {
        assert_eq!(parse_num("inf"), None);
        assert_eq!(parse_num("NaN"), None);
        assert_eq!(parse_num("1.5"), Some(1.5));
    }
}
