//! The HTML report: one self-contained `index.html` (inline SVG and CSS, no
//! script, no network) that opens from disk and can be mailed as one file.

use super::compare::Comparison;
use super::figure::{Figure, Kind};
use super::runs_compared::RunComparison;
use crate::compare::method::Verdict;
use crate::result::saved::SavedRun;
use std::fmt::Write;

/// The report's style sheet, shared by every page xferbench writes (the
/// `limits` page too), so they look alike.
pub const STYLE: &str = r#"
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; background: #fafafa; margin: 0; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 28px 60px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin: 26px 0 6px; }
.lede { color: #555; margin: 0 0 8px; }
figure { margin: 18px 0 6px; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e4e4e4; }
figcaption { color: #555; font-size: 13.5px; margin-top: 4px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
details { margin: 4px 0 14px; }
summary { cursor: pointer; color: #0b57d0; font-size: 13.5px; }
.table-wrap { overflow-x: auto; }
code, pre { font: 12.5px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { background: #f5f5f5; padding: 8px 10px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
.warn { background: #fff8e1; border-left: 4px solid #f0b400; padding: 8px 14px; margin: 10px 0; }
.warn ul { margin: 4px 0; padding-left: 20px; }
.lead { background: #eef4fc; border-left: 4px solid #0b57d0; padding: 6px 14px; margin: 8px 0; font-size: 14px; }
.lead ul { margin: 2px 0; padding-left: 20px; }
.bad { color: #b3261e; font-weight: 600; }
.ok { color: #1e7d32; }
.note { color: #555; font-size: 13.5px; }
tr.regressed td { background: #fdecea; }
tr.regressed td.verdict { color: #b3261e; font-weight: 600; }
tr.improved td { background: #edf7ee; }
tr.improved td.verdict { color: #1e7d32; }
tr.inconclusive td.verdict { color: #8a5a00; }
nav { font-size: 13.5px; margin: 10px 0 0; }
nav a { margin-right: 14px; color: #0b57d0; text-decoration: none; }
"#;

/// Escapes text for HTML content and attribute values; control
/// characters are shown as escapes (`\x1b`), which XML does not allow raw.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                o.push_str(&crate::error::inert(c.encode_utf8(&mut [0; 4])))
            }
            c => o.push(c),
        }
    }
    o
}

fn table(out: &mut String, header: &[String], rows: &[Vec<String>], left_cols: usize) {
    let rows: Vec<(&str, &[String])> = rows.iter().map(|r| ("", r.as_slice())).collect();
    classed(out, header, &rows, left_cols, None);
}

/// A table whose rows each carry a class (none where empty), the cells of
/// column `marked` the class `verdict`.
fn classed(
    out: &mut String,
    header: &[String],
    rows: &[(&str, &[String])],
    left_cols: usize,
    marked: Option<usize>,
) {
    out.push_str("<div class=\"table-wrap\"><table>\n<tr>");
    for (i, h) in header.iter().enumerate() {
        let cls = if i < left_cols { " class=\"l\"" } else { "" };
        let _ = write!(out, "<th{cls}>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for (class, r) in rows {
        if class.is_empty() {
            out.push_str("<tr>");
        } else {
            let _ = write!(out, "<tr class=\"{}\">", esc(class));
        }
        for (i, c) in r.iter().enumerate() {
            let cls = match (i < left_cols, marked == Some(i)) {
                (true, _) => " class=\"l\"",
                (false, true) => " class=\"verdict\"",
                (false, false) => "",
            };
            let _ = write!(out, "<td{cls}>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

/// A table under a `<details>`, open when short enough to read at a glance.
fn folded(out: &mut String, label: &str, header: &[String], rows: &[Vec<String>], left: usize) {
    let open = if rows.len() <= 12 { " open" } else { "" };
    let _ = writeln!(
        out,
        "<details{open}><summary>{} ({} rows)</summary>",
        esc(label),
        rows.len()
    );
    table(out, header, rows, left);
    out.push_str("</details>\n");
}

/// The section of the runs compared, and its heading.
const COMPARED: &str = "Comparison of runs";

fn section_of(f: &Figure) -> &'static str {
    use super::figure::Kind::*;
    match f.kind {
        LatencyBudget if f.id.starts_with("curve-") => "Latency and bandwidth curves",
        LatencyBudget if f.id.starts_with("load-") => "Under load",
        RoundTrip | RoundTripRatio | LatencyBudget => "Round trip",
        CurveLatency | CurveBandwidth => "Latency and bandwidth curves",
        StreamBandwidth => "Streams",
        LoadRate | LoadKbps | LoadLatency => "Under load",
        Flowgraph { .. } => "Flowgraph runtime",
        MeshLatency | MeshBandwidth => "Mesh",
        Pairs => "Pairs at once",
        Spectrum => "Latency distributions",
        RunsCompared => COMPARED,
    }
}

fn anchor(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// What the report is made of: runs, their figures with SVGs drawn, and the
/// comparison tables.
pub struct Page<'a> {
    pub title: &'a str,
    pub runs: &'a [SavedRun],
    pub figures: &'a [(Figure, String)],
    pub comparisons: &'a [Comparison],
    /// Runs read against the first run of their experiment; their figures
    /// are among `figures`, by id.
    pub runs_compared: &'a [RunComparison],
    /// The command that re-renders this report.
    pub rerender: String,
}

pub fn render(p: &Page) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n",
        esc(p.title),
        esc(p.title)
    );
    lede(&mut o, p.runs);
    let mut sections: Vec<&str> = Vec::new();
    for (f, _) in p
        .figures
        .iter()
        .filter(|(f, _)| f.kind != Kind::RunsCompared)
    {
        if !sections.contains(&section_of(f)) {
            sections.push(section_of(f));
        }
    }
    o.push_str("<nav><a href=\"#summary\">Summary</a>");
    if !p.runs_compared.is_empty() {
        let _ = write!(o, "<a href=\"#{}\">{COMPARED}</a>", anchor(COMPARED));
    }
    for s in &sections {
        let _ = write!(o, "<a href=\"#{}\">{}</a>", anchor(s), esc(s));
    }
    if !p.comparisons.is_empty() {
        o.push_str("<a href=\"#comparison\">Comparison</a>");
    }
    o.push_str("<a href=\"#environment\">Environment</a>");
    if p.runs.iter().any(|r| !run_devices(r).is_empty()) {
        o.push_str("<a href=\"#devices\">Devices</a>");
    }
    o.push_str("<a href=\"#runs\">Runs</a></nav>\n");

    summary(&mut o, p.runs);
    limits(&mut o, p.runs);
    warnings(&mut o, p.runs);
    runs_compared(&mut o, p);
    for s in &sections {
        let _ = writeln!(o, "<h2 id=\"{}\">{}</h2>", anchor(s), esc(s));
        for (f, svg) in p.figures.iter().filter(|(f, _)| section_of(f) == *s) {
            figure(&mut o, f, svg);
        }
    }
    if !p.comparisons.is_empty() {
        o.push_str("<h2 id=\"comparison\">Comparison with published figures</h2>\n");
        for c in p.comparisons {
            let _ = writeln!(
                o,
                "<h3>{}</h3>\n<p class=\"note\">{}</p>",
                esc(&c.title),
                esc(&c.note)
            );
            if !c.rows.is_empty() {
                folded(&mut o, "Measured beside published", &c.header, &c.rows, 2);
            }
        }
    }
    environment(&mut o, p.runs);
    devices(&mut o, p.runs);
    runs(&mut o, p.runs);
    let _ = write!(
        o,
        "<p class=\"note\">Generated by xferbench {} from the runs' JSON files, the lossless record; re-render with <code>{}</code>.</p>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&p.rerender)
    );
    o
}

/// A figure: its heading, lead, SVG, caption and numbers.
fn figure(o: &mut String, f: &Figure, svg: &str) {
    let _ = writeln!(o, "<h3 id=\"{}\">{}</h3>", esc(&f.id), esc(&f.title));
    lead(o, &f.lead);
    let _ = writeln!(
        o,
        "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
        svg.trim(),
        esc(&f.caption)
    );
    let (h, rows) = f.table();
    folded(o, "The numbers", &h, &rows, 1);
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::NoChange => "no-change",
        Verdict::Inconclusive => "inconclusive",
    }
}

/// Each pair of runs compared: the verdict line, how the runs differ, the
/// table (regressions first, highlighted), what was measured in one run
/// only, how to read it, then both runs' curves with their intervals. A
/// pair that cannot be compared says why.
fn runs_compared(o: &mut String, p: &Page) {
    if p.runs_compared.is_empty() {
        return;
    }
    let _ = writeln!(o, "<h2 id=\"{}\">{COMPARED}</h2>", anchor(COMPARED));
    o.push_str("<p class=\"note\">Each run read against the first run of its experiment given before it, as <code>xferbench compare --allow-different</code> does.</p>\n");
    for c in p.runs_compared {
        let _ = writeln!(
            o,
            "<h3>{}: {} → {}</h3>",
            esc(&c.experiment),
            esc(&c.base),
            esc(&c.new)
        );
        let cmp = match &c.outcome {
            Ok(cmp) => cmp,
            Err(why) => {
                let _ = writeln!(o, "<p class=\"warn\">Not compared: {}</p>", esc(why));
                continue;
            }
        };
        let _ = writeln!(
            o,
            "<p class=\"{}\">{}</p>",
            if cmp.failed { "bad" } else { "ok" },
            esc(&crate::compare::render::headline(cmp))
        );
        if !cmp.differences.is_empty() {
            o.push_str("<div class=\"warn\">The runs differ, so a change may come from how they were run:<ul>\n");
            for d in &cmp.differences {
                let _ = writeln!(
                    o,
                    "<li>{} {}: {} → {}</li>",
                    esc(d.kind),
                    esc(&d.what),
                    esc(&d.base),
                    esc(&d.new)
                );
            }
            o.push_str("</ul></div>\n");
        }
        let (header, rows) = crate::compare::render::table(cmp);
        let rows: Vec<(&str, &[String])> = rows
            .iter()
            .map(|(v, cells)| (verdict_class(*v), cells.as_slice()))
            .collect();
        classed(o, &header, &rows, 2, Some(header.len() - 2));
        for (label, list) in [(&c.base, &cmp.only_in_base), (&c.new, &cmp.only_in_new)] {
            if !list.is_empty() {
                let _ = writeln!(
                    o,
                    "<p class=\"note\">Only in {} ({}): {}</p>",
                    esc(label),
                    list.len(),
                    esc(&list.join("; "))
                );
            }
        }
        if !cmp.notes.is_empty() {
            o.push_str("<ul class=\"note\">\n");
            for n in &cmp.notes {
                let _ = writeln!(o, "<li>{}</li>", esc(n));
            }
            o.push_str("</ul>\n");
        }
        for f in &c.figures {
            if let Some((f, svg)) = p.figures.iter().find(|(d, _)| d.id == f.id) {
                figure(o, f, svg);
            }
        }
    }
}

/// What to read before a figure (a mesh run's suspects and health
/// verdict), as a list in a box.
fn lead(o: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    o.push_str("<div class=\"lead\"><ul>\n");
    for l in lines {
        let _ = writeln!(o, "<li>{}</li>", esc(l));
    }
    o.push_str("</ul></div>\n");
}

fn lede(o: &mut String, runs: &[SavedRun]) {
    let hosts = distinct(
        runs.iter()
            .filter_map(|r| r.env.as_ref().map(|e| e.hostname.clone())),
    );
    let when = distinct(
        runs.iter()
            .filter_map(|r| r.env.as_ref().map(|e| e.timestamp.clone())),
    );
    let _ = writeln!(
        o,
        "<p class=\"lede\">{} run{} on {}{}.</p>",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        esc(&if hosts.is_empty() {
            "an unknown host".into()
        } else {
            hosts.join(", ")
        }),
        match (when.first(), when.last()) {
            (Some(a), Some(b)) if a != b => format!(", {} to {}", esc(a), esc(b)),
            (Some(a), _) => format!(", {}", esc(a)),
            _ => String::new(),
        }
    );
}

fn distinct(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in it {
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

fn summary(o: &mut String, runs: &[SavedRun]) {
    o.push_str("<h2 id=\"summary\">Summary</h2>\n");
    let header: Vec<String> = ["run", "experiment", "points", "status", "headline"]
        .map(String::from)
        .to_vec();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.experiment.clone(),
                r.run.len().to_string(),
                if r.complete {
                    "complete".into()
                } else {
                    format!(
                        "INCOMPLETE{}",
                        r.stopped_by
                            .as_ref()
                            .map_or(String::new(), |s| format!(": {s}"))
                    )
                },
                super::headline::of(r),
            ]
        })
        .collect();
    table(o, &header, &rows, 5);
}

/// Each run's paths and their limits, as the run's table lists them;
/// nothing when no run recorded one (older files read as before).
fn limits(o: &mut String, runs: &[SavedRun]) {
    let with: Vec<&SavedRun> = runs.iter().filter(|r| !r.run.limits().is_empty()).collect();
    if with.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"limits\">Limits of the paths</h2>\n<ul>\n");
    for r in with {
        for l in r.run.limits() {
            for line in l.lines() {
                let _ = writeln!(o, "<li>{}: {}</li>", esc(&r.label), esc(&line));
            }
        }
    }
    for line in super::headline::numa_costs(runs) {
        let _ = writeln!(o, "<li>{}</li>", esc(&line));
    }
    o.push_str("</ul>\n");
}

fn warnings(o: &mut String, runs: &[SavedRun]) {
    let mut run_level: Vec<String> = Vec::new();
    for r in runs {
        for w in &r.warnings {
            if !run_level.contains(w) {
                run_level.push(w.clone());
            }
        }
        if !r.complete {
            run_level.push(format!(
                "run {} is incomplete ({}): it holds only the points that finished",
                r.label,
                r.stopped_by.as_deref().unwrap_or("stopped early")
            ));
        }
    }
    let points: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            let n = r.run.len();
            r.point_warnings()
                .into_iter()
                .map(move |(w, k)| format!("{}: {k} of {n} points: {w}", r.label))
        })
        .collect();
    if run_level.is_empty() && points.is_empty() {
        o.push_str("<p class=\"ok\">No warnings: enough samples, stable halves, no virtualization detected.</p>\n");
        return;
    }
    o.push_str("<div class=\"warn\"><strong>Read the figures with these caveats</strong><ul>\n");
    for w in &run_level {
        let _ = writeln!(o, "<li>{}</li>", esc(w));
    }
    o.push_str("</ul>");
    if !points.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>Caveats on single points ({})</summary><ul>",
            points.len()
        );
        for w in &points {
            let _ = writeln!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ul></details>");
    }
    o.push_str("</div>\n");
}

fn environment(o: &mut String, runs: &[SavedRun]) {
    o.push_str("<h2 id=\"environment\">Environment</h2>\n");
    let envs: Vec<(&str, &crate::measure::env::Env)> = runs
        .iter()
        .filter_map(|r| r.env.as_ref().map(|e| (r.label.as_str(), e)))
        .collect();
    if envs.is_empty() {
        o.push_str("<p class=\"note\">The runs carry no environment record.</p>\n");
        return;
    }
    // One column per distinct machine: runs from one host share a column.
    let mut cols: Vec<(Vec<&str>, &crate::measure::env::Env)> = Vec::new();
    for (label, e) in envs {
        match cols.iter_mut().find(|(_, c)| {
            c.hostname == e.hostname && c.kernel == e.kernel && c.cpu_model == e.cpu_model
        }) {
            Some((labels, _)) => labels.push(label),
            None => cols.push((vec![label], e)),
        }
    }
    let mut header = vec!["".to_string()];
    header.extend(cols.iter().map(|(l, _)| l.join(", ")));
    let row = |name: &str, f: &dyn Fn(&crate::measure::env::Env) -> String| {
        let mut r = vec![name.to_string()];
        r.extend(cols.iter().map(|(_, e)| f(e)));
        r
    };
    let rows = vec![
        row("host", &|e| e.hostname.clone()),
        row("CPU", &|e| {
            format!(
                "{} ({} online, {} allowed)",
                e.cpu_model, e.cpus_online, e.cpus_allowed
            )
        }),
        row("architecture", &|e| e.arch.clone()),
        row("GPUs", &|e| {
            if e.gpus.is_empty() {
                "none used".into()
            } else {
                e.gpus
                    .iter()
                    .map(|g| g.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        }),
        row("kernel", &|e| e.kernel.clone()),
        row("virtualization", &|e| {
            let v = &e.virtualization;
            let mut s = if v.virtual_machine {
                format!(
                    "virtual machine ({})",
                    v.hypervisor.as_deref().unwrap_or("unknown hypervisor")
                )
            } else {
                "bare metal".into()
            };
            if let Some(c) = &v.container {
                s.push_str(&format!(", container: {c}"));
            }
            s
        }),
        row("clock", &|e| {
            format!(
                "{}, kernel clocksource {}, {:.0} ns per read, resolution {} ns",
                e.clock.source,
                e.clock.kernel_clocksource.as_deref().unwrap_or("unknown"),
                e.clock.overhead_ns,
                e.clock.resolution_ns
            )
        }),
        row("CPU governor", &|e| {
            e.governor.clone().unwrap_or_else(|| "not exposed".into())
        }),
        row("tool", &|e| format!("{} {}", e.tool, e.version)),
    ];
    table(o, &header, &rows, header.len());
}

/// The devices a run measured, each with what it is called in the run: a
/// link's record (`devices`, one per link of roundtrip, curve and load) or
/// a stream job's (`device` on each job).
fn run_devices(r: &SavedRun) -> Vec<(String, &serde_json::Value)> {
    let mut out: Vec<(String, &serde_json::Value)> = r
        .run
        .devices()
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("link {}", i + 1), d))
        .collect();
    if let crate::result::saved::AnyRun::Stream(s) = &r.run {
        for (i, j) in s.jobs.iter().enumerate() {
            if let Some(d) = j
                .job()
                .and_then(|j| j.device.as_ref())
                .filter(|d| d.is_object())
            {
                out.push((format!("job {}", i + 1), d));
            }
        }
    }
    out
}

/// A JSON value as a table cell: strings as they are, the rest as JSON.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// What measured each run, for the bring-up engineer who asks "which
/// plugin, which ABI, what did its counters say, what failed": each device
/// record as a key/value table, then its counters as one. Everything in it
/// comes from the plugin (names, messages, counters) and is escaped.
fn devices(o: &mut String, runs: &[SavedRun]) {
    if runs.iter().all(|r| run_devices(r).is_empty()) {
        return;
    }
    o.push_str("<h2 id=\"devices\">Devices</h2>\n");
    o.push_str("<p class=\"note\">The device behind each link or stream job (a plugin), as the run recorded it: its library and ABI, the modes it was opened in, what failed, and the counters it returned at the end.</p>\n");
    const FIELDS: [(&str, &str); 5] = [
        ("plugin", "plugin"),
        ("description", "description"),
        ("abi", "ABI"),
        ("library", "library"),
        ("spec", "spec"),
    ];
    for r in runs {
        let list = run_devices(r);
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "<h3>{} <span class=\"note\">({})</span></h3>",
            esc(&r.label),
            esc(&r.experiment)
        );
        for (what, d) in list {
            let mut rows: Vec<Vec<String>> = Vec::new();
            for (k, name) in FIELDS {
                if let Some(v) = d.get(k).filter(|v| !v.is_null()) {
                    rows.push(vec![name.to_string(), cell(v)]);
                }
            }
            let modes: Vec<String> = ["buffers", "completion"]
                .iter()
                .filter_map(|k| d.get(*k).filter(|v| !v.is_null()).map(cell))
                .collect();
            if !modes.is_empty() {
                rows.push(vec!["buffers/completion".into(), modes.join("/")]);
            }
            for (k, name) in [("error", "error"), ("close", "close"), ("state", "state")] {
                if let Some(v) = d.get(k).filter(|v| !v.is_null()) {
                    rows.push(vec![name.to_string(), cell(v)]);
                }
            }
            let name = d.get("plugin").map(cell).unwrap_or_default();
            let header = vec![what.clone(), name];
            table(o, &header, &rows, 2);
            match d.get("counters") {
                Some(serde_json::Value::Object(c)) if !c.is_empty() => {
                    let rows: Vec<Vec<String>> =
                        c.iter().map(|(k, v)| vec![k.clone(), cell(v)]).collect();
                    let header = vec![format!("{what} counters"), "value".into()];
                    table(o, &header, &rows, 1);
                }
                Some(v) if !v.is_null() && !v.is_object() => {
                    let _ = writeln!(o, "<p class=\"note\">Counters: {}</p>", esc(&cell(v)));
                }
                _ => {
                    let _ = writeln!(
                        o,
                        "<p class=\"note\">{}: no counters (the plugin keeps none, or the run stopped before reading them).</p>",
                        esc(&what)
                    );
                }
            }
        }
    }
}

fn runs(o: &mut String, runs: &[SavedRun]) {
    o.push_str("<h2 id=\"runs\">Runs</h2>\n");
    for r in runs {
        let _ = writeln!(
            o,
            "<h3>{} <span class=\"note\">({}, {})</span></h3>",
            esc(&r.label),
            esc(&r.experiment),
            r.env
                .as_ref()
                .map_or("time unknown".into(), |e| esc(&e.timestamp))
        );
        if !r.complete {
            let _ = writeln!(
                o,
                "<p class=\"bad\">Incomplete: {}.</p>",
                esc(r.stopped_by.as_deref().unwrap_or("stopped early"))
            );
        }
        match r.command() {
            Some(c) => {
                let _ = writeln!(o, "<pre><code>{}</code></pre>", esc(&c));
            }
            None => o.push_str("<p class=\"note\">The command line was not recorded.</p>\n"),
        }
        if let Some(p) = r.run.placement() {
            let _ = writeln!(
                o,
                "<p class=\"note\">Placement: {}</p>",
                esc(&super::headline::placement(p))
            );
        }
    }
}
