//! What a job's write buffers hold, beyond `zero_buffers`, `buffer_pattern`
//! and `buffer_compress_*` (fields of [`super::Job`]): fio's dedupe options
//! and its scrambling, and which of fio's implied settings the job file
//! overrode. The crate's `content` module makes the bytes.

use serde::Serialize;

/// `dedupe_mode=`: where a deduplicated buffer's contents come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DedupeMode {
    /// The job's previous unique buffer again (fio's default).
    #[default]
    Repeat,
    /// One of a working set of unique buffers, drawn at random.
    WorkingSet,
}

/// The buffer options fio keeps beside the fill options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BufferOpts {
    /// `dedupe_percentage=`: the share of written buffers that repeat an
    /// earlier one.
    pub dedupe_pct: u32,
    pub dedupe_mode: DedupeMode,
    /// `dedupe_working_set_percentage=`: the working set's size as a share
    /// of the job's size (fio's default 5).
    pub dedupe_ws_pct: u32,
    /// `dedupe_global=`: the working set spans every job of the run.
    pub dedupe_global: bool,
    /// `buffer_compress_percentage=` or `dedupe_percentage=` was given (fio's
    /// TD_F_COMPRESS): buffers are made chunk by chunk and never scrambled.
    pub generated: bool,
    /// `scramble_buffers=` (fio's default on): without refilling, each
    /// write's 512-byte blocks get its offset and time stamped in, so
    /// reused buffers do not dedupe.
    pub scramble: bool,
    /// `scramble_buffers=` was written (it then wins over `zero_buffers`).
    pub scramble_set: bool,
    /// `refill_buffers=` was written (it then wins over what compression
    /// implies).
    pub refill_set: bool,
    /// This job's place among the job file's jobs (clones counted) and
    /// their number: fio's `thread_number`, which keeps jobs' buffers
    /// apart and spreads a global dedupe working set over them.
    pub job_index: u32,
    pub jobs: u32,
}

impl Default for BufferOpts {
    fn default() -> Self {
        BufferOpts {
            dedupe_pct: 0,
            dedupe_mode: DedupeMode::Repeat,
            dedupe_ws_pct: 5,
            dedupe_global: false,
            generated: false,
            scramble: true,
            scramble_set: false,
            refill_set: false,
            job_index: 0,
            jobs: 1,
        }
    }
}
