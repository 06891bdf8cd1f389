//! Parsing of the quantities users type: sizes, size lists and ranges, durations,
//! CPU lists. Sizes are binary (k = 1024), as in fio.

use crate::error::{Error, Result};
use crate::words::word_enum;
use serde::Serialize;
use std::time::Duration;

/// The largest single message any experiment accepts; anything above is a typo.
pub const MAX_SIZE: u64 = 1 << 30;

word_enum! {
    /// How the numbers in `--in`/`--out` are counted.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Unit {
        /// Plain bytes.
        Bytes = "bytes",
        /// 2-byte values, as the Vollo tables count them.
        Bf16 = "bf16",
        /// 4-byte values (32-bit floats).
        F32 = "f32",
    }
}

impl Unit {
    /// Bytes in one counted value: 1, 2 or 4.
    pub fn bytes(self) -> u64 {
        match self {
            Unit::Bytes => 1,
            Unit::Bf16 => 2,
            Unit::F32 => 4,
        }
    }
}

/// Parses one size: `64`, `4k`, `4KiB`, `1M`, `2G`. Suffixes are binary.
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let bad = || {
        Error::usage(format!(
            "malformed size '{s}': expected a whole number with an optional suffix k, M or G (e.g. 64, 4k, 1M)"
        ))
    };
    if num.is_empty() {
        return Err(bad());
    }
    let n: u64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match suffix.trim() {
        "" | "b" | "B" => 1,
        "k" | "K" | "kb" | "KB" | "KiB" | "kib" => 1 << 10,
        "m" | "M" | "MB" | "MiB" | "mib" => 1 << 20,
        "g" | "G" | "GB" | "GiB" | "gib" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(mult)
        .ok_or_else(|| Error::usage(format!("size '{s}' is too large")))
}

