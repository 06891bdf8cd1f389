//! Who gets in, and how fast: the connections that have not yet shown a
//! token (bounded per address and in all, the oldest turned out to make
//! room), the sessions that have (bounded by `--max-sessions` and
//! `--max-per-address`), and the spacing of token checks from an address
//! that keeps getting them wrong. Everything is keyed by the client's
//! address as `client_key` groups them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Unauthenticated connections one address may hold; a new one from it
/// turns out its oldest.
pub const PENDING_PER_ADDRESS: usize = 8;
/// Unauthenticated connections in all; a new one turns out the oldest of
/// the address holding the most, so a crowd turns out itself, not a client
/// from an address of its own.
pub const PENDING_TOTAL: usize = 64;

/// The address a limit counts a client under: an IPv4 address (an
/// IPv4-mapped IPv6 one included) as itself, an IPv6 address by its /64,
/// which one host usually holds whole: counted one by one, a single
/// machine could be any number of clients.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[8..].fill(0);
            IpAddr::V6(o.into())
        }
        v4 => v4,
    }
}

/// The connections waiting for their hello to be read and judged.
#[derive(Default)]
pub struct Pending {
    /// By connection number, so oldest first; with a handle to close it.
    conns: BTreeMap<u64, (IpAddr, TcpStream)>,
    /// How many each address holds.
    per_key: HashMap<IpAddr, usize>,
    /// Those whose whole hello has been read (their token is being
    /// checked): turned out last, as are those with bytes waiting.
    heard: HashSet<u64>,
}

impl Pending {
    /// Admits connection `id` from `key`, turning out the oldest of its
    /// address (at `PENDING_PER_ADDRESS`) or of the address holding the
    /// most (at `PENDING_TOTAL`); `shut` closes it if it is turned out in
    /// turn. Returns how many `key` now holds, this one included.
    pub fn admit(&mut self, id: u64, key: IpAddr, shut: TcpStream) -> usize {
        let mine = self.per_key.get(&key).copied().unwrap_or(0);
        let old = if mine >= PENDING_PER_ADDRESS {
            self.oldest(|k| k == key)
        } else if self.conns.len() >= PENDING_TOTAL {
            // The oldest connection of an address holding the most: with
            // many addresses holding one each, the one waiting longest,
            // never a newcomer about to send its hello.
            let most = self.per_key.values().copied().max().unwrap_or(0);
            self.oldest(|k| self.per_key.get(&k) == Some(&most))
        } else {
            None
        };
        if let Some(old) = old {
            self.turn_out(old);
        }
        self.conns.insert(id, (key, shut));
        let n = self.per_key.entry(key).or_insert(0);
        *n += 1;
        *n
    }

    /// The oldest connection whose address `pick` chooses that has said
    /// nothing yet, or failing that the oldest of them: a client that
    /// sent its hello is not turned out for a silent one, even from its
    /// own address.
    fn oldest(&self, pick: impl Fn(IpAddr) -> bool) -> Option<u64> {
        let mut theirs = self.conns.iter().filter(|(_, (k, _))| pick(*k));
        let first = theirs.clone().next().map(|(id, _)| *id);
        theirs
            .find(|(id, (_, s))| !self.heard.contains(*id) && !has_bytes(s))
            .map(|(id, _)| *id)
            .or(first)
    }

    /// Connection `id`'s whole hello has been read.
    pub fn heard(&mut self, id: u64) {
        if self.conns.contains_key(&id) {
            self.heard.insert(id);
        }
    }

    /// Closes connection `id` (its thread's read then ends) and forgets it.
    fn turn_out(&mut self, id: u64) {
        if let Some((_, s)) = self.remove(id) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn remove(&mut self, id: u64) -> Option<(IpAddr, TcpStream)> {
        let (key, s) = self.conns.remove(&id)?;
        self.heard.remove(&id);
        if let Some(n) = self.per_key.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.per_key.remove(&key);
            }
        }
        Some((key, s))
    }

    /// Connection `id` leaves the waiting room (authenticated, refused or
    /// gone): whether it was still there, rather than turned out.
    pub fn leave(&mut self, id: u64) -> bool {
        self.remove(id).is_some()
    }

    /// Whether connection `id` is still waiting (not turned out).
    pub fn holds(&self, id: u64) -> bool {
        self.conns.contains_key(&id)
    }

    /// Connections waiting, in all.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.conns.len()
    }
}

