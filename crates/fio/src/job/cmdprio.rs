//! fio's per-command I/O priorities (engines/cmdprio.c), which libaio and
//! io_uring take: `cmdprio_percentage` of each direction's I/Os (or, with
//! `cmdprio_bssplit`, a share of each block size's) go with a priority of
//! their own — `cmdprio_class`/`cmdprio`, or the entry's — and the rest
//! with the job's (`prioclass`/`prio`). Each I/O's priority is drawn here;
//! the worker keeps a latency record per priority, as fio's `clat_prio`.

use super::Opt;
use super::spec::Range;
use crate::error::Result;
use crate::payload::splitmix;
use serde::Serialize;

/// Bits below the class in an ioprio value (the kernel's IOPRIO_CLASS_SHIFT).
const CLASS_SHIFT: u32 = 13;

/// The kernel's ioprio value of a class and level, as fio's
/// `ioprio_value`: no class (0) is best-effort (2).
pub fn ioprio_value(class: u32, level: u32) -> u16 {
    let class = if class == 0 { 2 } else { class };
    ((class << CLASS_SHIFT) | level) as u16
}

/// The job's own priority (`prioclass`/`prio`), as fio's `td->ioprio`:
/// 0 when neither is given.
pub fn job_ioprio(job: &super::Job) -> u16 {
    match job.ioprio {
        (None, None) => 0,
        // A level alone is best-effort's (class 2), as fio 3.33 logs it.
        (c, l) => ioprio_value(c.unwrap_or(2), l.unwrap_or(0)),
    }
}

/// An ioprio value's class and level, as fio reports them.
pub fn class_level(ioprio: u16) -> (u32, u32) {
    (u32::from(ioprio) >> CLASS_SHIFT, u32::from(ioprio) & 7)
}

/// One `cmdprio_bssplit` entry: I/Os of `bs` bytes, `perc` percent of
/// which take `prio` (class, level), or the implicit `cmdprio_class`/
/// `cmdprio` when the entry names none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SplitPrio {
    pub bs: u64,
    pub perc: u32,
    pub prio: Option<(u32, u32)>,
}

/// The cmdprio options of a job, per direction (reads, writes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CmdPrio {
    /// `cmdprio_percentage=`.
    pub percentage: [u32; 2],
    /// `cmdprio_class=` (0: not given, fio's real-time default).
    pub class: [u32; 2],
    /// `cmdprio=`: the level within the class.
    pub level: [u32; 2],
    /// `cmdprio_bssplit=`: each direction's entries with a share above 0,
    /// by block size; None when not given.
    pub bssplit: Option<[Vec<SplitPrio>; 2]>,
}

impl CmdPrio {
    /// Whether the job gives any I/O a priority of its own.
    pub fn in_use(&self) -> bool {
        self.bssplit.is_some() || self.percentage.iter().any(|&p| p > 0)
    }

