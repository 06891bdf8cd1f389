//! The shape of one fio option as xferbench describes it, after fio's own
//! `struct fio_option` (options.c): a name and its aliases, the values it
//! takes, its default and a number's bounds, and what it does to a [`Job`].
//! Every fact about an option is in its one entry, so `set`, "did you
//! mean", `--cmdhelp`, the bounds a parse enforces, the notes and refusals
//! and the engines' ownership cannot drift apart.

use super::{Job, Opt, SetOutcome};
use crate::error::{Error, Result};

/// One value a word option takes, with fio's kind of phrase for it (what
/// `--cmdhelp` prints beside it under `valid values`).
pub type Word = (&'static str, &'static str);

/// What values an option takes (fio's `fio_opt_type`): for the reader of
/// the table, for `--cmdhelp`'s `type` line, and for the test that gives
/// every option a value it takes.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Bare, or 1/0, true/false, yes/no, on/off, with a default (fio's
    /// `FIO_OPT_BOOL`).
    Bool,
    /// A switch that is off unless given (fio's `FIO_OPT_STR_SET`): bare
    /// or 1/0 like a boolean, but with no default to state, as in fio.
    Flag,
    /// A whole number.
    Int,
    /// A size with fio's k/m/g/t suffixes.
    Size,
    /// A duration.
    Time,
    /// One of these words.
    Words(&'static [Word]),
    /// One of these words, listed by the type that reads them (the
    /// engines, the verify kinds), so the list has one home.
    Listed(fn() -> Vec<Word>),
    /// Text in the option's own syntax, as in this example.
    Text(&'static str),
    /// Any value: an option xferbench only notes or refuses.
    Any,
}

impl Kind {
    /// A value the option takes.
    pub fn example(self) -> &'static str {
        match self {
            Kind::Bool | Kind::Flag | Kind::Int | Kind::Size | Kind::Time | Kind::Any => "1",
            Kind::Words(w) => w[0].0,
            Kind::Listed(f) => f()[0].0,
            Kind::Text(t) => t,
        }
    }

    /// The values `--cmdhelp` lists, each with its phrase.
    pub fn words(self) -> Vec<Word> {
        match self {
            Kind::Words(w) => w.to_vec(),
            Kind::Listed(f) => f(),
            _ => Vec::new(),
        }
    }
}

/// An option's default as fio states it (its `.def`): the text fio would
/// parse if the option were not given. Stated per entry so that an entry
/// forgotten is caught by a test, not shown as "no default".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Def {
    /// The entry does not say (only options xferbench notes or refuses).
    Unstated,
    /// fio's "no default": the option does nothing unless given.
    NoDefault,
    /// The value taken when the option is not given.
    Is(&'static str),
}

/// The bounds of a number (fio's `.minval`/`.maxval`): what the parse
/// enforces and `--cmdhelp` prints, from the one table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub min: i64,
    /// [`Range::NO_MAX`] for none.
    pub max: i64,
}

impl Range {
    /// No upper bound beyond the value's type: fio stores UINT_MAX and
    /// prints it with `%d`, as -1.
    pub const NO_MAX: i64 = -1;

    pub const fn new(min: i64, max: i64) -> Range {
        Range { min, max }
    }

    /// The largest value taken where the value's type tops out at `limit`
    /// (u32::MAX for fio's whole numbers).
    pub fn top(self, limit: i64) -> i64 {
        if self.max == Self::NO_MAX {
            limit
        } else {
            self.max.min(limit)
        }
    }
}