/// Whether bytes from the client wait unread on `s`: its hello is coming
/// in, and its thread is about to read it.
fn has_bytes(s: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, to a live
    // local; the fd is open for as long as `s` is.
    let r = unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n) };
    r == 0 && n > 0
}

/// The first wait after a wrong token; each further one doubles it.
const FIRST_GAP: Duration = Duration::from_millis(100);
/// The longest wait between two checks from one address.
const MAX_GAP: Duration = Duration::from_secs(5);
/// The longest a connection waits for its check: past it, `Throttled`
/// without one. Keeps the queue of guesses (and their threads) short.
pub const MAX_WAIT: Duration = Duration::from_secs(5);
/// An address's wrong tokens are forgotten after this long without one.
const FORGET: Duration = Duration::from_secs(600);
/// Addresses remembered at most; past it the stalest is forgotten.
const MAX_GATES: usize = 4096;

/// Wrong tokens by address: after each, that address's next check waits
/// longer (`FIRST_GAP`, doubling, up to `MAX_GAP`), and checks from one
/// address run one at a time, so guessing runs at a few a second at first
/// and one per `MAX_GAP` soon after, rather than thousands.
#[derive(Default)]
pub struct Throttle {
    gates: HashMap<IpAddr, Gate>,
}

struct Gate {
    fails: u32,
    /// When the next check may run.
    next: Instant,
    /// The last wrong token.
    last: Instant,
}

/// Whether a check may run.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn {
    Now,
    /// Not before this long from now.
    Wait(Duration),
}

fn gap(fails: u32) -> Duration {
    let doubled = FIRST_GAP.saturating_mul(1u32 << fails.saturating_sub(1).min(16));
    doubled.min(MAX_GAP)
}

impl Throttle {
    /// Whether `key` may have a token checked at `now`. The caller checks
    /// it while holding the throttle, then says how it went, so two checks
    /// from one address never run in the same turn.
    pub fn turn(&mut self, key: IpAddr, now: Instant) -> Turn {
        let Some(g) = self.gates.get(&key) else {
            return Turn::Now;
        };
        if now.saturating_duration_since(g.last) > FORGET {
            self.gates.remove(&key);
            return Turn::Now;
        }
        match g.next.checked_duration_since(now) {
            Some(d) if !d.is_zero() => Turn::Wait(d),
            _ => Turn::Now,
        }
    }

    /// A wrong token from `key`, checked at `now`.
    pub fn failed(&mut self, key: IpAddr, now: Instant) {
        if !self.gates.contains_key(&key) && self.gates.len() >= MAX_GATES {
            self.gates
                .retain(|_, g| now.saturating_duration_since(g.last) <= FORGET);
            if self.gates.len() >= MAX_GATES
                && let Some(stalest) = self
                    .gates
                    .iter()
                    .min_by_key(|(_, g)| g.last)
                    .map(|(k, _)| *k)
            {
                self.gates.remove(&stalest);
            }
        }
        let g = self.gates.entry(key).or_insert(Gate {
            fails: 0,
            next: now,
            last: now,
        });
        g.fails = g.fails.saturating_add(1);
        g.last = now;
        g.next = now + gap(g.fails);
    }

    /// The right token from `key`: its record is wiped (whoever holds the
    /// token gains nothing by guessing).
    pub fn passed(&mut self, key: IpAddr) {
        self.gates.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server's end of a connection, as `admit` is given (accepted at
    /// once, so the listener's queue never fills).
    fn sock(l: &TcpListener) -> TcpStream {
        let _client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        l.accept().unwrap().0
    }

    #[test]
    fn an_address_over_its_share_turns_out_its_own_oldest() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut p = Pending::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        assert_eq!(p.admit(1, b, sock(&l)), 1);
        for id in 2..2 + PENDING_PER_ADDRESS as u64 {
            p.admit(id, a, sock(&l));
        }
        assert_eq!(p.admit(100, a, sock(&l)), PENDING_PER_ADDRESS);
        assert!(!p.holds(2), "a's oldest went");
        assert!(p.holds(3) && p.holds(100) && p.holds(1), "b's one stays");
        assert!(p.leave(100));
        assert!(!p.leave(100), "once");
    }

