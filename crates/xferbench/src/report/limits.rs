//! `xferbench limits` rendered: one screen of tables (memory, PCIe links,
//! NICs, GPUs, disks), one CSV row per path, and a self-contained HTML page.

use super::html::esc;
use super::table::{Align, bullets, markdown_with};
use crate::error::{Error, Result};
use crate::limits::Limit;
use crate::limits::pci::Function;
use crate::limits::pcie::{Link, format_mbps};
use crate::result::limits::{Device, Survey};
use std::fmt::Write;

/// A ceiling as a person reads it: "15.75 GB/s", "3125 MB/s", "182 ns".
pub fn ceiling(l: &Limit) -> String {
    match l.unit.as_str() {
        "MB/s" => format_mbps(l.value),
        "ns" if l.value < 10.0 => format!("{:.1} ns", l.value),
        unit => format!("{:.0} {unit}", l.value),
    }
}

fn opt_limit(l: Option<&Limit>) -> String {
    l.map_or("unknown".into(), ceiling)
}

fn link(l: Option<Link>) -> String {
    l.map_or("-".into(), |l| l.name())
}

fn ids(f: &Function) -> String {
    match (f.vendor, f.device) {
        (Some(v), Some(d)) => format!("{v:04x}:{d:04x}"),
        _ => "-".into(),
    }
}

fn node(n: Option<u32>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}

/// The rows of one section: a header and its cells, the first `left`
/// columns words.
struct Section {
    title: &'static str,
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
    left: usize,
}

fn devices_section(title: &'static str, devices: &[Device]) -> Section {
    Section {
        title,
        header: vec![
            "function",
            "ids",
            "kind",
            "driver",
            "trained",
            "capable",
            "limit a direction",
            "NUMA",
            "flag",
        ],
        rows: devices
            .iter()
            .map(|d| {
                let f = &d.function;
                vec![
                    f.address.clone(),
                    ids(f),
                    d.kind.clone(),
                    f.driver.clone().unwrap_or_else(|| "-".into()),
                    link(f.current),
                    link(f.attainable().or(f.capable)),
                    opt_limit(d.limit.as_ref()),
                    node(f.numa_node),
                    if d.downgraded {
                        "TRAINED BELOW CAPABLE".into()
                    } else {
                        String::new()
                    },
                ]
            })
            .collect(),
        left: 6,
    }
}

fn sections(s: &Survey) -> Vec<Section> {
    let m = &s.memory;
    let mut memory = vec![&m.copy_one_core, &m.copy_all_cores];
    memory.extend(m.round_trip.as_ref());
    memory.push(&m.clock);
    vec![
        Section {
            title: "Memory (measured)",
            header: vec!["path", "ceiling"],
            rows: memory
                .iter()
                .map(|l| vec![l.what.clone(), ceiling(l)])
                .collect(),
            left: 1,
        },
        devices_section("PCIe links", &s.pci),
        Section {
            title: "Network interfaces",
            header: vec![
                "interface",
                "state",
                "driver",
                "PCI function",
                "speed",
                "limit a direction",
            ],
            rows: s
                .nics
                .iter()
                .map(|n| {
                    vec![
                        n.nic.name.clone(),
                        n.nic.state.clone().unwrap_or_else(|| "-".into()),
                        n.nic.driver.clone().unwrap_or_else(|| "-".into()),
                        n.nic.pci.clone().unwrap_or_else(|| "-".into()),
                        n.nic
                            .speed_mbit
                            .map_or("unknown".into(), |m| format!("{m} Mb/s")),
                        opt_limit(n.limit.as_ref()),
                    ]
                })
                .collect(),
            left: 4,
        },
        devices_section("GPUs", &s.gpus),
        Section {
            title: "Block devices",
            header: vec![
                "disk",
                "MAJ:MIN",
                "model",
                "PCI function",
                "limit a direction",
            ],
            rows: s
                .disks
                .iter()
                .map(|d| {
                    vec![
                        d.disk.name.clone(),
                        d.disk.dev.clone(),
                        d.disk.model.clone().unwrap_or_else(|| "-".into()),
                        d.disk.pci.clone().unwrap_or_else(|| "-".into()),
                        opt_limit(d.limit.as_ref()),
                    ]
                })
                .collect(),
            left: 4,
        },
    ]
}

/// Every warning of every path, once.
fn warnings(s: &Survey) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let limits = s
        .pci
        .iter()
        .filter_map(|d| d.limit.as_ref())
        .chain(s.nics.iter().filter_map(|n| n.limit.as_ref()))
        .chain(s.disks.iter().filter_map(|d| d.limit.as_ref()));
    for w in limits.flat_map(|l| l.warnings.iter()) {
        if !out.contains(w) {
            out.push(w.clone());
        }
    }
    out
}

