//! The embedded reference datasets against the documents they come from.
//!
//! The datasets are built from the CSVs in data/reference; these tests parse
//! the seed documents in data/seeds independently and compare cell by cell,
//! so a slip in a CSV (or in the loader's reshaping) shows up as a named cell.
//! Where a dataset holds figures that no seed prints (the V80 cells, the EDMA
//! rows, the qsdr means), the test checks what the sources do state.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output};
use xferbench::error::Error;
use xferbench::reference::{Dataset, all, find, names};

const VOLLO_SEED: &str = include_str!("../data/seeds/vollo-io-round-trip.md");
const BIP_SEED: &str = include_str!("../data/seeds/bip-myrinet-curves.txt");
const RK11_SEED: &str = include_str!("../data/seeds/rk11perf.md");
const FIO_SEED: &str = include_str!("../data/seeds/fpga-dma-fio.md");
const SDR_SEED: &str = include_str!("../data/seeds/sdr-runtimes.rst");
const DATA_README: &str = include_str!("../data/reference/README.md");

/// The dataset names are public API (`--compare NAME`, scripts).
const NAMES: [&str; 13] = [
    "vollo-ia420f-user",
    "vollo-ia420f-raw",
    "vollo-ia420f-mmio",
    "vollo-v80-user",
    "vollo-v80-raw",
    "vollo-v80-mmio",
    "bip-myrinet",
    "rk11perf-basys3",
    "rk11perf-nexys2",
    "xdma-aws-f1",
    "edma-aws-f1",
    "qsdr-kv260",
    "qsdr-kv260-kernel",
];

