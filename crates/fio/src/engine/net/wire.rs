//! fio's net engine on the wire (engines/net.c): the 8-byte link messages
//! that open a UDP stream and close every stream, and the sequence trailer
//! a UDP sender stamps in each datagram so that the receiver counts losses.
//! Speaking it lets either end be fio.

/// fio's link messages (engines/net.c), 8 bytes each: magic then command.
/// fio writes OPEN's words big-endian and CLOSE's little-endian.
pub(super) const LINK_MAGIC: u32 = 0x6c69_6e6b;
pub(super) const LINK_OPEN: u32 = 0x98;
pub(super) const LINK_CLOSE: u32 = 0x89;
pub(super) const LINK_LEN: usize = 8;
/// fio's UDP sequence trailer: magic, sequence number, block size, each a
/// little-endian u64, in a datagram's last 24 bytes.
pub(super) const SEQ_MAGIC: u64 = 0x6573_7571_6e55_6563;
pub(super) const SEQ_LEN: usize = 24;

pub(super) fn open_msg() -> [u8; LINK_LEN] {
    let mut m = [0; LINK_LEN];
    m[..4].copy_from_slice(&LINK_MAGIC.to_be_bytes());
    m[4..].copy_from_slice(&LINK_OPEN.to_be_bytes());
    m
}

pub(super) fn close_msg() -> [u8; LINK_LEN] {
    let mut m = [0; LINK_LEN];
    m[..4].copy_from_slice(&LINK_MAGIC.to_le_bytes());
    m[4..].copy_from_slice(&LINK_CLOSE.to_le_bytes());
    m
}

/// Stamps datagram `seq`'s trailer in the block's last bytes (none in a
/// block too small to hold it).
pub(super) fn stamp(buf: &mut [u8], seq: u64) {
    let len = buf.len();
    if let Some(t) = len.checked_sub(SEQ_LEN) {
        buf[t..t + 8].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
        buf[t + 8..t + 16].copy_from_slice(&seq.to_le_bytes());
        buf[t + 16..t + 24].copy_from_slice(&(len as u64).to_le_bytes());
    }
}

/// fio's sequence number in a datagram's trailer, if it carries one for
/// its own length.
pub(super) fn stamped_seq(b: &[u8]) -> Option<u64> {
    let t = b.len().checked_sub(SEQ_LEN)?;
    let word = |i: usize| u64::from_le_bytes(b[t + i..t + i + 8].try_into().unwrap_or([0; 8]));
    (word(0) == SEQ_MAGIC && word(16) == b.len() as u64).then(|| word(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_messages_are_fios() {
        // fio writes OPEN with htonl and CLOSE with cpu_to_le32.
        assert_eq!(open_msg(), [0x6c, 0x69, 0x6e, 0x6b, 0, 0, 0, 0x98]);
        assert_eq!(close_msg(), [0x6b, 0x6e, 0x69, 0x6c, 0x89, 0, 0, 0]);
    }

    #[test]
    fn sequence_trailer_round_trips() {
        let mut b = vec![7u8; 64];
        let t = b.len() - SEQ_LEN;
        b[t..t + 8].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
        b[t + 8..t + 16].copy_from_slice(&41u64.to_le_bytes());
        b[t + 16..].copy_from_slice(&64u64.to_le_bytes());
        assert_eq!(stamped_seq(&b), Some(41));
        // Another length than the datagram's own: not a trailer.
        assert_eq!(stamped_seq(&b[..60]), None);
        assert_eq!(stamped_seq(&[0u8; 10]), None);
    }
}
