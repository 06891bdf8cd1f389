//! Transports: how bytes move between the initiator and its responder.
//!
//! Each transport is one file filling in [`Transport`], as a fio engine fills in
//! `ioengine_ops`. Experiments see only [`Link`]; transports know nothing of
//! sweeps or statistics. What a link is lives in `link` (the bottom of the
//! crate), the list of transports in `registry` (the top); both are
//! re-exported here, so a caller writes `transport::Link` and
//! `transport::find`.

pub(crate) use xferbench_core::{buffer, error, measure, payload, units, words};

pub mod cuda;
mod fd;
pub mod guard;
mod link;
pub mod mpi;
mod peer;
mod pipe;
pub mod plugin;
mod registry;
pub mod remote;
mod shm;
mod slots;
mod tcp;
mod thread;
pub mod udp;
mod unix;
mod unix_dgram;

pub use cuda::ordinal as cuda_ordinal;
pub use link::*;
pub use peer::Fault;
pub use registry::{all, check, find, parse_specs, resolve};
