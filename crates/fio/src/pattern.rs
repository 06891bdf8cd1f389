//! fio's `verify_pattern=` syntax: the bytes a verified block is filled with
//! and checked against. Pieces are joined in any order — `0xdeadbeef` (bytes
//! as written), a decimal number (its bytes, least significant first, as
//! fio stores an int), `"text"`, `'file'` (its contents) and `%o` (the
//! block's offset, 8 bytes little-endian) — and the result repeats over the
//! block, so `verify_pattern=0xff%o"abcd"-12` means what it means to fio.

use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// The most bytes a pattern may hold (fio's limit too): a larger one is cut
/// by the block anyway, and a file named by mistake must not fill memory.
const MAX_LEN: usize = 128 << 20;

/// Width of `%o`: fio pastes the block offset as a 64-bit integer.
const OFFSET_LEN: usize = 8;

/// A parsed `verify_pattern`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The option as written, for messages and the JSON.
    text: String,
    bytes: Vec<u8>,
    /// Where in `bytes` each `%o` goes.
    offsets: Vec<usize>,
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl Pattern {
    /// Parses fio's syntax; the error says which piece is wrong and what
    /// is accepted (the caller adds the option's name).
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (piece, after) = if let Some(r) = rest.strip_prefix('"') {
                let end = r
                    .find('"')
                    .ok_or("a string is not closed; end it with \"")?;
                if end == 0 {
                    return Err("an empty string \"\" adds no bytes; drop it".into());
                }
                (
                    Piece::Bytes(Cow::Borrowed(&r.as_bytes()[..end])),
                    &r[end + 1..],
                )
            } else if let Some(r) = rest.strip_prefix('\'') {
                let end = r
                    .find('\'')
                    .ok_or("a file name is not closed; end it with '")?;
                (
                    Piece::Bytes(Cow::Owned(read_file(&r[..end])?)),
                    &r[end + 1..],
                )
            } else if let Some(r) = rest.strip_prefix("%o") {
                (Piece::Offset, r)
            } else if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case("0x") {
                hex(&rest[2..])?
            } else {
                decimal(rest)?
            };
            match piece {
                Piece::Bytes(b) => bytes.extend_from_slice(&b),
                Piece::Offset => {
                    offsets.push(bytes.len());
                    bytes.extend_from_slice(&[0; OFFSET_LEN]);
                }
            }
            if bytes.len() > MAX_LEN {
                return Err(format!(
                    "the pattern is over {} MiB; use a shorter one",
                    MAX_LEN >> 20
                ));
            }
            rest = after;
        }
        if bytes.is_empty() {
            return Err("the pattern is empty; give bytes, as in 0xdeadbeef or \"text\"".into());
        }
        Ok(Pattern {
            text: text.to_string(),
            bytes,
            offsets,
        })
    }

    /// Whether the pattern has `%o` pieces (the block's offset).
    pub fn has_offsets(&self) -> bool {
        !self.offsets.is_empty()
    }

    /// One repeat of the pattern's bytes (any `%o` left as zeros).
    pub fn unit_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The option as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// One repeat of the pattern for the block at `offset` (`%o` filled in).
    fn unit(&self, offset: u64) -> Cow<'_, [u8]> {
        if self.offsets.is_empty() {
            return Cow::Borrowed(&self.bytes);
        }
        let mut b = self.bytes.clone();
        for &at in &self.offsets {
            b[at..at + OFFSET_LEN].copy_from_slice(&offset.to_le_bytes());
        }
        Cow::Owned(b)
    }

    /// Fills `buf` as the bytes from `phase` on of a block at `offset`
    /// filled with the pattern from its start.
    pub fn fill(&self, buf: &mut [u8], offset: u64, phase: usize) {
        let unit = self.unit(offset);
        let n = unit.len();
        let first = n.min(buf.len());
        for (i, b) in buf[..first].iter_mut().enumerate() {
            *b = unit[(phase + i) % n];
        }
        // What is filled repeats every n bytes, so it can be doubled.
        let mut filled = first;
        while filled < buf.len() {
            let c = filled.min(buf.len() - filled);
            buf.copy_within(..c, filled);
            filled += c;
        }
    }

    /// The first index of `buf` that is not what [`Pattern::fill`] writes.
    pub fn first_mismatch(&self, buf: &[u8], offset: u64, phase: usize) -> Option<usize> {
        let unit = self.unit(offset);
        let n = unit.len();
        let first = n.min(buf.len());
        // Whole-slice compares first (fast); find the byte only if one fails.
        let head_ok = (0..first).all(|i| buf[i] == unit[(phase + i) % n]);
        if head_ok && buf[n.min(buf.len())..] == buf[..buf.len().saturating_sub(n)] {
            return None;
        }
        (0..buf.len()).find(|&i| buf[i] != unit[(phase + i) % n])
    }
}

/// One piece of a pattern.
enum Piece<'a> {
    Bytes(Cow<'a, [u8]>),
    Offset,
}

/// `0x…` after the prefix: the bytes as written; an odd count of digits
/// makes the first one a byte of its own (fio: `0xaaa` is 0a aa). A `0x`
/// right after the digits starts the next number (`0xff0x14`).
fn hex(s: &str) -> Result<(Piece<'_>, &str), String> {
    let mut end = s.bytes().take_while(u8::is_ascii_hexdigit).count();
    if end >= 2
        && s.as_bytes()[end - 1] == b'0'
        && matches!(s.as_bytes().get(end), Some(b'x' | b'X'))
    {
        end -= 1;
    }
    if end == 0 {
        return Err(format!(
            "'0x{}' has no hex digits after 0x",
            s.chars().take(8).collect::<String>()
        ));
    }
    let digits = &s[..end];
    let (lead, pairs) = digits.split_at(end % 2);
    let mut out = Vec::with_capacity(end / 2 + 1);
    if !lead.is_empty() {
        out.push(u8::from_str_radix(lead, 16).map_err(|e| e.to_string())?);
    }
    for i in (0..pairs.len()).step_by(2) {
        out.push(u8::from_str_radix(&pairs[i..i + 2], 16).map_err(|e| e.to_string())?);
    }
    Ok((Piece::Bytes(Cow::Owned(out)), &s[end..]))
}

