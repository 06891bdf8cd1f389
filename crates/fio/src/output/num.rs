//! fio's number formatting (lib/num2str.c's rules: a number cut to a
//! number of characters with binary or decimal prefixes, its dropped part
//! kept as decimals where there is room), microseconds as xferbench's own
//! tables show them, and fio's dates.

/// fio's `num2str`: `num` (in units of `base`: 1, or 1024 for a figure
/// already in KiB) divided by 1000 or 1024 (`pow2`) until it has at most
/// `maxlen` digits, then as many decimals of the remainder as fit in
/// `maxlen` characters, then the prefix and `unit` ("B", "B/s", "" …).
/// Written to fio's rules rather than as plain rounding because scripts
/// compare fio's strings: `1130.5k`, `10.7GiB`, `4096B`, `78.1MiB/s`.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: &str) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post += 1;
    }
    let digits = |n: u64| n.to_string().len();
    let (mut num, mut modulo, mut carry) = (num, None, false);
    while post < prefixes.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let room = maxlen as i64 - digits(num) as i64;
    if room <= 1 {
        return format!("{}{}{unit}", num + u64::from(carry), prefixes[post]);
    }
    let decimals = (room - 1) as usize;
    let frac = format!("{:.decimals$}", m as f64 / thousand as f64);
    // A remainder that rounds up to 1 carries into the integer part.
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

/// fio's num2str with 4 digits, from a figure xferbench keeps as a float
/// (its fraction dropped, as fio's integer figures have none): `2727MiB`,
/// `10.7GiB`.
pub fn fio_num(v: f64, binary: bool, unit: &str) -> String {
    num2str(v.max(0.0) as u64, 4, 1, binary, unit)
}

/// ns as µs with two decimals (xferbench's own tables show latencies so).
pub fn usec(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

/// A Unix time as fio's texts write it (ctime's local time, without its
/// newline), e.g. `Thu Nov 26 21:22:56 2026`.
pub fn ctime(secs: i64) -> String {
    let mut buf = [0 as libc::c_char; 32];
    let t: libc::time_t = secs as libc::time_t;
    // SAFETY: ctime_r writes at most 26 bytes into the 32 given.
    let p = unsafe { libc::ctime_r(&t, buf.as_mut_ptr()) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: ctime_r wrote a NUL-terminated string into buf.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::{fio_num, num2str};

    #[test]
    fn fio_number_format() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        assert_eq!(fio_num(2727.0 * 1048576.0, true, "B/s"), "2727MiB/s");
        assert_eq!(fio_num(10.7 * gib, true, "B/s"), "10.7GiB/s");
        assert_eq!(fio_num(64.0 * gib, true, "B"), "64.0GiB");
        assert_eq!(fio_num(68.7e9, false, "B"), "68.7GB");
        assert_eq!(fio_num(4096.0 * 1048576.0, true, "B"), "4096MiB");
        assert_eq!(fio_num(512.0, true, "B"), "512B");
    }

    /// Strings fio 3.33 printed for these numbers (its normal output).
    #[test]
    fn num2str_is_fios() {
        // BW= and its decimal twin: 1816000 B/s.
        assert_eq!(num2str(1_816_000, 4, 1, true, "B/s"), "1773KiB/s");
        assert_eq!(num2str(1_816_000, 4, 1, false, "B/s"), "1816kB/s");
        // A latency's min/max with 6 digits.
        assert_eq!(num2str(1_130_512, 6, 1, false, ""), "1130.5k");
        assert_eq!(num2str(7998, 6, 1, false, ""), "7998");
        // IOPS.
        assert_eq!(num2str(85_333, 4, 1, false, ""), "85.3k");
        assert_eq!(num2str(102_400, 4, 1, false, ""), "102k");
        assert_eq!(num2str(443, 4, 1, false, ""), "443");
        // Block sizes in the job's first line.
        assert_eq!(num2str(4096, 4, 1, true, "B"), "4096B");
        assert_eq!(num2str(16384, 4, 1, true, "B"), "16.0KiB");
        assert_eq!(num2str(81920, 4, 1, false, "B"), "81.9kB");
        assert_eq!(num2str(81920, 4, 1, true, "B"), "80.0KiB");
        // A figure already in KiB (base 1024).
        assert_eq!(num2str(1773, 4, 1024, true, "B/s"), "1773KiB/s");
        // A remainder that rounds up carries: 1023/1024 with one decimal.
        assert_eq!(num2str(10 * 1024 + 1023, 4, 1, true, "B"), "11.0KiB");
        assert_eq!(num2str(0, 4, 1, true, "B"), "0B");
    }
}
