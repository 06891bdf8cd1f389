//! `xferbench report` on small fixed results (tests/fixtures/, one per
//! experiment): every plot kind renders an SVG that parses and holds the
//! expected series and axis labels, the HTML holds every run and references
//! nothing outside itself, and `--compare` puts the seed's numbers beside ours.

mod common;

use common::{finish, stderr, xferbench};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

const FIXTURES: [&str; 5] = [
    "roundtrip.json",
    "curve.json",
    "stream.json",
    "load.json",
    "flowgraph.json",
];

/// Every `<text>` in an SVG, whitespace-trimmed, after checking it parses.
fn svg_texts(path: &Path) -> Vec<String> {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_string())
        .collect()
}

/// Count of round markers: one per measured point, plus one per measured
/// series in the legend (models, bounds and references have none).
fn markers(path: &Path) -> usize {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("circle"))
        .count()
}

fn render_svgs(dir: &Path, extra: &[&str]) -> Vec<PathBuf> {
    let mut c = xferbench();
    c.arg("report");
    for f in FIXTURES {
        c.arg(fixture(f));
    }
    c.arg("--svg").arg(dir).args(extra);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn every_plot_kind_renders_with_its_series_and_labelled_axes() {
    let dir = tempfile::tempdir().unwrap();
    let files = render_svgs(dir.path(), &[]);
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "roundtrip-1.svg",
        "roundtrip-2.svg",
        "curve-latency.svg",
        "curve-bandwidth.svg",
        "stream-bandwidth.svg",
        "load-rate.svg",
        "load-kbps.svg",
        "load-latency.svg",
        "flowgraph-1-cores.svg",
        "flowgraph-2-cores.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    let texts = |n: &str| svg_texts(&dir.path().join(n));
    let has = |t: &[String], s: &str| t.iter().any(|x| x == s);

    // Curve: both transports and their models, log axes labelled with units.
    let t = texts("curve-latency.svg");
    for s in [
        "thread pingpong raw/poll",
        "tcp pingpong raw/poll",
        "thread pingpong raw/poll model",
        "tcp pingpong raw/poll model",
        "message size (bytes)",
        "one-way latency (µs)",
    ] {
        assert!(has(&t, s), "curve-latency lacks '{s}': {t:?}");
    }
    assert_eq!(markers(&dir.path().join("curve-latency.svg")), 2 * 5 + 2);
    assert!(has(&texts("curve-bandwidth.svg"), "bandwidth (MB/s)"));

    // Round trip: a heat map with every cell's value printed.
    let t = texts("roundtrip-1.svg");
    assert!(has(&t, "Round trip, tcp user/block"), "{t:?}");
    for s in ["in (bytes)", "out (bytes)", "64", "1k"] {
        assert!(has(&t, s), "roundtrip lacks '{s}': {t:?}");
    }
    // tcp fixture: mean = 20000 + in + 2·out ns → 20.2, 21.2, 22.1, 23.1 µs.
    for v in ["20.2", "21.2", "22.1", "23.1"] {
        assert!(has(&t, v), "cell {v} missing: {t:?}");
    }

    // Stream: one series per job/engine/completion; clones add up.
    let t = texts("stream-bandwidth.svg");
    for s in [
        "dma-write write psync/interrupt",
        "dma-read read io_uring/poll",
        "block size (bytes)",
    ] {
        assert!(has(&t, s), "stream lacks '{s}': {t:?}");
    }

    // Load: one series per load mode and direction.
    let t = texts("load-rate.svg");
    for s in [
        "pipe idle read",
        "pipe memcopy write",
        "requests/s",
        "transfer size (bytes)",
    ] {
        assert!(has(&t, s), "load lacks '{s}': {t:?}");
    }
    assert_eq!(markers(&dir.path().join("load-rate.svg")), 4 * 3 + 4);
    assert!(has(&texts("load-latency.svg"), "p99"));

    // Flowgraph: schedulers solid, ideal bounds dashed (no markers).
    let t = texts("flowgraph-2-cores.svg");
    for s in [
        "static",
        "ring",
        "ideal dynamic (N/M)",
        "ideal static (1/⌈M/N⌉)",
        "saxpy blocks (M)",
        "samples/s",
    ] {
        assert!(has(&t, s), "flowgraph lacks '{s}': {t:?}");
    }
    assert_eq!(
        markers(&dir.path().join("flowgraph-2-cores.svg")),
        2 * 5 + 2
    );
    assert_eq!(
        markers(&dir.path().join("flowgraph-1-cores.svg")),
        3 * 3 + 3
    );
}

#[test]
fn the_html_report_holds_every_run_and_nothing_external() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = xferbench();
    c.arg("report");
    for f in FIXTURES {
        c.arg(fixture(f));
    }
    c.arg("--html").arg(dir.path());
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Every run, with the exact command that produced it.
    for cmd in [
        "xferbench roundtrip -t tcp,pipe --in 64,1k --out 64,1k",
        "xferbench curve -t thread,tcp --sizes 1,64,4k,64k,1M",
        "xferbench stream --job dma.fio --bs 4k,1m",
        "xferbench load -t pipe --sizes 512,4k,16k --load idle,memcopy",
        "xferbench flowgraph --cores 1..2",
    ] {
        assert!(html.contains(cmd), "command missing: {cmd}");
    }
    // The environment, the caveats, and the incomplete run said as such.
    for s in [
        "fixture-host",
        "Fixture CPU",
        "CLOCK_MONOTONIC",
        "fixture run-level caveat",
        "few samples: fixture warning",
        "INCOMPLETE: interrupted",
    ] {
        assert!(html.contains(s), "'{s}' missing");
    }
    // One inline SVG per figure, each figure with its table.
    assert_eq!(html.matches("<svg").count(), 10);
    assert_eq!(html.matches("<figure>").count(), 10);
    assert!(html.matches("<table>").count() >= 10 + 2);
    // Self-contained: nothing fetched from anywhere.
    let lower = html.to_lowercase();
    for bad in [
        "<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "http://", "https://",
    ] {
        let hits: Vec<_> = lower
            .match_indices(bad)
            .map(|(i, _)| &html[i..(i + 80).min(html.len())])
            .collect();
        // The SVG namespace is an identifier, not a fetch.
        let real: Vec<_> = hits
            .iter()
            .filter(|h| !h.starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(real.is_empty(), "external reference {bad}: {real:?}");
    }
    let doc_ok = html.matches("<html").count() == 1 && html.trim_end().ends_with("</html>");
    assert!(doc_ok, "one whole document");
}

#[test]
fn compare_puts_published_figures_beside_ours() {
    // Round trip vs Vollo raw: the tcp fixture's 64×64 mean (20.2 µs) beside
    // the seed's 1.7 µs (32 bf16 values in and out), ratio 11.88×.
    let mut c = xferbench();
    c.arg("report")
        .arg(fixture("roundtrip.json"))
        .args(["--compare", "vollo-ia420f-raw"]);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let cells = text
        .lines()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        .find(|c| c.len() > 4 && c[1..4] == ["tcp user/block", "64", "64"])
        .unwrap_or_else(|| panic!("no 64×64 row: {text}"));
    assert_eq!(
        &cells[4..10],
        ["20.2", "1.7", "11.88×", "30.3", "1.9", "15.94×"],
        "{cells:?}"
    );
    // …and the ratio heat map follows each matrix.
    let dir = tempfile::tempdir().unwrap();
    let mut c = xferbench();
    c.arg("report")
        .arg(fixture("roundtrip.json"))
        .arg(fixture("curve.json"))
        .args(["--compare", "vollo-ia420f-raw,bip-myrinet", "--svg"])
        .arg(dir.path());
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        dir.path()
            .join("roundtrip-1-vs-vollo-ia420f-raw.svg")
            .exists()
    );
    // The curve gets BIP's curve overlaid, in the legend by name.
    let t = svg_texts(&dir.path().join("curve-latency.svg"));
    assert!(t.iter().any(|x| x == "bip-myrinet"), "{t:?}");
}

