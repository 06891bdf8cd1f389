//! What a plot shows, apart from how it is drawn: the series of a line plot
//! or the cells of a heat map, with axis names and units. The same figure
//! gives the SVG, the table printed under it, and the comparison overlays,
//! so a picture and its numbers can never disagree.

use crate::units::format_size;
use crate::units::si;

/// How a value on an axis is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Byte counts: 64, 4k, 1M.
    Bytes,
    /// Plain numbers with SI prefixes where they are large (1.2k, 3.4M, 5G).
    Number,
    /// Small integers (cores, blocks).
    Count,
    /// The "nines" of a percentile spectrum: position x is quantile
    /// 1 − 10^−x, written as a percentage (0%, 90%, 99%, 99.9%).
    Nines,
}

/// Where quantile `q` sits on a nines axis: log10(1/(1−q)), so 90% is at
/// 1, 99% at 2, 99.9% at 3: each step ten times rarer.
pub fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

#[derive(Clone, Debug)]
pub struct Axis {
    /// Name with its unit, as printed beside the axis: "one-way latency (µs)".
    pub label: String,
    pub log: bool,
    pub scale: Scale,
}

impl Axis {
    pub fn new(label: impl Into<String>, log: bool, scale: Scale) -> Axis {
        Axis {
            label: label.into(),
            log,
            scale,
        }
    }

    /// A tick label: as `format`, without trailing zeros (10k, 0.1, 2.5).
    pub fn tick(&self, v: f64) -> String {
        let s = self.format(v);
        match s.find('.') {
            Some(dot) => {
                let end = s[dot..]
                    .find(|c: char| !c.is_ascii_digit() && c != '.')
                    .map_or(s.len(), |i| dot + i);
                let (num, unit) = s.split_at(end);
                let num = num.trim_end_matches('0').trim_end_matches('.');
                format!("{num}{unit}")
            }
            None => s,
        }
    }

    pub fn format(&self, v: f64) -> String {
        match self.scale {
            Scale::Bytes if v >= 0.0 && v.fract() == 0.0 => format_size(v as u64),
            Scale::Count if v.fract() == 0.0 => format!("{v:.0}"),
            // Cores and blocks come whole: no tick at 1.5 blocks.
            Scale::Count => String::new(),
            Scale::Nines => {
                // As many decimals as it has nines past the second: 99.9%.
                let decimals = (v - 1e-9).ceil().max(2.0) as usize - 2;
                format!("{:.decimals$}%", 100.0 * (1.0 - 10f64.powf(-v)))
            }
            _ => si(v),
        }
    }
}

/// What a series is: how it is drawn and whether it belongs in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Measured here: solid line with markers.
    Measured,
    /// A model fitted to a measured series: dashed, in that series' colour.
    Model,
    /// Published figures (`--compare`), or the baseline run the others
    /// are read against (spectra of one point in several runs): dashed,
    /// hollow markers.
    Reference,
    /// A theoretical bound: dashed grey, no markers.
    Bound,
}

#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub role: Role,
    /// For a model: the index of the series it was fitted to. For a measured
    /// series: the one it is a variant of (the same scheduler on another
    /// kind of edge), drawn dotted with square markers. Either way it
    /// shares that series' colour and follows it in the legend.
    pub of: Option<usize>,
    /// What a reference series may be compared with: a measured series and a
    /// reference series are paired when their keys are equal or either has
    /// none (e.g. "read" vs "write" streams).
    pub key: Option<String>,
    pub points: Vec<(f64, f64)>,
    /// The interval of some points' y (x, [low, high]): drawn as an error
    /// bar at that x, and given beside the value in the table.
    pub bars: Vec<(f64, [f64; 2])>,
}

