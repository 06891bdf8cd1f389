//! The `stream` experiment's machinery, shaped as fio's: a [`job::Job`] holds
//! the typed options of one job section (from a job file or from flags), an
//! [`engine`] moves its I/Os, and [`verify`] checks what comes back.

pub(crate) use xferbench_core::{buffer, children, error, fifo, measure, payload, units, words};
pub(crate) use xferbench_transport as transport;

pub mod blocksizes;
pub mod checksum;
pub mod cmdline;
pub mod content;
pub mod diskstats;
pub mod distribution;
pub mod engine;
pub mod files;
pub mod fiostats;
pub mod intervals;
pub mod job;
pub mod jobfile;
pub mod logs;
pub mod net;
pub mod offsets;
pub mod output;
pub mod pattern;
pub mod resources;
pub mod result;
pub mod verify;
pub mod worker;
