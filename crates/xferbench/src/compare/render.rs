//! A comparison written out: a table for people (regressions first,
//! coloured on a terminal), Markdown for a pull-request comment, JSON for
//! programs, CSV for spreadsheets.

use super::method::{Method, Verdict};
use super::{Comparison, Row, trim};
use crate::error::{Error, Result};
use crate::words::{Word, word_enum};
use serde::Serialize;

word_enum! {
    /// How a comparison is written.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum CompareFormat {
        /// Aligned tables for people, coloured on a terminal.
        Table = "table",
        /// Markdown: a pull-request comment.
        Markdown = "markdown",
        /// The whole comparison, for programs.
        Json = "json",
        /// One row per point and statistic.
        Csv = "csv",
    }
}

/// The comparison in `format`; `colour` paints verdicts (table only).
pub fn render(c: &Comparison, format: CompareFormat, colour: bool) -> Result<String> {
    match format {
        CompareFormat::Table => Ok(text(c, false, colour)),
        CompareFormat::Markdown => Ok(text(c, true, false)),
        CompareFormat::Json => serde_json::to_string_pretty(c)
            .map(|s| s + "\n")
            .map_err(|e| Error::run_from("writing the comparison as JSON", e)),
        CompareFormat::Csv => Ok(csv(c)),
    }
}

/// A figure in its unit: times in µs.
pub fn value(unit: &str, v: f64) -> String {
    match unit {
        "ns" => format!("{} µs", crate::units::format_us(v)),
        u => format!("{} {u}", significant(v)),
    }
}

/// Four significant digits, without exponent for everyday magnitudes.
fn significant(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn pct(v: f64) -> String {
    if v.is_infinite() {
        return format!("{}∞ (from 0)", if v > 0.0 { "+" } else { "−" });
    }
    let p = v * 100.0;
    if p.abs() < 10.0 {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.0}%")
    }
}

fn interval(r: &Row) -> String {
    match r.change.interval {
        Some([lo, hi]) => format!("{} … {}", pct(lo), pct(hi)),
        None => "—".into(),
    }
}

fn delta(r: &Row) -> String {
    match r.delta_interval {
        Some([lo, hi]) => format!("{:+.3} … {:+.3} µs", lo / 1000.0, hi / 1000.0),
        None => String::new(),
    }
}

fn method(r: &Row) -> String {
    match r.change.method {
        Method::Repeats | Method::Intervals => format!(
            "{} {}/{}",
            r.change.method.name(),
            r.change.n[0],
            r.change.n[1]
        ),
        m => m.name().into(),
    }
}

/// Marks a (padded) cell: bold in Markdown — the word, not its padding,
/// or it would not render — coloured on a terminal.
fn paint(v: Verdict, s: &str, colour: bool, markdown: bool) -> String {
    if markdown {
        return match v {
            Verdict::Regressed => {
                let word = s.trim_end();
                format!("**{word}**{}", &s[word.len()..])
            }
            _ => s.to_string(),
        };
    }
    if !colour {
        return s.to_string();
    }
    let code = match v {
        Verdict::Regressed => "1;31",
        Verdict::Improved => "32",
        Verdict::Inconclusive => "33",
        Verdict::NoChange => return s.to_string(),
    };
    format!("\x1b[{code}m{s}\x1b[0m")
}

/// The verdict line: PASS or FAIL, the tally, and the thresholds.
pub fn headline(c: &Comparison) -> String {
    let t = &c.tally;
    format!(
        "{}: {} regressed, {} improved, {} no change, {} inconclusive · {}% intervals · noise ±{}%",
        if c.failed { "FAIL" } else { "PASS" },
        t.regressed,
        t.improved,
        t.no_change,
        t.inconclusive,
        trim(c.settings.confidence * 100.0),
        trim(c.settings.noise * 100.0)
    )
}