impl Series {
    pub fn new(name: impl Into<String>, role: Role, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            role,
            of: None,
            key: None,
            points,
            bars: Vec::new(),
        }
    }

    pub fn keyed(mut self, key: impl Into<String>) -> Series {
        self.key = Some(key.into());
        self
    }

    /// Pairs a measured series with a reference one (see `key`).
    pub fn pairs_with(&self, other: &Series) -> bool {
        match (&self.key, &other.key) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

/// Whether the series' positive y values (their bars' ends included) span
/// more than a factor of 10: worth a log axis. Under that a linear one,
/// from zero, shows their differences better.
pub fn spans_decade(series: &[Series]) -> bool {
    let ys = || {
        series
            .iter()
            .flat_map(|s| {
                let bars = s.bars.iter().flat_map(|(_, [lo, hi])| [*lo, *hi]);
                s.points.iter().map(|p| p.1).chain(bars)
            })
            .filter(|y| *y > 0.0)
    };
    let lo = ys().fold(f64::INFINITY, f64::min);
    let hi = ys().fold(0.0, f64::max);
    hi > 10.0 * lo
}

#[derive(Clone, Debug)]
pub struct Lines {
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// The names of a heat map's rows and columns when they are things rather
/// than sizes: the ranks of a mesh, "host:rank", the same list on both axes
/// (row = sender, column = receiver), grouped (by host).
#[derive(Clone, Debug)]
pub struct Labels {
    pub names: Vec<String>,
    /// Where each group after the first starts, as indices into `names`: a
    /// line is drawn there, and the table gets a `│` column and a `─` row.
    pub breaks: Vec<usize>,
}

/// A matrix of values over two size axes (the round-trip in × out table), or
/// over one set of named things against itself (`labels`: a mesh's ranks).
#[derive(Clone, Debug)]
pub struct Heatmap {
    pub x: Axis,
    pub y: Axis,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    /// Named rows and columns (then `xs` and `ys` are the things' numbers):
    /// the diagonal, a thing with itself, holds no value, and an empty cell
    /// off it is a missing measurement.
    pub labels: Option<Labels>,
    /// `cells[row][col]`: row = index into `ys`, col = index into `xs`.
    pub cells: Vec<Vec<Option<f64>>>,
    /// What a cell holds, with its unit: "mean round trip (µs)".
    pub value: String,
    /// A second statistic shown beside each cell in the table only
    /// ("mean (p99)"), with its name.
    pub second: Option<(String, Vec<Vec<Option<f64>>>)>,
    /// Cells are ratios: coloured apart from 1 (faster one way, slower the
    /// other) rather than from the smallest cell.
    pub ratio: bool,
    /// Larger values are better (bandwidth): the colour darkens as they
    /// fall, so dark means worse on every heat map.
    pub higher_is_better: bool,
}

impl Heatmap {
    /// The column and row names: the labels, else the sizes formatted.
    pub fn names(&self) -> (Vec<String>, Vec<String>) {
        match &self.labels {
            Some(l) => (l.names.clone(), l.names.clone()),
            None => (
                self.xs.iter().map(|&x| self.x.format(x)).collect(),
                self.ys.iter().map(|&y| self.y.format(y)).collect(),
            ),
        }
    }

    /// A thing with itself: no measurement is expected there.
    pub fn diagonal(&self, row: usize, col: usize) -> bool {
        self.labels.is_some() && row == col
    }

    /// A cell that should hold a value and does not.
    pub fn missing(&self, row: usize, col: usize) -> bool {
        self.labels.is_some()
            && row != col
            && self.cells.get(row).and_then(|r| r.get(col)) == Some(&None)
    }

    /// How many cells are `missing`.
    pub fn missing_count(&self) -> usize {
        (0..self.cells.len())
            .map(|r| {
                (0..self.cells[r].len())
                    .filter(|&c| self.missing(r, c))
                    .count()
            })
            .sum()
    }

    /// What a cell's table entry reads: its value (with the second
    /// statistic), "·" on the diagonal, "missing", or "—" for a size pair
    /// not measured.
    fn entry(&self, row: usize, col: usize) -> String {
        let second = self.second.as_ref().and_then(|(_, m)| m[row][col]);
        match (self.cells[row][col], second) {
            (Some(v), Some(w)) => format!("{} ({})", si(v), si(w)),
            (Some(v), None) => si(v),
            (None, _) if self.diagonal(row, col) => "·".into(),
            (None, _) if self.missing(row, col) => "missing".into(),
            (None, _) => "—".into(),
        }
    }

    /// The matrix as a table: rows `y`, columns `x`, each headed by its name.
    fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut corner = format!("{}\\{}", short(&self.y.label), short(&self.x.label));
        if let Some((name, _)) = &self.second {
            corner = format!("{corner}: {} ({name})", short(&self.value));
        }
        let (xn, yn) = self.names();
        let mut header = vec![corner];
        header.extend(xn);
        let rows = yn
            .into_iter()
            .enumerate()
            .map(|(j, name)| {
                let mut r = vec![name];
                r.extend((0..self.cells[j].len()).map(|i| self.entry(j, i)));
                r
            })
            .collect();
        match &self.labels {
            Some(l) => grouped(header, rows, &l.breaks),
            None => (header, rows),
        }
    }
}

/// A table whose rows and columns (after the first column) are the same
/// grouped things: a `│` column before each group but the first and a `─`
/// row between groups of rows, so hosts stand apart in plain text.
fn grouped(
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    breaks: &[usize],
) -> (Vec<String>, Vec<Vec<String>>) {
    let split = |r: Vec<String>, mark: &str| -> Vec<String> {
        let mut out = Vec::with_capacity(r.len() + breaks.len());
        for (i, c) in r.into_iter().enumerate() {
            if i > 0 && breaks.contains(&(i - 1)) {
                out.push(mark.to_string());
            }
            out.push(c);
        }
        out
    };
    let rule = split(vec!["─".to_string(); header.len()], "┼");
    let mut out = Vec::with_capacity(rows.len() + breaks.len());
    for (j, r) in rows.into_iter().enumerate() {
        if breaks.contains(&j) {
            out.push(rule.clone());
        }
        out.push(split(r, "│"));
    }
    (split(header, "│"), out)
}

/// Stacked bars: one bar per category, each split into parts stacked from
/// zero up, bottom part first. A latency budget: the device's time at the
/// bottom, the host's share on top, so the bar's height is the round trip
/// and the split answers "my driver or my card?" at a glance.
#[derive(Clone, Debug)]
pub struct Bars {
    /// What the categories are, with the unit: "in → out (bytes)".
    pub x_label: String,
    /// Each bar's label, in order ("64 → 1k").
    pub categories: Vec<String>,
    pub y: Axis,
    /// The stacked parts, bottom first: a name for the legend and one value
    /// per category (None: not measured there, drawn as nothing).
    pub parts: Vec<(String, Vec<Option<f64>>)>,
    /// Columns the table gives besides the parts and their sum (the
    /// parts' p99), one value per category.
    pub extra: Vec<(String, Vec<Option<f64>>)>,
}

impl Bars {
    /// The stacked height of category `i`: the sum of its parts measured.
    pub fn total(&self, i: usize) -> Option<f64> {
        let vals: Vec<f64> = self.parts.iter().filter_map(|(_, v)| v[i]).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    }

    /// One row per category: its parts, their sum, then the extra columns.
    fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec![self.x_label.clone()];
        header.extend(self.parts.iter().map(|(n, _)| n.clone()));
        header.push("sum".into());
        header.extend(self.extra.iter().map(|(n, _)| n.clone()));
        let cell = |v: Option<f64>| v.map_or("—".to_string(), si);
        let rows = self
            .categories
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut r = vec![c.clone()];
                r.extend(self.parts.iter().map(|(_, v)| cell(v[i])));
                r.push(cell(self.total(i)));
                r.extend(self.extra.iter().map(|(_, v)| cell(v[i])));
                r
            })
            .collect();
        (header, rows)
    }
}

