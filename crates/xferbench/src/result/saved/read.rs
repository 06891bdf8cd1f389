//! A results file's text read straight into its typed run, holding no more
//! than the run keeps: a field of the file that no type has (a misspelling,
//! a newer xferbench's, or junk) is skipped as it is parsed, never built
//! into memory, and its name is said. Reading the whole file into a
//! `serde_json::Value` first, as [`SavedRun::from_value`] takes it, costs
//! several times the file's size, and as much again for every field the
//! run drops.
//!
//! Two passes over the text: one typed, where the fields the run's own
//! struct cannot hold at the top level are skipped before serde's
//! `flatten` would buffer them; one that walks the text beside the typed
//! run's own JSON, an entry at a time, to name the fields the run dropped
//! anywhere (as [`super::unknown_fields`] does on a parsed file).

use super::{AnyRun, Saved};
use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// The typed run in `text`, and the fields of the file it does not hold
/// (the first and how many); or why the text is not a run this reader
/// takes (serde's words: a small file is then read the long way, for a
/// message naming the field).
pub(super) fn typed(text: &str) -> Result<(AnyRun, Option<(String, usize)>), String> {
    #[derive(Deserialize)]
    struct Head {
        experiment: String,
    }
    let head: Head = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut run = match head.experiment.as_str() {
        "roundtrip" => AnyRun::Roundtrip(saved(text)?),
        "curve" => AnyRun::Curve(saved(text)?),
        "load" => AnyRun::Load(saved(text)?),
        "flowgraph" => AnyRun::Flowgraph(saved(text)?),
        "stream" => AnyRun::Stream(Box::new(filtered(
            text,
            &known::<crate::result::stream::StreamExtra>(STREAM_FIELDS)?,
        )?)),
        "mesh" => AnyRun::Mesh(saved(text)?),
        "pairs" => AnyRun::Pairs(saved(text)?),
        e => return Err(format!("unknown experiment {e:?}")),
    };
    let unknown = unknown(text, &mut run);
    Ok((run, unknown))
}

/// The fields of [`Saved`] itself, beside its flattened `extra`.
const SAVED_FIELDS: &[&str] = &[
    "experiment",
    "complete",
    "stopped_by",
    "env",
    "options",
    "placement",
    "points",
    "warnings",
    "devices",
    "limits",
];

/// The fields of [`super::SavedStream`] itself, beside its flattened `extra`.
const STREAM_FIELDS: &[&str] = &[
    "fio version",
    "timestamp",
    "timestamp_ms",
    "time",
    "jobs",
    "per_job",
    "experiment",
    "complete",
    "stopped_by",
    "env",
    "options",
    "placement",
    "warnings",
    "devices",
    "limits",
];

/// A [`Saved`] run of points `P` with `X` beside them.
fn saved<P, X>(text: &str) -> Result<Saved<P, X>, String>
where
    P: serde::de::DeserializeOwned,
    X: serde::de::DeserializeOwned,
{
    filtered(text, &known::<X>(SAVED_FIELDS)?)
}

/// The top-level fields a run holds: its `own`, and those of the struct
/// `X` flattened into it (as serde's derive names them).
fn known<X: serde::de::DeserializeOwned>(
    own: &[&'static str],
) -> Result<Vec<&'static str>, String> {
    let extra = fields_of::<X>().ok_or("the run's fields are not known")?;
    Ok(own.iter().chain(extra).copied().collect())
}

/// The field names serde's derive gives the struct `X`: asked of it with a
/// deserializer that only listens.
fn fields_of<X: serde::de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    struct Listen<'a>(&'a std::cell::Cell<Option<&'static [&'static str]>>);
    impl<'de> de::Deserializer<'de> for Listen<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only a struct's fields are asked"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.set(Some(fields));
            Err(de::Error::custom("fields noted"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let got = std::cell::Cell::new(None);
    let _ = X::deserialize(Listen(&got));
    got.get()
}

/// `T` from `text`, the top-level fields outside `known` skipped unread.
fn filtered<T: serde::de::DeserializeOwned>(text: &str, known: &[&str]) -> Result<T, String> {
    struct Seed<'k, T>(&'k [&'k str], std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Seed<'_, T> {
        type Value = T;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Seed<'_, T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a results object")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(Known {
                inner: map,
                known: self.0,
            }))
        }
    }
    let mut d = serde_json::Deserializer::from_str(text);
    let t = Seed::<T>(known, std::marker::PhantomData)
        .deserialize(&mut d)
        .map_err(|e| e.to_string())?;
    d.end().map_err(|e| e.to_string())?;
    Ok(t)
}

