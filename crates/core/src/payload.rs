//! BIP's "real usage" payload: the sender fills every message with
//! pseudo-random values, the receiver reads and checks every one. Both ends
//! derive the values from (seed, message number, direction), so nothing but
//! the message itself crosses the link, and a corrupted byte is found at its
//! offset with what was expected there.

/// Which way a message goes; the two directions carry different values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request = 0,
    Reply = 1,
}

/// The first value that differed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub size: usize,
    pub offset: usize,
    pub expected: u8,
    pub received: u8,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fill-check mismatch in a {}-byte message at offset {}: expected 0x{:02x}, received 0x{:02x}",
            self.size, self.offset, self.expected, self.received
        )
    }
}

/// splitmix64, a fast, well-mixed 64-bit generator step: one
/// multiply-xorshift per 8 bytes of payload, so the fill costs about what a
/// real application's writes would; also the random draws of stream jobs.
#[inline]
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[inline]
fn start(seed: u64, message: u64, dir: Direction) -> u64 {
    seed ^ message.wrapping_mul(0xd6e8_feb8_6659_fd93) ^ ((dir as u64) << 63)
}

/// Fills `buf` with the values of message `message` going `dir`.
pub fn fill(buf: &mut [u8], seed: u64, message: u64, dir: Direction) {
    let mut s = start(seed, message, dir);
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&splitmix(&mut s).to_le_bytes());
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let v = splitmix(&mut s).to_le_bytes();
        tail.copy_from_slice(&v[..tail.len()]);
    }
}

/// Reads every value of `buf` and checks it against what `fill` wrote.
pub fn check(buf: &[u8], seed: u64, message: u64, dir: Direction) -> Result<(), Mismatch> {
    let mut s = start(seed, message, dir);
    let mismatch = |offset: usize, expected: &[u8], received: &[u8]| {
        let i = expected
            .iter()
            .zip(received)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        Mismatch {
            size: buf.len(),
            offset: offset + i,
            expected: expected[i],
            received: received[i],
        }
    };
    let mut words = buf.chunks_exact(8);
    let mut offset = 0;
    for w in &mut words {
        let v = splitmix(&mut s).to_le_bytes();
        if w != v {
            return Err(mismatch(offset, &v, w));
        }
        offset += 8;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let v = splitmix(&mut s).to_le_bytes();
        if tail != &v[..tail.len()] {
            return Err(mismatch(offset, &v[..tail.len()], tail));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_check_passes_for_every_length() {
        for len in [0, 1, 7, 8, 9, 63, 64, 4095, 4096, 65_539] {
            let mut b = vec![0u8; len];
            fill(&mut b, 42, 7, Direction::Request);
            assert_eq!(check(&b, 42, 7, Direction::Request), Ok(()), "len {len}");
        }
    }

    #[test]
    fn every_flipped_bit_is_found_where_it_is() {
        let mut b = vec![0u8; 1031];
        fill(&mut b, 1, 2, Direction::Reply);
        for offset in [0, 5, 8, 512, 1023, 1024, 1030] {
            for bit in [0, 7] {
                let mut c = b.clone();
                c[offset] ^= 1 << bit;
                let m = check(&c, 1, 2, Direction::Reply).unwrap_err();
                assert_eq!(m.offset, offset);
                assert_eq!(m.size, 1031);
                assert_eq!(m.expected, b[offset]);
                assert_eq!(m.received, c[offset]);
            }
        }
    }

    #[test]
    fn messages_and_directions_differ() {
        let mut a = vec![0u8; 64];
        let mut b = vec![0u8; 64];
        fill(&mut a, 9, 1, Direction::Request);
        fill(&mut b, 9, 2, Direction::Request);
        assert_ne!(a, b);
        fill(&mut b, 9, 1, Direction::Reply);
        assert_ne!(a, b);
        assert!(check(&a, 9, 2, Direction::Request).is_err());
    }
}
