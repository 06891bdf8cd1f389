//! Verify, the block format (its options are `job::verify`'s, checking
//! as the job runs is the worker's `verify` module). Verified blocks, as
//! fio's `verify=`: every written block (or every
//! `verify_interval` chunk of one) starts with a header saying where it
//! belongs and what its payload's checksum is, so a read-back — in this
//! invocation or a later one — needs nothing but the block itself. The
//! payload is derived from (seed, offset), or is `verify_pattern`, so a bad
//! block is located to the byte and shown beside what should have been there.
//!
//! Header layout (little-endian): magic `XBVF`, version, kind, chunk length,
//! offset, sequence, seed, a 64-bit checksum field, and a crc32c of the
//! header itself. Checksums longer than 64 bits (md5, the shas) follow the
//! header in full; the shorter ones sit in its field, where xxhash and
//! crc32c always have, so blocks written before the other kinds existed
//! still check.

use crate::checksum::{self, Sum};
use crate::job::{Job, VerifyKind};
use crate::pattern::Pattern;
use crate::payload::{self, Direction};
use std::borrow::Cow;

/// Bytes of header at the start of every verified block (or chunk), before
/// any checksum longer than 64 bits.
pub const HEADER_LEN: usize = 64;
const MAGIC: u32 = u32::from_le_bytes(*b"XBVF");
const VERSION: u16 = 1;

/// What a block's header says (or should say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: VerifyKind,
    /// Bytes this header covers: the block, or its `verify_interval` chunk.
    pub block_len: u32,
    /// Byte offset of the block (chunk) in the target.
    pub offset: u64,
    /// Block number within the job that wrote it.
    pub seq: u64,
    pub seed: u64,
    /// Checksum of the bytes after the header (none for `meta`).
    pub sum: Sum,
}

/// The header codes of the kinds; never reused, as blocks outlive runs.
const CODES: [(u16, VerifyKind); 17] = [
    (1, VerifyKind::Xxhash),
    (2, VerifyKind::Crc32c),
    (3, VerifyKind::Md5),
    (4, VerifyKind::Crc64),
    (5, VerifyKind::Crc32),
    (6, VerifyKind::Crc16),
    (7, VerifyKind::Crc7),
    (8, VerifyKind::Sha1),
    (9, VerifyKind::Sha224),
    (10, VerifyKind::Sha256),
    (11, VerifyKind::Sha384),
    (12, VerifyKind::Sha512),
    (13, VerifyKind::Sha3_224),
    (14, VerifyKind::Sha3_256),
    (15, VerifyKind::Sha3_384),
    (16, VerifyKind::Sha3_512),
    (17, VerifyKind::Meta),
];

impl Header {
    /// Writes the header, then any long checksum, into `out` (exactly
    /// [`region_len`] bytes).
    fn encode(&self, out: &mut [u8]) {
        let code = CODES
            .iter()
            .find(|(_, k)| *k == self.kind)
            .map_or(0, |c| c.0);
        let b = &mut out[..HEADER_LEN];
        b.fill(0);
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[6..8].copy_from_slice(&code.to_le_bytes());
        b[8..12].copy_from_slice(&self.block_len.to_le_bytes());
        b[16..24].copy_from_slice(&self.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.seed.to_le_bytes());
        b[40..48].copy_from_slice(&self.sum.inline().to_le_bytes());
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        let long = checksum::trailing_len(self.kind);
        out[HEADER_LEN..HEADER_LEN + long].copy_from_slice(&self.sum.as_bytes()[..long]);
    }

