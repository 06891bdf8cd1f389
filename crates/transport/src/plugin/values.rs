//! The rules for plugin option values (ABI 1.1), the same as the static
//! inline helpers at the end of `include/xferbench/plugin.h`: the host checks
//! a value by its declared kind before `open`, so the plugin parsing it with
//! the helpers gets exactly what the host accepted. Sizes are binary (as
//! everywhere in xferbench), times need a unit, rates are sizes per second.

use super::ffi;

/// A kind's name and the rule a user reads in an error.
pub fn kind_words(kind: u32) -> (&'static str, &'static str) {
    match kind {
        ffi::OPT_SIZE => (
            "size",
            "bytes with an optional binary suffix k, M, G (4k = 4096)",
        ),
        ffi::OPT_TIME => (
            "time",
            "a number with a unit ns, us, ms or s (5us); a bare number is refused",
        ),
        ffi::OPT_RATE => (
            "rate",
            "bytes per second as a size, optionally with /s (1g = 2^30 B/s, 1000000000 = 10^9 B/s)",
        ),
        ffi::OPT_COUNT => ("count", "a whole number"),
        ffi::OPT_BOOL => ("bool", "1, 0, true, false, yes, no, on or off"),
        ffi::OPT_STRING => ("string", "any text"),
        _ => ("string", "any text (an unknown kind is taken as a string)"),
    }
}

/// Whether `v` is a valid value of `kind` (what the header's helper for
/// that kind accepts).
pub fn valid(kind: u32, v: &str) -> bool {
    match kind {
        ffi::OPT_SIZE => size(v).is_some(),
        ffi::OPT_TIME => time_ns(v).is_some(),
        ffi::OPT_RATE => rate(v).is_some(),
        ffi::OPT_COUNT => count(v).is_some(),
        ffi::OPT_BOOL => boolean(v).is_some(),
        _ => true,
    }
}

/// Leading ASCII digits as a number, and the rest.
fn digits(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `xb_parse_count`.
pub fn count(s: &str) -> Option<u64> {
    match digits(s)? {
        (n, "") => Some(n),
        _ => None,
    }
}

/// `xb_parse_size`.
pub fn size(s: &str) -> Option<u64> {
    let (n, rest) = digits(s)?;
    let mult: u64 = match rest.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `xb_parse_rate`.
pub fn rate(s: &str) -> Option<u64> {
    if s.len() > 63 {
        return None;
    }
    let bare = s
        .strip_suffix("/s")
        .or_else(|| s.strip_suffix("/S"))
        .unwrap_or(s);
    size(bare)
}

/// `xb_parse_time_ns`.
pub fn time_ns(s: &str) -> Option<u64> {
    let (whole, mut rest) = digits(s)?;
    let (mut frac, mut scale) = (0u64, 1u64);
    if let Some(r) = rest.strip_prefix('.') {
        let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if end == 0 {
            return None;
        }
        for d in r[..end].bytes() {
            if scale < 1_000_000_000 {
                frac = frac * 10 + u64::from(d - b'0');
                scale *= 10;
            }
        }
        rest = &r[end..];
    }
    let unit: u64 = match rest.to_ascii_lowercase().as_str() {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    };
    whole.checked_mul(unit)?.checked_add(frac * unit / scale)
}

/// `xb_parse_bool`.
pub fn boolean(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_the_header_states() {
        assert_eq!(size("4k"), Some(4096));
        assert_eq!(size("2GiB"), Some(2 << 30));
        assert_eq!(size("1.5k"), None);
        assert_eq!(size("k"), None);
        assert_eq!(rate("1G/s"), Some(1 << 30));
        assert_eq!(rate("1000000000"), Some(1_000_000_000));
        assert_eq!(time_ns("5us"), Some(5_000));
        assert_eq!(time_ns("1.5ms"), Some(1_500_000));
        assert_eq!(time_ns("250ns"), Some(250));
        assert_eq!(time_ns("5"), None, "a bare number is refused");
        assert_eq!(time_ns("5.us"), None);
        assert_eq!(count("64"), Some(64));
        assert_eq!(count("64k"), None);
        assert_eq!(boolean("Yes"), Some(true));
        assert_eq!(boolean("2"), None);
        assert_eq!(size("99999999999999999999"), None);
    }
}
