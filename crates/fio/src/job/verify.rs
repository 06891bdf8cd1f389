//! Verify, the job's part: fio's verify options on a [`Job`](super::Job),
//! kept apart from the rest because they are many and only mean something
//! together (prepare() checks the mix). One concept in three places, each
//! in its layer: the options here, the block format (headers, checksums,
//! patterns) in the top-level `verify` module, and checking as the job runs in the
//! worker's `verify` module. Every `verify*` option fio has is either taken, taken with a
//! note, or refused with the list of those taken — never silently ignored,
//! as a verify option quietly dropped would leave data unchecked.

use super::spec::{Kind, Range, Spec, Word};
use super::{Opt, SetOutcome, VerifyKind};
use crate::error::{Error, Result};
use crate::pattern::Pattern;

/// fio's verify options xferbench takes; any other `verify*` key is
/// refused with this list.
pub static VERIFY: &[Spec] = &[
    Spec::take("verify", Kind::Listed(words), |j, o| {
        j.verify_given = true;
        if o.value.is_none() {
            o.value()?;
        }
        match o.value.unwrap_or_default() {
            "" | "0" | "none" => j.verify = None,
            "null" => {
                j.verify = None;
                return Ok(SetOutcome::Unsupported(
                    "verify=null (fio's pretend verification) runs as no verify: nothing is written into blocks, read back or checked".into(),
                ));
            }
            v => j.verify = Some(kind(o, v)?),
        }
        Ok(SetOutcome::Applied)
    })
.help("Write a checksum into every block and check it on read").def("0"),
    Spec::set("do_verify", Kind::Bool, |j, o| {
        o.bool().map(|v| j.do_verify = v)
    })
.help("Read back and check what the job wrote").def("1"),
    Spec::set("verify_fatal", Kind::Bool, |j, o| {
        o.bool().map(|v| j.verify_fatal = v)
    })
.help("Stop at the first block that fails").def("0"),
    Spec::set("verify_dump", Kind::Bool, |j, o| {
        o.bool().map(|v| j.verify_dump = v)
    })
.help("Write a failed block's data and its expected data to files").def("0"),
    Spec::set("verify_pattern", Kind::Text("0xdeadbeef"), |j, o| {
        let p = Pattern::parse(o.value()?).map_err(|e| o.bad(&e))?;
        j.verify_pattern = Some(p);
        // fio: a pattern alone means a header check plus the pattern.
        if !j.verify_given {
            j.verify = Some(VerifyKind::Meta);
        }
        Ok(())
    })
.help("Fill and check blocks with this pattern").no_def(),
    Spec::set("verify_interval", Kind::Size, |j, o| {
        j.verify_interval = Some(o.size()?).filter(|&n| n > 0);
        Ok(())
    })
.help("Size of each verified piece of a block").no_def(),
    Spec::set("verify_offset", Kind::Size, |j, o| {
        j.verify_offset = o.size()?;
        Ok(())
    })
.help("Where in the block the header goes").no_def(),
    Spec::set("verify_backlog", Kind::Int, |j, o| {
        j.verify_backlog = count(o)?;
        Ok(())
    })
.help("Check written blocks after every N writes").no_def().range(0, Range::NO_MAX),
    Spec::set("verify_backlog_batch", Kind::Int, |j, o| {
        j.verify_backlog_batch = Some(count(o)?).filter(|&n| n > 0);
        Ok(())
    })
.help("Blocks checked per backlog round").no_def().range(0, Range::NO_MAX),
    Spec::set("verify_only", Kind::Flag, |j, o| {
        o.bool().map(|v| j.verify_only = v)
    })
.help("Check without writing"),
    Spec::set("verify_header_seed", Kind::Bool, |j, o| {
        o.bool().map(|v| j.verify_header_seed = v)
    })
.help("Check the header's seed").def("0"),
    // xferbench's read-back always replays the write order from the
    // seed instead of logging it, which is what this turns on in fio.
    Spec::set("experimental_verify", Kind::Bool, |_, o| {
        o.bool().map(|_| ())
    })
.help("fio's experimental verify").no_def(),
    Spec::take("verify_async", Kind::Int, |_, o| {
        if count(o)? == 0 {
            return Ok(SetOutcome::Applied);
        }
        threads(o)
    })
.help("Threads that verify").def("0").range(0, Range::NO_MAX),
    Spec::take("verify_async_cpus", Kind::Text("0"), |_, o| threads(o))
.help("CPUs of the verify threads").no_def(),
    Spec::take("verify_state_save", Kind::Bool, |_, o| state(o))
.help("Save the verify state at the end").def("0"),
    Spec::take("verify_state_load", Kind::Bool, |_, o| state(o))
.help("Load a saved verify state").no_def(),
];

/// `verify=`'s values for `--cmdhelp`: off, every kind, and fio's other
/// spellings.
fn words() -> Vec<Word> {
    let mut w = vec![("0", "No verification"), ("none", "Alias for 0")];
    w.extend(VerifyKind::ALL.iter().map(|(n, k)| (*n, k.about())));
    w.push(("crc32c-intel", "Alias for crc32c"));
    w.push(("null", "fio's pretend verification: runs as no verify"));
    w
}

/// `verify_async=N` and `verify_async_cpus=`: taken, checked inline.
fn threads(o: &Opt) -> Result<SetOutcome> {
    Ok(SetOutcome::Unsupported(format!(
        "{}={}: xferbench checks blocks inline in the job's worker, not in extra threads, so a verifying read job's figures include the checking time (a writer's read-back is outside its figures either way)",
        o.key,
        o.value()?
    )))
}

