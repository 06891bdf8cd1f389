//! The progress bar on stderr for long sweeps: hidden when stderr is not a
//! terminal or with --quiet. Updated between points, or for `stream` by the coordinating thread — never inside a timed loop.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use xferbench::experiment::Progress;

#[derive(Clone)]
pub struct Bar(ProgressBar, bool);

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        let pb = ProgressBar::hidden();
        if !quiet && std::io::stderr().is_terminal() {
            pb.set_draw_target(ProgressDrawTarget::stderr());
        }
        pb.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} points, {elapsed} elapsed, ~{eta} left  {msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        Bar(pb, quiet)
    }
}

impl Progress for Bar {
    fn start_bytes(&self, total: u64, label: &str) {
        let template = if total > 0 {
            "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec}, {elapsed} elapsed, ~{eta} left  {msg}"
        } else {
            "{spinner} {bytes} {binary_bytes_per_sec}, {elapsed} elapsed  {msg}"
        };
        self.0.set_style(
            ProgressStyle::with_template(template)
                .expect("static template")
                .progress_chars("=> "),
        );
        self.0.set_length(total);
        self.0.set_position(0);
        self.0.set_message(label.to_string());
    }

    fn at(&self, done: u64) {
        self.0.set_position(done);
    }

    fn start(&self, total: u64) {
        self.0.set_length(total);
        self.0.set_position(0);
    }

    fn point(&self, label: &str) {
        if self.0.message() != label {
            if !self.0.message().is_empty() {
                self.0.inc(1);
            }
            self.0.set_message(label.to_string());
        }
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }

    /// On stderr unless --quiet, terminal or not: a log keeps it too.
    fn note(&self, line: &str) {
        if !self.1 {
            self.0.suspend(|| eprintln!("xferbench: {line}"));
        }
    }
}

/// Draws a stream job's file layout (over 256 MiB) as a bar on a terminal,
/// as fio says it is laying out a file: set once at start.
pub fn show_layouts() {
    let bar: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);
    let _ = xferbench::fio::engine::LAYOUT.set(Box::new(move |path, done, total| {
        let mut b = bar.lock().unwrap_or_else(|e| e.into_inner());
        let pb = b.get_or_insert_with(|| {
            let pb = ProgressBar::new(total);
            pb.set_style(
                ProgressStyle::with_template(
                    "laying out {msg} {bar:30} {bytes}/{total_bytes} ({eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            pb.set_message(path.display().to_string());
            pb
        });
        pb.set_position(done);
        if done >= total {
            pb.finish_and_clear();
            *b = None;
        }
    }));
}