#[derive(Clone, Debug)]
pub enum Plot {
    Lines(Lines),
    Heatmap(Heatmap),
    Bars(Bars),
}

/// What a figure shows, so comparisons know which reference column belongs
/// on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A round-trip matrix of one configuration.
    RoundTrip,
    /// Where one configuration's round trips go: the device's time and the
    /// host's share per (in, out) cell, stacked (a plugin reporting device
    /// time).
    LatencyBudget,
    /// The ratio of a round-trip matrix to a reference one.
    RoundTripRatio,
    CurveLatency,
    CurveBandwidth,
    StreamBandwidth,
    LoadRate,
    LoadKbps,
    LoadLatency,
    /// Samples/s vs blocks for this many cores.
    Flowgraph {
        cores: u64,
    },
    /// A mesh run's rank × rank one-way latency (p50 or p99).
    MeshLatency,
    /// A mesh run's rank × rank bandwidth.
    MeshBandwidth,
    /// `curve --pairs`: aggregate and per-pair MB/s, or messages/s, vs size.
    Pairs,
    /// Latency percentile spectra (x on the nines axis) drawn from the
    /// points' histograms: one run's sizes, or one point in several runs.
    Spectrum,
    /// Two runs of one experiment read against each other (`report BASE
    /// NEW`): one statistic of both, each point with its interval.
    RunsCompared,
}

impl Kind {
    /// Whether its table has a row per series rather than per x value: a
    /// flowgraph has a dozen schedulers over three to five M, which side by
    /// side would not fit a terminal. The others keep their seeds' layout
    /// (rk11perf: a row per size).
    /// A spectrum's too: its columns are the labelled percentiles.
    pub fn rows_per_series(&self) -> bool {
        matches!(self, Kind::Flowgraph { .. } | Kind::Spectrum)
    }

    /// Whether its series are curves sampled from a distribution rather
    /// than measured points: drawn as lines, without a marker per point.
    pub fn sampled(&self) -> bool {
        matches!(self, Kind::Spectrum)
    }
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub kind: Kind,
    /// File stem of its SVG, unique within a report: "curve-1-latency".
    pub id: String,
    pub title: String,
    /// One or two sentences under the figure: what is plotted and how.
    pub caption: String,
    /// Findings to read before the figure, one line each: a mesh run's
    /// suspects and health verdict, on the first of its figures.
    pub lead: Vec<String>,
    pub plot: Plot,
}