fn ds(name: &str) -> Dataset {
    find(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Rows whose columns hold the given texts.
fn rows_where(d: &Dataset, keys: &[(&str, &str)]) -> Vec<usize> {
    (0..d.rows.len())
        .filter(|&i| keys.iter().all(|&(c, v)| d.text(i, c) == Some(v)))
        .collect()
}

/// The one row whose columns hold the given texts.
fn one(d: &Dataset, keys: &[(&str, &str)]) -> usize {
    match rows_where(d, keys)[..] {
        [i] => i,
        ref v => panic!("{}: {} rows match {keys:?}", d.name, v.len()),
    }
}

fn num(d: &Dataset, row: usize, col: &str) -> f64 {
    d.num(row, col)
        .unwrap_or_else(|| panic!("{} row {row}: {col} is not a number", d.name))
}

fn distinct(d: &Dataset, col: &str) -> BTreeSet<String> {
    (0..d.rows.len())
        .filter_map(|i| d.text(i, col).map(String::from))
        .collect()
}

// ---------------------------------------------------------------- registry

#[test]
fn names_are_the_public_set_unique_and_in_order() {
    let got: Vec<&str> = all().iter().map(|d| d.name).collect();
    assert_eq!(got, NAMES);
    assert_eq!(names(), NAMES);
    assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len());
}

#[test]
fn every_dataset_has_rows_with_every_column() {
    for d in all() {
        assert!(!d.rows.is_empty(), "{}", d.name);
        for (i, r) in d.rows.iter().enumerate() {
            assert_eq!(r.len(), d.columns.len(), "{} row {i}", d.name);
        }
        for f in [d.title, d.source, d.notes] {
            assert!(!f.trim().is_empty(), "{}", d.name);
        }
    }
}

#[test]
fn columns_are_standardised_per_experiment() {
    let roundtrip = ["in_bytes", "out_bytes", "mean_us", "p99_us"];
    let load = [
        "direction",
        "size_bytes",
        "nblk",
        "load",
        "cpu_mode",
        "req_per_s",
        "kb_per_s",
    ];
    let stream = [
        "direction",
        "completion",
        "jobs",
        "bs_bytes",
        "bw_MBps",
        "bw_MiBps",
    ];
    for d in all() {
        let want: Vec<&str> = match (d.experiment, d.name) {
            ("roundtrip", n) if n.starts_with("vollo-ia420f") => {
                [&roundtrip[..], &["in_values", "out_values"]].concat()
            }
            ("roundtrip", _) => roundtrip.to_vec(),
            ("curve", _) => vec!["size_bytes", "oneway_us", "bandwidth_MBps"],
            ("load", _) => load.to_vec(),
            ("stream", _) => stream.to_vec(),
            ("flowgraph", "qsdr-kv260-kernel") => {
                vec![
                    "benchmark",
                    "cores",
                    "buffer_bytes",
                    "buffers",
                    "samples_per_s",
                ]
            }
            ("flowgraph", _) => vec!["runtime", "scheduler", "cores", "blocks", "samples_per_s"],
            (e, n) => panic!("{n}: unexpected experiment {e}"),
        };
        assert_eq!(d.columns, want, "{}", d.name);
        let lib = xferbench::reference::standard_columns(d.experiment).unwrap();
        assert!(lib.iter().all(|c| d.col(c).is_some()), "{}", d.name);
    }
}

/// Columns holding words; every other cell is a published number.
#[test]
fn numeric_cells_parse() {
    let words = [
        "direction",
        "completion",
        "load",
        "cpu_mode",
        "runtime",
        "scheduler",
        "benchmark",
    ];
    for d in all() {
        for c in d.columns.iter().filter(|c| !words.contains(c)) {
            for i in 0..d.rows.len() {
                // The buffer-size scan has no ring, so no buffer count.
                if *c == "buffers" && d.text(i, "benchmark") == Some("scan-buffer-size") {
                    assert_eq!(d.text(i, c), Some(""));
                    continue;
                }
                num(&d, i, c);
            }
        }
    }
}

#[test]
fn unknown_name_is_a_usage_error_listing_the_names() {
    match find("nope") {
        Err(Error::Usage { message: m, .. }) => {
            assert!(
                m.starts_with("unknown reference dataset 'nope'; known: "),
                "{m}"
            );
            assert!(!m.contains('\n'));
            for n in NAMES {
                assert!(m.contains(n), "{m}");
            }
        }
        other => panic!("expected a usage error, got {other:?}"),
    }
}

// ------------------------------------------------------------------- Vollo

/// (mode, stat, in values, out values) → µs text, from the seed's matrices.
fn vollo_seed_cells() -> BTreeMap<(String, String, u64, u64), String> {
    let mut cells = BTreeMap::new();
    let (mut mode, mut stat, mut ins) = (None, None, Vec::<u64>::new());
    for line in VOLLO_SEED.lines() {
        let line = line.trim();
        if let Some(h) = line.strip_prefix("## ") {
            mode = Some(match h {
                "User buffers" => "user",
                "Raw DMA buffers" => "raw",
                "MMIO" => "mmio",
                other => panic!("unexpected section {other}"),
            });
        } else if let Some(s) = line.strip_prefix("**").and_then(|l| l.strip_suffix("**:")) {
            stat = Some(s.to_string());
        } else if line.starts_with("| out") {
            ins = line
                .split('|')
                .skip(2)
                .filter(|c| !c.trim().is_empty())
                .map(|c| c.trim().parse().unwrap())
                .collect();
        } else if line.starts_with("| ") && line.contains("**") {
            let fields: Vec<&str> = line.split('|').map(str::trim).collect();
            let out: u64 = fields[1].trim_matches('*').parse().unwrap();
            let values: Vec<&str> = fields[2..]
                .iter()
                .copied()
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(values.len(), ins.len(), "{line}");
            for (&i, v) in ins.iter().zip(values) {
                let key = (mode.unwrap().to_string(), stat.clone().unwrap(), i, out);
                assert!(cells.insert(key, v.to_string()).is_none(), "{line}");
            }
        }
    }
    cells
}

#[test]
fn vollo_ia420f_matches_seed_cell_by_cell() {
    let seed = vollo_seed_cells();
    assert_eq!(seed.len(), 3 * 2 * 81, "seed matrices");
    for mode in ["user", "raw", "mmio"] {
        let d = ds(&format!("vollo-ia420f-{mode}"));
        assert_eq!(d.rows.len(), 81);
        let mut seen = BTreeSet::new();
        for i in 0..d.rows.len() {
            let (iv, ov) = (
                num(&d, i, "in_values") as u64,
                num(&d, i, "out_values") as u64,
            );
            // Each value is a bfloat16: 2 bytes.
            assert_eq!(num(&d, i, "in_bytes") as u64, 2 * iv);
            assert_eq!(num(&d, i, "out_bytes") as u64, 2 * ov);
            assert!(seen.insert((iv, ov)), "{mode}: duplicate cell {iv}x{ov}");
            for (stat, col) in [("mean", "mean_us"), ("p99", "p99_us")] {
                let want = &seed[&(mode.to_string(), stat.to_string(), iv, ov)];
                assert_eq!(
                    d.text(i, col),
                    Some(want.as_str()),
                    "{mode} {stat} in {iv} out {ov}"
                );
            }
        }
    }
}

#[test]
fn vollo_v80_matches_the_data_readme() {
    // The V80 cells are in no seed; the data README quotes them in one line:
    // user m/p at 64 B × 64 B and at 16 KiB × 16 KiB; then raw; then MMIO.
    let line = DATA_README
        .lines()
        .find(|l| l.starts_with("- Vollo on the AMD V80"))
        .expect("V80 line in README");
    assert!(line.contains("64 B × 64 B") && line.contains("16 KiB × 16 KiB"));
    let pairs: Vec<(&str, &str)> = line
        .split_whitespace()
        .map(|w| w.trim_end_matches([';', '.', ',']))
        .filter_map(|w| w.split_once('/'))
        .filter(|(a, b)| a.parse::<f64>().is_ok() && b.parse::<f64>().is_ok())
        .collect();
    assert_eq!(pairs.len(), 6, "{pairs:?}");
    for (k, mode) in ["user", "raw", "mmio"].iter().enumerate() {
        let d = ds(&format!("vollo-v80-{mode}"));
        assert_eq!(d.rows.len(), 2);
        for (j, size) in ["64", "16384"].iter().enumerate() {
            let i = one(&d, &[("in_bytes", size), ("out_bytes", size)]);
            let (mean, p99) = pairs[2 * k + j];
            assert_eq!(d.text(i, "mean_us"), Some(mean), "{mode} {size}");
            assert_eq!(d.text(i, "p99_us"), Some(p99), "{mode} {size}");
        }
    }
}

// --------------------------------------------------------------------- BIP

#[test]
fn bip_matches_seed_results_table() {
    let table: Vec<[f64; 3]> = BIP_SEED
        .lines()
        .skip_while(|l| !l.starts_with("Message size (bytes)"))
        .skip(1)
        .map_while(|l| {
            let v: Vec<f64> = l.split_whitespace().map_while(|w| w.parse().ok()).collect();
            <[f64; 3]>::try_from(v).ok()
        })
        .collect();
    assert_eq!(table.len(), 23, "seed rows");
    let d = ds("bip-myrinet");
    assert_eq!(d.rows.len(), table.len());
    for (i, [size, oneway, bw]) in table.into_iter().enumerate() {
        // Same figures; the seed pads some with zeros ("1.68100" vs "1.681").
        assert_eq!(num(&d, i, "size_bytes"), size, "row {i}");
        assert_eq!(num(&d, i, "oneway_us"), oneway, "row {i}");
        assert_eq!(num(&d, i, "bandwidth_MBps"), bw, "row {i}");
        if size > 0.0 {
            // Bandwidth is size over one-way time (B/µs = MB/s), to 6 digits.
            assert!(((size / oneway) / bw - 1.0).abs() < 1e-5, "row {i}");
        }
    }
}

// ---------------------------------------------------------------- rk11perf

/// (direction, nblk, cpu mode) → (req/s, KB/s) from the seed section after `heading`.
fn rk11_seed_cells(heading: &str) -> BTreeMap<(String, u32, String), (String, String)> {
    let section = RK11_SEED.split(heading).nth(1).expect(heading);
    let block = section.split("```").nth(1).expect("code block");
    let mut cells = BTreeMap::new();
    let (mut modes, mut dir) = (Vec::new(), None);
    for line in block.lines().map(str::trim) {
        if line.starts_with("code=") {
            // 'wait' 'inc r1' 'ashc ...' 'mov ...' → the CSV's cpu_mode names.
            modes = line
                .split('\'')
                .skip(1)
                .step_by(2)
                .map(|m| m.trim_end_matches(" ...").to_string())
                .collect();
        } else if line == "read" || line == "write" {
            dir = Some(line.to_string());
        } else if let Ok(nblk) = line.split_whitespace().next().unwrap_or("").parse::<u32>() {
            let v: Vec<&str> = line.split_whitespace().skip(1).collect();
            assert_eq!(v.len(), 2 * modes.len(), "{line}");
            for (m, pair) in modes.iter().zip(v.chunks(2)) {
                let key = (dir.clone().expect("direction"), nblk, m.clone());
                cells.insert(key, (pair[0].to_string(), pair[1].to_string()));
            }
        }
    }
    cells
}

#[test]
fn rk11perf_matches_seed_tables() {
    let loads = [
        ("wait", "wait"),
        ("inc r1", "alu"),
        ("ashc", "slow"),
        ("mov", "memcopy"),
    ];
    let boards = [
        (
            "rk11perf-basys3",
            "#### FT2232HQ based board",
            "Basys3",
            "2023-02-06",
        ),
        (
            "rk11perf-nexys2",
            "#### Cypress FX2 based board",
            "Nexys 2",
            "2015-01-03",
        ),
    ];
    for (name, heading, board, date) in boards {
        let seed = rk11_seed_cells(heading);
        assert_eq!(seed.len(), 2 * 9 * 4, "{name} seed cells");
        let section = RK11_SEED.split(heading).nth(1).unwrap();
        assert!(section.contains(board) && section.contains(date));
        let d = ds(name);
        assert!(
            d.source.contains(board) && d.source.contains(date),
            "{}",
            d.source
        );
        assert_eq!(d.rows.len(), seed.len(), "{name}");
        for ((dir, nblk, mode), (req, kb)) in &seed {
            let nb = nblk.to_string();
            let i = one(&d, &[("direction", dir), ("nblk", &nb), ("cpu_mode", mode)]);
            let at = format!("{name} {dir} nblk {nblk} {mode}");
            assert_eq!(d.text(i, "req_per_s"), Some(req.as_str()), "{at}");
            assert_eq!(d.text(i, "kb_per_s"), Some(kb.as_str()), "{at}");
            assert_eq!(num(&d, i, "size_bytes"), 512.0 * f64::from(*nblk), "{at}");
            let load = loads.iter().find(|(m, _)| m == mode).map(|(_, l)| *l);
            assert_eq!(d.text(i, "load"), load, "{at}");
        }
    }
}

#[test]
fn rk11perf_kbps_follows_the_readme_formula() {
    // KB/s = 512·nblk·count/1024/time = req/s · nblk/2, both rounded to units.
    for name in ["rk11perf-basys3", "rk11perf-nexys2"] {
        let d = ds(name);
        for i in 0..d.rows.len() {
            let nblk = num(&d, i, "nblk");
            let want = num(&d, i, "req_per_s") * nblk / 2.0;
            let slack = 0.5 + 0.5 * nblk / 2.0;
            let kb = num(&d, i, "kb_per_s");
            assert!((kb - want).abs() <= slack, "{name} row {i}: {kb} vs {want}");
        }
    }
}

// --------------------------------------------------------------- AWS F1 fio

#[test]
fn xdma_matches_seed_fio_results() {
    // "XDMA Write Results:", "2xl int mode: 11.4GB/s",
    // "WRITE: bw=10.7GiB/s (11.4GB/s), ...".
    let mut found = Vec::new();
    let (mut dir, mut completion, mut headline) = (None, None, None);
    for line in FIO_SEED.lines().map(str::trim) {
        if let Some(r) = line
            .strip_prefix("XDMA ")
            .and_then(|l| l.strip_suffix(" Results:"))
        {
            dir = Some(r.to_lowercase());
        } else if let Some(r) = line.strip_prefix("2xl ") {
            let (mode, gb) = r.split_once(" mode: ").expect(line);
            completion = Some(if mode == "int" { "interrupt" } else { mode });
            headline = gb.strip_suffix("GB/s").map(|g| g.parse::<f64>().unwrap());
        } else if let Some(bw) = line.split_once(": bw=").map(|(_, r)| r) {
            let (gib, rest) = bw.split_once("GiB/s (").expect(line);
            let gb = rest.split_once("GB/s)").expect(line).0;
            let (gib, gb): (f64, f64) = (gib.parse().unwrap(), gb.parse().unwrap());
            assert_eq!(Some(gb), headline, "{line}");
            found.push((dir.clone().unwrap(), completion.unwrap(), gib, gb));
        }
    }
    assert_eq!(found.len(), 4, "seed results");
    let d = ds("xdma-aws-f1");
    assert_eq!(d.rows.len(), 4);
    for (dir, completion, gib, gb) in found {
        let i = one(&d, &[("direction", &dir), ("completion", completion)]);
        // The dataset states the published GB/s and GiB/s in MB/s and MiB/s.
        assert!(
            (num(&d, i, "bw_MBps") - gb * 1000.0).abs() < 1e-6,
            "{dir} {completion}"
        );
        assert!(
            (num(&d, i, "bw_MiBps") - gib * 1024.0).abs() < 1e-6,
            "{dir} {completion}"
        );
    }
    // "4 concurrent FIO worker processes", "--bs=1m".
    let cmd = FIO_SEED
        .lines()
        .find(|l| l.contains("--bs=1m") && l.contains("/dev/xdma"))
        .expect("showcmd line");
    let workers = cmd.matches(" --name=").count().to_string();
    for i in 0..d.rows.len() {
        assert_eq!(d.text(i, "jobs"), Some(workers.as_str()));
        assert_eq!(d.text(i, "bs_bytes"), Some("1048576"));
    }
}

#[test]
fn stream_rows_state_one_rate_in_both_units() {
    // The EDMA rows come from the README's 2018 revision, which is not in the
    // seed; check their shape matches the XDMA set-up and that MB/s and MiB/s
    // agree within their published precision (XDMA: 0.1 GB and 0.1 GiB; EDMA:
    // fio's whole MB and MiB, which may be truncated).
    assert!(DATA_README.contains("the EDMA rows from the same README's 2018 revision"));
    for (name, mb_unit, mib_unit) in [("xdma-aws-f1", 100.0, 102.4), ("edma-aws-f1", 1.0, 1.0)] {
        let d = ds(name);
        assert_eq!(d.rows.len(), 4, "{name}");
        for dir in ["read", "write"] {
            for c in ["interrupt", "poll"] {
                let i = one(&d, &[("direction", dir), ("completion", c)]);
                assert_eq!(d.text(i, "jobs"), Some("4"));
                assert_eq!(d.text(i, "bs_bytes"), Some("1048576"));
                let (mb, mib) = (num(&d, i, "bw_MBps"), num(&d, i, "bw_MiBps"));
                let slack = mb_unit + mib_unit * 1.048576;
                assert!((mb - mib * 1.048576).abs() <= slack, "{name} {dir} {c}");
            }
        }
    }
}

// -------------------------------------------------------------------- qsdr

/// The 1.333 GHz clock: one saxpy sample per cycle at best.
const CORE_LIMIT: f64 = 1.333e9;

#[test]
fn qsdr_runtimes_match_what_the_seed_states() {
    // sdr-runtimes.rst publishes plots, not numbers (the figures are means of
    // the result files behind them), so check the set-up it describes.
    assert!(SDR_SEED.contains("quad-core Cortex-A53 running\nat 1.333 GHz"));
    let d = ds("qsdr-kv260");
    let runtimes = [
        ("FutureSDR", "futuresdr"),
        ("GNU Radio 3.10", "gnuradio3.10"),
        ("GNU Radio 4.0", "gnuradio4"),
        ("qsdr", "qsdr"),
    ];
    for (seed_name, _) in runtimes {
        assert!(SDR_SEED.contains(seed_name), "{seed_name}");
    }
    let want: BTreeSet<String> = runtimes.iter().map(|r| r.1.to_string()).collect();
    assert_eq!(distinct(&d, "runtime"), want);

    // "N of CPU cores ... goes from 1 to 4, and the number M of Saxpy blocks
    // ... goes from N to 3*N": the full grid for every multi-core scheduler.
    assert!(SDR_SEED.contains("which goes from 1 to 4"));
    assert!(SDR_SEED.contains("which goes from ``N`` to ``3*N``"));
    let grid: BTreeSet<(u32, u32)> = (1..=4)
        .flat_map(|n| (n..=3 * n).map(move |m| (n, m)))
        .collect();
    for runtime in &want {
        let schedulers: BTreeSet<String> = rows_where(&d, &[("runtime", runtime)])
            .into_iter()
            .map(|i| d.text(i, "scheduler").unwrap().to_string())
            .filter(|s| s != "single-core")
            .collect();
        // Two strategies for each runtime but qsdr, which has its custom one
        // plus the async-executor and Tokio work-stealing runtimes.
        if runtime == "qsdr" {
            assert!(SDR_SEED.contains("async-executor") && SDR_SEED.contains("Tokio"));
            let q: BTreeSet<String> = ["async-executor", "custom", "tokio"]
                .map(String::from)
                .into();
            assert_eq!(schedulers, q);
        } else {
            assert_eq!(schedulers.len(), 2, "{runtime}: {schedulers:?}");
        }
        for s in &schedulers {
            let cells: Vec<(u32, u32)> = rows_where(&d, &[("runtime", runtime), ("scheduler", s)])
                .into_iter()
                .map(|i| (num(&d, i, "cores") as u32, num(&d, i, "blocks") as u32))
                .collect();
            assert_eq!(cells.len(), grid.len(), "{runtime} {s}");
            assert_eq!(
                cells.into_iter().collect::<BTreeSet<_>>(),
                grid,
                "{runtime} {s}"
            );
        }
    }

    // No figure beats the ideal dynamic scheduler, N/M of one saxpy block,
    // itself at most one sample per cycle of one core.
    for i in 0..d.rows.len() {
        let (n, m) = (num(&d, i, "cores"), num(&d, i, "blocks"));
        let sps = num(&d, i, "samples_per_s");
        assert!(sps > 0.0 && sps <= CORE_LIMIT * n / m, "row {i}: {sps}");
    }

    // Single-core benchmark: one saxpy, one core. (The CSV has no GNU Radio
    // 3.10 single-core row, though the seed describes that run.)
    let single = rows_where(&d, &[("scheduler", "single-core")]);
    assert!(!single.is_empty());
    let mut single_best = f64::INFINITY;
    for &i in &single {
        assert_eq!((num(&d, i, "cores"), num(&d, i, "blocks")), (1.0, 1.0));
        assert_ne!(d.text(i, "runtime"), Some("gnuradio3.10"));
        single_best = single_best.min(num(&d, i, "samples_per_s"));
    }
    // "The performance of GNU Radio 3.10 is very poor compared to the other
    // SDR runtimes": its one-core, one-block figures are under a quarter of
    // the slowest other runtime's single-core figure.
    for i in rows_where(
        &d,
        &[("runtime", "gnuradio3.10"), ("cores", "1"), ("blocks", "1")],
    ) {
        assert!(num(&d, i, "samples_per_s") < single_best / 4.0, "row {i}");
    }
}

#[test]
fn qsdr_kernel_matches_what_the_seed_states() {
    let d = ds("qsdr-kv260-kernel");
    // "for more than one CPU core ... the multi-kernel async benchmark ...
    // N+1 buffers, where N is the number of CPUs, and a buffer size of 16 kiB".
    assert!(SDR_SEED.contains("``N+1`` buffers") && SDR_SEED.contains("buffer size of 16 kiB"));
    let mut grid = BTreeMap::<&str, BTreeSet<(u32, u32)>>::new();
    for i in 0..d.rows.len() {
        let bench = d.text(i, "benchmark").unwrap();
        let sps = num(&d, i, "samples_per_s");
        assert!(sps > 0.0 && sps <= CORE_LIMIT, "{bench}: {sps}");
        if bench == "scan-buffer-size" {
            assert_eq!(d.text(i, "cores"), Some("1"));
            continue;
        }
        let (family, m) = bench.rsplit_once("-M").expect(bench);
        let (n, m) = (num(&d, i, "cores") as u32, m.parse::<u32>().expect(bench));
        assert!(n >= 2, "{bench}");
        assert_eq!(num(&d, i, "buffers") as u32, n + 1, "{bench}");
        assert_eq!(d.text(i, "buffer_bytes"), Some("16384"), "{bench}");
        assert!(
            grid.entry(family).or_default().insert((n, m)),
            "{bench} twice"
        );
    }
    // M from N to 3N, as in the runtime benchmark, for N = 2..4.
    let want: BTreeSet<(u32, u32)> = (2..=4)
        .flat_map(|n| (n..=3 * n).map(move |m| (n, m)))
        .collect();
    assert_eq!(
        grid.keys().copied().collect::<Vec<_>>(),
        ["multi-kernel", "multi-kernel-async"]
    );
    for (family, cells) in grid {
        assert_eq!(cells, want, "{family}");
    }
    // "almost 1 float per clock cycle when the buffer size is long enough".
    let best = rows_where(&d, &[("benchmark", "scan-buffer-size")])
        .into_iter()
        .map(|i| num(&d, i, "samples_per_s"))
        .fold(0.0, f64::max);
    assert!(best > 0.95 * CORE_LIMIT, "{best}");
}

// --------------------------------------------------------------------- CLI

fn xb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xferbench"))
        .args(args)
        .output()
        .expect("run xferbench")
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn cli_list_names_every_dataset_in_every_format() {
    let table = stdout(&xb(&["reference", "list"]));
    let first_cells: BTreeSet<&str> = table
        .lines()
        .filter_map(|l| l.split('|').nth(1))
        .map(str::trim)
        .collect();
    for n in NAMES {
        assert!(first_cells.contains(n), "{n} in\n{table}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&xb(&["reference", "list", "--format", "json"]))).unwrap();
    let items = json.as_array().unwrap();
    assert_eq!(items.len(), NAMES.len());
    for (item, d) in items.iter().zip(all()) {
        assert_eq!(item["name"], d.name);
        assert_eq!(item["rows"], d.rows.len());
        assert_eq!(item["columns"].as_array().unwrap().len(), d.columns.len());
    }
    let csv = stdout(&xb(&["reference", "list", "--format", "csv"]));
    assert_eq!(csv.lines().next(), Some("name,experiment,rows,title"));
    assert_eq!(csv.lines().count(), NAMES.len() + 1);
}

#[test]
fn cli_show_json_has_every_cell() {
    let out = stdout(&xb(&[
        "reference",
        "show",
        "vollo-ia420f-raw",
        "--format",
        "json",
    ]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["name"], "vollo-ia420f-raw");
    assert_eq!(v["experiment"], "roundtrip");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 81);
    // Seed, raw DMA buffers: 32 values in and out, mean 1.7, p99 1.9.
    let r = rows
        .iter()
        .find(|r| r["in_bytes"] == 64 && r["out_bytes"] == 64)
        .unwrap();
    assert_eq!(r["mean_us"].as_f64(), Some(1.7));
    assert_eq!(r["p99_us"].as_f64(), Some(1.9));
    assert_eq!(r["in_values"], 32);
}

#[test]
fn cli_show_csv_is_the_dataset() {
    for name in ["bip-myrinet", "rk11perf-basys3", "qsdr-kv260-kernel"] {
        let d = ds(name);
        let out = stdout(&xb(&["reference", "show", name, "--format", "csv"]));
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some(d.columns.join(",").as_str()));
        let body: Vec<&str> = lines.collect();
        assert_eq!(body.len(), d.rows.len(), "{name}");
        for (line, row) in body.iter().zip(&d.rows) {
            assert_eq!(*line, row.join(","), "{name}");
        }
    }
}

#[test]
fn cli_show_table_prints_every_dataset_with_provenance() {
    for d in all() {
        let out = stdout(&xb(&["reference", "show", d.name]));
        assert!(out.starts_with(&format!("# {}\n", d.title)), "{}", d.name);
        assert!(
            out.contains(d.source) && out.contains(d.notes),
            "{}",
            d.name
        );
        assert!(out.contains("|--"), "{}: no table", d.name);
    }
}

#[test]
fn cli_show_unknown_name_exits_2_with_one_line() {
    let o = xb(&["reference", "show", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown reference dataset 'nope'"), "{err}");
    assert!(err.contains("vollo-ia420f-user"), "{err}");
}