/// A map whose entries outside `known` are skipped as they are read.
struct Known<'k, A> {
    inner: A,
    known: &'k [&'k str],
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Known<'_, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.inner.next_key::<String>()? {
            if self.known.contains(&key.as_str()) {
                let key: de::value::StringDeserializer<A::Error> = key.into_deserializer();
                return seed.deserialize(key).map(Some);
            }
            self.inner.next_value::<IgnoredAny>()?;
        }
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

/// The fields of `text` the typed `run` does not hold and that are not
/// empty: the first (in the file's order) and how many.
fn unknown(text: &str, run: &mut AnyRun) -> Option<(String, usize)> {
    let rest = run.json_without_entries()?;
    let mut found = Found::default();
    let walk = Walk {
        kept: Kept::Top(&rest, run),
        at: At::Root,
        found: &mut found,
    };
    let mut d = serde_json::Deserializer::from_str(text);
    walk.deserialize(&mut d).ok()?;
    found.first.map(|f| (f, found.count))
}

/// Where a field is in the file, spelt out only when one is reported.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn spelt(&self) -> String {
        match self {
            At::Root => String::new(),
            At::Key(up, k) => match up.spelt() {
                s if s.is_empty() => k.to_string(),
                s => format!("{s}.{k}"),
            },
            At::Index(up, i) => format!("{}[{i}]", up.spelt()),
        }
    }
}

/// The fields found that the run does not hold.
#[derive(Default)]
struct Found {
    first: Option<String>,
    count: usize,
}

impl Found {
    fn add(&mut self, at: &At) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(at.spelt());
        }
    }
}

/// What a value of the file is compared with: the typed run's own JSON
/// for it; at the top, the run's JSON without its entries, which are
/// made one at a time from the run.
#[derive(Clone, Copy)]
enum Kept<'a> {
    Value(&'a Value),
    Top(&'a Value, &'a AnyRun),
}