    /// The header at the start of `b`, or why there is none.
    fn decode(b: &[u8]) -> Result<Header, &'static str> {
        if b.len() < HEADER_LEN {
            return Err("block shorter than a verify header");
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if u32_at(0) != MAGIC {
            return Err("no verify header (bad magic: never written with verify, or overwritten)");
        }
        if crc32c::crc32c(&b[..60]) != u32_at(60) {
            return Err("header checksum mismatch (the header itself is damaged)");
        }
        let kind = CODES
            .iter()
            .find(|(c, _)| *c == u16_at(6))
            .map(|c| c.1)
            .ok_or("unknown checksum kind in header (written by a newer xferbench?)")?;
        let long = checksum::trailing_len(kind);
        let sum = if long > 0 {
            let digest = b
                .get(HEADER_LEN..HEADER_LEN + long)
                .ok_or("block too short for the checksum its header names")?;
            Sum::from_bytes(digest)
        } else {
            Sum::from_u64(u64_at(40), checksum::len(kind))
        };
        Ok(Header {
            kind,
            block_len: u32_at(8),
            offset: u64_at(16),
            seq: u64_at(24),
            seed: u64_at(32),
            sum,
        })
    }
}

impl std::fmt::Display for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{offset {}, len {}, seq {}, seed {:#x}, {}",
            self.offset,
            self.block_len,
            self.seq,
            self.seed,
            self.kind.name(),
        )?;
        if checksum::len(self.kind) > 0 {
            write!(f, " {}", self.sum)?;
        }
        f.write_str("}")
    }
}

/// Bytes a header of `kind` takes at the start of a block (or chunk): the
/// header and any long checksum; none for `verify=pattern`.
pub fn region_len(kind: VerifyKind) -> usize {
    match kind {
        VerifyKind::Pattern => 0,
        k => HEADER_LEN + checksum::trailing_len(k),
    }
}

/// How a job writes and checks its blocks: its verify options together.
#[derive(Clone, Debug)]
pub struct Spec {
    pub kind: VerifyKind,
    pub pattern: Option<Pattern>,
    /// `verify_interval`: a header every this many bytes; None = per block.
    pub interval: Option<usize>,
    /// `verify_offset`: where in each chunk the header is stored (0 = first).
    pub header_at: usize,
    /// `verify_header_seed`: a header's seed must be the job's.
    pub check_seed: bool,
}

impl Spec {
    /// A header per block, payload from the seed.
    #[cfg(test)]
    pub fn new(kind: VerifyKind) -> Spec {
        Spec {
            kind,
            pattern: None,
            interval: None,
            header_at: 0,
            check_seed: false,
        }
    }

    /// The job's verify options, if it verifies.
    pub fn of(job: &Job) -> Option<Spec> {
        let kind = job.verify?;
        Some(Spec {
            kind,
            pattern: job.verify_pattern.clone(),
            interval: job
                .verify_interval
                .map(|i| usize::try_from(i).unwrap_or(usize::MAX)),
            header_at: usize::try_from(job.verify_offset).unwrap_or(usize::MAX),
            check_seed: job.verify_header_seed,
        })
    }

    /// Bytes each header covers in a block of `block_len`.
    fn chunk_len(&self, block_len: usize) -> usize {
        match (self.kind, self.interval) {
            (VerifyKind::Pattern, _) | (_, None) => block_len.max(1),
            (_, Some(i)) => i.clamp(1, block_len.max(1)),
        }
    }

    /// Why blocks of `bs` bytes cannot be written this way, worded as the
    /// fix (the caller names the job).
    pub fn fits(&self, bs: u64) -> Result<(), String> {
        let name = self.kind.name();
        let hl = region_len(self.kind) as u64;
        let what = if checksum::trailing_len(self.kind) > 0 {
            "header and checksum"
        } else {
            "header"
        };
        if self.kind == VerifyKind::Pattern {
            if self.pattern.is_none() {
                return Err("verify=pattern needs verify_pattern= (the bytes every block holds), as in verify_pattern=0xdeadbeef".into());
            }
            if self.header_at > 0 {
                return Err("verify_offset= moves the header, and verify=pattern writes none; drop verify_offset".into());
            }
            return Ok(());
        }
        let chunk = match self.interval {
            Some(i) => {
                let i = i as u64;
                if i < hl {
                    return Err(format!(
                        "verify_interval={i} is smaller than the {hl}-byte {what} of verify={name}; use at least {hl}"
                    ));
                }
                if !bs.is_multiple_of(i) {
                    return Err(format!(
                        "verify_interval={i} must divide bs={bs} evenly; use a divisor of bs"
                    ));
                }
                i
            }
            None => bs,
        };
        if chunk < hl {
            return Err(format!(
                "verify={name} needs bs of at least {hl} bytes (the block {what})"
            ));
        }
        let at = self.header_at as u64;
        if at > 0 && at < hl {
            return Err(format!(
                "verify_offset={at} would overlap the {hl}-byte {what} it is swapped with; use 0 or at least {hl}"
            ));
        }
        if at > 0 && at + hl > chunk {
            return Err(format!(
                "verify_offset={at} puts the {hl}-byte {what} past the end of a {chunk}-byte block; use at most {}",
                chunk - hl
            ));
        }
        Ok(())
    }

