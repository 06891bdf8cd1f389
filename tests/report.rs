//! `xferbench report` on small fixed results (tests/fixtures/, one per
//! experiment): every plot kind renders an SVG that parses and holds the
//! expected series and axis labels, the HTML holds every run and references
//! nothing outside itself, and `--compare` puts the seed's numbers beside ours.

mod common;

use common::{finish, stderr, xferbench};
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
