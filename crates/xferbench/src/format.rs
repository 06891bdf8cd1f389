//! How a result is written: one of the three forms every command offers.

use crate::words::word_enum;
use serde::Serialize;

word_enum! {
    /// What to write and where.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Format {
        /// Tables for people, shaped like the published benchmarks' own.
        Table = "table",
        /// The lossless result, and nothing else, on stdout.
        Json = "json",
        /// One row per point, for spreadsheets and plotting tools.
        Csv = "csv",
    }
}
