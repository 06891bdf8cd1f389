//! The C ABI of `include/xferbench/plugin.h`, mirrored field for field. Any
//! change here must be an append in the header first (see its versioning notes).

use std::ffi::{c_char, c_int, c_void};

pub const ABI_MAJOR: u32 = 1;
pub const ABI_MINOR: u32 = 1;
/// The entry symbol, NUL-terminated for the loader.
pub const ENTRY: &[u8] = b"xferbench_plugin_v1\0";

pub const XB_OK: c_int = 0;
pub const XB_BUSY: c_int = 1;
pub const XB_E_INVAL: c_int = -2;
pub const XB_E_UNSUPPORTED: c_int = -3;

pub const BUF_USER: u32 = 1 << 0;
pub const BUF_RAW: u32 = 1 << 1;
pub const BUF_MMIO: u32 = 1 << 2;

pub const COMPLETE_POLL: u32 = 1 << 0;
pub const COMPLETE_BLOCK: u32 = 1 << 1;

pub const CAP_REPLY_LONGER: u32 = 1 << 0;
pub const CAP_DELAY: u32 = 1 << 1;
pub const CAP_ECHO: u32 = 1 << 2;
pub const CAP_EMPTY: u32 = 1 << 3;
pub const CAP_HW_TIMESTAMPS: u32 = 1 << 4;
pub const CAP_DEVICE_TIMESTAMPS: u32 = 1 << 5;

pub const OPT_STRING: u32 = 0;
pub const OPT_SIZE: u32 = 1;
pub const OPT_TIME: u32 = 2;
pub const OPT_RATE: u32 = 3;
pub const OPT_COUNT: u32 = 4;
pub const OPT_BOOL: u32 = 5;

/// The name a status code has in the header, for messages.
pub fn status_name(s: c_int) -> &'static str {
    match s {
        0 => "XB_OK",
        1 => "XB_BUSY",
        -1 => "XB_E_FAIL",
        -2 => "XB_E_INVAL",
        -3 => "XB_E_UNSUPPORTED",
        -4 => "XB_E_NOMEM",
        -5 => "XB_E_IO",
        -6 => "XB_E_VERSION",
        _ => "an unknown status",
    }
}

#[repr(C)]
pub struct XbOption {
    pub key: *const c_char,
    pub value: *const c_char,
}

#[repr(C)]
pub struct XbOpenParams {
    pub struct_size: u32,
    pub completion: u32,
    pub responder_cpu: i32,
    pub reserved: u32,
    pub options: *const XbOption,
    pub n_options: usize,
    pub msg: *mut c_char,
    pub msg_len: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct XbCaps {
    pub struct_size: u32,
    pub buffer_modes: u32,
    pub completion_modes: u32,
    pub flags: u32,
    pub max_request: u64,
    pub max_reply: u64,
    pub max_mmio: u64,
    pub alignment: u32,
    pub max_inflight: u32,
}

#[repr(C)]
pub struct XbJob {
    pub struct_size: u32,
    pub mode: u32,
    pub tag: u64,
    pub request: *const c_void,
    pub request_len: u64,
    pub reply: *mut c_void,
    pub reply_len: u64,
    pub device_offset: u64,
    /// ABI 1.1.
    pub times: *mut XbJobTimes,
}

/// ABI 1.1: a job's device clock readings.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct XbJobTimes {
    pub request_seen_ns: u64,
    pub reply_sent_ns: u64,
}

/// ABI 1.1: one option a plugin takes.
#[repr(C)]
pub struct XbOptionInfo {
    pub name: *const c_char,
    pub kind: u32,
    pub reserved: u32,
    pub default_value: *const c_char,
    pub help: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct XbCompletion {
    pub tag: u64,
    pub status: i64,
    pub hw_ns: u64,
}

pub type OpenFn = unsafe extern "C" fn(*const XbOpenParams, *mut *mut c_void) -> c_int;
pub type CloseFn = unsafe extern "C" fn(*mut c_void);
pub type CapsFn = unsafe extern "C" fn(*mut c_void, *mut XbCaps) -> c_int;
pub type AllocFn = unsafe extern "C" fn(*mut c_void, u32, u64, *mut *mut c_void) -> c_int;
pub type FreeFn = unsafe extern "C" fn(*mut c_void, *mut c_void);
pub type ConfigureFn = unsafe extern "C" fn(*mut c_void, u64, u64, u64) -> c_int;
pub type SubmitFn = unsafe extern "C" fn(*mut c_void, *const XbJob) -> c_int;
pub type PollFn = unsafe extern "C" fn(*mut c_void, *mut XbCompletion, u32, *mut u32) -> c_int;
pub type WaitFn = unsafe extern "C" fn(*mut c_void, *mut XbCompletion, u32, *mut u32, u64) -> c_int;
pub type FdFn = unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int;
pub type CountersFn = unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> c_int;

#[repr(C)]
pub struct XbPlugin {
    pub struct_size: u32,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub reserved: u32,
    pub name: *const c_char,
    pub description: *const c_char,
    pub open: Option<OpenFn>,
    pub close: Option<CloseFn>,
    pub caps: Option<CapsFn>,
    pub alloc: Option<AllocFn>,
    pub free: Option<FreeFn>,
    pub configure: Option<ConfigureFn>,
    pub submit: Option<SubmitFn>,
    pub poll: Option<PollFn>,
    pub wait: Option<WaitFn>,
    pub completion_fd: Option<FdFn>,
    pub counters: Option<CountersFn>,
    /// ABI 1.1.
    pub option_info: *const XbOptionInfo,
    pub n_option_info: u32,
    pub reserved2: u32,
}

pub type EntryFn = unsafe extern "C" fn(u32, u32) -> *const XbPlugin;

/// The table's size up to and including `poll`, the last required operation:
/// a smaller `struct_size` cannot be a version-1 table.
pub const MIN_TABLE: usize = std::mem::offset_of!(XbPlugin, poll) + std::mem::size_of::<usize>();

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout a C compiler gives the header's structures on LP64.
    #[test]
    fn layout_matches_the_header() {
        assert_eq!(std::mem::size_of::<XbOpenParams>(), 48);
        assert_eq!(std::mem::size_of::<XbCaps>(), 48);
        assert_eq!(std::mem::size_of::<XbJob>(), 64);
        assert_eq!(std::mem::size_of::<XbCompletion>(), 24);
        assert_eq!(std::mem::size_of::<XbPlugin>(), 32 + 11 * 8 + 16);
        assert_eq!(std::mem::size_of::<XbOptionInfo>(), 32);
        assert_eq!(std::mem::size_of::<XbJobTimes>(), 16);
        assert_eq!(MIN_TABLE, 32 + 8 * 8);
    }
}
