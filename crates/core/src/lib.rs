//! The measurement core of xferbench: what every layer above shares and
//! nothing here knows of transports, experiments or output formats — the
//! one error type, sizes and durations as users type them, enums named by a
//! word, aligned buffers, message payloads, the children a run starts (ended
//! with it), and `measure`: statistics, histograms, the Hockney fit, CPU
//! placement, background load, the environment recorded with every result
//! and the machine's limits — and `fifo`, writing into a pipe that never
//! blocks for good.

pub mod buffer;
pub mod children;
pub mod error;
pub mod fifo;
pub mod limits;
pub mod measure;
pub mod payload;
pub mod units;
pub mod words;
