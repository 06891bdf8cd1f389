//! fio's number formatting: num2str's four significant characters with
//! binary or decimal prefixes, and microseconds as its text shows them.

/// fio's num2str with 4 digits: the smallest unit that keeps the integer part
/// within 4 digits, decimals to fill 4 characters (`2727MiB`, `10.7GiB`).
pub fn fio_num(v: f64, binary: bool, unit: &str) -> String {
    let (base, names): (f64, [&str; 6]) = if binary {
        (1024.0, ["", "Ki", "Mi", "Gi", "Ti", "Pi"])
    } else {
        (1000.0, ["", "k", "M", "G", "T", "P"])
    };
    let mut x = v.max(0.0);
    let mut i = 0;
    while x.round() > 9999.0 && i < names.len() - 1 {
        x /= base;
        i += 1;
    }
    let int_len = format!("{}", x.trunc() as u64).len();
    let decimals = if i == 0 {
        0
    } else {
        3usize.saturating_sub(int_len)
    };
    format!("{x:.decimals$}{}{unit}", names[i])
}

/// ns as µs with two decimals (fio's text shows latencies so).
pub fn usec(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

#[cfg(test)]
mod tests {
    use super::fio_num;

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
}