    /// fio's conflict check: the two ways of choosing are exclusive.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.bssplit.is_some() && self.percentage.iter().any(|&p| p > 0) {
            return Err(
                "cmdprio_percentage and cmdprio_bssplit are mutually exclusive; give one of them"
                    .into(),
            );
        }
        Ok(())
    }

    /// The implicit priority of direction `d`: `cmdprio_class` (real-time
    /// when not given) at level `cmdprio`.
    fn implicit(&self, d: usize) -> u16 {
        let class = if self.class[d] == 0 { 1 } else { self.class[d] };
        ioprio_value(class, self.level[d])
    }

    /// The priorities direction `d` records latency under, in fio's order:
    /// the job's own (`default`) first, then each distinct one the options
    /// name. Empty when the direction gives no I/O a priority of its own.
    pub fn values(&self, d: usize, default: u16) -> Vec<u16> {
        let named: Vec<u16> = match &self.bssplit {
            Some(sides) => sides[d]
                .iter()
                .map(|e| e.prio.map_or(self.implicit(d), |(c, l)| ioprio_value(c, l)))
                .collect(),
            None if self.percentage[d] > 0 => vec![self.implicit(d)],
            None => Vec::new(),
        };
        if named.is_empty() {
            return Vec::new();
        }
        let mut out = vec![default];
        for v in named {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// The priority of an I/O of direction `d` and `len` bytes: one of the
    /// options' (drawn from `rng`, as fio draws 0..99 against the share),
    /// or None for the job's own.
    pub fn pick(&self, d: usize, len: u64, rng: &mut u64) -> Option<u16> {
        let entries: Vec<&SplitPrio> = match &self.bssplit {
            Some(sides) => sides[d].iter().filter(|e| e.bs == len).collect(),
            None => Vec::new(),
        };
        let total = match &self.bssplit {
            Some(_) => entries.iter().map(|e| e.perc).sum(),
            None => self.percentage[d],
        };
        if total == 0 {
            return None;
        }
        let draw = (splitmix(rng) % 100) as u32;
        if draw >= total {
            return None;
        }
        if self.bssplit.is_none() {
            return Some(self.implicit(d));
        }
        let mut upto = 0;
        for e in entries {
            upto += e.perc;
            if draw < upto {
                return Some(e.prio.map_or(self.implicit(d), |(c, l)| ioprio_value(c, l)));
            }
        }
        None
    }
}

/// The priority levels within a class, 0 (highest) to 7: `prio=`'s and
/// `cmdprio=`'s bounds, and a `cmdprio_bssplit` entry's.
pub const LEVELS: Range = Range::new(0, 7);

/// The priority classes a `cmdprio_bssplit` entry takes (0: none, which
/// is best-effort).
const CLASSES: Range = Range::new(0, 3);

/// The share of a `cmdprio_bssplit` entry, percent.
const SHARE: Range = Range::new(0, 100);

impl Opt<'_> {
    /// A priority class within `r` (1 to 3 for cmdprio_class, as fio: 0 is
    /// "none").
    pub(super) fn prio_class(&self, v: &str, r: Range) -> Result<u32> {
        v.parse::<u32>()
            .ok()
            .filter(|c| (r.min..=r.max).contains(&i64::from(*c)))
            .ok_or_else(|| {
                self.bad(&format!(
                    "expected a priority class from {} to {} (1 real-time, 2 best-effort, 3 idle)",
                    r.min, r.max
                ))
            })
    }

    /// A priority level within a class, within `r` (0 is the highest).
    pub(super) fn prio_level(&self, v: &str, r: Range) -> Result<u32> {
        v.parse::<u32>()
            .ok()
            .filter(|l| (r.min..=r.max).contains(&i64::from(*l)))
            .ok_or_else(|| {
                self.bad(&format!(
                    "expected a priority level from {} (highest) to {} (lowest)",
                    r.min, r.max
                ))
            })
    }

    /// A percentage within `r` of one side of a `r,w` list.
    pub(super) fn side_percent(&self, v: &str, r: Range) -> Result<u32> {
        Ok(self.number_in(v, r, "a percentage")? as u32)
    }

    /// One direction of `cmdprio_bssplit`: `bs/perc[/class/level[/hint]]`
    /// entries split by `:`, each block size's shares at most 100 in all;
    /// entries with no share are dropped (as fio does), the rest sorted by
    /// block size. A hint (fio 3.36's fifth field) is read and dropped:
    /// the kernel's priority hints are not passed on.
    pub(super) fn prio_split(&self, v: &str) -> Result<Vec<SplitPrio>> {
        let mut out: Vec<SplitPrio> = Vec::new();
        for entry in v.split(':').map(str::trim).filter(|e| !e.is_empty()) {
            let f: Vec<&str> = entry.split('/').map(str::trim).collect();
            let bs = self.block_size(f[0])?;
            let perc = match f.get(1) {
                None | Some(&"") => 0,
                Some(p) => self.side_percent(p, SHARE)?,
            };
            let prio = match f.len() {
                1 | 2 => None,
                4 | 5 => {
                    if let Some(h) = f.get(4) {
                        h.parse::<u32>().ok().filter(|h| *h < 1024).ok_or_else(|| {
                            self.bad(&format!("'{entry}': a priority hint is 0 to 1023"))
                        })?;
                    }
                    Some((
                        self.prio_class(f[2], CLASSES)?,
                        self.prio_level(f[3], LEVELS)?,
                    ))
                }
                _ => {
                    return Err(self.bad(&format!(
                        "'{entry}' is not bs/percent or bs/percent/class/level, as in 64k/25/1/0"
                    )));
                }
            };
            if perc > 0 {
                out.push(SplitPrio { bs, perc, prio });
            }
        }
        out.sort_by_key(|e| e.bs);
        for e in &out {
            let sum: u32 = out.iter().filter(|o| o.bs == e.bs).map(|o| o.perc).sum();
            if sum > 100 {
                return Err(self.bad(&format!(
                    "the shares for block size {} add up to {sum}%, over 100",
                    e.bs
                )));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::job::Job;

    fn job(opts: &[(&str, &str)]) -> Job {
        let mut j = Job::default();
        for (k, v) in opts {
            j.set(k, Some(v)).unwrap();
        }
        j
    }

    #[test]
    fn percentages_classes_and_levels_per_direction() {
        let j = job(&[
            ("cmdprio_percentage", "30"),
            ("cmdprio_class", "1,3"),
            ("cmdprio", ",5"),
        ]);
        let c = &j.cmdprio;
        assert_eq!((c.percentage, c.class, c.level), ([30, 30], [1, 3], [0, 5]));
        assert_eq!(c.values(0, 0), [0, 1 << 13]);
        assert_eq!(c.values(1, 0), [0, 3 << 13 | 5]);
        // About 30% of draws take the cmdprio value.
        let mut rng = 7;
        let hits = (0..10_000)
            .filter(|_| c.pick(0, 4096, &mut rng).is_some())
            .count();
        assert!((2700..3300).contains(&hits), "{hits}");
    }

    #[test]
    fn bssplit_entries_and_their_forms() {
        let j = job(&[("cmdprio_bssplit", "64k/25/1/1:64k/75/3/2:1024k/0,1024k/0")]);
        let s = j.cmdprio.bssplit.as_ref().unwrap();
        assert_eq!(s[0].len(), 2);
        assert!(s[1].is_empty());
        assert_eq!(j.cmdprio.values(0, 0), [0, 1 << 13 | 1, 3 << 13 | 2]);
        assert!(j.cmdprio.values(1, 0).is_empty());
        let mut rng = 1;
        assert_eq!(j.cmdprio.pick(0, 1 << 20, &mut rng), None);
        assert!(j.cmdprio.pick(0, 64 << 10, &mut rng).is_some());
        // Implicit entries take cmdprio_class/cmdprio (real-time by default).
        let j = job(&[("cmdprio_bssplit", "4k/50:8k/20"), ("cmdprio", "3")]);
        assert_eq!(j.cmdprio.values(0, 2 << 13), [2 << 13, 1 << 13 | 3]);
        // A hint is read and dropped; class 0 is best-effort, as fio's.
        let j = job(&[("cmdprio_bssplit", "1M/10/0/0/1:2M/90/2/0/0")]);
        assert_eq!(j.cmdprio.values(0, 0), [0, 2 << 13]);
    }

    #[test]
    fn bad_values_are_refused_in_one_line() {
        let err = |k: &str, v: &str| Job::default().set(k, Some(v)).unwrap_err().to_string();
        assert!(err("cmdprio_class", "4").contains("from 1 to 3"));
        assert!(err("cmdprio_class", "0").contains("from 1 to 3"));
        assert!(err("cmdprio", "8").contains("0 (highest) to 7"));
        assert!(err("cmdprio_percentage", "101").contains("0 to 100"));
        assert!(err("cmdprio_bssplit", "4k/50/1").contains("not bs/percent"));
        assert!(err("cmdprio_bssplit", "4k/50/4/1").contains("from 0 to 3"));
        assert!(err("cmdprio_bssplit", "4k/50/1/9").contains("to 7"));
        assert!(err("cmdprio_bssplit", "4k/60:4k/50").contains("add up to 110%"));
        assert!(err("prioclass", "4").contains("0 to 3"));
        let j = job(&[("cmdprio_bssplit", "4k/50"), ("cmdprio_percentage", "10")]);
        assert!(
            j.cmdprio
                .check()
                .unwrap_err()
                .contains("mutually exclusive")
        );
    }
}