    /// A connection whose hello has come in (read, or waiting to be) is
    /// not turned out for a silent one of its address.
    #[test]
    fn a_connection_that_spoke_is_turned_out_last() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut p = Pending::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        // The oldest has bytes waiting; the next one's hello was read.
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        std::io::Write::write_all(&mut client, b"XBS1").unwrap();
        let spoke = l.accept().unwrap().0;
        let t = std::time::Instant::now();
        while !has_bytes(&spoke) {
            assert!(t.elapsed() < Duration::from_secs(10), "no bytes arrived");
            std::thread::sleep(Duration::from_millis(5));
        }
        p.admit(1, a, spoke);
        p.admit(2, a, sock(&l));
        p.heard(2);
        for id in 3..3 + PENDING_PER_ADDRESS as u64 {
            p.admit(id, a, sock(&l));
        }
        assert!(p.holds(1) && p.holds(2), "a silent one went first");
        assert!(!p.holds(3), "the oldest silent one went");
        // All of them heard: then the oldest goes after all.
        for id in 4..3 + PENDING_PER_ADDRESS as u64 {
            p.heard(id);
        }
        p.heard(1);
        p.admit(100, a, sock(&l));
        assert!(!p.holds(1), "{:?}", p.conns.keys().collect::<Vec<_>>());
        drop(client);
    }

    #[test]
    fn a_crowd_of_addresses_turns_out_itself() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut p = Pending::default();
        let lone: IpAddr = [192, 168, 0, 1].into();
        p.admit(0, lone, sock(&l));
        let mut id = 1;
        // Many addresses, each at its share, far past the total.
        for host in 0..(3 * PENDING_TOTAL / PENDING_PER_ADDRESS) as u8 {
            for _ in 0..PENDING_PER_ADDRESS {
                p.admit(id, [10, 0, 0, host].into(), sock(&l));
                id += 1;
                assert!(p.len() <= PENDING_TOTAL);
            }
        }
        assert!(p.holds(0), "the client with an address of its own stayed");
    }

    /// A crowd from as many addresses as the room holds, one connection
    /// each: a newcomer, whatever its address, is not the one turned out.
    #[test]
    fn a_crowd_of_one_connection_per_address_turns_out_its_oldest() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut p = Pending::default();
        for h in 1..=PENDING_TOTAL as u8 {
            p.admit(u64::from(h), [10, 0, 1, h].into(), sock(&l));
        }
        // The lowest address of all, and the newest connection.
        p.admit(1000, [10, 0, 0, 0].into(), sock(&l));
        assert!(!p.holds(1), "the oldest went");
        for h in 1..=(PENDING_TOTAL as u8 - 2) {
            p.admit(2000 + u64::from(h), [10, 0, 2, h].into(), sock(&l));
            assert!(p.holds(1000), "the newcomer was turned out after {h} more");
        }
        assert_eq!(p.len(), PENDING_TOTAL);
    }

    #[test]
    fn wrong_tokens_space_out_the_checks_of_their_address_only() {
        let mut t = Throttle::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let t0 = Instant::now();
        assert_eq!(t.turn(a, t0), Turn::Now);
        t.failed(a, t0);
        assert_eq!(t.turn(a, t0), Turn::Wait(FIRST_GAP));
        assert_eq!(t.turn(b, t0), Turn::Now, "another address is not held up");
        let t1 = t0 + FIRST_GAP;
        assert_eq!(t.turn(a, t1), Turn::Now);
        t.failed(a, t1);
        assert_eq!(t.turn(a, t1), Turn::Wait(2 * FIRST_GAP));
        for _ in 0..40 {
            t.failed(a, t1);
        }
        assert_eq!(t.turn(a, t1), Turn::Wait(MAX_GAP));
        t.passed(a);
        assert_eq!(t.turn(a, t1), Turn::Now);
        t.failed(a, t1);
        assert_eq!(t.turn(a, t1 + FORGET * 2), Turn::Now, "forgotten");
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(client_key(mapped), IpAddr::from([10, 0, 0, 1]));
    }
}
