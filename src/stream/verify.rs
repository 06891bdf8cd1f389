//! Verified blocks, as fio's `verify=`: every written block starts with a
//! header saying where it belongs and what its payload's checksum is, so a
//! read-back — in this invocation or a later one — needs nothing but the
//! block itself. The payload is derived from (seed, offset), so a bad block is
//! located to the byte and shown beside what should have been there.

use crate::payload::{self, Direction};
use crate::stream::job::VerifyKind;

/// Bytes of header at the start of every verified block.
pub const HEADER_LEN: usize = 64;
const MAGIC: u32 = u32::from_le_bytes(*b"XBVF");
const VERSION: u16 = 1;

/// What a block's header says (or should say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: VerifyKind,
    pub block_len: u32,
    /// Byte offset of the block in the target.
    pub offset: u64,
    /// Block number within the job that wrote it.
    pub seq: u64,
    pub seed: u64,
    pub payload_sum: u64,
}

impl Header {
    fn kind_code(k: VerifyKind) -> u16 {
        match k {
            VerifyKind::Xxhash => 1,
            VerifyKind::Crc32c => 2,
        }
    }

    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[6..8].copy_from_slice(&Self::kind_code(self.kind).to_le_bytes());
        b[8..12].copy_from_slice(&self.block_len.to_le_bytes());
        b[16..24].copy_from_slice(&self.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.seed.to_le_bytes());
        b[40..48].copy_from_slice(&self.payload_sum.to_le_bytes());
        let crc = crc32c::crc32c(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The header in `b`, or why it is not one.
    fn decode(b: &[u8]) -> Result<Header, &'static str> {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if u32_at(0) != MAGIC {
            return Err("no verify header (bad magic: never written with verify, or overwritten)");
        }
        if crc32c::crc32c(&b[..60]) != u32_at(60) {
            return Err("header checksum mismatch (the header itself is damaged)");
        }
        let kind = match u16_at(6) {
            1 => VerifyKind::Xxhash,
            2 => VerifyKind::Crc32c,
            _ => return Err("unknown checksum kind in header"),
        };
        Ok(Header {
            kind,
            block_len: u32_at(8),
            offset: u64_at(16),
            seq: u64_at(24),
            seed: u64_at(32),
            payload_sum: u64_at(40),
        })
    }
}

impl std::fmt::Display for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{offset {}, len {}, seq {}, seed {:#x}, {} {:#018x}}}",
            self.offset,
            self.block_len,
            self.seq,
            self.seed,
            kind_name(self.kind),
            self.payload_sum
        )
    }
}

pub fn kind_name(k: VerifyKind) -> &'static str {
    match k {
        VerifyKind::Xxhash => "xxhash",
        VerifyKind::Crc32c => "crc32c",
    }
}

fn checksum(kind: VerifyKind, data: &[u8]) -> u64 {
    match kind {
        VerifyKind::Xxhash => xxhash_rust::xxh3::xxh3_64(data),
        VerifyKind::Crc32c => u64::from(crc32c::crc32c(data)),
    }
}

/// Fills `block` (one whole block) for `offset`: header, then the payload.
pub fn fill(block: &mut [u8], kind: VerifyKind, offset: u64, seq: u64, seed: u64) {
    let (head, body) = block.split_at_mut(HEADER_LEN.min(block.len()));
    payload::fill(body, seed, offset, Direction::Request);
    let h = Header {
        kind,
        block_len: u32::try_from(head.len() + body.len()).unwrap_or(u32::MAX),
        offset,
        seq,
        seed,
        payload_sum: checksum(kind, body),
    };
    head.copy_from_slice(&h.encode()[..head.len()]);
}

/// A block that failed verification.
#[derive(Clone, Debug)]
pub struct BadBlock {
    /// Offset of the block in the target.
    pub offset: u64,
    /// Offset in the target of the first byte that differs from what the
    /// writer put there, when it can be known.
    pub byte: Option<u64>,
    pub expected_byte: Option<u8>,
    pub found_byte: Option<u8>,
    pub what: String,
    pub expected: Header,
    pub found: Option<Header>,
    /// The block as it should have been (for verify_dump).
    pub expected_block: Vec<u8>,
}

impl std::fmt::Display for BadBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad block at offset {}: {}", self.offset, self.what)?;
        if let (Some(b), Some(e), Some(g)) = (self.byte, self.expected_byte, self.found_byte) {
            write!(
                f,
                "; first bad byte at offset {b} (block + {}): expected {e:#04x}, found {g:#04x}",
                b - self.offset
            )?;
        }
        write!(f, "; expected header {}", self.expected)?;
        match &self.found {
            Some(h) => write!(f, ", found {h}"),
            None => write!(f, ", found no valid header"),
        }
    }
}

