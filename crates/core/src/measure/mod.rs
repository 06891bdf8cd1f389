//! The measurement core below every experiment: the statistics a sample feeds
//! (`stats`), the model fitted to a curve (`fit`), where the endpoints run
//! (`placement`), what a comparison of two runs needs (`distribution`), the background load beside them (`loadgen`), the ranks,
//! hosts and links that stand out of an all-pairs mesh (`outliers`), the
//! environment recorded with every result (`env`) and what the machine
//! lets a run take (`room`). Nothing here knows a
//! transport, an experiment or an output format.

pub mod distribution;
pub mod env;
pub mod fit;
pub mod loadgen;
pub mod outliers;
pub mod placement;
pub mod room;
pub mod stats;
