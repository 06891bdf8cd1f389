//! Subcommands that are not experiments: the remote responder (`serve`), the
//! transport inventory (`list`) and the plugin conformance run (`plugin check`).

pub mod list;
pub mod plugin_check;
pub mod reference;
pub mod serve;