#[test]
fn compare_with_nothing_to_match_says_so() {
    let mut c = xferbench();
    c.arg("report")
        .arg(fixture("roundtrip.json"))
        .args(["--compare", "bip-myrinet"]);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("none of these runs measured"), "{text}");
}

#[test]
fn bad_inputs_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let not_result = dir.path().join("x.json");
    std::fs::write(&not_result, "{\"a\": 1}").unwrap();
    let garbage = dir.path().join("g.json");
    std::fs::write(&garbage, "not json").unwrap();
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec!["report".into(), dir.path().join("missing.json").into()],
            "cannot read",
        ),
        (vec!["report".into(), garbage.into()], "is not JSON"),
        (
            vec!["report".into(), not_result.into()],
            "not an xferbench result",
        ),
        (
            vec![
                "report".into(),
                fixture("roundtrip.json").into(),
                "--compare".into(),
                "nope".into(),
            ],
            "unknown reference dataset",
        ),
        (vec!["report".into()], "required"),
    ];
    for (args, want) in cases {
        let mut c = xferbench();
        c.args(&args);
        let o = finish(c);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn experiments_take_compare_too() {
    let mut c = xferbench();
    c.args([
        "roundtrip",
        "-t",
        "pipe",
        "--in",
        "64",
        "--out",
        "64",
        "--duration",
        "30ms",
        "-q",
        "--compare",
        "vollo-ia420f-user",
    ]);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    // The seed's user-buffer 32×32 values (64 B each way): mean 1.8, p99 2.0.
    let row = text
        .lines()
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        .find(|c| c.len() > 9 && c[1] == "pipe user/block")
        .unwrap_or_else(|| panic!("no comparison row: {text}"));
    assert_eq!(
        (row[2], row[3], row[5], row[8]),
        ("64", "64", "1.8", "2.0"),
        "{row:?}"
    );
    // A wrong name stops the run before it starts.
    let mut c = xferbench();
    c.args(["curve", "-t", "thread", "--compare", "nope"]);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown reference dataset"),
        "{}",
        stderr(&o)
    );
}

/// Every `<rect>` of an SVG as (x, y, width, height, fill).
fn svg_rects(path: &Path) -> Vec<(f64, f64, f64, f64, String)> {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    let f =
        |n: &roxmltree::Node, k: &str| n.attribute(k).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    doc.descendants()
        .filter(|n| n.has_tag_name("rect"))
        .map(|n| {
            let fill = n.attribute("fill").unwrap_or("").to_string();
            (
                f(&n, "x"),
                f(&n, "y"),
                f(&n, "width"),
                f(&n, "height"),
                fill,
            )
        })
        .collect()
}

/// The cells of a heat map: the squares of its most common size, a
/// structural count that the legend's thin bars and the page never match.
fn heat_cells(path: &Path) -> Vec<(f64, f64, String)> {
    let rects = svg_rects(path);
    let squares: Vec<f64> = rects
        .iter()
        .filter(|r| r.2 == r.3 && r.2 >= 10.0 && r.2 <= 80.0)
        .map(|r| r.2)
        .collect();
    let side = squares
        .iter()
        .copied()
        .max_by_key(|s| squares.iter().filter(|t| *t == s).count())
        .unwrap_or_else(|| panic!("no square cells in {}", path.display()));
    rects
        .into_iter()
        .filter(|r| r.2 == side && r.3 == side)
        .map(|r| (r.0, r.1, r.4))
        .collect()
}