    /// Swaps each chunk's header with the bytes at `header_at` (its own
    /// inverse: the writer swaps out, the checker swaps back).
    fn swap_headers(&self, block: &mut [u8]) {
        let (hl, at) = (region_len(self.kind), self.header_at);
        if at == 0 || hl == 0 {
            return;
        }
        for chunk in block.chunks_mut(self.chunk_len(block.len())) {
            if at + hl <= chunk.len() {
                let (head, rest) = chunk.split_at_mut(at);
                head[..hl].swap_with_slice(&mut rest[..hl]);
            }
        }
    }
}

/// Fills `block` (one whole block) for `offset`: in each chunk a header,
/// then the payload (the pattern, or values from seed and offset).
pub fn fill(block: &mut [u8], spec: &Spec, offset: u64, seq: u64, seed: u64) {
    let hl = region_len(spec.kind);
    let cl = spec.chunk_len(block.len());
    for (i, chunk) in block.chunks_mut(cl).enumerate() {
        let pos = i * cl;
        let coff = offset + pos as u64;
        let len = chunk.len();
        let (head, body) = chunk.split_at_mut(hl.min(len));
        match &spec.pattern {
            Some(p) => p.fill(body, offset, pos + head.len()),
            None => payload::fill(body, seed, coff, Direction::Request),
        }
        if hl == 0 {
            continue;
        }
        let h = Header {
            kind: spec.kind,
            block_len: u32::try_from(len).unwrap_or(u32::MAX),
            offset: coff,
            seq,
            seed,
            sum: checksum::of(spec.kind, body),
        };
        let mut region = [0u8; HEADER_LEN + checksum::MAX_LEN];
        h.encode(&mut region[..hl]);
        let n = head.len();
        head.copy_from_slice(&region[..n]);
    }
    spec.swap_headers(block);
}

