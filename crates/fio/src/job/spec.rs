//! The shape of one fio option as xferbench describes it, after fio's own
//! `struct fio_option` (options.c): a name and its aliases, the values it
//! takes, and what it does to a [`Job`]. Every fact about an option is in
//! its one entry, so `set`, "did you mean", the notes and refusals and the
//! engines' ownership cannot drift apart.

use super::{Job, Opt, SetOutcome};
use crate::error::{Error, Result};

/// What values an option takes (fio's `fio_opt_type`): for the reader of
/// the table, and for the test that gives every option a value it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bare, or 1/0, true/false, yes/no, on/off.
    Bool,
    /// A whole number.
    Int,
    /// A size with fio's k/m/g/t suffixes.
    Size,
    /// A duration.
    Time,
    /// One of these words (the first is fio's default or the usual one).
    Words(&'static [&'static str]),
    /// Text in the option's own syntax, as in this example.
    Text(&'static str),
    /// Any value: an option xferbench only notes or refuses.
    Any,
}

impl Kind {
    /// A value the option takes.
    pub fn example(self) -> &'static str {
        match self {
            Kind::Bool | Kind::Int | Kind::Size | Kind::Time | Kind::Any => "1",
            Kind::Words(w) => w[0],
            Kind::Text(t) => t,
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