/// A heat map's rank labels ("host:rank"): (text, x, y, font size, rotated).
fn rank_labels(path: &Path) -> Vec<(String, f64, f64, f64, bool)> {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    let num = |n: &roxmltree::Node, k: &str| -> f64 {
        n.attribute(k).and_then(|v| v.parse().ok()).unwrap_or(0.0)
    };
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| {
            let t = n.text()?.trim().to_string();
            let (host, rank) = t.rsplit_once(':')?;
            let ok = !host.is_empty() && rank.parse::<usize>().is_ok();
            ok.then(|| {
                let rotated = n.attribute("transform").is_some();
                (
                    t.clone(),
                    num(&n, "x"),
                    num(&n, "y"),
                    num(&n, "font-size"),
                    rotated,
                )
            })
        })
        .collect()
}

fn report_ok(args: &[&std::ffi::OsStr]) -> String {
    let mut c = xferbench();
    c.arg("report").args(args);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

const MESH_SVGS: [&str; 3] = [
    "mesh-1-latency-p50.svg",
    "mesh-1-latency-p99.svg",
    "mesh-1-bandwidth.svg",
];

#[test]
fn a_mesh_report_leads_with_its_suspect_then_three_host_grouped_matrices() {
    let text = report_ok(&[fixture("mesh.json").as_os_str()]);
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("no '{s}' in\n{text}"))
    };
    let suspect = at("rank 1 (node02) ↔ all: bandwidth 0.40× the median");
    assert!(text.contains("— confirmed by re-test"), "{text}");
    assert!(suspect < at("Health gate (bandwidth ≥ 5000 MB/s): FAILED, 6 pairs"));
    assert!(
        suspect < at("from\\to"),
        "suspect after the matrices:\n{text}"
    );
    // Three matrices, ranks (placed round-robin) regrouped by host.
    let headers: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.contains("from\\to"))
        .map(|l| {
            l.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(headers.len(), 3, "{text}");
    for h in &headers {
        assert_eq!(
            h[..],
            [
                "from\\to", "node01:0", "node01:2", "│", "node02:1", "node02:3"
            ]
        );
    }
    at("Median one-way latency between ranks, 8 bytes");
    at("p99 one-way latency between ranks, 8 bytes");
    at("Bandwidth between ranks, 1M bytes");
    let row = text
        .lines()
        .find(|l| l.starts_with("| node02:1"))
        .unwrap_or_else(|| panic!("no node02:1 row: {text}"));
    assert!(row.contains(" · "), "diagonal: {row}");
}

#[test]
fn mesh_heat_maps_have_a_cell_per_pair_rank_labels_and_a_colour_scale() {
    let dir = tempfile::tempdir().unwrap();
    report_ok(&[
        fixture("mesh.json").as_os_str(),
        "--svg".as_ref(),
        dir.path().as_os_str(),
    ]);
    for (name, unit) in MESH_SVGS.iter().zip(["µs", "µs", "MB/s"]) {
        let p = dir.path().join(name);
        let cells = heat_cells(&p);
        assert_eq!(cells.len(), 4 * 4, "{name}");
        // The diagonal is grey, the same for every figure.
        let grey = cells.iter().filter(|c| c.2 == "#CDCDCD").count();
        assert_eq!(grey, 4, "{name}");
        let t = svg_texts(&p);
        for s in [
            "node01:0",
            "node01:2",
            "node02:1",
            "node02:3",
            "from (sending rank)",
            "to (receiving rank)",
            unit,
        ] {
            assert!(t.iter().any(|x| x == s), "{name} lacks '{s}': {t:?}");
        }
        // The colour scale: a bar of many thin slices beside the grid.
        let slices = svg_rects(&p)
            .iter()
            .filter(|r| r.2 == 16.0 && r.3 < 16.0)
            .count();
        assert!(slices >= 32, "{name}: {slices} legend slices");
    }
    // Dark is worse both ways: the darkest bandwidth cell is a pair of the
    // slow rank (node02:1, third in the host order), the palest latency
    // cell (the grey diagonal aside) a pair within one host.
    let lum = |fill: &str| {
        let c = |i| u32::from(u8::from_str_radix(&fill[i..i + 2], 16).unwrap());
        c(1) + c(3) + c(5)
    };
    let extreme = |name: &str, darkest: bool| {
        let cells = heat_cells(&dir.path().join(name));
        let (x0, y0) = cells
            .iter()
            .fold((f64::MAX, f64::MAX), |m, c| (m.0.min(c.0), m.1.min(c.1)));
        let side = (cells[1].0 - cells[0].0).abs();
        let pick = cells.iter().filter(|c| c.2 != "#CDCDCD");
        let c = if darkest {
            pick.min_by_key(|c| lum(&c.2))
        } else {
            pick.max_by_key(|c| lum(&c.2))
        };
        let c = c.unwrap();
        (((c.1 - y0) / side) as usize, ((c.0 - x0) / side) as usize)
    };
    let (row, col) = extreme("mesh-1-bandwidth.svg", true);
    assert!(row == 2 || col == 2, "darkest bandwidth at {row}, {col}");
    let (row, col) = extreme("mesh-1-latency-p50.svg", false);
    assert_eq!(row / 2, col / 2, "palest latency at {row}, {col}");
}

#[test]
fn a_mesh_run_cut_short_draws_its_missing_pairs() {
    let text = report_ok(&[fixture("mesh-partial.json").as_os_str()]);
    assert!(text.matches("missing").count() >= 3 * 3, "{text}");
    assert!(text.contains("No suspects"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    report_ok(&[
        fixture("mesh-partial.json").as_os_str(),
        "--svg".as_ref(),
        dir.path().as_os_str(),
    ]);
    for name in MESH_SVGS {
        let p = dir.path().join(name);
        assert_eq!(heat_cells(&p).len(), 3 * 3, "{name}");
        let s = std::fs::read_to_string(&p).unwrap();
        // Three hatch strokes in each of the three missing cells.
        assert_eq!(s.matches("stroke=\"#6E6E6E\"").count(), 3 * 3, "{name}");
    }
    let t = svg_texts(&dir.path().join("mesh-1-latency-p50.svg"));
    assert!(t.iter().any(|x| x == "µs"), "{t:?}");
}

#[test]
fn the_html_report_shows_a_mesh_runs_suspects_beside_its_heat_maps() {
    let dir = tempfile::tempdir().unwrap();
    report_ok(&[
        fixture("mesh.json").as_os_str(),
        "--html".as_ref(),
        dir.path().as_os_str(),
    ]);
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no '{s}'"));
    assert!(at("<h2 id=\"mesh\">Mesh</h2>") < at("<div class=\"lead\">"));
    assert!(at("<div class=\"lead\">") < at("<figure>"));
    at("rank 1 (node02) ↔ all: bandwidth 0.40×");
    at("Health gate (bandwidth ≥ 5000 MB/s): FAILED");
    assert_eq!(html.matches("<figure>").count(), 3);
    // The summary names the run's headline.
    at("4 ranks, intra-host p50");
}

/// A synthetic mesh of `hosts` × `per_host` ranks (block placement):
/// intra-host pairs faster, rank 5 slow, every pair measured.
fn synthetic_mesh(hosts: usize, per_host: usize) -> serde_json::Value {
    use serde_json::json;
    let n = hosts * per_host;
    let host = |r: usize| format!("node{:02}", r / per_host + 1);
    let value = |f: usize, t: usize, intra: f64, inter: f64, slow: f64| {
        let base = if f / per_host == t / per_host {
            intra
        } else {
            inter
        };
        let noise = 1.0 + ((f * 7 + t * 13) % 10) as f64 / 100.0;
        base * noise * if f == 5 || t == 5 { slow } else { 1.0 }
    };
    let matrix = |intra: f64, inter: f64, slow: f64| -> Vec<Vec<Option<f64>>> {
        (0..n)
            .map(|f| {
                (0..n)
                    .map(|t| (f != t).then(|| value(f, t, intra, inter, slow)))
                    .collect()
            })
            .collect()
    };
    let points: Vec<serde_json::Value> = (0..n)
        .flat_map(|f| (0..n).filter(move |&t| t != f).map(move |t| (f, t)))
        .map(|(f, t)| {
            json!({"from": f, "to": t, "intra_host": f / per_host == t / per_host, "round": 0,
                   "latency": [{"size_bytes": 8, "warmup": 100, "timed_s": 0.05,
                                "oneway": summary(1000, 1500, 2500)}],
                   "bandwidth": [{"size_bytes": 1048576, "window": 64, "warmup": 4, "timed_s": 0.1,
                                  "bytes": 1u64 << 30, "bandwidth_MBps": 11000.0,
                                  "median_MBps": 11000.0, "window_time": summary(50, 0, 0)}],
                   "missing": false})
        })
        .collect();
    json!({
        "experiment": "mesh", "complete": true, "ranks_total": n,
        "ranks": (0..n).map(|r| json!({"rank": r, "host": host(r), "cpu": null, "core": null,
                                       "socket": null, "allowed_cpus": [], "pid": 1000 + r}))
            .collect::<Vec<_>>(),
        "schedule": {"kind": "tournament", "mode": "sequential", "rounds": n - 1, "pairs_per_round": n / 2},
        "points": points,
        "matrices": {"latency_size_bytes": 8, "bandwidth_size_bytes": 1048576,
                     "latency_p50_us": matrix(0.45, 1.8, 1.3),
                     "latency_p99_us": matrix(0.7, 2.9, 1.3),
                     "bandwidth_MBps": matrix(8200.0, 11500.0, 0.41)},
        "merged": [], "baselines": [],
        "suspects": [{"metric": "bandwidth", "line": "rank 5 (node02) ↔ all: bandwidth 0.41× the median of the other pairs",
                      "finding": {"subject": {"kind": "rank", "rank": 5, "host": "node02"},
                                  "scope": "inter", "side": "both", "value": 4700.0,
                                  "baseline": 11500.0, "ratio": 0.41, "factor": 2.4, "z": 9.0,
                                  "cells": [[5, 0], [0, 5]]},
                      "retest": [4700.0], "confirmed": true}],
        "health": {"failing": [], "failing_ranks": [], "passed": true},
        "missing": [], "warnings": []
    })
}

/// A whole latency summary: `count` samples, median `p50` and tail `p99`, ns.
fn summary(count: u64, p50: u64, p99: u64) -> serde_json::Value {
    serde_json::json!({"count": count, "mean_ns": p50 as f64, "stddev_ns": 0.0, "min_ns": p50,
           "p50_ns": p50, "p90_ns": p50, "p99_ns": p99, "p999_ns": p99,
           "p9999_ns": p99, "max_ns": p99})
}

#[test]
fn mesh_heat_maps_stay_readable_at_16_and_64_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for (hosts, per_host) in [(4, 4), (16, 4)] {
        let n = hosts * per_host;
        let json = dir.path().join(format!("mesh{n}.json"));
        std::fs::write(&json, synthetic_mesh(hosts, per_host).to_string()).unwrap();
        let out = dir.path().join(format!("svg{n}"));
        report_ok(&[json.as_os_str(), "--svg".as_ref(), out.as_os_str()]);
        let text = report_ok(&[json.as_os_str()]);
        assert!(
            text.contains(&format!("node{hosts:02}:{}", n - 1)),
            "{n}: no last rank"
        );
        for name in MESH_SVGS {
            let p = out.join(name);
            let cells = heat_cells(&p);
            assert_eq!(cells.len(), n * n, "{n} ranks, {name}");
            let side = svg_rects(&p)
                .iter()
                .find(|r| r.0 == cells[1].0 && r.1 == cells[1].1)
                .map(|r| r.2)
                .unwrap();
            assert!(side >= 10.0, "{n} ranks: {side} px cells");
            let labels = rank_labels(&p);
            let (cols, rows): (Vec<_>, Vec<_>) = labels.iter().partition(|l| l.4);
            // Every rank labelled up to 32, at least every other one beyond.
            let want = if n <= 32 { n } else { n / 2 };
            assert!(
                cols.len() >= want && rows.len() >= want,
                "{n}: {} / {}",
                cols.len(),
                rows.len()
            );
            // Neighbouring labels at least a font height apart: column
            // labels run upwards, so they are spaced along x; rows along y.
            for (axis, coord) in [(&cols, 1usize), (&rows, 2)] {
                let mut at: Vec<(f64, f64)> = axis
                    .iter()
                    .map(|l| (if coord == 1 { l.1 } else { l.2 }, l.3))
                    .collect();
                at.sort_by(|a, b| a.0.total_cmp(&b.0));
                for w in at.windows(2) {
                    assert!(
                        w[1].0 - w[0].0 >= w[0].1,
                        "{n} ranks, {name}: labels overlap at {w:?}"
                    );
                }
            }
            // Values in the cells while they are big enough (16 ranks), not beyond.
            let numbers = svg_texts(&p)
                .iter()
                .filter(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()))
                .count();
            if n <= 16 {
                assert!(numbers >= n * (n - 1), "{n} ranks: {numbers} values");
            } else {
                assert!(
                    numbers < 20,
                    "{n} ranks: {numbers} values printed in 12 px cells"
                );
            }
        }
    }
}

#[test]
fn a_pairs_run_draws_aggregate_and_per_pair_bandwidth_and_the_message_rate() {
    // `curve -t mpi --pairs 2` under mpirun -n 4 on this machine.
    let text = report_ok(&[fixture("pairs.json").as_os_str()]);
    assert!(text.contains("2 pairs, aggregate"), "{text}");
    assert!(
        text.contains("pair 0 → 2") && text.contains("pair 1 → 3"),
        "{text}"
    );
    assert!(text.contains("message rate vs message size"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let mut c = xferbench();
    c.arg("report")
        .arg(fixture("pairs.json"))
        .arg("--svg")
        .arg(dir.path());
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["pairs-bandwidth.svg", "pairs-rate.svg"] {
        let texts = svg_texts(&dir.path().join(f));
        assert!(
            texts.iter().any(|t| t.contains("message size")),
            "{f}: {texts:?}"
        );
    }
}

/// A histogram field as the runs write it (HdrHistogram V2 + deflate,
/// base64) of `n` samples around `ns`, with a tail: one in a hundred ten
/// times slower.
fn histogram(ns: u64, n: u64) -> String {
    use base64::Engine;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000_000, 3).unwrap();
    for i in 0..n {
        let v = ns + (i * 7919) % (ns / 4 + 1);
        h.record(if i % 100 == 7 { v * 10 } else { v }).unwrap();
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&h, &mut bytes)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The round-trip fixture with a histogram of 2000 samples on each point
/// `keep` accepts (the others dropped), written to `dir/NAME.json`; `slow`
/// scales the latencies.
fn with_histograms(
    dir: &Path,
    name: &str,
    slow: u64,
    keep: impl Fn(&serde_json::Value) -> bool,
) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("roundtrip.json")).unwrap()).unwrap();
    let points = v["points"].as_array_mut().unwrap();
    points.retain(|p| keep(p));
    for p in points.iter_mut() {
        let mean = p["summary"]["mean_ns"].as_f64().unwrap() as u64;
        p["histogram"] = histogram(mean * slow, 2000).into();
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

/// How many series a line plot draws: the distinct colours of its 2 px
/// lines (each series has its own).
fn series_colours(path: &Path) -> usize {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    let mut c: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .filter_map(|n| n.attribute("stroke"))
        .collect();
    c.sort_unstable();
    c.dedup();
    c.len()
}

/// `report ARGS --svg DIR`: the SVG files' names, and stderr.
fn spectra(args: &[&Path], dir: &Path) -> (Vec<String>, String) {
    let mut c = xferbench();
    c.arg("report").args(args).arg("--svg").arg(dir);
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("spectrum-"))
        .collect();
    names.sort();
    (names, stderr(&o))
}

#[test]
fn a_run_with_histograms_gets_a_latency_spectrum_per_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let a = with_histograms(tmp.path(), "rt-a", 1, |_| true);
    let out = tmp.path().join("svg");
    let (names, err) = spectra(&[&a], &out);
    // Two configurations (tcp, pipe), four sizes each.
    assert_eq!(
        names,
        ["spectrum-roundtrip-1.svg", "spectrum-roundtrip-2.svg"]
    );
    assert!(!err.contains("warning"), "{err}");
    let path = out.join("spectrum-roundtrip-1.svg");
    let t = svg_texts(&path);
    let has = |s: &str| t.iter().any(|x| x == s);
    assert!(has("Latency spectrum, tcp user/block (rt-a)"), "{t:?}");
    // The nines axis, as far as 2000 samples reach (99.95%) and no further.
    for s in [
        "0%",
        "90%",
        "99%",
        "99.9%",
        "percentile (nines)",
        "round-trip time (µs)",
    ] {
        assert!(has(s), "no '{s}' in {t:?}");
    }
    assert!(!has("99.99%"), "a tick beyond the samples: {t:?}");
    for s in [
        "in 64, out 64",
        "in 1k, out 64",
        "in 64, out 1k",
        "in 1k, out 1k",
    ] {
        assert!(has(s), "no series '{s}' in {t:?}");
    }
    assert_eq!(series_colours(&path), 4);
    // A sampled curve: no marker per point.
    assert_eq!(markers(&path), 0);
    // The HTML says how to read one, and the table gives the percentiles.
    let mut c = xferbench();
    c.arg("report")
        .arg(&a)
        .arg("--html")
        .arg(tmp.path().join("html"));
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(tmp.path().join("html/index.html")).unwrap();
    assert!(html.contains("Latency distributions"));
    assert!(
        html.contains("the right end is the tail"),
        "no reading guide"
    );
    assert!(html.contains("<th>99.9%</th>"), "no percentile table");
}

