//! fio's `rw_sequencer=` and `zonemode=strided` as a job sets them: the
//! model's part; walking them is `offsets`'.

/// fio's `rw_sequencer=`: what the I/Os between two random offsets do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sequencer {
    /// The next blocks after the random one.
    Sequential,
    /// The same block again.
    Identical,
}

/// fio's `zonemode=strided` (`zonerange`, `zonesize`, `zoneskip`), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Zones {
    /// Size of one zone: I/O stays inside it.
    pub range: u64,
    /// Bytes moved in a zone before the job goes on to the next.
    pub size: u64,
    /// Bytes skipped between zones.
    pub skip: u64,
}
