//! Enums whose variants users name by a word: `--buffers raw`,
//! `-t thread:completion=block`, `--scheduler thread-per-block`.
//!
//! [`word_enum!`] declares such an enum with the word of each variant and
//! gives it [`Word`] and [`FromStr`](std::str::FromStr), so no enum spells its
//! parsing out by hand and no module below the command line depends on the
//! argument parser. The command line (`src/cli/`) teaches its parser the same
//! words, with each variant's doc comment as the word's help.

use std::fmt;

/// An enum whose variants are named by fixed words.
pub trait Word: Copy + Sized + 'static {
    /// Every variant, in declaration order: the order help and errors list them in.
    const VARIANTS: &'static [Self];

    /// The word that names this variant.
    fn word(self) -> &'static str;

    /// The variant's doc comment as written: one line per doc line, each
    /// ending in a newline (empty when it has none).
    fn doc(self) -> &'static str;

    /// The variant named exactly `s` (case matters).
    fn from_word(s: &str) -> Option<Self> {
        Self::VARIANTS.iter().copied().find(|v| v.word() == s)
    }

    /// Every word, in declaration order.
    fn words() -> Vec<&'static str> {
        Self::VARIANTS.iter().map(|v| v.word()).collect()
    }
}

/// A word that names no variant; `valid` lists those that do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWord {
    pub given: String,
    pub valid: Vec<&'static str>,
}

impl UnknownWord {
    pub fn of<T: Word>(given: &str) -> UnknownWord {
        UnknownWord {
            given: given.to_string(),
            valid: T::words(),
        }
    }
}

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not one of {}",
            self.given,
            self.valid.join(", ")
        )
    }
}

impl std::error::Error for UnknownWord {}

/// Parses a word into `T`, or says which words there are.
pub fn parse<T: Word>(s: &str) -> Result<T, UnknownWord> {
    T::from_word(s).ok_or_else(|| UnknownWord::of::<T>(s))
}

/// The words of `values`, comma-separated, as a flag that takes a list of
/// them reads them back: `mean,p99`.
pub fn join<T: Word>(values: &[T]) -> String {
    let words: Vec<&str> = values.iter().map(|v| v.word()).collect();
    words.join(",")
}

/// Declares an enum of unit variants, each written `Variant = "word"`, and
/// implements [`Word`] and `FromStr` for it. Attributes on the enum and its
/// variants (derives, `serde`, `#[default]`, doc comments) are kept as written.
///
/// ```text
/// word_enum! {
///     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
///     pub enum Side {
///         /// The one who asks.
///         Initiator = "initiator",
///         Responder = "responder",
///     }
/// }
/// ```
#[macro_export]
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$($attr:tt)*])*
                $variant:ident = $word:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$($attr)*])*
                $variant,
            )*
        }

        impl $crate::words::Word for $name {
            const VARIANTS: &'static [Self] = &[$($name::$variant),*];

            fn word(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }

            fn doc(self) -> &'static str {
                match self {
                    $($name::$variant => concat!($($crate::words::doc_line!($($attr)*)),*),)*
                }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::words::UnknownWord;

            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                $crate::words::parse(s)
            }
        }
    };
}

/// One attribute's share of a doc comment: its line for `doc = "…"`, nothing
/// for any other attribute.
#[doc(hidden)]
#[macro_export]
macro_rules! doc_line {
    (doc = $line:literal) => {
        concat!($line, "\n")
    };
    ($($other:tt)*) => {
        ""
    };
}

pub use crate::{doc_line, word_enum};

/// How many distinct words [`intern`] keeps: far more than every result
/// xferbench writes names, few enough that files made up to grow it (a
/// fuzzer's) cannot take the process's memory.
const MOST_WORDS: usize = 1 << 16;

/// A word read back from a saved result, as the `&'static str` the result
/// types hold: they are written from literals (a figure's key, a kernel's
/// name), and giving them an owned type would change every writer. Each
/// distinct word is kept once for the life of the process, so a report of
/// many runs costs the words it has seen, not one copy per field; none
/// once `MOST_WORDS` (65,536) are kept.
pub fn intern(word: &str) -> Option<&'static str> {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static SEEN: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = seen.get(word) {
        return Some(w);
    }
    if seen.len() >= MOST_WORDS {
        return None;
    }
    let w: &'static str = Box::leak(word.to_owned().into_boxed_str());
    seen.insert(w);
    Some(w)
}

/// [`intern`]'s refusal, for a deserializer.
pub fn too_many_words<E: serde::de::Error>() -> E {
    E::custom(format!(
        "more than {MOST_WORDS} distinct names read: not results xferbench wrote"
    ))
}

/// A result type's `&'static str` field, spelled so that serde's derive does
/// not take it for a string borrowed from the input (which would tie the
/// whole result to `'static` input); read back with [`de_interned`].
pub type Interned = &'static str;

/// Reads a string field into the `&'static str` a result type holds (see
/// [`intern`]); for `#[serde(deserialize_with = "…")]`.
pub fn de_interned<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let s: std::borrow::Cow<'de, str> = serde::Deserialize::deserialize(d)?;
    intern(&s).ok_or_else(too_many_words)
}

/// Reads a word enum's word back (the options' enums that have no
/// `Deserialize` of their own); for `#[serde(deserialize_with = "…")]`.
pub fn de_word<'de, D: serde::Deserializer<'de>, T: Word>(d: D) -> Result<T, D::Error> {
    let s: std::borrow::Cow<'de, str> = serde::Deserialize::deserialize(d)?;
    parse(&s).map_err(serde::de::Error::custom)
}

/// [`de_word`] for a field that may be absent or null.
pub fn de_opt_word<'de, D: serde::Deserializer<'de>, T: Word>(d: D) -> Result<Option<T>, D::Error> {
    let s: Option<std::borrow::Cow<'de, str>> = serde::Deserialize::deserialize(d)?;
    s.map(|s| parse(&s).map_err(serde::de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    word_enum! {
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        enum Side {
            /// The one who asks.
            ///
            /// Second paragraph.
            #[default]
            Initiator = "initiator",
            #[allow(dead_code)]
            ThreeWords = "three-words",
        }
    }

    #[test]
    fn words_parse_exactly_and_errors_list_every_word() {
        assert_eq!(Side::VARIANTS, &[Side::Initiator, Side::ThreeWords]);
        assert_eq!("three-words".parse(), Ok(Side::ThreeWords));
        assert_eq!(Side::default(), Side::Initiator);
        let e = "Initiator".parse::<Side>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "'Initiator' is not one of initiator, three-words"
        );
        assert_eq!(Side::ThreeWords.word(), "three-words");
        assert_eq!(
            join(&[Side::ThreeWords, Side::Initiator]),
            "three-words,initiator"
        );
    }

    #[test]
    fn docs_keep_their_lines_and_skip_other_attributes() {
        assert_eq!(
            Side::Initiator.doc(),
            " The one who asks.\n\n Second paragraph.\n"
        );
        assert_eq!(Side::ThreeWords.doc(), "");
    }
}