#[test]
fn two_runs_of_the_same_point_share_one_spectrum() {
    let tmp = tempfile::tempdir().unwrap();
    let a = with_histograms(tmp.path(), "rt-a", 1, |_| true);
    // The second run: tcp at 64 × 64 only, twice as slow.
    let b = with_histograms(tmp.path(), "rt-b", 2, |p| {
        p["spec"] == "tcp" && p["in_bytes"] == 64 && p["out_bytes"] == 64
    });
    let out = tmp.path().join("svg");
    let (names, _) = spectra(&[&a, &b], &out);
    // tcp 64 × 64 compared; pipe, in run a only, on its own.
    assert_eq!(
        names,
        ["spectrum-roundtrip-1.svg", "spectrum-roundtrip-2.svg"]
    );
    let path = out.join("spectrum-roundtrip-1.svg");
    let t = svg_texts(&path);
    assert!(
        t.iter()
            .any(|x| x == "Latency spectrum, tcp user/block, in 64, out 64: rt-a vs rt-b"),
        "{t:?}"
    );
    let legend: Vec<&String> = t.iter().filter(|x| x.starts_with("rt-")).collect();
    assert_eq!(legend, ["rt-a", "rt-b"]);
    assert_eq!(series_colours(&path), 2);
    let t = svg_texts(&out.join("spectrum-roundtrip-2.svg"));
    assert!(
        t.iter()
            .any(|x| x == "Latency spectrum, pipe user/block (rt-a)"),
        "{t:?}"
    );
    // The caption, in the tables on stdout, names the baseline and what
    // was left out.
    let text = report_ok(&[a.as_os_str(), b.as_os_str()]);
    assert!(text.contains("dashed: rt-a (given first)"), "{text}");
    assert!(
        text.contains("3 points measured in one run only are not compared"),
        "{text}"
    );
}