/// `verify_state_save=` / `verify_state_load=`: off is what xferbench does.
fn state(o: &Opt) -> Result<SetOutcome> {
    if !o.bool()? {
        return Ok(SetOutcome::Applied);
    }
    Ok(SetOutcome::Unsupported(format!(
        "{}=1: xferbench keeps no verify state file; a writer checks what it wrote in this run, a read job checks its whole region",
        o.key
    )))
}

/// The refusal of a `verify*` key the table does not hold: a verify option
/// quietly dropped would leave data unchecked, so none is merely unknown.
pub(super) fn refuse_other(key: &str) -> Option<Error> {
    key.starts_with("verify").then(|| {
        let taken: Vec<&str> = VERIFY.iter().map(|s| s.name).collect();
        Error::usage(format!(
            "{key} is not supported; the verify options xferbench takes are {}",
            taken.join(", ")
        ))
    })
}

/// The kind for a `verify=` word, or the refusal listing them all.
fn kind(o: &Opt, v: &str) -> Result<VerifyKind> {
    if v == "crc32c-intel" {
        return Ok(VerifyKind::Crc32c);
    }
    VerifyKind::ALL
        .iter()
        .find(|(n, _)| *n == v)
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            let names: Vec<&str> = VerifyKind::ALL.iter().map(|(n, _)| *n).collect();
            o.bad(&format!(
                "unknown verify kind; use one of {}, crc32c-intel, null or 0",
                names.join(", ")
            ))
        })
}

/// A count of blocks or threads.
fn count(o: &Opt) -> Result<u64> {
    o.value()?
        .parse()
        .map_err(|_| o.bad("expected a whole number"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Job;

    fn set(j: &mut Job, k: &str, v: &str) -> Result<SetOutcome> {
        j.set(k, Some(v))
    }

    fn err(k: &str, v: &str) -> String {
        Job::default().set(k, Some(v)).unwrap_err().to_string()
    }

    #[test]
    fn every_kind_by_name() {
        let mut j = Job::default();
        for (name, k) in VerifyKind::ALL {
            set(&mut j, "verify", name).unwrap();
            assert_eq!(j.verify, Some(k), "{name}");
            assert_eq!(k.name(), name);
            assert_eq!(serde_json::to_value(k).unwrap(), name);
        }
        set(&mut j, "verify", "crc32c-intel").unwrap();
        assert_eq!(j.verify, Some(VerifyKind::Crc32c));
        set(&mut j, "verify", "0").unwrap();
        assert_eq!(j.verify, None);
        assert!(
            matches!(set(&mut j, "verify", "null"), Ok(SetOutcome::Unsupported(w)) if w.contains("pretend"))
        );
        assert_eq!(j.verify, None);
        let e = err("verify", "sha4");
        assert!(
            e.starts_with("verify=sha4: unknown verify kind; use one of md5, crc64"),
            "{e}"
        );
        assert!(
            e.contains("sha3-512, meta, pattern, crc32c-intel, null or 0"),
            "{e}"
        );
        let bare = Job::default().set("verify", None).unwrap_err().to_string();
        assert!(bare.contains("verify needs a value"), "{bare}");
    }

    #[test]
    fn a_pattern_alone_implies_a_header_and_pattern_check() {
        let mut j = Job::default();
        set(&mut j, "verify_pattern", "0xdeadbeef").unwrap();
        assert_eq!(j.verify, Some(VerifyKind::Meta));
        assert_eq!(j.verify_pattern.as_ref().unwrap().text(), "0xdeadbeef");
        // An explicit verify= wins, before or after.
        set(&mut j, "verify", "md5").unwrap();
        set(&mut j, "verify_pattern", "\"abc\"").unwrap();
        assert_eq!(j.verify, Some(VerifyKind::Md5));
        let mut j = Job::default();
        set(&mut j, "verify", "0").unwrap();
        set(&mut j, "verify_pattern", "0x01").unwrap();
        assert_eq!(j.verify, None);
        assert!(
            err("verify_pattern", "0xzz")
                .starts_with("verify_pattern=0xzz: '0xzz' has no hex digits")
        );
    }

    #[test]
    fn numbers_and_notes() {
        let mut j = Job::default();
        set(&mut j, "verify_interval", "512").unwrap();
        set(&mut j, "verify_offset", "1k").unwrap();
        set(&mut j, "verify_backlog", "16").unwrap();
        set(&mut j, "verify_backlog_batch", "8").unwrap();
        set(&mut j, "verify_only", "1").unwrap();
        set(&mut j, "verify_header_seed", "1").unwrap();
        assert_eq!(
            (
                j.verify_interval,
                j.verify_offset,
                j.verify_backlog,
                j.verify_backlog_batch
            ),
            (Some(512), 1024, 16, Some(8))
        );
        assert!(j.verify_only && j.verify_header_seed);
        assert!(err("verify_backlog", "x").contains("expected a whole number"));
        for (k, v) in [
            ("verify_async", "0"),
            ("verify_state_save", "0"),
            ("experimental_verify", "1"),
        ] {
            assert_eq!(set(&mut j, k, v).unwrap(), SetOutcome::Applied, "{k}");
        }
        for (k, v) in [
            ("verify_async", "2"),
            ("verify_async_cpus", "1"),
            ("verify_state_save", "1"),
            ("verify_state_load", "1"),
        ] {
            assert!(
                matches!(set(&mut j, k, v), Ok(SetOutcome::Unsupported(w)) if w.starts_with(k)),
                "{k}"
            );
        }
    }

    #[test]
    fn other_verify_options_are_refused_with_the_list() {
        let e = err("verify_write_sequence", "1");
        assert!(e.starts_with("verify_write_sequence is not supported; the verify options xferbench takes are verify, do_verify"), "{e}");
        assert!(err("verifysort", "1").contains("experimental_verify, verify_async"));
    }
}
