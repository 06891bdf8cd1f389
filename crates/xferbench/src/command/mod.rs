//! Subcommands that are not experiments: the remote responder (`serve`), the
//! transport inventory (`list`), the data paths' ceilings (`limits`) and the
//! plugin conformance run (`plugin check`).

pub mod limits;
pub mod list;
pub mod plugin_check;
pub mod reference;
pub mod serve;
