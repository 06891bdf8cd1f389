//! A report over saved runs: their figures, the comparisons asked for (runs
//! of one experiment read against each other, published datasets beside
//! them), and the three ways out — an HTML page, SVG files, or tables on
//! stdout.

use super::compare::{self, Comparison};
use super::figure::Figure;
use super::runs_compared::{self, RunComparison};
use super::{figures, html, spectrum, svg, table::markdown};
use crate::compare::render::{CompareFormat, render};
use crate::error::{Error, Result};
use crate::reference::Dataset;
use crate::result::saved::SavedRun;
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub struct Report {
    pub runs: Vec<SavedRun>,
    pub figures: Vec<Figure>,
    pub comparisons: Vec<Comparison>,
    /// Each run read against the first run of its experiment before it.
    pub runs_compared: Vec<RunComparison>,
    /// What could not be drawn and why (a histogram that does not
    /// decode), for the caller to pass on: the library prints nothing.
    pub warnings: Vec<String>,
}

/// The most figures one report draws.
pub const MAX_FIGURES: usize = 400;

impl Report {
    pub fn new(runs: Vec<SavedRun>, compare: &[Dataset]) -> Report {
        let mut figs = figures::all(&runs);
        let (spectra, mut warnings) = spectrum::figures(&runs);
        figs.extend(spectra);
        // A page of thousands of figures is unreadable and, drawn, takes
        // gigabytes: the first ones are drawn, the tables hold every point.
        if figs.len() > MAX_FIGURES {
            warnings.push(format!(
                "{} figures, more than a report draws: the first {MAX_FIGURES} are drawn, every point is in the tables and the JSON",
                figs.len()
            ));
            figs.truncate(MAX_FIGURES);
        }
        let mut comparisons = Vec::new();
        for d in compare {
            comparisons.extend(compare::apply(&mut figs, d));
        }
        Report {
            runs_compared: runs_compared::all(&runs),
            runs,
            figures: figs,
            comparisons,
            warnings,
        }
    }

    /// Each figure drawn as SVG, beside the figure: the runs' own, then
    /// those of the runs compared.
    pub fn drawn(&self) -> Result<Vec<(Figure, String)>> {
        let compared = self.runs_compared.iter().flat_map(|c| &c.figures);
        self.figures
            .iter()
            .chain(compared)
            .map(|f| Ok((f.clone(), svg::render(f)?)))
            .collect()
    }

    /// Writes `DIR/index.html`; returns its path.
    pub fn write_html(&self, dir: &Path, title: &str, rerender: String) -> Result<PathBuf> {
        make_dir(dir)?;
        let drawn = self.drawn()?;
        let page = html::render(&html::Page {
            title,
            runs: &self.runs,
            figures: &drawn,
            comparisons: &self.comparisons,
            runs_compared: &self.runs_compared,
            rerender,
        });
        let path = dir.join("index.html");
        crate::output::emit(&page, Some(&path))?;
        Ok(path)
    }

    /// Writes one `ID.svg` per figure into `dir`; returns their paths.
    pub fn write_svgs(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        make_dir(dir)?;
        let mut out = Vec::new();
        for (f, s) in self.drawn()? {
            let path = dir.join(format!("{}.svg", f.id));
            crate::output::emit(&s, Some(&path))?;
            out.push(path);
        }
        Ok(out)
    }

    /// The figures' numbers and the comparisons as Markdown tables, the
    /// runs compared last; after each run's figures, the lines its live
    /// table printed beside its points (what it skipped, its devices).
    pub fn text(&self) -> String {
        let mut o = String::new();
        for f in &self.figures {
            figure_text(&mut o, f);
        }
        for r in &self.runs {
            o.push_str(&run_notes(r));
        }
        for line in super::headline::numa_costs(&self.runs) {
            let _ = writeln!(o, "{line}\n");
        }
        o.push_str(&self.comparison_text());
        for c in &self.runs_compared {
            match &c.outcome {
                Ok(cmp) => {
                    o.push_str(&render(cmp, CompareFormat::Markdown, false).unwrap_or_default());
                    o.push('\n');
                }
                Err(why) => {
                    let _ = writeln!(
                        o,
                        "## compare {}: {} → {}\n\nNot compared: {why}\n",
                        c.experiment, c.base, c.new
                    );
                }
            }
            for f in &c.figures {
                figure_text(&mut o, f);
            }
        }
        super::inert(o)
    }

    /// Only the comparisons, for an experiment's own table output.
    pub fn comparison_text(&self) -> String {
        let mut o = String::new();
        for c in &self.comparisons {
            let _ = writeln!(o, "## {}\n", c.title);
            if !c.rows.is_empty() {
                o.push_str(&markdown(&c.header, &c.rows));
                o.push('\n');
            }
            let _ = writeln!(o, "{}\n", c.note);
        }
        o
    }
}

/// What a run's own table says beside its figures — the `Skipped:` list
/// and a `Device:` line per device — under the run's name; nothing when it
/// has neither.
fn run_notes(r: &SavedRun) -> String {
    use crate::result::saved::AnyRun;
    let skipped: Vec<String> = match &r.run {
        AnyRun::Roundtrip(x) => x.extra.skipped.iter().map(|s| s.label()).collect(),
        AnyRun::Curve(x) => x.extra.skipped.iter().map(|s| s.label()).collect(),
        AnyRun::Load(x) => x.extra.skipped.iter().map(|s| s.label()).collect(),
        AnyRun::Stream(x) => x.extra.skipped.iter().map(|s| s.label()).collect(),
        _ => Vec::new(),
    };
    let mut devices: String = r
        .run
        .devices()
        .iter()
        .map(super::table::device_line)
        .collect();
    if let AnyRun::Stream(x) = &r.run {
        let jobs = x.jobs.iter().filter_map(|j| j.job()).chain(&x.per_job);
        devices.push_str(&super::stream::device_lines(jobs));
    }
    // The lines the live table gives under its figures: each path's limit,
    // the best figure's share, what is wrong with the path, the NUMA note.
    let limits = crate::result::limit::lines(r.run.limits());
    if skipped.is_empty() && devices.is_empty() && limits.is_empty() {
        return String::new();
    }
    let mut o = format!("## {} ({})\n\n", r.label, r.experiment);
    o.push_str(&super::table::skipped(&skipped));
    o.push_str(&devices);
    o.push_str(&limits);
    o.push('\n');
    o
}

/// A figure as text: its title, lead, numbers and caption.
fn figure_text(o: &mut String, f: &Figure) {
    let _ = writeln!(o, "## {}\n", f.title);
    for l in &f.lead {
        let _ = writeln!(o, "- {l}");
    }
    if !f.lead.is_empty() {
        o.push('\n');
    }
    let (h, rows) = f.table();
    o.push_str(&markdown(&h, &rows));
    let _ = writeln!(o, "\n{}\n", f.caption);
}

fn make_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::usage(format!(
            "cannot create {}: {e}; pick a writable directory",
            dir.display()
        ))
        .with_source(e)
    })
}
