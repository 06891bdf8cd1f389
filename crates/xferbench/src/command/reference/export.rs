//! `reference list` in every format, and `reference show` as JSON and CSV: the
//! machine-readable forms keep the standardised columns, so a script can read
//! any dataset of an experiment the same way.

use crate::error::Result;
use crate::format::Format;
use crate::reference::{Dataset, parse_num};
use crate::report::csv::field;
use crate::report::table::markdown;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// What `list --format json` says of a dataset: everything but the cells.
#[derive(serde::Serialize)]
struct Summary<'a> {
    name: &'a str,
    experiment: &'a str,
    title: &'a str,
    source: &'a str,
    notes: &'a str,
    columns: &'a [&'static str],
    rows: usize,
}

impl<'a> From<&'a Dataset> for Summary<'a> {
    fn from(d: &'a Dataset) -> Self {
        Summary {
            name: d.name,
            experiment: d.experiment,
            title: d.title,
            source: d.source,
            notes: d.notes,
            columns: &d.columns,
            rows: d.rows.len(),
        }
    }
}

pub fn list(all: &[Dataset], format: Format) -> Result<String> {
    match format {
        Format::Json => {
            let v: Vec<Summary> = all.iter().map(Summary::from).collect();
            crate::report::json::render(&v)
        }
        Format::Csv => {
            let mut out = String::from("name,experiment,rows,title\n");
            for d in all {
                out.push_str(&format!(
                    "{},{},{},{}\n",
                    d.name,
                    d.experiment,
                    d.rows.len(),
                    field(d.title)
                ));
            }
            Ok(out)
        }
        Format::Table => Ok(list_table(all)),
    }
}

/// The table, then each distinct source once with the datasets it backs, so
/// the long provenance lines do not widen the table.
fn list_table(all: &[Dataset]) -> String {
    let header = ["name", "experiment", "rows", "title"].map(String::from);
    let body: Vec<Vec<String>> = all
        .iter()
        .map(|d| {
            vec![
                d.name.to_string(),
                d.experiment.to_string(),
                d.rows.len().to_string(),
                d.title.to_string(),
            ]
        })
        .collect();
    let mut sources: Vec<(&str, Vec<&str>)> = Vec::new();
    for d in all {
        match sources.iter_mut().find(|(s, _)| *s == d.source) {
            Some((_, names)) => names.push(d.name),
            None => sources.push((d.source, vec![d.name])),
        }
    }
    let mut out = markdown(&header, &body);
    out.push_str("\nSources:\n");
    for (source, names) in sources {
        out.push_str(&format!("- {}: {source}\n", names.join(", ")));
    }
    out.push_str("\nxferbench reference show NAME prints one, shaped as its document.\n");
    out
}

/// One row as a JSON object, keys in column order (a map would sort them).
struct Row<'a> {
    columns: &'a [&'static str],
    cells: &'a [String],
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.columns.len()))?;
        for (c, v) in self.columns.iter().zip(self.cells) {
            if v.is_empty() {
                m.serialize_entry(c, &())?;
            } else if let Ok(n) = v.parse::<i64>() {
                m.serialize_entry(c, &n)?;
            } else if let Some(x) = parse_num(v) {
                m.serialize_entry(c, &x)?;
            } else {
                m.serialize_entry(c, v)?;
            }
        }
        m.end()
    }
}

/// The whole dataset; cells that parse as numbers become JSON numbers, empty
/// cells `null`.
pub fn json(d: &Dataset) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        name: &'a str,
        experiment: &'a str,
        title: &'a str,
        source: &'a str,
        notes: &'a str,
        columns: &'a [&'static str],
        rows: Vec<Row<'a>>,
    }
    let rows = d
        .rows
        .iter()
        .map(|cells| Row {
            columns: &d.columns,
            cells,
        })
        .collect();
    crate::report::json::render(&Out {
        name: d.name,
        experiment: d.experiment,
        title: d.title,
        source: d.source,
        notes: d.notes,
        columns: &d.columns,
        rows,
    })
}

/// The standardised columns (and extras) as CSV, cells as published.
pub fn csv(d: &Dataset) -> String {
    let mut out = d.columns.join(",");
    out.push('\n');
    for r in &d.rows {
        let cells: Vec<String> = r.iter().map(|c| field(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::find;

    #[test]
    fn json_rows_keep_column_order_and_types() {
        let d = find("rk11perf-basys3").unwrap();
        let text = json(&d).unwrap();
        let first = text.split("\"rows\"").nth(1).unwrap();
        let keys: Vec<usize> = d
            .columns
            .iter()
            .map(|c| first.find(&format!("\"{c}\"")).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let r0 = &v["rows"][0];
        assert_eq!(r0["cpu_mode"], "wait");
        assert_eq!(r0["req_per_s"], 497);
        let k: serde_json::Value =
            serde_json::from_str(&json(&find("qsdr-kv260-kernel").unwrap()).unwrap()).unwrap();
        let rows = k["rows"].as_array().unwrap();
        assert!(rows.iter().any(|r| r["buffers"].is_null()));
        assert!(rows.iter().all(|r| r["samples_per_s"].is_f64()));
    }

    #[test]
    fn csv_quotes_titles_with_commas() {
        let text = list(&[find("vollo-ia420f-user").unwrap()], Format::Csv).unwrap();
        assert_eq!(
            text.lines().nth(1),
            Some("vollo-ia420f-user,roundtrip,81,\"Vollo IO round trip, IA420F, user buffers\"")
        );
    }
}