/// Parses a list of sizes: comma-separated items, each a size or a range.
/// `A..B` doubles from A up to B (0 stays as a point of its own, then 1, 2, 4…);
/// `A..B+S` steps linearly by S. The result is sorted and deduplicated.
pub fn parse_size_list(s: &str) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(Error::usage(format!(
                "malformed size list '{s}': empty item"
            )));
        }
        if let Some((lo, rest)) = item.split_once("..") {
            let (hi, step) = match rest.split_once('+') {
                Some((hi, step)) => (hi, Some(parse_size(step)?)),
                None => (rest, None),
            };
            let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
            if lo > hi {
                return Err(Error::usage(format!(
                    "malformed range '{item}': the start is larger than the end"
                )));
            }
            if hi > MAX_SIZE {
                return Err(too_large(hi));
            }
            match step {
                Some(0) => {
                    return Err(Error::usage(format!("malformed range '{item}': step is 0")));
                }
                Some(st) => out.extend((lo..=hi).step_by(st as usize)),
                None => {
                    if lo == 0 {
                        out.push(0);
                    }
                    let mut v = lo.max(1);
                    while v <= hi {
                        out.push(v);
                        v *= 2;
                    }
                }
            }
        } else {
            let v = parse_size(item)?;
            if v > MAX_SIZE {
                return Err(too_large(v));
            }
            out.push(v);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn too_large(v: u64) -> Error {
    Error::usage(format!(
        "size {v} is larger than the 1 GiB limit on one message; use a smaller size"
    ))
}

/// Parses a duration with a unit: `20us`, `1.5ms`, `2s`, `100ns`, `1m`.
/// A bare number is taken as seconds.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        Error::usage(format!(
            "malformed duration '{s}': expected a number with a unit ns, us, ms, s, m or h (e.g. 20us, 2s)"
        ))
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "ns" | "nsec" => 1e-9,
        "us" | "µs" | "usec" => 1e-6,
        "ms" | "msec" => 1e-3,
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" | "hour" => 3600.0,
        _ => return Err(bad()),
    };
    let secs = n * scale;
    if !secs.is_finite() || secs > 30.0 * 86_400.0 {
        return Err(Error::usage(format!(
            "duration '{s}' is longer than 30 days"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The CPU numbers a list may name: below the most Linux can be built for
/// (`NR_CPUS` is at most 8192). Lists the kernel writes (a node's CPUs,
/// the online set) always fit; whether a CPU exists is checked where it
/// is used.
pub const CPU_LIMIT: usize = 8192;

/// The most entries a CPU list may expand to (ranges counted whole): a
/// list naming each CPU a few times over is still taken.
const CPU_LIST_ENTRIES: usize = 4 * CPU_LIMIT;

/// Parses a list of CPU numbers: `0,1`, `2-5`, or `none`. Each number and
/// range is checked against [`CPU_LIMIT`] before it is expanded, so a
/// hostile range (`0-4000000000`) is one line, not gigabytes allocated.
pub fn parse_cpu_list(s: &str) -> Result<Option<Vec<usize>>> {
    if s.trim() == "none" {
        return Ok(None);
    }
    let bad = || {
        Error::usage(format!(
            "malformed cpu list '{}': expected numbers like 0,1 or 2-3, or 'none'",
            capped_text(s)
        ))
    };
    let too_high = |c: usize| {
        Error::usage(format!(
            "cpu {c} is out of range (Linux numbers CPUs below {CPU_LIMIT})"
        ))
    };
    let mut ranges = Vec::new();
    let mut entries = 0usize;
    for item in s.split(',').map(str::trim) {
        let (a, b): (usize, usize) = match item.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let c = item.parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if a > b {
            return Err(bad());
        }
        if b >= CPU_LIMIT {
            return Err(too_high(b));
        }
        entries += b - a + 1;
        if entries > CPU_LIST_ENTRIES {
            return Err(Error::usage(format!(
                "cpu list '{}' names more than {CPU_LIST_ENTRIES} CPUs; name each CPU once",
                capped_text(s)
            )));
        }
        ranges.push((a, b));
    }
    Ok(Some(ranges.into_iter().flat_map(|(a, b)| a..=b).collect()))
}

/// The first 60 characters of `s`, for a message about a long value.
fn capped_text(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Formats a byte count the way people write it: 64, 4k, 1M (exact multiples only).
pub fn format_size(v: u64) -> String {
    match v {
        0 => "0".into(),
        v if v % (1 << 30) == 0 => format!("{}G", v >> 30),
        v if v % (1 << 20) == 0 => format!("{}M", v >> 20),
        v if v % (1 << 10) == 0 => format!("{}k", v >> 10),
        v => v.to_string(),
    }
}

/// A size list item by item, as [`parse_size_list`] reads it back:
/// `512,1k,2k,4k`. For a list shown as its user wrote it, a run of sizes
/// and all.
pub fn format_size_list(sizes: &[u64]) -> String {
    let items: Vec<String> = sizes.iter().map(|&v| format_size(v)).collect();
    items.join(",")
}

/// A sorted size list (as [`parse_size_list`] gives) written back as ranges
/// where it can be: each run of three or more sizes that doubles becomes
/// `A..B` (`64..16k`), a 0 before a run from 1 joins it (`0..8M`), the
/// rest stay single (`0,64..256,1000`). Parsing the text gives the list.
pub fn format_size_ranges(sizes: &[u64]) -> String {
    let mut items = Vec::new();
    let mut i = 0;
    while i < sizes.len() {
        // A range from 0 is 0, then 1, 2, 4…: the doubling starts at 1.
        let mut end = match sizes.get(i..i + 2) {
            Some([0, 1]) => i + 1,
            _ => i,
        };
        while sizes
            .get(end + 1)
            .is_some_and(|&next| sizes[end] > 0 && sizes[end].checked_mul(2) == Some(next))
        {
            end += 1;
        }
        if end - i >= 2 {
            items.push(format!(
                "{}..{}",
                format_size(sizes[i]),
                format_size(sizes[end])
            ));
            i = end + 1;
        } else {
            items.push(format_size(sizes[i]));
            i += 1;
        }
    }
    items.join(",")
}

/// A duration as [`parse_duration`] reads it back, in the largest of s,
/// ms, us and ns that gives a whole number: `10s`, `50ms`, `20us`, `0s`.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        0 => "0s".into(),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// Parses a fio size: `4096`, `4k`, `1.5m`, `64GiB`, `0x1000`. Suffixes are
/// binary however spelled (`kb`, `KiB`), as under fio's default kb_base=1024.
/// The message names no value: callers say which option it was.
pub fn parse_fio_size(s: &str) -> Result<u64> {
    let bad = || {
        Error::usage(
            "malformed size (expected a number with an optional k/m/g/t suffix, as in 4k or 1m)",
        )
    };
    let t = s.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| bad());
    }
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(end);
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "ki" | "kib" => 10,
        "m" | "mb" | "mi" | "mib" => 20,
        "g" | "gb" | "gi" | "gib" => 30,
        "t" | "tb" | "ti" | "tib" => 40,
        "p" | "pb" | "pi" | "pib" => 50,
        _ => return Err(bad()),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return Err(bad());
    }
    let too_large = || Error::usage("size too large (the limit is 16 EiB)");
    if int.trim_start_matches('0').len() > 20 {
        return Err(too_large());
    }
    // Exact integer arithmetic (20 digits << 50 fits a u128), so 1.5k is
    // 1536; fractions of a byte drop.
    let frac = &frac[..frac.len().min(20)];
    let n = |d: &str| d.parse::<u128>().unwrap_or(0);
    let v = (n(int) << shift) + (n(frac) << shift) / 10u128.pow(frac.len() as u32);
    u64::try_from(v).map_err(|_| too_large())
}

/// A number with an SI prefix and three significant digits: 0.123, 45.6,
/// 7.89k, 1.23G.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let a = v.abs();
    let (d, p) = match a {
        a if a >= 1e12 => (1e12, "T"),
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    let digits = match x.abs() {
        x if x == 0.0 || x >= 100.0 => 0,
        x if x >= 10.0 => 1,
        x if x >= 1.0 => 2,
        _ => 3,
    };
    format!("{x:.digits$}{p}")
}

/// µs with as many decimals as a sub-µs figure needs.
pub fn format_us(ns: f64) -> String {
    let us = ns / 1000.0;
    match us {
        u if u < 1.0 => format!("{u:.3}"),
        u if u < 10.0 => format!("{u:.2}"),
        u if u < 100.0 => format!("{u:.1}"),
        u => format!("{u:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds() {
        assert_eq!(format_us(213.0), "0.213");
        assert_eq!(format_us(1850.0), "1.85");
        assert_eq!(format_us(35_900.0), "35.9");
        assert_eq!(format_us(123_456.0), "123");
    }

    #[test]
    fn fio_sizes() {
        for (s, want) in [
            ("4096", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("1m", 1 << 20),
            ("16g", 16 << 30),
            ("64g", 64 << 30),
            ("1t", 1 << 40),
            ("0x1000", 4096),
            ("4KiB", 4096),
            ("1MB", 1 << 20),
            ("1.5k", 1536),
            ("512b", 512),
            ("0", 0),
        ] {
            assert_eq!(parse_fio_size(s).unwrap(), want, "{s}");
        }
        for bad in ["", "k", "4q", "-1", "1.2.3k", "0x", "0xg", "4 kk", "."] {
            assert!(parse_fio_size(bad).is_err(), "{bad} should fail");
        }
        assert!(
            parse_fio_size("16384p")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
        assert!(
            parse_fio_size("999999999999999999999999")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        for bad in ["", "k", "12q", "-1", "1.5k", "0x10", "99999999999999999999"] {
            assert!(parse_size(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn lists_and_ranges() {
        assert_eq!(
            parse_size_list("32..8192").unwrap(),
            vec![32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
        );
        assert_eq!(
            parse_size_list("64,1k,1M").unwrap(),
            vec![64, 1024, 1 << 20]
        );
        assert_eq!(parse_size_list("0..4").unwrap(), vec![0, 1, 2, 4]);
        assert_eq!(parse_size_list("48..100").unwrap(), vec![48, 96]);
        assert_eq!(
            parse_size_list("64..256+64").unwrap(),
            vec![64, 128, 192, 256]
        );
        assert_eq!(parse_size_list("1k,64,1k").unwrap(), vec![64, 1024]);
        for bad in ["", "64,", "8..4", "1..2G", "4G", "1..8+0", "a..b"] {
            assert!(parse_size_list(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20us").unwrap(), Duration::from_micros(20));
        assert_eq!(
            parse_duration("1.5ms").unwrap(),
            Duration::from_micros(1500)
        );
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("100ns").unwrap(), Duration::from_nanos(100));
        for bad in ["", "us", "5 parsecs", "1e400s", "-3s"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn cpus() {
        assert_eq!(parse_cpu_list("0,1").unwrap(), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("2-4").unwrap(), Some(vec![2, 3, 4]));
        assert_eq!(parse_cpu_list("none").unwrap(), None);
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        // Ranges are checked before they are expanded: no 32 GB list.
        let e = parse_cpu_list("0-4000000000").unwrap_err().to_string();
        assert!(e.contains("cpu 4000000000 is out of range"), "{e}");
        assert!(parse_cpu_list(&format!("0-{}", CPU_LIMIT - 1)).is_ok());
        assert!(parse_cpu_list(&format!("{CPU_LIMIT}")).is_err());
        let many = vec![format!("0-{}", CPU_LIMIT - 1); 5].join(",");
        let e = parse_cpu_list(&many).unwrap_err().to_string();
        assert!(e.contains("more than"), "{e}");
    }

    #[test]
    fn size_lists_and_durations_are_written_as_they_parse_back() {
        for (text, shown) in [
            ("64..16k", "64..16k"),
            ("0..8M", "0..8M"),
            ("256..8M", "256..8M"),
            ("3..12", "3..12"),
            ("0..2", "0..2"),
            ("0,1", "0,1"),
            ("0,1,3", "0,1,3"),
            ("0,64..256,1000", "0,64..256,1000"),
            ("64,128", "64,128"),
            ("512,1k,2k,4k", "512..4k"),
            ("64..256+64", "64,128,192,256"),
            ("1G", "1G"),
        ] {
            let list = parse_size_list(text).unwrap();
            let back = format_size_ranges(&list);
            assert_eq!(back, shown, "{text}");
            assert_eq!(parse_size_list(&back).unwrap(), list, "{text} -> {back}");
        }
        assert_eq!(format_size_ranges(&[]), "");
        let load = parse_size_list("512,1k,2k,4k,8k,16k").unwrap();
        assert_eq!(format_size_list(&load), "512,1k,2k,4k,8k,16k");
        for (d, shown) in [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(10), "10s"),
            (Duration::from_millis(50), "50ms"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_micros(20), "20us"),
            (Duration::from_nanos(7), "7ns"),
        ] {
            assert_eq!(format_duration(d), shown);
            assert_eq!(parse_duration(shown).unwrap(), d, "{shown}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(64), "64");
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(3 << 20), "3M");
        assert_eq!(format_size(1000), "1000");
    }
}

/// How messages are cut into packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// Each message in one piece.
    Whole,
    /// Packets of this many bytes.
    Size(u64),
    /// A packet size chosen per message length by a rule derived from
    /// measurements of the transport.
    Adaptive,
}

impl Chunk {
    /// The word or size that names it, as typed.
    pub fn name(self) -> String {
        match self {
            Chunk::Whole => "whole".into(),
            Chunk::Size(n) => format_size(n),
            Chunk::Adaptive => "adaptive".into(),
        }
    }
}

impl Serialize for Chunk {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Chunk::Size(n) => s.serialize_u64(*n),
            c => s.serialize_str(&c.name()),
        }
    }
}

/// Read back as written: a packet size as a number, `whole` or `adaptive`
/// as a word.
impl<'de> serde::Deserialize<'de> for Chunk {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Chunk;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a packet size in bytes, \"whole\" or \"adaptive\"")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> std::result::Result<Chunk, E> {
                Ok(Chunk::Size(n))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<Chunk, E> {
                match s {
                    "whole" => Ok(Chunk::Whole),
                    "adaptive" => Ok(Chunk::Adaptive),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(s), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl std::str::FromStr for Chunk {
    type Err = String;

    /// `adaptive`, `whole` (or `none`, `0`), or a size like `4k`.
    fn from_str(s: &str) -> std::result::Result<Chunk, String> {
        match s.trim() {
            "adaptive" => Ok(Chunk::Adaptive),
            "whole" | "none" | "0" => Ok(Chunk::Whole),
            v => parse_size(v).map(Chunk::Size).map_err(|_| {
                format!("malformed chunk '{v}': expected a size like 4k, 'adaptive' or 'whole'")
            }),
        }
    }
}
