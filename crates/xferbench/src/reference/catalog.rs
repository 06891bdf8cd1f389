//! The datasets: the embedded CSVs reshaped into each experiment's standard
//! columns, with provenance from the seed documents and `data/reference/README.md`.

use super::Dataset;
use super::csv::Table;

const VOLLO_IA420F: &str =
    include_str!("../../../../data/reference/vollo-ia420f-io-round-trip.csv");
const BIP: &str = include_str!("../../../../data/reference/bip-myrinet-oneway.csv");
const RK11PERF: &str = include_str!("../../../../data/reference/rk11perf.csv");
const AWS_F1: &str = include_str!("../../../../data/reference/aws-f1-dma-fio.csv");
const QSDR_RUNTIMES: &str = include_str!("../../../../data/reference/qsdr-kv260-runtimes.csv");
const QSDR_KERNEL: &str = include_str!("../../../../data/reference/qsdr-kv260-saxpy-kernel.csv");

/// The Vollo benchmark's method, shared by all six Vollo datasets.
macro_rules! vollo_method {
    () => {
        "10,000 warm-up jobs then 100,000 measured, one in flight, timed with \
         CLOCK_MONOTONIC from just before submitting a job to when busy polling sees \
         it complete; p99 = sorted[(99·n)/100]."
    };
}

/// Buffer modes of the Vollo tables: CSV `mode`, name suffix, title, notes.
const VOLLO_MODES: [(&str, &str, &str); 3] = [
    (
        "user",
        "user buffers",
        concat!(
            "A Vollo program with no compute (it waits for the last input byte before \
             sending the first output byte), through user buffers, so copies to and from \
             the DMA buffers are included. ",
            vollo_method!()
        ),
    ),
    (
        "raw",
        "raw DMA buffers",
        concat!(
            "A Vollo program with no compute, through buffers from vollo_rt_get_raw_buffer, \
             so the runtime skips the IO copy. ",
            vollo_method!()
        ),
    ),
    (
        "mmio",
        "MMIO input",
        concat!(
            "A Vollo program with no compute; the whole input is written by MMIO \
             (VOLLO_MMIO_MAX_SIZE), the output comes back through raw DMA buffers. ",
            vollo_method!()
        ),
    ),
];

pub fn all() -> Vec<Dataset> {
    let mut v = vollo_ia420f();
    v.extend(vollo_v80());
    v.push(bip());
    v.extend(rk11perf());
    v.extend(aws_f1());
    v.extend(qsdr());
    v
}

