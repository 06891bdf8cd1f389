//! The payload checksums `verify=` can name, each from a maintained crate
//! (crc, crc32c, xxhash-rust, md-5, sha1, sha2, sha3): what a verified
//! block's header records about the bytes after it.

use crate::job::VerifyKind;
use crc::{CRC_7_MMC, CRC_16_ARC, CRC_32_ISO_HDLC, CRC_64_XZ, Crc, Table};
use sha2::Digest;

/// The longest checksum (sha512, sha3-512), in bytes.
pub const MAX_LEN: usize = 64;

/// Checksums up to this long live in the header's 64-bit field (so blocks
/// written before the longer kinds existed still read); longer ones follow
/// the header.
pub const INLINE_LEN: usize = 8;

// Slice-by-16 tables: the CRCs without a hardware path still run at memory
// speed rather than a byte at a time.
static CRC7: Crc<u8, Table<16>> = Crc::<u8, Table<16>>::new(&CRC_7_MMC);
static CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_ARC);
static CRC32: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISO_HDLC);
static CRC64: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_XZ);

/// One checksum value, as bytes (a CRC's least significant byte first).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Sum {
    len: u8,
    bytes: [u8; MAX_LEN],
}

impl std::fmt::Debug for Sum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl Sum {
    /// No checksum (`verify=meta`).
    pub const NONE: Sum = Sum {
        len: 0,
        bytes: [0; MAX_LEN],
    };

    pub fn from_bytes(b: &[u8]) -> Sum {
        let mut s = Sum::NONE;
        let n = b.len().min(MAX_LEN);
        s.bytes[..n].copy_from_slice(&b[..n]);
        s.len = n as u8;
        s
    }

    /// A checksum of `len` bytes kept as the integer `v`.
    pub fn from_u64(v: u64, len: usize) -> Sum {
        Sum::from_bytes(&v.to_le_bytes()[..len.min(INLINE_LEN)])
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The value as the header's 64-bit field holds it (0 for a long one,
    /// which is stored after the header instead).
    pub fn inline(&self) -> u64 {
        if usize::from(self.len) > INLINE_LEN {
            return 0;
        }
        let mut b = [0u8; 8];
        b[..usize::from(self.len)].copy_from_slice(self.as_bytes());
        u64::from_le_bytes(b)
    }
}

/// An integer for a CRC or xxhash, the digest's bytes in order for the rest.
impl std::fmt::Display for Sum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = usize::from(self.len);
        if n <= INLINE_LEN {
            return write!(f, "{:#0w$x}", self.inline(), w = 2 + 2 * n.max(1));
        }
        f.write_str("0x")?;
        self.as_bytes()
            .iter()
            .try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// Bytes of `kind`'s checksum; 0 for the kinds without one (meta, pattern).
pub fn len(kind: VerifyKind) -> usize {
    use VerifyKind::*;
    match kind {
        Meta | Pattern => 0,
        Crc7 => 1,
        Crc16 => 2,
        Crc32 | Crc32c => 4,
        Crc64 | Xxhash => 8,
        Md5 => 16,
        Sha1 => 20,
        Sha224 | Sha3_224 => 28,
        Sha256 | Sha3_256 => 32,
        Sha384 | Sha3_384 => 48,
        Sha512 | Sha3_512 => 64,
    }
}

/// Bytes the checksum takes after the 64-byte header (0 when it fits in it).
pub fn trailing_len(kind: VerifyKind) -> usize {
    Some(len(kind)).filter(|&n| n > INLINE_LEN).unwrap_or(0)
}

/// `kind`'s checksum of `data`.
pub fn of(kind: VerifyKind, data: &[u8]) -> Sum {
    use VerifyKind::*;
    fn d<D: Digest>(data: &[u8]) -> Sum {
        Sum::from_bytes(&D::digest(data))
    }
    match kind {
        Meta | Pattern => Sum::NONE,
        Crc7 => Sum::from_u64(u64::from(CRC7.checksum(data)), 1),
        Crc16 => Sum::from_u64(u64::from(CRC16.checksum(data)), 2),
        Crc32 => Sum::from_u64(u64::from(CRC32.checksum(data)), 4),
        Crc32c => Sum::from_u64(u64::from(crc32c::crc32c(data)), 4),
        Crc64 => Sum::from_u64(CRC64.checksum(data), 8),
        Xxhash => Sum::from_u64(xxhash_rust::xxh3::xxh3_64(data), 8),
        Md5 => d::<md5::Md5>(data),
        Sha1 => d::<sha1::Sha1>(data),
        Sha224 => d::<sha2::Sha224>(data),
        Sha256 => d::<sha2::Sha256>(data),
        Sha384 => d::<sha2::Sha384>(data),
        Sha512 => d::<sha2::Sha512>(data),
        Sha3_224 => d::<sha3::Sha3_224>(data),
        Sha3_256 => d::<sha3::Sha3_256>(data),
        Sha3_384 => d::<sha3::Sha3_384>(data),
        Sha3_512 => d::<sha3::Sha3_512>(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind against its published check value for "123456789" (the
    /// CRC catalogue's; the digests' from their standards), so a swapped
    /// crate or parameter shows.
    #[test]
    fn check_values() {
        let hex = |k| of(k, b"123456789").to_string();
        assert_eq!(hex(VerifyKind::Crc7), "0x75");
        assert_eq!(hex(VerifyKind::Crc16), "0xbb3d");
        assert_eq!(hex(VerifyKind::Crc32), "0xcbf43926");
        assert_eq!(hex(VerifyKind::Crc32c), "0xe3069283");
        assert_eq!(hex(VerifyKind::Crc64), "0x995dc9bbdf1939fa");
        let abc = |k| of(k, b"abc").to_string();
        assert_eq!(abc(VerifyKind::Md5), "0x900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            abc(VerifyKind::Sha1),
            "0xa9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            abc(VerifyKind::Sha256),
            "0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            abc(VerifyKind::Sha3_256),
            "0x3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
        for k in VerifyKind::ALL.map(|(_, k)| k) {
            assert_eq!(of(k, b"x").as_bytes().len(), len(k), "{k:?}");
        }
        assert_eq!(trailing_len(VerifyKind::Xxhash), 0);
        assert_eq!(trailing_len(VerifyKind::Sha512), 64);
    }
}