/// The table's header, and each row's verdict and cells: point, statistic,
/// base, new, change, interval (Δ interval where a row has one), verdict,
/// method.
pub fn table(c: &Comparison) -> (Vec<String>, Vec<(Verdict, Vec<String>)>) {
    let with_delta = c.rows.iter().any(|r| r.delta_interval.is_some());
    let mut header: Vec<String> = ["point", "stat", "base", "new", "change"]
        .map(String::from)
        .to_vec();
    header.push(format!("{}% interval", trim(c.settings.confidence * 100.0)));
    if with_delta {
        header.push("Δ interval".into());
    }
    header.extend(["verdict".into(), "method".into()]);
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.point.clone(),
                format!(
                    "{}{}",
                    r.stat.name(),
                    if r.gates { "" } else { " (no gate)" }
                ),
                value(r.unit, r.base),
                value(r.unit, r.new),
                pct(r.change.change),
                interval(r),
            ];
            if with_delta {
                cells.push(delta(r));
            }
            cells.push(r.verdict.name().to_string());
            cells.push(method(r));
            (r.verdict, cells)
        })
        .collect();
    (header, rows)
}

/// Text from the runs (labels, specs, hosts) made inert: control
/// characters (an ANSI escape in a spec name would repaint a terminal)
/// shown as visible symbols, and in Markdown the characters that would make
/// HTML or break the table escaped.
fn safe(s: &str, markdown: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\x1b' => o.push('␛'),
            c if c.is_control() => o.push('�'),
            '<' if markdown => o.push_str("&lt;"),
            '>' if markdown => o.push_str("&gt;"),
            '&' if markdown => o.push_str("&amp;"),
            '|' if markdown => o.push_str("\\|"),
            c => o.push(c),
        }
    }
    o
}

fn text(c: &Comparison, markdown: bool, colour: bool) -> String {
    let mut o = String::new();
    let safe = |s: &str| safe(s, markdown);
    o += &format!(
        "## compare {}: {} → {}\n\n",
        safe(&c.experiment),
        safe(&c.base.label),
        safe(&c.new.label)
    );
    let head = headline(c);
    o += &if c.failed {
        paint(Verdict::Regressed, &head, colour, markdown)
    } else {
        head
    };
    o += "\n\n";
    if !c.differences.is_empty() {
        o += "The runs differ (compared all the same):\n";
        for d in &c.differences {
            o += &format!(
                "- {} {}: {} → {}\n",
                safe(d.kind),
                safe(&d.what),
                safe(&d.base),
                safe(&d.new)
            );
        }
        o += "\n";
    }
    let (header, rows) = table(c);
    let rows: Vec<(Verdict, Vec<String>)> = rows
        .into_iter()
        .map(|(v, cells)| (v, cells.iter().map(|x| safe(x)).collect()))
        .collect();
    let n = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for (_, cells) in &rows {
        for (w, c) in width.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    let verdict_col = n - 2;
    o += &format!(
        "| {} |\n",
        header
            .iter()
            .zip(&width)
            .map(|(h, &w)| pad(h, w))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    o += &format!(
        "|{}|\n",
        width
            .iter()
            .map(|&w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    );
    for (v, cells) in &rows {
        let line: Vec<String> = cells
            .iter()
            .zip(&width)
            .enumerate()
            .map(|(i, (s, &w))| {
                let p = pad(s, w);
                if i == verdict_col {
                    paint(*v, &p, colour, markdown)
                } else {
                    p
                }
            })
            .collect();
        o += &format!("| {} |\n", line.join(" | "));
    }
    for (label, list) in [
        (&c.base.label, &c.only_in_base),
        (&c.new.label, &c.only_in_new),
    ] {
        if !list.is_empty() {
            o += &format!("\nOnly in {} ({}):\n", safe(label), list.len());
            for p in list {
                o += &format!("- {}\n", safe(p));
            }
        }
    }
    if !c.notes.is_empty() {
        o += "\nHow to read it:\n";
        for n in &c.notes {
            o += &format!("- {}\n", safe(n));
        }
    }
    o
}

fn csv(c: &Comparison) -> String {
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut o = String::from(
        "point,stat,unit,base,new,change,ci_low,ci_high,p_value,method,replicates_base,replicates_new,verdict,gates\n",
    );
    for r in &c.rows {
        let [lo, hi] = r
            .change
            .interval
            .map_or([String::new(), String::new()], |[a, b]| {
                [a.to_string(), b.to_string()]
            });
        o += &format!(
            "{},{},{},{},{},{},{lo},{hi},{},{},{},{},{},{}\n",
            q(&r.point),
            r.stat.word(),
            r.unit,
            r.base,
            r.new,
            r.change.change,
            r.change.p_value.map_or(String::new(), |p| p.to_string()),
            r.change.method.name(),
            r.change.n[0],
            r.change.n[1],
            r.verdict.name(),
            r.gates
        );
    }
    o
}