/// What an option does to a job.
#[derive(Clone, Copy)]
pub enum Effect {
    /// Parses the value into the job's fields.
    Set(fn(&mut Job, &Opt) -> Result<()>),
    /// Parses the value and says how it was taken (a note, or taken
    /// differently from fio).
    Take(fn(&mut Job, &Opt) -> Result<SetOutcome>),
    /// Accepted without implementing it: it changes no figure xferbench
    /// reports, for this reason.
    Note(&'static str),
    /// Refused: it would change what is measured; what to do instead.
    Refuse(&'static str),
    /// An option of a fio engine xferbench does not have (named here): a
    /// job on that engine is refused by its `ioengine=`, so the option
    /// itself is only noted.
    OtherEngine(&'static str),
}

/// One fio option.
#[derive(Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    /// Other spellings fio takes for it (the key as written is the one
    /// messages name). `name` is fio's own name, which fio's `--showcmd`
    /// prints for any of them.
    pub aliases: &'static [&'static str],
    /// Options that are separate in fio but that xferbench takes as this
    /// one (fio's `io_size` beside `size`): a command line shows them as
    /// written, since fio names each itself.
    pub also: &'static [&'static str],
    /// One line saying what it does, for `--cmdhelp`; empty where the
    /// effect says it (a note, a refusal, another engine's option).
    pub help: &'static str,
    pub kind: Kind,
    pub effect: Effect,
    /// What `--cmdhelp` prints as `default:`; for an option xferbench
    /// takes, the value [`Job::default`] holds (a unit test parses it).
    pub def: Def,
    /// The bounds of a number: the parse reads them from here (through
    /// [`Opt`]), `--cmdhelp` prints them as `range:`.
    pub range: Option<Range>,
}

impl Spec {
    /// An option that parses its value into the job.
    pub const fn set(name: &'static str, kind: Kind, f: fn(&mut Job, &Opt) -> Result<()>) -> Spec {
        Spec {
            name,
            aliases: &[],
            also: &[],
            help: "",
            kind,
            effect: Effect::Set(f),
            def: Def::Unstated,
            range: None,
        }
    }

    /// An option that may be taken with a note.
    pub const fn take(
        name: &'static str,
        kind: Kind,
        f: fn(&mut Job, &Opt) -> Result<SetOutcome>,
    ) -> Spec {
        Spec {
            name,
            aliases: &[],
            also: &[],
            help: "",
            kind,
            effect: Effect::Take(f),
            def: Def::Unstated,
            range: None,
        }
    }

    /// An option accepted because it changes no figure.
    pub const fn note(name: &'static str, why: &'static str) -> Spec {
        Spec {
            name,
            aliases: &[],
            also: &[],
            help: "",
            kind: Kind::Any,
            effect: Effect::Note(why),
            def: Def::Unstated,
            range: None,
        }
    }

    /// An option refused, with what to do instead.
    pub const fn refuse(name: &'static str, why: &'static str) -> Spec {
        Spec {
            name,
            aliases: &[],
            also: &[],
            help: "",
            kind: Kind::Any,
            effect: Effect::Refuse(why),
            def: Def::Unstated,
            range: None,
        }
    }

    /// An option of a fio engine xferbench does not have.
    pub const fn other_engine(name: &'static str, engine: &'static str) -> Spec {
        Spec {
            name,
            aliases: &[],
            also: &[],
            help: "",
            kind: Kind::Any,
            effect: Effect::OtherEngine(engine),
            def: Def::Unstated,
            range: None,
        }
    }