/// Checks one block read from `offset`. `seq` and `seed` are what this job
/// would have written there; a block written by another invocation is
/// accepted when its own header is consistent with its place and content.
pub fn check(
    block: &[u8],
    kind: VerifyKind,
    offset: u64,
    seq: u64,
    seed: u64,
) -> Result<(), Box<BadBlock>> {
    let n = HEADER_LEN.min(block.len());
    let (head, body) = block.split_at(n);
    let found = if n == HEADER_LEN {
        Header::decode(head)
    } else {
        Err("block shorter than a verify header")
    };
    if let Ok(h) = found
        && h.offset == offset
        && h.block_len as usize == block.len()
        && h.kind == kind
        && checksum(kind, body) == h.payload_sum
    {
        return Ok(());
    }
    // Slow path: say exactly what is wrong.
    let seed_used = found.map_or(seed, |h| h.seed);
    let mut want = vec![0u8; block.len()];
    fill(
        &mut want,
        kind,
        offset,
        found.map_or(seq, |h| h.seq),
        seed_used,
    );
    let decoded = if n == HEADER_LEN {
        Header::decode(&want[..n]).ok()
    } else {
        None
    };
    let expected = decoded.unwrap_or(Header {
        kind,
        block_len: block.len() as u32,
        offset,
        seq,
        seed,
        payload_sum: 0,
    });
    let what = match found {
        Err(why) => why.to_string(),
        Ok(h) if h.offset != offset => format!(
            "header names offset {} (a misplaced block: the data went to the wrong address)",
            h.offset
        ),
        Ok(h) if h.block_len as usize != block.len() => format!(
            "header names a {}-byte block, the job reads {} (written with another bs?)",
            h.block_len,
            block.len()
        ),
        Ok(h) if h.kind != kind => format!(
            "written with verify={}, checked with verify={}",
            kind_name(h.kind),
            kind_name(kind)
        ),
        Ok(h) => format!(
            "payload {} is {:#018x}, header says {:#018x}",
            kind_name(kind),
            checksum(kind, body),
            h.payload_sum
        ),
    };
    let diff = want.iter().zip(block).position(|(a, b)| a != b);
    Err(Box::new(BadBlock {
        offset,
        byte: diff.map(|i| offset + i as u64),
        expected_byte: diff.map(|i| want[i]),
        found_byte: diff.map(|i| block[i]),
        what,
        expected,
        found: found.ok(),
        expected_block: want,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_flipped_byte() {
        for kind in [VerifyKind::Xxhash, VerifyKind::Crc32c] {
            let mut b = vec![0u8; 4096];
            fill(&mut b, kind, 8192, 2, 7);
            assert!(check(&b, kind, 8192, 2, 7).is_ok());
            // Another invocation with another seed still accepts it.
            assert!(check(&b, kind, 8192, 99, 1).is_ok());
            b[1000] ^= 0x10;
            let bad = check(&b, kind, 8192, 2, 7).unwrap_err();
            assert_eq!(bad.byte, Some(8192 + 1000));
            assert_eq!(bad.found_byte.unwrap() ^ bad.expected_byte.unwrap(), 0x10);
            assert!(bad.to_string().contains("offset 9192"), "{bad}");
        }
    }

    #[test]
    fn misplaced_and_damaged_headers() {
        let mut b = vec![0u8; 512];
        fill(&mut b, VerifyKind::Xxhash, 0, 0, 7);
        let bad = check(&b, VerifyKind::Xxhash, 512, 1, 7).unwrap_err();
        assert!(bad.what.contains("misplaced"), "{}", bad.what);
        b[20] ^= 1;
        let bad = check(&b, VerifyKind::Xxhash, 0, 0, 7).unwrap_err();
        assert!(bad.what.contains("header checksum"), "{}", bad.what);
        assert_eq!(bad.byte, Some(20));
        let zero = vec![0u8; 512];
        let bad = check(&zero, VerifyKind::Crc32c, 0, 0, 7).unwrap_err();
        assert!(bad.what.contains("no verify header"), "{}", bad.what);
    }

    #[test]
    fn tiny_blocks() {
        let mut b = vec![0u8; 16];
        fill(&mut b, VerifyKind::Crc32c, 0, 0, 1);
        assert!(check(&b, VerifyKind::Crc32c, 0, 0, 1).is_err());
    }
}
