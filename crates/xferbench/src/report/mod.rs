//! Renderers from a `Run`, one file per format. Reports read only `Run`.

pub mod bundle;
pub mod compare;
pub mod csv;
pub mod curve;
pub mod figure;
pub mod figures;
pub mod flowgraph;
pub mod headline;
pub mod html;
pub mod json;
pub mod limits;
pub mod load;
pub mod mesh;
pub mod pairs;
pub mod runs_compared;
pub mod spectrum;
pub mod stream;
pub mod summary;
pub mod svg;
pub mod table;

use crate::error::Result;
use crate::format::Format;
use crate::measure::stats::Stat;
use crate::result::Run;
use crate::units::Unit;

/// The three forms every measuring command writes a result in. Each
/// experiment's result type implements it, so a caller (the CLI or a program
/// embedding the library) renders any result the same way.
pub trait Render {
    /// The tables for people, in Markdown.
    fn table(&self) -> String;
    /// The whole result as pretty JSON, for programs.
    fn json(&self) -> Result<String>;
    /// One row per measured point, for spreadsheets.
    fn csv(&self) -> String;
    /// Points measured so far (partial runs say how many were written).
    fn points(&self) -> usize;
    /// The result in `format`; the text forms [`inert`] (a name from a
    /// plugin or a file cannot drive the terminal; JSON escapes them).
    fn render(&self, format: Format) -> Result<String> {
        match format {
            Format::Table => Ok(inert(self.table())),
            Format::Json => self.json(),
            Format::Csv => Ok(inert(self.csv())),
        }
    }
}

/// `text` with its control characters shown, not obeyed
/// ([`crate::error::inert`]).
pub fn inert(text: String) -> String {
    match crate::error::inert(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(safe) => safe,
    }
}

impl Render for Run {
    /// Shows the statistics and size unit the run was asked for (recorded
    /// in its options as `stats` and `unit`), else the defaults.
    fn table(&self) -> String {
        let stats = self.options["stats"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str()?.parse::<Stat>().ok())
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| crate::options::Common::default().stats);
        let unit = self.options["unit"]
            .as_str()
            .and_then(|u| u.parse::<Unit>().ok())
            .unwrap_or(Unit::Bytes);
        table::render(self, &stats, unit)
    }
    fn json(&self) -> Result<String> {
        json::render(self)
    }
    fn csv(&self) -> String {
        csv::render(self)
    }
    fn points(&self) -> usize {
        self.points.len()
    }
}

/// `Render` for a result whose JSON is its plain serialization: the
/// experiment's table and CSV renderers, and the points it measured.
macro_rules! render_with {
    ($run:ty, $table:path, $csv:path) => {
        impl Render for $run {
            fn table(&self) -> String {
                $table(self)
            }
            fn json(&self) -> Result<String> {
                json::render(self)
            }
            fn csv(&self) -> String {
                $csv(self)
            }
            fn points(&self) -> usize {
                self.points.len()
            }
        }
    };
}

render_with!(crate::result::curve::CurveRun, curve::render, curve::csv);
render_with!(
    crate::result::flowgraph::FlowRun,
    flowgraph::render,
    flowgraph::csv
);
render_with!(crate::result::load::LoadRun, load::render, load::csv);
render_with!(crate::result::mesh::PairsRun, pairs::render, pairs::csv);

impl Render for crate::result::mesh::MeshRun {
    /// The matrices grouped by host, suspects first; the same renderer as
    /// a saved mesh's, so a run reads alike now and read back.
    fn table(&self) -> String {
        mesh::table(&self.into())
    }
    fn json(&self) -> Result<String> {
        json::render(self)
    }
    fn csv(&self) -> String {
        mesh::csv(&self.into())
    }
    fn points(&self) -> usize {
        self.points.iter().filter(|p| !p.missing).count()
    }
}