    /// The same option under other names too.
    pub const fn alias(mut self, aliases: &'static [&'static str]) -> Spec {
        self.aliases = aliases;
        self
    }

    /// The same option with its `--cmdhelp` line.
    pub const fn help(mut self, help: &'static str) -> Spec {
        self.help = help;
        self
    }

    /// The option's default, as fio's `.def` (`--cmdhelp`'s `default:`).
    pub const fn def(mut self, value: &'static str) -> Spec {
        self.def = Def::Is(value);
        self
    }

    /// The option has no default: it does nothing unless given.
    pub const fn no_def(mut self) -> Spec {
        self.def = Def::NoDefault;
        self
    }

    /// The bounds the option's number must keep to ([`Range::NO_MAX`]: no
    /// upper one).
    pub const fn range(mut self, min: i64, max: i64) -> Spec {
        self.range = Some(Range::new(min, max));
        self
    }

    /// Bounds shared with another parse (a priority level inside
    /// `cmdprio_bssplit` as in `cmdprio=`).
    pub const fn bounds(mut self, range: Range) -> Spec {
        self.range = Some(range);
        self
    }

    /// fio's separate options taken as this one.
    pub const fn also(mut self, names: &'static [&'static str]) -> Spec {
        self.also = names;
        self
    }

    /// Whether `key` names this option.
    pub fn is(&self, key: &str) -> bool {
        self.name == key || self.aliases.contains(&key) || self.also.contains(&key)
    }

    /// Every key that names this option.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + use<> {
        std::iter::once(self.name)
            .chain(self.aliases.iter().copied())
            .chain(self.also.iter().copied())
    }

    /// The name fio prints for `key` (one of [`Spec::names`]): its own
    /// name for an alias, the key itself for a separate fio option.
    pub fn fio_name<'a>(&self, key: &'a str) -> &'a str {
        if self.also.contains(&key) {
            key
        } else {
            self.name
        }
    }

    /// Applies the option (its key as written and value in `o`) to `job`.
    pub fn apply(&self, job: &mut Job, o: &Opt) -> Result<SetOutcome> {
        let key = o.key;
        match self.effect {
            Effect::Set(f) => f(job, o).map(|()| SetOutcome::Applied),
            Effect::Take(f) => f(job, o),
            Effect::Note(why) => Ok(SetOutcome::Note(format!(
                "option '{key}' changes no figure xferbench reports and was accepted: {why}"
            ))),
            Effect::OtherEngine(engine) => Ok(SetOutcome::Note(format!(
                "option '{key}' belongs to ioengine={engine}; a job on another engine ignores it"
            ))),
            Effect::Refuse(why) => Err(refusal(key, why)),
        }
    }
}