impl Figure {
    /// The numbers behind the figure as a table: for lines, one row per x and
    /// one column per measured or reference series (the other way round
    /// where its kind says so); for a heat map, the matrix with rows `y` and
    /// columns `x`, as the Vollo tables.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        match &self.plot {
            Plot::Lines(l) => {
                let shown: Vec<&Series> = l
                    .series
                    .iter()
                    .filter(|s| matches!(s.role, Role::Measured | Role::Reference))
                    .collect();
                let mut xs: Vec<f64> = shown
                    .iter()
                    .flat_map(|s| s.points.iter().map(|p| p.0))
                    .collect();
                xs.sort_by(f64::total_cmp);
                xs.dedup();
                // A spectrum is tabulated at its labelled nines and the median.
                if l.x.scale == Scale::Nines {
                    xs.retain(|&x| x.fract() == 0.0 || x == nines(0.5));
                }
                let cell = |s: &Series, x: f64| {
                    let Some(p) = s.points.iter().find(|p| p.0 == x) else {
                        return "—".into();
                    };
                    match s.bars.iter().find(|b| b.0 == x) {
                        Some((_, [lo, hi])) => format!("{} ({}–{})", si(p.1), si(*lo), si(*hi)),
                        None => si(p.1),
                    }
                };
                if self.kind.rows_per_series() {
                    let mut header = vec![format!("series \\ {}", l.x.label)];
                    header.extend(xs.iter().map(|&x| l.x.format(x)));
                    let rows = shown
                        .iter()
                        .map(|s| {
                            let mut r = vec![s.name.clone()];
                            r.extend(xs.iter().map(|&x| cell(s, x)));
                            r
                        })
                        .collect();
                    return (header, rows);
                }
                let mut header = vec![l.x.label.clone()];
                header.extend(shown.iter().map(|s| s.name.clone()));
                let rows = xs
                    .iter()
                    .map(|&x| {
                        let mut r = vec![l.x.format(x)];
                        r.extend(shown.iter().map(|s| cell(s, x)));
                        r
                    })
                    .collect();
                (header, rows)
            }
            Plot::Heatmap(h) => h.table(),
            Plot::Bars(b) => b.table(),
        }
    }
}

/// The first word of an axis label ("out (bytes)" → "out").
fn short(label: &str) -> &str {
    label.split_whitespace().next().unwrap_or(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_prefixes() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(0.1234), "0.123");
        assert_eq!(si(5.0), "5.00");
        assert_eq!(si(45.61), "45.6");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(9999.0), "9999");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(1.5e9), "1.50G");
        assert_eq!(si(f64::NAN), "—");
        let a = Axis::new("x", true, Scale::Number);
        assert_eq!(a.tick(10_000.0), "10k");
        assert_eq!(a.tick(0.1), "0.1");
        assert_eq!(a.tick(2.5e6), "2.5M");
        assert_eq!(a.tick(100.0), "100");
        let b = Axis::new("x", true, Scale::Bytes);
        assert_eq!(b.tick(4096.0), "4k");
    }

    #[test]
    fn line_table_has_one_row_per_x_and_skips_models() {
        let f = Figure {
            kind: Kind::CurveLatency,
            id: "t".into(),
            title: "t".into(),
            caption: String::new(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: Axis::new("size (bytes)", true, Scale::Bytes),
                y: Axis::new("µs", true, Scale::Number),
                series: vec![
                    Series::new("a", Role::Measured, vec![(1.0, 2.0), (1024.0, 3.0)]),
                    Series::new("a fit", Role::Model, vec![(1.0, 2.1), (1024.0, 2.9)]),
                    Series::new("ref", Role::Reference, vec![(1024.0, 5.0)]),
                ],
            }),
        };
        let (h, rows) = f.table();
        assert_eq!(h, ["size (bytes)", "a", "ref"]);
        assert_eq!(rows, [["1", "2.00", "—"], ["1k", "3.00", "5.00"]]);
    }

    #[test]
    fn flowgraph_tables_have_a_row_per_scheduler() {
        let s = |n: &str, y: f64| Series::new(n, Role::Measured, vec![(1.0, y), (2.0, y / 2.0)]);
        let f = Figure {
            kind: Kind::Flowgraph { cores: 1 },
            id: "t".into(),
            title: "t".into(),
            caption: String::new(),
            lead: Vec::new(),
            plot: Plot::Lines(Lines {
                x: Axis::new("saxpy blocks (M)", false, Scale::Count),
                y: Axis::new("samples/s", true, Scale::Number),
                series: vec![s("seq", 8.0), s("static", 6.0), s("ring", 4.0)],
            }),
        };
        let (h, rows) = f.table();
        assert_eq!(h, ["series \\ saxpy blocks (M)", "1", "2"]);
        assert_eq!(
            rows,
            [
                ["seq", "8.00", "4.00"],
                ["static", "6.00", "3.00"],
                ["ring", "4.00", "2.00"]
            ]
        );
    }
}