#[test]
fn runs_saved_before_histograms_and_a_broken_histogram_still_render() {
    let tmp = tempfile::tempdir().unwrap();
    // Old JSON: no histogram anywhere, no spectrum, no warning.
    let (names, err) = spectra(&[&fixture("roundtrip.json")], &tmp.path().join("old"));
    assert!(names.is_empty(), "{names:?}");
    assert!(!err.contains("warning"), "{err}");
    // One point's histogram mangled: left out with a warning, not a panic.
    let a = with_histograms(tmp.path(), "rt-a", 1, |_| true);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    v["points"][0]["histogram"] = "not a histogram!".into();
    std::fs::write(&a, v.to_string()).unwrap();
    let out = tmp.path().join("svg");
    let (names, err) = spectra(&[&a], &out);
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    assert!(
        err.contains("warning: rt-a: tcp user/block, in 64, out 64: histogram is not base64"),
        "{err}"
    );
    assert_eq!(series_colours(&out.join("spectrum-roundtrip-1.svg")), 3);
}

/// A copy of a fixture, `dir/NAME.json`, `k` times slower: every latency
/// figure (`*_ns`, in the summaries, repeats and intervals) times `k`,
/// bandwidth over `k`; `edit` changes each point after.
fn slowed(
    dir: &Path,
    from: &str,
    name: &str,
    k: f64,
    edit: impl Fn(&mut serde_json::Value),
) -> PathBuf {
    fn scale(v: &mut serde_json::Value, k: f64) {
        match v {
            serde_json::Value::Object(o) => {
                for (key, x) in o.iter_mut() {
                    match x.as_f64() {
                        // A summary's counts of ns stay whole numbers.
                        Some(n) if key.ends_with("_ns") && key != "responder_delay_ns" => {
                            *x = if x.is_u64() {
                                ((n * k).round() as u64).into()
                            } else {
                                (n * k).into()
                            }
                        }
                        Some(n) if key == "bandwidth_MBps" => *x = (n / k).into(),
                        _ => scale(x, k),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| scale(x, k)),
            _ => {}
        }
    }
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(from)).unwrap()).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        scale(p, k);
        edit(p);
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

/// Error bars in an SVG: the I shapes (six-point polylines, 1 px) drawn
/// at each point with an interval.
fn error_bars(path: &Path) -> usize {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("1"))
        .filter(|n| n.attribute("points").map(|p| p.split_whitespace().count()) == Some(6))
        .count()
}