fn owned(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

/// The IA420F tables: the CSV has one row per (mode, stat, in, out); a dataset
/// has one row per (in, out) cell with mean and p99 side by side.
fn vollo_ia420f() -> Vec<Dataset> {
    let t = Table::parse("vollo-ia420f", VOLLO_IA420F);
    let names = ["vollo-ia420f-user", "vollo-ia420f-raw", "vollo-ia420f-mmio"];
    let titles = [
        "Vollo IO round trip, IA420F, user buffers",
        "Vollo IO round trip, IA420F, raw DMA buffers",
        "Vollo IO round trip, IA420F, MMIO input",
    ];
    let cell = |mode: &str, stat: &str, inb: &str, outb: &str| {
        t.rows
            .iter()
            .find(|r| {
                t.get(r, "mode") == mode
                    && t.get(r, "stat") == stat
                    && t.get(r, "in_bytes") == inb
                    && t.get(r, "out_bytes") == outb
            })
            .map(|r| t.get(r, "latency_us").to_string())
            .unwrap_or_else(|| panic!("vollo-ia420f: no {mode} {stat} cell {inb}x{outb}"))
    };
    VOLLO_MODES
        .iter()
        .zip(names.into_iter().zip(titles))
        .map(|(&(mode, _, notes), (name, title))| {
            let rows = t
                .rows
                .iter()
                .filter(|r| t.get(r, "mode") == mode && t.get(r, "stat") == "mean")
                .map(|r| {
                    let (inb, outb) = (t.get(r, "in_bytes"), t.get(r, "out_bytes"));
                    vec![
                        inb.to_string(),
                        outb.to_string(),
                        t.get(r, "latency_us").to_string(),
                        cell(mode, "p99", inb, outb),
                        t.get(r, "in_values_bf16").to_string(),
                        t.get(r, "out_values_bf16").to_string(),
                    ]
                })
                .collect();
            Dataset {
                name,
                experiment: "roundtrip",
                title,
                source: "Vollo SDK documentation, IO Round Trip benchmark page (releases 21–26); \
                         Intel IA420F board (IA840F similar)",
                notes,
                columns: vec![
                    "in_bytes",
                    "out_bytes",
                    "mean_us",
                    "p99_us",
                    "in_values",
                    "out_values",
                ],
                rows,
            }
        })
        .collect()
}

/// The V80 figures exist only as a sentence of data/reference/README.md
/// ("Extra facts"): mean/p99 µs at 64 B × 64 B and 16 KiB × 16 KiB per mode.
/// The V80 page counts sizes in bytes, so no value-count columns are added.
fn vollo_v80() -> Vec<Dataset> {
    let figures: [(&str, &str, [&str; 4]); 3] = [
        (
            "vollo-v80-user",
            "Vollo IO round trip, V80, user buffers",
            ["1.47", "1.75", "4.83", "5.35"],
        ),
        (
            "vollo-v80-raw",
            "Vollo IO round trip, V80, raw DMA buffers",
            ["1.45", "1.73", "3.92", "4.20"],
        ),
        (
            "vollo-v80-mmio",
            "Vollo IO round trip, V80, MMIO input",
            ["0.89", "0.91", "4.09", "4.11"],
        ),
    ];
    figures
        .into_iter()
        .zip(VOLLO_MODES)
        .map(|((name, title, [m0, p0, m1, p1]), (_, _, notes))| Dataset {
            name,
            experiment: "roundtrip",
            title,
            source: "Vollo SDK 27 documentation, IO Round Trip benchmark page; AMD V80 board \
                     (two cells, as quoted in data/reference/README.md)",
            notes,
            columns: vec!["in_bytes", "out_bytes", "mean_us", "p99_us"],
            rows: vec![
                owned(&["64", "64", m0, p0]),
                owned(&["16384", "16384", m1, p1]),
            ],
        })
        .collect()
}

fn bip() -> Dataset {
    let t = Table::parse("bip-myrinet", BIP);
    Dataset {
        name: "bip-myrinet",
        experiment: "curve",
        title: "BIP on Myrinet, one-way latency and bandwidth",
        source: "BIP performance curves page, results table (BIP team, last modified \
                 1997-08-21); Myrinet with LANai 4.1, Pentium Pro hosts",
        notes: "One-way time is half the round trip, the median of 20–100 runs; bandwidth \
                is size over one-way time. Half of the peak bandwidth (63 MB/s) is reached \
                near 4096-byte messages.",
        columns: vec!["size_bytes", "oneway_us", "bandwidth_MBps"],
        rows: t.rows,
    }
}

fn rk11perf() -> Vec<Dataset> {
    let t = Table::parse("rk11perf", RK11PERF);
    let notes = "Each cell is one run of about 1 s counting the RK11 requests started by the \
                 interrupt handler: req/s = count/time, KB/s = 512·nblk·count/1024/time. An \
                 RK11 read writes memory (wblk), a write reads it (rblk), while the CPU runs \
                 WAIT, `inc r1`, `ashc @v,r2` or a copy with maximal cache contention.";
    let boards = [
        (
            "rk11perf-basys3",
            "basys3-ft2232hq",
            "RK11 disk requests, Basys3 (FT2232HQ serial link)",
            "w11 project, rk11perf.md typical results; Digilent Basys3, FT2232HQ serial \
             link at 12 Mbit/s; data taken 2023-02-06",
        ),
        (
            "rk11perf-nexys2",
            "nexys2-cypress-fx2",
            "RK11 disk requests, Nexys 2 (Cypress FX2 USB2 link)",
            "w11 project, rk11perf.md typical results; Digilent Nexys 2, Cypress FX2 USB2 \
             link, fixed chunksize 1792; data taken 2015-01-03",
        ),
    ];
    boards
        .into_iter()
        .map(|(name, board, title, source)| {
            let rows = t
                .rows
                .iter()
                .filter(|r| t.get(r, "board") == board)
                .map(|r| {
                    let mode = t.get(r, "cpu_mode");
                    let load = super::load_for_cpu_mode(mode)
                        .unwrap_or_else(|| panic!("rk11perf: unknown CPU mode {mode}"));
                    owned(&[
                        t.get(r, "direction"),
                        t.get(r, "bytes"),
                        t.get(r, "nblk"),
                        load,
                        mode,
                        t.get(r, "req_per_s"),
                        t.get(r, "kb_per_s"),
                    ])
                })
                .collect();
            Dataset {
                name,
                experiment: "load",
                title,
                source,
                notes,
                columns: super::standard_columns("load")
                    .expect("load columns")
                    .to_vec(),
                rows,
            }
        })
        .collect()
}

fn aws_f1() -> Vec<Dataset> {
    let t = Table::parse("aws-f1-dma-fio", AWS_F1);
    let notes = "fio with ioengine=psync and mem=mmap: 4 workers, each driving its own DMA \
                 channel over its own 16 GiB of the card's 64 GiB DDR, 1 MiB blocks; the \
                 aggregate bandwidth of the group, with the driver completing by interrupt \
                 or by polling (poll_mode=1).";
    let drivers = [
        (
            "xdma-aws-f1",
            "xdma",
            "XDMA fio bandwidth on AWS F1",
            "aws-fpga SDK, tests/fio_dma_tools README (release 1.3.5 or later); EC2 \
             f1.2xlarge, XDMA driver; published as GB/s and GiB/s with one decimal",
        ),
        (
            "edma-aws-f1",
            "edma",
            "EDMA fio bandwidth on AWS F1",
            "aws-fpga SDK, fio_dma_tools README, 2018 revision; EC2 f1.2xlarge, EDMA driver",
        ),
    ];
    drivers
        .into_iter()
        .map(|(name, driver, title, source)| {
            let rows = t
                .rows
                .iter()
                .filter(|r| t.get(r, "driver") == driver)
                .map(|r| {
                    let bs = t.get(r, "bs");
                    let bs = crate::units::parse_size(bs)
                        .unwrap_or_else(|e| panic!("aws-f1-dma-fio: {e}"));
                    vec![
                        t.get(r, "direction").to_string(),
                        t.get(r, "completion").to_string(),
                        t.get(r, "jobs").to_string(),
                        bs.to_string(),
                        t.get(r, "bw_MBps").to_string(),
                        t.get(r, "bw_MiBps").to_string(),
                    ]
                })
                .collect();
            Dataset {
                name,
                experiment: "stream",
                title,
                source,
                notes,
                columns: super::standard_columns("stream")
                    .expect("stream columns")
                    .to_vec(),
                rows,
            }
        })
        .collect()
}

fn qsdr() -> Vec<Dataset> {
    let source = "qsdr benchmark report (github.com/daniestevez/qsdr), SDR runtimes and Saxpy \
                  sections; Kria KV260, 4× Cortex-A53 at 1.333 GHz (1.333 Gsamples/s per core)";
    let runtimes = Table::parse("qsdr-kv260-runtimes", QSDR_RUNTIMES);
    let kernel = Table::parse("qsdr-kv260-saxpy-kernel", QSDR_KERNEL);
    vec![
        Dataset {
            name: "qsdr-kv260",
            experiment: "flowgraph",
            title: "SDR runtime flowgraph throughput on Kria KV260",
            source,
            notes: "Dummy source → M saxpy blocks → benchmark sink on N cores, per runtime \
                    and scheduler; the sink times the samples it consumes, and each figure is \
                    the mean of the published result files. Scheduler `single-core` is the \
                    single-core benchmark (one saxpy, all blocks on one core).",
            columns: vec!["runtime", "scheduler", "cores", "blocks", "samples_per_s"],
            rows: runtimes.rows,
        },
        Dataset {
            name: "qsdr-kv260-kernel",
            experiment: "flowgraph",
            title: "saxpy kernel alone on Kria KV260",
            source,
            notes: "The aarch64 saxpy kernel (y = a·x + b on f32) with no runtime: \
                    scan-buffer-size runs it on one core over buffer sizes; \
                    multi-kernel(-async)-M<blocks> chains M kernels over N cores through a \
                    ring of N+1 16 KiB buffers.",
            columns: vec![
                "benchmark",
                "cores",
                "buffer_bytes",
                "buffers",
                "samples_per_s",
            ],
            rows: kernel.rows,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A column swap in a CSV would pass every shape check, so tie the
    /// headers to the positions the datasets assume.
    #[test]
    fn csv_headers_are_as_expected() {
        let heads = [
            (BIP, "size_bytes,oneway_us,bandwidth_MBps"),
            (
                QSDR_RUNTIMES,
                "runtime,scheduler,cores,blocks,samples_per_s",
            ),
            (
                QSDR_KERNEL,
                "benchmark,cores,buffer_bytes,buffers,samples_per_s",
            ),
        ];
        for (text, want) in heads {
            assert_eq!(Table::parse("h", text).header.join(","), want);
        }
    }

    #[test]
    fn vollo_pivot_keeps_every_csv_row() {
        let t = Table::parse("v", VOLLO_IA420F);
        let cells: usize = vollo_ia420f().iter().map(|d| d.rows.len() * 2).sum();
        assert_eq!(cells, t.rows.len());
    }

    #[test]
    fn every_board_and_driver_row_lands_in_a_dataset() {
        let rk: usize = rk11perf().iter().map(|d| d.rows.len()).sum();
        assert_eq!(rk, Table::parse("r", RK11PERF).rows.len());
        let aws: usize = aws_f1().iter().map(|d| d.rows.len()).sum();
        assert_eq!(aws, Table::parse("a", AWS_F1).rows.len());
    }
}
