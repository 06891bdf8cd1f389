//! The measurement core of xferbench: what every layer above shares and
//! nothing here knows of transports, experiments or output formats — the
//! one error type, sizes and durations as users type them, enums named by a
//! word, aligned buffers, message payloads, the children a run starts (ended
//! with it), and `measure`: statistics, histograms, the Hockney fit, CPU
//! placement, background load and the environment recorded with every
//! result.

pub mod buffer;
pub mod children;
pub mod error;
pub mod measure;
pub mod payload;
pub mod units;
pub mod words;