/// A decimal number in i32's range: its bytes, least significant first, as
/// few as hold it (0 is one zero byte; a negative number is 4 bytes).
fn decimal(s: &str) -> Result<(Piece<'_>, &str), String> {
    let sign = usize::from(s.starts_with(['-', '+']));
    let mut end = sign + s[sign..].bytes().take_while(u8::is_ascii_digit).count();
    // `10x20` is 1 then 0x20, as fio reads it.
    if end > sign + 1
        && s.as_bytes()[end - 1] == b'0'
        && matches!(s.as_bytes().get(end), Some(b'x' | b'X'))
    {
        end -= 1;
    }
    let bad = || {
        format!(
            "cannot read '{}' (expected 0xHEX, a decimal number, \"text\", 'file' or %o)",
            s.chars().take(16).collect::<String>()
        )
    };
    if end == sign {
        return Err(bad());
    }
    let v: i64 = s[..end].parse().map_err(|_| bad())?;
    let v = i32::try_from(v).map_err(|_| {
        format!(
            "{} is outside a 32-bit int; write larger values in hex (0x…)",
            &s[..end]
        )
    })?;
    let mut u = v as u32;
    let mut out = vec![(u & 0xff) as u8];
    u >>= 8;
    while u != 0 {
        out.push((u & 0xff) as u8);
        u >>= 8;
    }
    Ok((Piece::Bytes(Cow::Owned(out)), &s[end..]))
}

/// A `'file'` piece: the file's bytes (fio reads it when the job is parsed).
fn read_file(name: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(name)
        .map_err(|e| format!("cannot read pattern file '{name}': {e}; check the path"))?;
    let mut b = Vec::new();
    f.take(MAX_LEN as u64 + 1)
        .read_to_end(&mut b)
        .map_err(|e| format!("cannot read pattern file '{name}': {e}"))?;
    if b.is_empty() {
        return Err(format!(
            "pattern file '{name}' is empty; name one with the bytes to write"
        ));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &str) -> Vec<u8> {
        Pattern::parse(s).unwrap().unit(0x0102).into_owned()
    }

    #[test]
    fn fios_examples() {
        assert_eq!(bytes("\"abcd\""), b"abcd");
        assert_eq!(bytes("-1024"), [0x00, 0xfc, 0xff, 0xff]);
        assert_eq!(bytes("66"), [0x42]);
        assert_eq!(bytes("0"), [0]);
        assert_eq!(bytes("0xFF0X1"), [0xff, 0x01]);
        assert_eq!(bytes("0xaaa"), [0x0a, 0xaa]);
        assert_eq!(bytes("0xdeadbeef"), [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(
            bytes("\"123\"0xFFeeCC"),
            [0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]
        );
        assert_eq!(
            bytes("-100xab\"1\"%o\"2\""),
            [
                0xf6, 0xff, 0xff, 0xff, 0xab, 0x31, 2, 1, 0, 0, 0, 0, 0, 0, 0x32
            ]
        );
        assert_eq!(bytes("0xff0x14"), [0xff, 0x14]);
        assert_eq!(bytes(&format!("0x{}", "fe".repeat(21))), [0xfe; 21]);
    }

    #[test]
    fn bad_patterns_say_why() {
        for (p, want) in [
            ("\"abc", "not closed"),
            ("0xzz", "no hex digits"),
            ("zz", "cannot read 'zz'"),
            ("4294967296", "outside a 32-bit int"),
            ("'/nonexistent/p'", "cannot read pattern file"),
            ("\"\"", "empty string"),
            ("0xff zz", "cannot read ' zz'"),
        ] {
            let e = Pattern::parse(p).unwrap_err();
            assert!(e.contains(want), "{p}: {e}");
        }
    }

    #[test]
    fn fills_repeat_with_phase_and_offset() {
        let p = Pattern::parse("\"abc\"").unwrap();
        let mut b = vec![0u8; 10];
        p.fill(&mut b, 0, 1);
        assert_eq!(&b, b"bcabcabcab");
        assert_eq!(p.first_mismatch(&b, 0, 1), None);
        b[7] = b'x';
        assert_eq!(p.first_mismatch(&b, 0, 1), Some(7));
        let o = Pattern::parse("%o").unwrap();
        let mut b = vec![0u8; 20];
        o.fill(&mut b, 0x1122, 0);
        assert_eq!(&b[..10], &[0x22, 0x11, 0, 0, 0, 0, 0, 0, 0x22, 0x11]);
        assert_eq!(o.first_mismatch(&b, 0x1122, 0), None);
        assert_eq!(o.first_mismatch(&b, 0x1123, 0), Some(0));
        // A block shorter than the pattern holds its start.
        let mut s = vec![0u8; 2];
        p.fill(&mut s, 0, 0);
        assert_eq!(&s, b"ab");
    }

    #[test]
    fn file_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pat");
        std::fs::write(&f, b"xyz").unwrap();
        let p = Pattern::parse(&format!("0x01'{}'", f.display())).unwrap();
        assert_eq!(p.unit(0).as_ref(), b"\x01xyz");
    }
}
