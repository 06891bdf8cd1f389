//! Checkpoints of the run being measured: after each point, a copy of the
//! run so far, written (marked incomplete) if the run can never finish by
//! itself — a device call that does not return, or a signal that finds the
//! run stuck in a call its peer will never answer (an MPI rank whose peer
//! stopped). A copy per point, outside any timed loop.
//!
//! When a parent supervises this process (`parent.rs`), each checkpoint
//! also goes to it, serialized: if this process dies (a plugin's crash or
//! `exit()`, the OOM killer), the parent writes it with [`write_sent`].

use super::progress::Bar;
use std::sync::{Arc, Mutex};
use xferbench::error::{Error, Result};
use xferbench::experiment::Progress;
use xferbench::options::Output;
use xferbench::report::Render;
use xferbench::result::Run;
use xferbench::transport::guard;

/// The progress hooks, passed through, plus the checkpoint kept.
pub struct Checkpoints<'a, P, X> {
    bar: &'a Bar,
    last: Arc<Mutex<Option<Run<P, X>>>>,
}

impl<'a, P: 'static, X: 'static> Checkpoints<'a, P, X>
where
    Run<P, X>: Render + Clone + Send,
{
    /// Keeps checkpoints for a run written as `out` says, and registers
    /// their writing with the supervisor.
    pub fn new(bar: &'a Bar, out: &Output) -> Self {
        let last: Arc<Mutex<Option<Run<P, X>>>> = Arc::default();
        let (kept, format, output, shown) = (
            last.clone(),
            out.effective_format(),
            out.output.clone(),
            bar.clone(),
        );
        // Under an MPI launcher only rank 0 writes results; the others'
        // checkpoints are empty and would overwrite its file.
        let writes = xferbench::experiment::mesh::launcher_rank().is_none_or(|r| r == 0);
        xferbench::transport::guard::on_abandon(Box::new(move |why| {
            shown.finish();
            if !writes {
                return;
            }
            let Some(mut run) = kept.lock().unwrap_or_else(|e| e.into_inner()).take() else {
                return;
            };
            run.stop(why);
            let written = run.render(format).and_then(|text| {
                super::emit_run(&text, output.as_deref(), run.points(), false, None)
            });
            if let Err(e) = written {
                eprintln!("xferbench: error: writing the partial results: {e}");
            }
        }));
        Checkpoints { bar, last }
    }
}

impl<P: 'static, X: 'static> Progress for Checkpoints<'_, P, X>
where
    Run<P, X>: Clone + serde::Serialize,
{
    fn start(&self, total: u64) {
        self.bar.start(total);
    }
    fn point(&self, label: &str) {
        self.bar.point(label);
    }
    fn finish(&self) {
        self.bar.finish();
    }
    fn start_bytes(&self, total: u64, label: &str) {
        self.bar.start_bytes(total, label);
    }
    fn at(&self, done: u64) {
        self.bar.at(done);
    }
    fn note(&self, line: &str) {
        self.bar.note(line);
    }
    fn checkpoint(&self, partial: &dyn std::any::Any) {
        if let Some(run) = partial.downcast_ref::<Run<P, X>>() {
            if guard::supervised()
                && let Ok(state) = serde_json::to_vec(run)
            {
                guard::checkpoint(&state);
            }
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(run.clone());
        }
    }
}

/// Writes the last checkpoint the measuring child sent (`state`), marked
/// stopped by `why`, where and as the run would have written its results:
/// what the supervising parent does when the child died without writing.
pub fn write_sent<P, X>(state: &[u8], out: &Output, why: &Error) -> Result<()>
where
    Run<P, X>: Render + serde::de::DeserializeOwned,
{
    let mut run: Run<P, X> = serde_json::from_slice(state)
        .map_err(|e| Error::run_from("reading back the last checkpoint", e))?;
    run.stop(why);
    let text = run.render(out.effective_format())?;
    super::emit_run(&text, out.output.as_deref(), run.points(), false, None)
}