/// `report ARGS --html DIR/html --svg DIR/svg`: the page, and stdout of
/// the same report as text.
fn compared(args: &[&Path], dir: &Path) -> (String, String) {
    let mut c = xferbench();
    c.arg("report")
        .args(args)
        .arg("--html")
        .arg(dir.join("html"))
        .arg("--svg")
        .arg(dir.join("svg"));
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.join("html/index.html")).unwrap();
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|p| p.as_os_str()).collect();
    (html, report_ok(&args))
}

#[test]
fn two_curve_runs_get_a_comparison_table_and_both_curves_with_their_intervals() {
    // A real `curve --repeat 3` run, and the same half as fast again.
    let tmp = tempfile::tempdir().unwrap();
    let base = fixture("curve-repeats.json");
    let slow = slowed(tmp.path(), "curve-repeats.json", "slow", 1.5, |_| {});
    let (html, text) = compared(&[&base, &slow], tmp.path());
    // The text: compare's Markdown table, then the figures' numbers with
    // each value's interval.
    assert!(
        text.contains("## compare curve: curve-repeats → slow"),
        "{text}"
    );
    assert!(text.contains("FAIL: "), "{text}");
    assert!(text.contains("| **regressed"), "{text}");
    assert!(
        text.contains("## One-way latency (p50) vs message size: curve-repeats vs slow"),
        "{text}"
    );
    assert!(text.contains("99% interval of each run's figure"), "{text}");
    // The page: a section of its own, linked, with the table's regressed
    // rows marked and the figures inline.
    assert!(html.contains("<a href=\"#comparison-of-runs\">Comparison of runs</a>"));
    assert!(
        html.contains("<h3>curve: curve-repeats → slow</h3>"),
        "no heading"
    );
    assert!(html.contains("<p class=\"bad\">FAIL: "), "no tally");
    assert!(
        html.contains("<tr class=\"regressed\">"),
        "no regressed row"
    );
    assert!(html.contains("<td class=\"verdict\">regressed</td>"));
    assert!(html.contains("<th>99% interval</th>"));
    assert!(html.contains("intervals from the spread between repeats"));
    for id in ["compared-1-p50", "compared-1-bandwidth"] {
        assert!(
            html.contains(&format!("<h3 id=\"{id}\">")),
            "{id} not inline"
        );
    }
    // The SVG: two series (a colour each), legend = the runs, and a bar at
    // each of the three sizes of both runs.
    let svg = tmp.path().join("svg/compared-1-p50.svg");
    assert_eq!(series_colours(&svg), 2);
    let t = svg_texts(&svg);
    let legend: Vec<&String> = t
        .iter()
        .filter(|x| *x == "curve-repeats" || *x == "slow")
        .collect();
    assert_eq!(legend, ["curve-repeats", "slow"]);
    assert!(t.iter().any(|x| x == "one-way latency p50 (µs)"), "{t:?}");
    assert_eq!(error_bars(&svg), 2 * 3);
    assert_eq!(
        error_bars(&tmp.path().join("svg/compared-1-bandwidth.svg")),
        2 * 3
    );
    // The runs' own figures are still there, apart.
    assert!(tmp.path().join("svg/curve-latency.svg").exists());
}