/// The tables for people.
pub fn table(s: &Survey) -> String {
    let mut o = String::from("# The limits of this machine's data paths\n\n");
    for sec in sections(s) {
        let _ = writeln!(o, "## {}\n", sec.title);
        if sec.rows.is_empty() {
            o.push_str("(none)\n\n");
            continue;
        }
        let header: Vec<String> = sec.header.iter().map(|h| h.to_string()).collect();
        let (left, flag) = (sec.left, sec.header.iter().position(|h| *h == "flag"));
        o.push_str(&markdown_with(&header, &sec.rows, |i| {
            if i < left || Some(i) == flag {
                Align::Left
            } else {
                Align::Right
            }
        }));
        o.push('\n');
    }
    let w = warnings(s);
    if !w.is_empty() {
        o.push_str("## Warnings\n\n");
        o.push_str(&bullets(&w));
        o.push('\n');
    }
    o.push_str("## Notes\n\n");
    o.push_str(&bullets(&notes(s)));
    o
}

/// The survey's notes and where its figures came from.
fn notes(s: &Survey) -> Vec<String> {
    let mut n = s.notes.clone();
    n.push(format!("sysfs read from {}", s.sysfs));
    n.push(format!("memory: {}", s.memory.copy_one_core.source));
    n.push(
        "PCIe limits are the link's payload ceiling a direction (line rate × encoding, TLP and DLLP headers not subtracted): DMA reaches 80-90% of it".into(),
    );
    n
}

/// The whole survey as pretty JSON.
pub fn json(s: &Survey) -> Result<String> {
    serde_json::to_string_pretty(s)
        .map(|t| t + "\n")
        .map_err(|e| Error::run_from("encoding JSON", e))
}

/// One row per path: its kind, name, ceiling, unit, what, flags.
pub fn csv(s: &Survey) -> String {
    let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let mut o = String::from("kind,name,pci,value,unit,what,numa_node,warnings\n");
    let mut row = |kind: &str, name: &str, pci: &str, l: Option<&Limit>| {
        let _ = writeln!(
            o,
            "{kind},{},{},{},{},{},{},{}",
            q(name),
            q(pci),
            l.map_or(String::new(), |l| format!("{:.1}", l.value)),
            l.map_or("", |l| l.unit.as_str()),
            q(l.map_or("", |l| l.what.as_str())),
            l.and_then(|l| l.numa_node)
                .map_or(String::new(), |n| n.to_string()),
            q(&l.map_or(String::new(), |l| l.warnings.join("; ")))
        );
    };
    let m = &s.memory;
    for l in [&m.copy_one_core, &m.copy_all_cores]
        .into_iter()
        .chain(m.round_trip.as_ref())
        .chain([&m.clock])
    {
        row("memory", &l.what, "", Some(l));
    }
    for d in &s.pci {
        row("pci", &d.kind, &d.function.address, d.limit.as_ref());
    }
    for n in &s.nics {
        row(
            "nic",
            &n.nic.name,
            n.nic.pci.as_deref().unwrap_or(""),
            n.limit.as_ref(),
        );
    }
    for d in &s.disks {
        row(
            "disk",
            &d.disk.name,
            d.disk.pci.as_deref().unwrap_or(""),
            d.limit.as_ref(),
        );
    }
    o
}

/// A self-contained HTML page of the same tables.
pub fn html(s: &Survey) -> String {
    let mut o = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>xferbench limits</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n<h1>The limits of this machine's data paths</h1>\n",
        super::html::STYLE
    );
    for sec in sections(s) {
        let _ = writeln!(o, "<h2>{}</h2>", esc(sec.title));
        if sec.rows.is_empty() {
            o.push_str("<p class=\"note\">(none)</p>\n");
            continue;
        }
        o.push_str("<div class=\"table-wrap\"><table>\n<tr>");
        for (i, h) in sec.header.iter().enumerate() {
            let class = if i < sec.left { " class=\"l\"" } else { "" };
            let _ = write!(o, "<th{class}>{}</th>", esc(h));
        }
        o.push_str("</tr>\n");
        for r in &sec.rows {
            o.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let class = match (i < sec.left, c.starts_with("TRAINED BELOW")) {
                    (_, true) => " class=\"bad\"",
                    (true, false) => " class=\"l\"",
                    (false, false) => "",
                };
                let _ = write!(o, "<td{class}>{}</td>", esc(c));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</table></div>\n");
    }
    let w = warnings(s);
    if !w.is_empty() {
        o.push_str("<div class=\"warn\"><strong>Warnings</strong><ul>\n");
        for line in &w {
            let _ = writeln!(o, "<li>{}</li>", esc(line));
        }
        o.push_str("</ul></div>\n");
    }
    o.push_str("<h2>Notes</h2>\n<ul class=\"note\">\n");
    for line in notes(s) {
        let _ = writeln!(o, "<li>{}</li>", esc(&line));
    }
    let _ = write!(
        o,
        "</ul>\n<p class=\"note\">Generated by xferbench {}.</p>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    o
}