/// Why one chunk did not check.
enum Fault {
    NoHeader(&'static str),
    Misplaced(u64),
    Length(u32),
    Kind(VerifyKind),
    Seed(u64),
    /// The payload's checksum is not the header's.
    Sum,
    Pattern,
}

/// Checks one chunk (headers already swapped back): `pos` is where it
/// starts in the block at `offset`.
fn check_chunk(chunk: &[u8], spec: &Spec, offset: u64, pos: usize, seed: u64) -> Result<(), Fault> {
    let hl = region_len(spec.kind);
    let pattern_ok = |from: usize| {
        spec.pattern.as_ref().is_none_or(|p| {
            p.first_mismatch(&chunk[from..], offset, pos + from)
                .is_none()
        })
    };
    if hl == 0 {
        return if pattern_ok(0) {
            Ok(())
        } else {
            Err(Fault::Pattern)
        };
    }
    let h = Header::decode(chunk).map_err(Fault::NoHeader)?;
    if h.offset != offset + pos as u64 {
        return Err(Fault::Misplaced(h.offset));
    }
    if h.block_len as usize != chunk.len() {
        return Err(Fault::Length(h.block_len));
    }
    if h.kind != spec.kind {
        return Err(Fault::Kind(h.kind));
    }
    if spec.check_seed && h.seed != seed {
        return Err(Fault::Seed(h.seed));
    }
    if spec.kind == VerifyKind::Meta {
        // fio's meta: the header only, and the pattern when one is given.
        return if pattern_ok(hl) {
            Ok(())
        } else {
            Err(Fault::Pattern)
        };
    }
    if checksum::of(spec.kind, &chunk[hl..]) != h.sum {
        return Err(Fault::Sum);
    }
    Ok(())
}

/// A block that failed verification.
#[derive(Clone, Debug)]
pub struct BadBlock {
    /// Offset of the block in the target.
    pub offset: u64,
    /// Offset of the failing `verify_interval` chunk, when not the block's.
    pub chunk: Option<u64>,
    /// Offset in the target of the first byte that differs from what the
    /// writer put there, when it can be known.
    pub byte: Option<u64>,
    pub expected_byte: Option<u8>,
    pub found_byte: Option<u8>,
    pub what: String,
    /// The header that should be there (None for `verify=pattern`).
    pub expected: Option<Header>,
    pub found: Option<Header>,
    /// The block as it should have been (for verify_dump).
    pub expected_block: Vec<u8>,
}

impl std::fmt::Display for BadBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad block at offset {}", self.offset)?;
        if let Some(c) = self.chunk {
            write!(f, " (verify_interval chunk at offset {c})")?;
        }
        write!(f, ": {}", self.what)?;
        if let (Some(b), Some(e), Some(g)) = (self.byte, self.expected_byte, self.found_byte) {
            write!(
                f,
                "; first bad byte at offset {b} (block + {}): expected {e:#04x}, found {g:#04x}",
                b - self.offset
            )?;
        }
        if let Some(e) = &self.expected {
            write!(f, "; expected header {e}")?;
            match &self.found {
                Some(h) => write!(f, ", found {h}")?,
                None => write!(f, ", found no valid header")?,
            }
        }
        Ok(())
    }
}

/// Checks one block read from `offset`. `seq` and `seed` are what this job
/// would have written there; a block written by another invocation is
/// accepted when its own header is consistent with its place and content
/// (unless `verify_header_seed` asks for this job's seed).
pub fn check(
    block: &[u8],
    spec: &Spec,
    offset: u64,
    seq: u64,
    seed: u64,
) -> Result<(), Box<BadBlock>> {
    let plain: Cow<[u8]> = if spec.header_at > 0 {
        let mut b = block.to_vec();
        spec.swap_headers(&mut b);
        Cow::Owned(b)
    } else {
        Cow::Borrowed(block)
    };
    let cl = spec.chunk_len(block.len());
    for (i, chunk) in plain.chunks(cl).enumerate() {
        if let Err(fault) = check_chunk(chunk, spec, offset, i * cl, seed) {
            return Err(Box::new(describe(
                block,
                chunk,
                spec,
                offset,
                i * cl,
                seq,
                seed,
                fault,
            )));
        }
    }
    Ok(())
}