/// One value of the file walked beside what the run kept of it.
struct Walk<'a, 'f> {
    kept: Kept<'a>,
    at: At<'a>,
    found: &'f mut Found,
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Walk { kept, at, found } = self;
        let Kept::Value(Value::Array(kept)) = kept else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        walk_list(&mut seq, &at, found, kept.len(), |n| {
            kept.get(n).map(Cow::Borrowed)
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Walk { kept, at, found } = self;
        let (kept, run) = match kept {
            Kept::Value(Value::Object(k)) => (k, None),
            Kept::Top(Value::Object(k), run) => (k, Some(run)),
            _ => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return Ok(());
            }
        };
        while let Some(key) = map.next_key::<String>()? {
            let here = At::Key(&at, &key);
            if let Some(run) = run.filter(|r| r.entries_len(&key).is_some()) {
                map.next_value_seed(Entries {
                    run,
                    list: &key,
                    at: here,
                    found: &mut *found,
                })?;
                continue;
            }
            match kept.get(&key) {
                Some(k) => map.next_value_seed(Walk {
                    kept: Kept::Value(k),
                    at: here,
                    found: &mut *found,
                })?,
                None => {
                    if !map.next_value_seed(Empty)? {
                        found.add(&here);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A run's list of entries (`points`, `jobs`), each walked beside its own
/// entry's JSON, made when it is reached.
struct Entries<'a, 'f> {
    run: &'a AnyRun,
    list: &'a str,
    at: At<'a>,
    found: &'f mut Found,
}

impl<'de> DeserializeSeed<'de> for Entries<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Entries {
            run,
            list,
            at,
            found,
        } = self;
        let len = run.entries_len(list).unwrap_or(0);
        walk_list(&mut seq, &at, found, len, |n| {
            run.entry_json(list, n).map(Cow::Owned)
        })
    }
}

/// A list of the file walked entry by entry beside `kept(n)`, what the run
/// holds of its entry `n` (`len` of them). Entries are compared one to
/// one only when the lengths agree: what a list of another length holds
/// is not said.
fn walk_list<'de, 'k, A: SeqAccess<'de>>(
    seq: &mut A,
    at: &At,
    found: &mut Found,
    len: usize,
    kept: impl Fn(usize) -> Option<Cow<'k, Value>>,
) -> Result<(), A::Error> {
    let mark = (found.count, found.first.is_none());
    let mut n = 0;
    loop {
        let more = match kept(n) {
            Some(k) => seq
                .next_element_seed(Walk {
                    kept: Kept::Value(&k),
                    at: At::Index(at, n),
                    found: &mut *found,
                })?
                .is_some(),
            None => seq.next_element::<IgnoredAny>()?.is_some(),
        };
        if !more {
            break;
        }
        n += 1;
    }
    if n != len {
        found.count = mark.0;
        if mark.1 {
            found.first = None;
        }
    }
    Ok(())
}

/// Whether a value is empty (null, `[]` or `{}`), read without keeping it.
struct Empty;

impl<'de> DeserializeSeed<'de> for Empty {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Empty {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let empty = seq.next_element::<IgnoredAny>()?.is_none();
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(empty)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let empty = map.next_entry::<IgnoredAny, IgnoredAny>()?.is_none();
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::saved::SavedRun;

    /// Every experiment's extra has its fields known: without them the
    /// typed reader would refuse every file of that experiment.
    #[test]
    fn every_extra_names_its_fields() {
        use crate::result::RoundtripExtra;
        use crate::result::curve::CurveExtra;
        use crate::result::flowgraph::FlowExtra;
        use crate::result::load::LoadExtra;
        use crate::result::mesh::{MeshExtra, PairsExtra};
        use crate::result::stream::StreamExtra;
        assert!(fields_of::<RoundtripExtra>().is_some());
        assert!(fields_of::<CurveExtra>().is_some());
        assert!(fields_of::<FlowExtra>().is_some());
        assert!(fields_of::<LoadExtra>().is_some());
        assert!(fields_of::<MeshExtra>().is_some());
        assert!(fields_of::<PairsExtra>().is_some());
        let stream = fields_of::<StreamExtra>().unwrap();
        assert!(stream.contains(&"groups"), "{stream:?}");
    }

    /// The typed reader takes every fixture to the run the long way makes,
    /// and names the same fields it drops, at the top and deep inside.
    #[test]
    fn the_typed_reader_agrees_with_the_long_way() {
        for name in [
            "roundtrip",
            "curve",
            "load",
            "flowgraph",
            "stream",
            "mesh",
            "pairs",
        ] {
            let path = format!(
                "{}/../../tests/fixtures/{name}.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let mut v: Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            v["junk_top"] = serde_json::json!([1, 2, 3]);
            let list = if name == "stream" { "jobs" } else { "points" };
            let mut junk = 1;
            if let Some(first) = v[list].get_mut(0) {
                first["junk_deep"] = serde_json::json!({"a": 1});
                junk += 1;
            }
            let text = serde_json::to_string(&v).unwrap();
            let (run, unknown) = typed(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let long = SavedRun::from_value(name, v).unwrap();
            assert_eq!(
                serde_json::to_value(&run).unwrap(),
                serde_json::to_value(&long.run).unwrap(),
                "{name}"
            );
            let (first, n) = unknown.unwrap_or_else(|| panic!("{name}: nothing unknown"));
            assert_eq!(n, junk, "{name}: {first} and {n} in all");
            let said = super::super::unknown_said(name, &first, n);
            assert!(
                long.warnings.contains(&said),
                "{name}: {said} vs {:?}",
                long.warnings
            );
        }
    }
}