/// The error refusing `key`, for a table entry refused outright and for
/// one refused only for some values.
pub fn refusal(key: &str, why: &str) -> Error {
    Error::usage(format!("option '{key}' is not supported: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{engine_opts, options, verify};

    /// Every entry: the general and verify tables, then each engine's (an
    /// option several engines take comes once per engine).
    fn entries() -> impl Iterator<Item = &'static Spec> {
        options::GENERAL
            .iter()
            .chain(verify::VERIFY)
            .chain(engine_opts::ENGINES.iter().flat_map(|(_, t)| t.iter()))
    }

    fn taken(s: &Spec) -> bool {
        matches!(s.effect, Effect::Set(_) | Effect::Take(_))
    }

    #[test]
    fn every_option_taken_states_its_default_and_a_numbers_bounds() {
        for s in entries() {
            let n = s.name;
            if !taken(s) {
                assert!(
                    s.def == Def::Unstated && s.range.is_none(),
                    "{n}: a default or bounds on an option xferbench does not read"
                );
                continue;
            }
            match s.kind {
                Kind::Flag => assert_eq!(
                    s.def,
                    Def::Unstated,
                    "{n}: a switch is off unless given, and fio states no default for one"
                ),
                _ => assert_ne!(s.def, Def::Unstated, "{n}: state its default, or .no_def()"),
            }
            if matches!(s.kind, Kind::Int) {
                assert!(s.range.is_some(), "{n}: a whole number states its bounds");
            }
            if let Some(r) = s.range {
                assert!(r.max == Range::NO_MAX || r.max >= r.min, "{n}: {r:?}");
            }
        }
    }

    /// A job's settings as text, less the marks that only say an option was
    /// written (writing its default sets them, as fio's
    /// `fio_option_is_set`), one field a line.
    fn settings(mut j: Job) -> String {
        j.verify_given = false;
        j.engine_opts.given.clear();
        j.buffers.refill_set = false;
        j.buffers.scramble_set = false;
        format!("{j:#?}")
    }

    /// A net job's socket, as the engine reads `extra` beside `lines`.
    fn endpoint(j: &Job, lines: &[(&str, &str)]) -> crate::net::Endpoint {
        let mut j = j.clone();
        for (k, v) in lines {
            j.set(k, Some(v)).unwrap();
        }
        crate::net::Endpoint::of(&j, j.filename.as_deref().unwrap_or("")).unwrap()
    }

    /// A TCP sender's options.
    const TCP: [(&str, &str); 4] = [
        ("ioengine", "net"),
        ("hostname", "localhost"),
        ("port", "8888"),
        ("rw", "write"),
    ];

    /// Whether a job given an option's default acts as one without it.
    type SameAsUnset = fn(&Job) -> bool;

    /// The options whose default the job holds as None, meaning fio's value
    /// (which the code reading the field supplies) or "not given" (which
    /// the net engine's options record, to refuse them on another engine):
    /// each is checked where the field is read instead.
    const EQUIVALENT: &[(&str, SameAsUnset)] = &[
        // Unset: the log's window where the job writes that log, else 500.
        ("bwavgtime", |j| {
            j.sample_windows().0 == Job::default().sample_windows().0
        }),
        ("iopsavgtime", |j| {
            j.sample_windows().1 == Job::default().sample_windows().1
        }),
        ("filename_format", |j| {
            let three = |j: &Job| {
                let mut j = j.clone();
                j.set("nrfiles", Some("3")).unwrap();
                j.resolve_files().map(|()| j.resolved_files())
            };
            three(j) == three(&Job::default())
        }),
        ("protocol", |j| {
            endpoint(j, &TCP) == endpoint(&Job::default(), &TCP)
        }),
        ("listen", |j| {
            endpoint(j, &TCP) == endpoint(&Job::default(), &TCP)
        }),
        ("pingpong", |j| {
            endpoint(j, &TCP) == endpoint(&Job::default(), &TCP)
        }),
        ("ttl", |j| {
            let multicast = [
                ("ioengine", "net"),
                ("protocol", "udp"),
                ("hostname", "239.0.0.1"),
                ("port", "8888"),
                ("rw", "write"),
            ];
            endpoint(j, &multicast) == endpoint(&Job::default(), &multicast)
        }),
    ];

    /// The lines of `b` that `a` lacks, to name the field that differs.
    fn differing(a: &str, b: &str) -> String {
        let lines: Vec<&str> = a.lines().collect();
        b.lines()
            .filter(|l| !lines.contains(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn each_default_in_the_table_is_the_jobs() {
        let fresh = settings(Job::default());
        let mut checked = 0;
        for s in entries().filter(|s| taken(s)) {
            let def = match (s.def, s.kind) {
                (Def::Is(v), _) => v,
                (_, Kind::Flag) => "0",
                _ => continue,
            };
            let mut j = Job::default();
            let r = j.set(s.name, Some(def));
            assert!(r.is_ok(), "{}={def}: {r:?}", s.name);
            match EQUIVALENT.iter().find(|(n, _)| *n == s.name) {
                Some((_, same)) => assert!(same(&j), "{}={def} acts unlike no {0}", s.name),
                None => {
                    let got = settings(j);
                    assert!(
                        got == fresh,
                        "{}={def} is not Job::default()'s:\n{}",
                        s.name,
                        differing(&fresh, &got)
                    );
                }
            }
            checked += 1;
        }
        assert!(checked > 100, "only {checked} defaults checked");
        // Each exception is an option with a default.
        for (n, _) in EQUIVALENT {
            assert!(
                entries().any(|s| s.name == *n
                    && (matches!(s.def, Def::Is(_)) || matches!(s.kind, Kind::Flag))),
                "{n}"
            );
        }
    }

    #[test]
    fn the_bounds_in_the_table_are_what_the_parse_takes() {
        for s in entries().filter(|s| taken(s)) {
            let Some(r) = s.range else { continue };
            let n = s.name;
            let set = |v: i64| Job::default().set(n, Some(&v.to_string()));
            assert!(set(r.min).is_ok(), "{n}={}: {:?}", r.min, set(r.min));
            let mut out = vec![r.min - 1];
            if r.max != Range::NO_MAX {
                assert!(set(r.max).is_ok(), "{n}={}: {:?}", r.max, set(r.max));
                out.push(r.max + 1);
            }
            for v in out {
                let e = set(v).expect_err(&format!("{n}={v} taken")).to_string();
                assert!(
                    e.starts_with(&format!("{n}={v}: ")) && !e.contains('\n'),
                    "{e}"
                );
                // Above the top, the error gives the range (a size's top
                // at least).
                if v > r.min {
                    assert!(e.contains(&r.max.to_string()), "{e}");
                    if matches!(s.kind, Kind::Int) {
                        assert!(e.contains(&format!("from {}", r.min)), "{e}");
                    }
                }
            }
        }
    }
}