#[test]
fn two_roundtrip_runs_compare_p50_and_p99_over_the_request_size() {
    let tmp = tempfile::tempdir().unwrap();
    let base = fixture("roundtrip-repeats.json");
    let slow = slowed(tmp.path(), "roundtrip-repeats.json", "slow", 1.5, |_| {});
    let (html, text) = compared(&[&base, &slow], tmp.path());
    assert!(text.contains("## compare roundtrip: roundtrip-repeats → slow"));
    assert!(
        html.contains("<tr class=\"regressed\">"),
        "no regressed row"
    );
    for (stem, y) in [
        ("p50", "round trip p50 (µs)"),
        ("p99", "round trip p99 (µs)"),
    ] {
        let svg = tmp.path().join(format!("svg/compared-1-{stem}.svg"));
        let t = svg_texts(&svg);
        // One out size: x is the request size, a series per run.
        for s in [y, "request size, in (bytes)", "64", "1k"] {
            assert!(t.iter().any(|x| x == s), "{stem}: no '{s}' in {t:?}");
        }
        assert_eq!(series_colours(&svg), 2, "{stem}");
        assert_eq!(error_bars(&svg), 2 * 2, "{stem}");
    }
}

#[test]
fn runs_with_no_point_in_common_still_report_and_say_why() {
    let tmp = tempfile::tempdir().unwrap();
    let base = fixture("curve-repeats.json");
    // The same sizes over another transport: nothing to compare.
    let other = slowed(tmp.path(), "curve-repeats.json", "tcp", 1.0, |p| {
        p["spec"] = "tcp".into();
        p["transport"] = "tcp".into();
    });
    let (html, text) = compared(&[&base, &other], tmp.path());
    assert!(
        text.contains("## compare curve: curve-repeats → tcp\n\nNot compared: curve-repeats and tcp have no point in common"),
        "{text}"
    );
    assert!(
        html.contains(
            "<p class=\"warn\">Not compared: curve-repeats and tcp have no point in common"
        ),
        "no reason in the page"
    );
    // No comparison figure, the runs' own figures as ever.
    let svgs: Vec<String> = std::fs::read_dir(tmp.path().join("svg"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!svgs.iter().any(|n| n.starts_with("compared-")), "{svgs:?}");
    assert!(svgs.iter().any(|n| n == "curve-latency.svg"), "{svgs:?}");
}

/// The round-trip fixture as a plugin run: its tcp points carry a latency
/// budget (5 µs of device time each, the rest host time) and the run a
/// device record whose plugin-given strings are hostile. Written to
/// `dir/plugin-run.json`.
fn plugin_run(dir: &Path) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("roundtrip.json")).unwrap()).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        if p["spec"] != "tcp" {
            continue;
        }
        let p50 = p["summary"]["p50_ns"].as_u64().unwrap();
        let summary = |p50: u64| {
            serde_json::json!({"count": 1000, "mean_ns": p50 as f64, "stddev_ns": 10.0,
                "min_ns": p50 - 100, "p50_ns": p50, "p90_ns": p50 + 200,
                "p99_ns": p50 + 1000, "p999_ns": p50 + 2000, "p9999_ns": p50 + 3000,
                "max_ns": p50 + 4000})
        };
        p["device_time"] =
            serde_json::json!({"device": summary(5000), "host": summary(p50 - 5000)});
    }
    v["devices"] = serde_json::json!([{
        "plugin": "<script>alert('dev')</script>",
        "description": "a <b>simulated</b> accelerator",
        "abi": "1.1",
        "library": "/opt/dev/<img src=x>.so",
        "spec": "plugin:path=/opt/dev/sim.so,lat=5us",
        "buffers": "raw",
        "completion": "poll",
        "counters": {"submitted": 4242, "<iframe>": "</table>"},
        "error": "plugin sim: wait() did not return within 2.0s",
        "close": "plugin sim: close() did not return within 2.0s"
    }]);
    let path = dir.join("plugin-run.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

/// A plugin run's report shows its device (name, ABI, library, modes,
/// counters, what failed; every plugin-given string escaped) and, for the
/// configuration whose points carry device time, a latency budget: one
/// stacked bar per (in, out) cell, device p50 at the bottom, host p50 on it.
#[test]
fn a_plugin_runs_report_shows_its_device_and_latency_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let run = plugin_run(tmp.path());
    let html_dir = tmp.path().join("html");
    report_ok(&[run.as_os_str(), "--html".as_ref(), html_dir.as_os_str()]);
    let html = std::fs::read_to_string(html_dir.join("index.html")).unwrap();
    for s in [
        "<a href=\"#devices\">Devices</a>",
        "<h2 id=\"devices\">Devices</h2>",
        "&lt;script&gt;alert(&#39;dev&#39;)&lt;/script&gt;",
        "a &lt;b&gt;simulated&lt;/b&gt; accelerator",
        "<td class=\"l\">ABI</td><td class=\"l\">1.1</td>",
        "/opt/dev/&lt;img src=x&gt;.so",
        "plugin:path=/opt/dev/sim.so,lat=5us",
        "raw/poll",
        "<td class=\"l\">submitted</td><td>4242</td>",
        "&lt;iframe&gt;",
        "&lt;/table&gt;",
        "wait() did not return within 2.0s",
        "close() did not return within 2.0s",
        "Latency budget, tcp user/block",
    ] {
        assert!(html.contains(s), "'{s}' missing from the HTML");
    }
    let lower = html.to_lowercase();
    for bad in ["<script", "<img", "<iframe", "<b>simulated"] {
        assert!(!lower.contains(bad), "unescaped {bad}");
    }
    // Two heat maps and the one budget (pipe has no device time).
    assert_eq!(html.matches("<svg").count(), 3);
    assert_eq!(
        html.matches("Latency budget, ").count(),
        2,
        "heading and SVG title"
    );

    let svg_dir = tmp.path().join("svg");
    report_ok(&[run.as_os_str(), "--svg".as_ref(), svg_dir.as_os_str()]);
    let budget = svg_dir.join("roundtrip-1-budget.svg");
    let t = svg_texts(&budget);
    let has = |s: &str| t.iter().any(|x| x == s);
    for s in [
        "Latency budget, tcp user/block",
        "in → out (bytes)",
        "round trip p50 (µs)",
        "64 → 64",
        "1k → 1k",
        "device",
        "host",
        // 64 → 64: p50 20.192 µs = 5 device + 15.192 host.
        "5.00",
        "15.2",
        "20.2",
    ] {
        assert!(has(s), "budget SVG lacks '{s}': {t:?}");
    }
    // Stacked: per bar a device rect with a host rect of another colour
    // standing on it (legend swatches aside: they are 12 px high).
    let rects: Vec<_> = svg_rects(&budget)
        .into_iter()
        .filter(|r| r.3 > 12.0 && r.4 != "#FFFFFF")
        .collect();
    assert_eq!(rects.len(), 8, "{rects:?}");
    let fills: Vec<&str> = rects.iter().map(|r| r.4.as_str()).collect();
    let device = fills[0];
    assert_eq!(
        fills.iter().filter(|f| **f == device).count(),
        4,
        "{fills:?}"
    );
    for pair in rects.chunks(2) {
        let (d, h) = (&pair[0], &pair[1]);
        assert_eq!(d.4, device);
        assert_ne!(h.4, device);
        assert!(
            (h.1 + h.3 - d.1).abs() <= 1.0,
            "host not on device: {pair:?}"
        );
        assert!((h.0 - d.0).abs() <= 1.0, "{pair:?}");
        assert!(
            h.3 > 2.0 * d.3,
            "15 µs of host above 5 µs of device: {pair:?}"
        );
    }
    // The text report gives the same numbers, with each part's p99.
    let text = report_ok(&[run.as_os_str()]);
    assert!(text.contains("## Latency budget, tcp user/block"), "{text}");
    assert!(text.contains("| device p99 | host p99 |"), "{text}");
}

/// Tens of thousands of points, each with its histogram, make a report
/// (the figures capped, every point in the tables) rather than an
/// hours-long, gigabytes-large run; points that are not a list are refused.
#[test]
fn large_and_malformed_saved_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("roundtrip-repeats.json")).unwrap())
            .unwrap();
    let p0 = d["points"][0].clone();
    let pts: Vec<Value> = (0..40_000)
        .map(|i| {
            let mut p = p0.clone();
            p["in_bytes"] = (64 + i).into();
            p["spec"] = format!("thread:n{}", i % 500).into();
            p
        })
        .collect();
    d["points"] = pts.into();
    let big = tmp.path().join("big.json");
    std::fs::write(&big, serde_json::to_string(&d).unwrap()).unwrap();
    let mut c = xferbench();
    c.arg("report")
        .arg(&big)
        .arg("--html")
        .arg(tmp.path().join("html"));
    let o = finish(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("more than a report draws"),
        "{}",
        stderr(&o)
    );
    // "points": "x"
    d["points"] = "x".into();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&d).unwrap()).unwrap();
    let mut c = xferbench();
    c.arg("report").arg(&bad);
    let o = finish(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("\"points\" is not a list"),
        "{}",
        stderr(&o)
    );
}