/// The slow path: what exactly is wrong with the chunk at `pos` (`chunk`
/// as unswapped), and where its first bad byte is.
#[allow(clippy::too_many_arguments)]
fn describe(
    block: &[u8],
    chunk: &[u8],
    spec: &Spec,
    offset: u64,
    pos: usize,
    seq: u64,
    seed: u64,
    fault: Fault,
) -> BadBlock {
    let hl = region_len(spec.kind);
    let found = if hl > 0 {
        Header::decode(chunk).ok()
    } else {
        None
    };
    // The block as its writer made it: from the header's own seed and
    // sequence when they can be read.
    let mut want = vec![0u8; block.len()];
    fill(
        &mut want,
        spec,
        offset,
        found.map_or(seq, |h| h.seq),
        found.map_or(seed, |h| h.seed),
    );
    let expected = if hl > 0 {
        let mut plain = want.clone();
        spec.swap_headers(&mut plain);
        Header::decode(&plain[pos..]).ok()
    } else {
        None
    };
    let kind = spec.kind.name();
    let what = match fault {
        Fault::NoHeader(why) => why.to_string(),
        Fault::Misplaced(at) => format!(
            "header names offset {at} (a misplaced block: the data went to the wrong address)"
        ),
        Fault::Length(n) => format!(
            "header names a {n}-byte block, the job reads {} (written with another bs or verify_interval?)",
            chunk.len()
        ),
        Fault::Kind(k) => format!(
            "written with verify={}, checked with verify={kind}",
            k.name()
        ),
        Fault::Seed(s) => format!(
            "header seed {s:#x} is not this job's {seed:#x} (written by a run with another randseed; verify_header_seed=0 accepts it)"
        ),
        Fault::Sum => format!(
            "payload {kind} is {}, header says {}",
            checksum::of(spec.kind, &chunk[hl.min(chunk.len())..]),
            found.map_or(Sum::NONE, |h| h.sum)
        ),
        Fault::Pattern => format!(
            "data does not match verify_pattern={}",
            spec.pattern.as_ref().map_or("", |p| p.text())
        ),
    };
    // Physical bytes of the failing chunk: swapping stays inside a chunk.
    let range = pos..(pos + chunk.len()).min(block.len());
    let diff = want[range.clone()]
        .iter()
        .zip(&block[range])
        .position(|(a, b)| a != b)
        .map(|i| pos + i);
    BadBlock {
        offset,
        chunk: (chunk.len() != block.len()).then_some(offset + pos as u64),
        byte: diff.map(|i| offset + i as u64),
        expected_byte: diff.map(|i| want[i]),
        found_byte: diff.map(|i| block[i]),
        what,
        expected,
        found,
        expected_block: want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_kinds() -> impl Iterator<Item = VerifyKind> {
        VerifyKind::ALL
            .into_iter()
            .map(|(_, k)| k)
            .filter(|k| *k != VerifyKind::Pattern)
    }

    #[test]
    fn every_kind_round_trips_and_names_a_flipped_byte() {
        for kind in all_kinds() {
            let spec = Spec::new(kind);
            let mut b = vec![0u8; 4096];
            fill(&mut b, &spec, 8192, 2, 7);
            assert!(check(&b, &spec, 8192, 2, 7).is_ok(), "{kind:?}");
            // Another invocation with another seed still accepts it.
            assert!(check(&b, &spec, 8192, 99, 1).is_ok(), "{kind:?}");
            // meta checks the header alone: flip a header byte for it.
            let at = if kind == VerifyKind::Meta { 20 } else { 1000 };
            b[at] ^= 0x10;
            let bad = check(&b, &spec, 8192, 2, 7).unwrap_err();
            assert_eq!(bad.byte, Some(8192 + at as u64), "{kind:?}: {bad}");
            assert_eq!(bad.found_byte.unwrap() ^ bad.expected_byte.unwrap(), 0x10);
            assert!(
                bad.to_string().contains(&format!("offset {}", 8192 + at)),
                "{bad}"
            );
            assert!(bad.to_string().contains("expected header"), "{bad}");
        }
    }

    #[test]
    fn long_checksums_are_kept_in_full_after_the_header() {
        let spec = Spec::new(VerifyKind::Sha512);
        let mut b = vec![0u8; 1024];
        fill(&mut b, &spec, 0, 0, 7);
        assert_eq!(region_len(VerifyKind::Sha512), 128);
        let h = Header::decode(&b).unwrap();
        assert_eq!(h.sum, checksum::of(VerifyKind::Sha512, &b[128..]));
        assert_eq!(h.sum.as_bytes(), &b[64..128]);
        // The stored digest's last byte matters: a damaged one is caught
        // and located there.
        b[127] ^= 1;
        let bad = check(&b, &spec, 0, 0, 7).unwrap_err();
        assert_eq!(bad.byte, Some(127), "{bad}");
        assert!(bad.what.starts_with("payload sha512 is 0x"), "{}", bad.what);
    }

    #[test]
    fn blocks_written_before_the_new_kinds_still_check() {
        // A crc32c block as the previous version wrote it: the checksum in
        // the header's 64-bit field, payload from (seed, offset).
        let mut b = vec![0u8; 512];
        payload::fill(&mut b[64..], 7, 4096, Direction::Request);
        let sum = u64::from(crc32c::crc32c(&b[64..]));
        b[0..4].copy_from_slice(b"XBVF");
        b[4..6].copy_from_slice(&1u16.to_le_bytes());
        b[6..8].copy_from_slice(&2u16.to_le_bytes());
        b[8..12].copy_from_slice(&512u32.to_le_bytes());
        b[16..24].copy_from_slice(&4096u64.to_le_bytes());
        b[24..32].copy_from_slice(&8u64.to_le_bytes());
        b[32..40].copy_from_slice(&7u64.to_le_bytes());
        b[40..48].copy_from_slice(&sum.to_le_bytes());
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        assert!(check(&b, &Spec::new(VerifyKind::Crc32c), 4096, 8, 7).is_ok());
        let mut now = vec![0u8; 512];
        fill(&mut now, &Spec::new(VerifyKind::Crc32c), 4096, 8, 7);
        assert_eq!(now, b, "the crc32c layout changed");
    }

    #[test]
    fn misplaced_damaged_and_mismatched_headers() {
        let x = Spec::new(VerifyKind::Xxhash);
        let mut b = vec![0u8; 512];
        fill(&mut b, &x, 0, 0, 7);
        let bad = check(&b, &x, 512, 1, 7).unwrap_err();
        assert!(bad.what.contains("misplaced"), "{}", bad.what);
        let bad = check(&b, &Spec::new(VerifyKind::Md5), 0, 0, 7).unwrap_err();
        assert_eq!(
            bad.what,
            "written with verify=xxhash, checked with verify=md5"
        );
        let seeded = Spec {
            check_seed: true,
            ..x.clone()
        };
        assert!(check(&b, &seeded, 0, 0, 7).is_ok());
        let bad = check(&b, &seeded, 0, 0, 8).unwrap_err();
        assert!(
            bad.what.contains("header seed 0x7 is not this job's 0x8"),
            "{}",
            bad.what
        );
        b[20] ^= 1;
        let bad = check(&b, &x, 0, 0, 7).unwrap_err();
        assert!(bad.what.contains("header checksum"), "{}", bad.what);
        assert_eq!(bad.byte, Some(20));
        let zero = vec![0u8; 512];
        let bad = check(&zero, &Spec::new(VerifyKind::Crc32c), 0, 0, 7).unwrap_err();
        assert!(bad.what.contains("no verify header"), "{}", bad.what);
    }

    #[test]
    fn patterns_fill_and_check() {
        let p = Pattern::parse("0xdeadbeef").unwrap();
        // verify=pattern: no header, every byte the pattern.
        let spec = Spec {
            pattern: Some(p.clone()),
            ..Spec::new(VerifyKind::Pattern)
        };
        let mut b = vec![0u8; 256];
        fill(&mut b, &spec, 4096, 0, 7);
        assert_eq!(&b[..8], &[0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef]);
        assert!(check(&b, &spec, 4096, 0, 7).is_ok());
        b[101] = 0;
        let bad = check(&b, &spec, 4096, 0, 7).unwrap_err();
        assert_eq!(bad.byte, Some(4096 + 101));
        assert!(
            bad.to_string()
                .contains("data does not match verify_pattern=0xdeadbeef"),
            "{bad}"
        );
        assert!(!bad.to_string().contains("header"), "{bad}");
        // meta with a pattern: the header, then the pattern after it, in
        // phase with the block's start (as fio fills it).
        let meta = Spec {
            pattern: Some(p),
            ..Spec::new(VerifyKind::Meta)
        };
        let mut b = vec![0u8; 256];
        fill(&mut b, &meta, 0, 0, 7);
        assert_eq!(&b[64..68], &[0xde, 0xad, 0xbe, 0xef]);
        assert!(check(&b, &meta, 0, 0, 7).is_ok());
        b[200] ^= 4;
        let bad = check(&b, &meta, 0, 0, 7).unwrap_err();
        assert_eq!(bad.byte, Some(200));
        // A pattern with %o differs per block.
        let o = Spec {
            pattern: Some(Pattern::parse("%o").unwrap()),
            ..Spec::new(VerifyKind::Pattern)
        };
        let mut b = vec![0u8; 64];
        fill(&mut b, &o, 512, 0, 7);
        assert!(check(&b, &o, 512, 0, 7).is_ok());
        assert!(check(&b, &o, 1024, 0, 7).is_err());
        assert!(
            Spec::new(VerifyKind::Pattern)
                .fits(4096)
                .unwrap_err()
                .contains("verify_pattern=")
        );
    }

    #[test]
    fn intervals_put_a_header_in_every_chunk() {
        let spec = Spec {
            interval: Some(1024),
            ..Spec::new(VerifyKind::Sha256)
        };
        let mut b = vec![0u8; 4096];
        fill(&mut b, &spec, 65536, 3, 7);
        for c in 0..4 {
            let h = Header::decode(&b[c * 1024..]).unwrap();
            assert_eq!(
                (h.offset, h.block_len, h.seq),
                (65536 + c as u64 * 1024, 1024, 3)
            );
        }
        assert!(check(&b, &spec, 65536, 3, 7).is_ok());
        b[2 * 1024 + 500] ^= 1;
        let bad = check(&b, &spec, 65536, 3, 7).unwrap_err();
        assert_eq!(bad.chunk, Some(65536 + 2048));
        assert_eq!(bad.byte, Some(65536 + 2048 + 500));
        assert!(
            bad.to_string()
                .contains("(verify_interval chunk at offset 67584)"),
            "{bad}"
        );
        // Read with another interval: the header says so.
        let whole = Spec::new(VerifyKind::Sha256);
        let bad = check(&b, &whole, 65536, 3, 7).unwrap_err();
        assert!(
            bad.what.contains("another bs or verify_interval"),
            "{}",
            bad.what
        );
        assert!(spec.fits(4096).is_ok());
        assert!(
            spec.fits(3072 + 512)
                .unwrap_err()
                .contains("divide bs=3584")
        );
        let tiny = Spec {
            interval: Some(64),
            ..spec.clone()
        };
        assert!(
            tiny.fits(4096)
                .unwrap_err()
                .contains("smaller than the 96-byte header and checksum")
        );
    }

    #[test]
    fn verify_offset_moves_the_header_and_back() {
        let spec = Spec {
            header_at: 512,
            ..Spec::new(VerifyKind::Crc64)
        };
        let mut b = vec![0u8; 2048];
        fill(&mut b, &spec, 0, 0, 7);
        assert!(Header::decode(&b).is_err());
        assert!(Header::decode(&b[512..]).is_ok());
        assert!(check(&b, &spec, 0, 0, 7).is_ok());
        b[512 + 17] ^= 2; // the offset field, where it now lives
        let bad = check(&b, &spec, 0, 0, 7).unwrap_err();
        assert_eq!(bad.byte, Some(512 + 17), "{bad}");
        assert!(bad.what.contains("header checksum"), "{}", bad.what);
        assert!(spec.fits(512 + 63).unwrap_err().contains("past the end"));
        let overlap = Spec {
            header_at: 32,
            ..spec
        };
        assert!(overlap.fits(4096).unwrap_err().contains("overlap"));
    }

    #[test]
    fn tiny_blocks() {
        let spec = Spec::new(VerifyKind::Crc32c);
        let mut b = vec![0u8; 16];
        fill(&mut b, &spec, 0, 0, 1);
        assert!(check(&b, &spec, 0, 0, 1).is_err());
        assert!(spec.fits(16).unwrap_err().contains("at least 64 bytes"));
        let mut b = vec![0u8; 100];
        let md5 = Spec::new(VerifyKind::Md5);
        fill(&mut b, &md5, 0, 0, 1);
        assert!(check(&b, &md5, 0, 0, 1).is_ok());
        let mut s = vec![0u8; 70];
        fill(&mut s, &md5, 0, 0, 1);
        assert!(check(&s, &md5, 0, 0, 1).is_err());
    }
}
