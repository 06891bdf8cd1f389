//! One loaded plugin library and one opened device, behind safe calls.
//!
//! Everything a plugin returns is checked here (NULL buffers, misaligned
//! ones, counts over the array it was given, unknown statuses), and every
//! failure becomes one line that names the plugin, the operation and the
//! plugin's own message, so a vendor debugging a plugin sees which call
//! went wrong.

use super::ffi::{self, XbCaps, XbCompletion, XbJob, XbOpenParams, XbOption, XbPlugin};
use crate::error::{Error, Result};
use crate::guard::{Call, Guard};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A plugin library, loaded once per process and never unloaded: a plugin's
/// threads or thread-local destructors may outlive its devices, and
/// unloading their code under them crashes (glibc keeps such libraries
/// loaded for the same reason).
pub struct Library {
    pub path: PathBuf,
    _lib: libloading::Library,
    table: &'static XbPlugin,
    /// How much of the table the plugin filled: later fields read as NULL.
    size: usize,
    pub name: String,
    pub description: String,
    pub abi: (u32, u32),
    /// The options it takes, as its table describes them (ABI 1.1; empty
    /// when it does not: it then checks its keys itself).
    pub options: Vec<OptionInfo>,
    /// The first close of one of its devices that did not return in time:
    /// which device, and how long it was waited for. A plugin whose close
    /// hung once is not waited for again (each close would cost the run
    /// another `--timeout` and say the same thing again).
    close_hung: Mutex<Option<(String, Duration)>>,
}

/// One option a plugin describes (ABI 1.1 `xb_option_info`).
#[derive(Clone, Debug)]
pub struct OptionInfo {
    pub name: String,
    pub kind: u32,
    pub default: Option<String>,
    pub help: String,
}

impl OptionInfo {
    /// `name=KIND (default D): help`, for lists and errors.
    pub fn line(&self) -> String {
        format!(
            "{}={}{}: {}",
            self.name,
            super::values::kind_words(self.kind).0.to_uppercase(),
            self.default
                .as_ref()
                .map_or(String::new(), |d| format!(" (default {d})")),
            self.help
        )
    }
}

// SAFETY: the table is immutable static data in the plugin; its functions'
// thread-safety rules are the header's (calls on one device serialised).
unsafe impl Send for Library {}
// SAFETY: `&Library` only reads the immutable table and the Rust fields
// copied from it at load (`close_hung` is behind its own lock). Calling through the table from several threads at
// once is what the header allows (different devices may be used from
// different threads, so a plugin's global state is its own to guard); one
// device's calls stay serialised because `Device` takes `&mut self`.
unsafe impl Sync for Library {}

macro_rules! optional_op {
    ($name:ident, $ty:ty) => {
        pub fn $name(&self) -> Option<$ty> {
            if std::mem::offset_of!(XbPlugin, $name) + std::mem::size_of::<usize>() <= self.size {
                self.table.$name
            } else {
                None
            }
        }
    };
}

impl Library {
    /// Loads `path` and validates its table; errors name the fix.
    pub fn load(path: &Path) -> Result<Library> {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| {
            Error::usage(format!(
                "plugin: path={shown}: {e}; build the plugin first (cc -O2 -shared -fPIC -Iinclude mydev.c -o mydev.so) or give its path"
            ))
            .with_source(e)
        })?;
        if !meta.is_file() {
            return Err(Error::usage(format!(
                "plugin: path={shown} is not a file; give the plugin's .so"
            )));
        }
        // An absolute path, or the loader would search the system's library
        // directories instead of the current one.
        let abs = std::fs::canonicalize(path)
            .map_err(|e| Error::usage_from(format!("plugin: path={shown}"), e))?;
        // SAFETY: loading runs the library's initialisers; that is what the
        // user asked for by naming it.
        let lib = unsafe { libloading::Library::new(&abs) }.map_err(|e| {
            // The loader's own words (dlerror: a missing dependency, an
            // undefined symbol, the wrong architecture) are the error's
            // source, not its text.
            let why = match std::error::Error::source(&e) {
                Some(s) => format!("{e}: {s}"),
                None => e.to_string(),
            };
            Error::usage(format!(
                "plugin: cannot load {shown} as a shared library ({}); give a library built with -shared -fPIC for this machine, its dependencies on the loader's path (ldd {shown})",
                one_line(&why)
            ))
        })?;
        // SAFETY: the symbol's type is the header's xb_entry_fn.
        let entry: ffi::EntryFn = match unsafe { lib.get::<ffi::EntryFn>(ffi::ENTRY) } {
            Ok(f) => *f,
            Err(_) => return Err(missing_entry(&lib, &shown.to_string())),
        };
        // SAFETY: calling the entry as the header defines it.
        let table = unsafe { entry(ffi::ABI_MAJOR, ffi::ABI_MINOR) };
        if table.is_null() {
            return Err(Error::usage(format!(
                "plugin: {shown}: xferbench_plugin_v1({}, {}) returned NULL: the plugin cannot serve the ABI this xferbench speaks ({}.{}); rebuild it against this xferbench's include/xferbench/plugin.h",
                ffi::ABI_MAJOR,
                ffi::ABI_MINOR,
                ffi::ABI_MAJOR,
                ffi::ABI_MINOR
            )));
        }
        // SAFETY: non-NULL; the header says the table lives until exit. Only
        // the first 16 bytes are read before struct_size is known.
        let head = unsafe { &*table };
        if head.abi_major != ffi::ABI_MAJOR {
            return Err(Error::usage(format!(
                "plugin: {shown} was built for plugin ABI {}.{}, {} than this xferbench, which speaks ABI {}.0 to {}.{}; rebuild the plugin against this xferbench's include/xferbench/plugin.h{}",
                head.abi_major,
                head.abi_minor,
                if head.abi_major > ffi::ABI_MAJOR {
                    "newer"
                } else {
                    "older"
                },
                ffi::ABI_MAJOR,
                ffi::ABI_MAJOR,
                ffi::ABI_MINOR,
                if head.abi_major > ffi::ABI_MAJOR {
                    " or use a newer xferbench"
                } else {
                    ""
                }
            )));
        }
        let size = head.struct_size as usize;
        if size < ffi::MIN_TABLE {
            return Err(Error::usage(format!(
                "plugin: {shown}: its table's struct_size is {size} bytes, smaller than ABI 1.0's {} (up to the required poll operation); set struct_size = sizeof(xb_plugin) and rebuild",
                ffi::MIN_TABLE
            )));
        }
        let name = cstr(head.name).unwrap_or_else(|| "unnamed".into());
        let required = [
            ("open", head.open.is_none()),
            ("close", head.close.is_none()),
            ("caps", head.caps.is_none()),
            ("configure", head.configure.is_none()),
            ("submit", head.submit.is_none()),
            ("poll", head.poll.is_none()),
        ];
        if let Some((op, _)) = required.iter().find(|(_, missing)| *missing) {
            return Err(Error::usage(format!(
                "plugin {name} ({shown}): its table's {op} is NULL; open, close, caps, configure, submit and poll are required"
            )));
        }
        let options = option_info(head, size).map_err(|m| {
            Error::usage(format!(
                "plugin {name} ({shown}): {m}; fix the table's option_info and rebuild"
            ))
        })?;
        Ok(Library {
            path: abs,
            description: cstr(head.description).unwrap_or_default(),
            name,
            abi: (head.abi_major, head.abi_minor),
            size,
            options,
            table: head,
            _lib: lib,
            close_hung: Mutex::new(None),
        })
    }

    /// Checks the spec's options against the plugin's description of them
    /// (when it gives one) before open: an unknown key or a value that
    /// breaks its kind's rules is one line naming the option and its help.
    pub fn check_options(&self, given: &[(String, String)]) -> Result<()> {
        if self.options.is_empty() {
            return Ok(());
        }
        for (k, v) in given {
            let Some(o) = self.options.iter().find(|o| o.name == *k) else {
                return Err(Error::usage(format!(
                    "plugin {}: unknown option '{k}'; it takes {}",
                    self.name,
                    self.options
                        .iter()
                        .map(OptionInfo::line)
                        .collect::<Vec<_>>()
                        .join("; ")
                )));
            };
            if !super::values::valid(o.kind, v) {
                let (kind, rule) = super::values::kind_words(o.kind);
                return Err(Error::usage(format!(
                    "plugin {}: {k}={v} is not a {kind} ({rule}); {}",
                    self.name,
                    o.line()
                )));
            }
        }
        Ok(())
    }

    /// What the run records of the plugin: name, description, ABI, library.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "plugin": self.name,
            "description": self.description,
            "abi": format!("{}.{}", self.abi.0, self.abi.1),
            "library": self.path.display().to_string(),
        })
    }

    /// The close that hung first, if one did: what it closed and how long
    /// it was waited for.
    pub fn close_hung(&self) -> Option<(String, Duration)> {
        self.close_hung
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Notes a close that did not return (the first one is kept).
    fn note_close_hung(&self, what: &str, waited: Duration) {
        let mut h = self.close_hung.lock().unwrap_or_else(|e| e.into_inner());
        if h.is_none() {
            *h = Some((what.to_string(), waited));
        }
    }

    fn open_fn(&self) -> ffi::OpenFn {
        self.table.open.expect("checked at load")
    }
    fn close_fn(&self) -> ffi::CloseFn {
        self.table.close.expect("checked at load")
    }
    fn caps_fn(&self) -> ffi::CapsFn {
        self.table.caps.expect("checked at load")
    }
    fn configure_fn(&self) -> ffi::ConfigureFn {
        self.table.configure.expect("checked at load")
    }
    optional_op!(alloc, ffi::AllocFn);
    optional_op!(free, ffi::FreeFn);
    optional_op!(wait, ffi::WaitFn);
    optional_op!(completion_fd, ffi::FdFn);
    optional_op!(counters, ffi::CountersFn);
}

/// The options a 1.1 table describes, checked: every entry named, of a
/// known kind; none for a table that stops before them.
fn option_info(head: &XbPlugin, size: usize) -> std::result::Result<Vec<OptionInfo>, String> {
    let end = std::mem::offset_of!(XbPlugin, n_option_info) + std::mem::size_of::<u32>();
    if size < end || head.option_info.is_null() || head.n_option_info == 0 {
        return Ok(Vec::new());
    }
    if head.n_option_info > 1024 {
        return Err(format!(
            "n_option_info is {}, more options than any plugin takes (1024 at most)",
            head.n_option_info
        ));
    }
    // SAFETY: the header makes option_info an array of n_option_info
    // entries that lives as long as the table.
    let table =
        unsafe { std::slice::from_raw_parts(head.option_info, head.n_option_info as usize) };
    let mut out = Vec::with_capacity(table.len());
    for (i, o) in table.iter().enumerate() {
        let name = cstr(o.name).filter(|n| !n.is_empty() && !n.contains(['=', ',']));
        let Some(name) = name else {
            return Err(format!(
                "option_info[{i}] has no name (or one with '=' or ','); give each option its key"
            ));
        };
        if o.kind > ffi::OPT_BOOL {
            return Err(format!(
                "option_info[{i}] ({name}) has kind {}, not one of XB_OPT_STRING..XB_OPT_BOOL",
                o.kind
            ));
        }
        out.push(OptionInfo {
            name,
            kind: o.kind,
            default: cstr(o.default_value),
            help: cstr(o.help).map(|h| one_line(&h)).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Why the entry symbol is missing: another ABI major, or not a plugin.
fn missing_entry(lib: &libloading::Library, shown: &str) -> Error {
    for v in (0..=9).filter(|&v| v != ffi::ABI_MAJOR) {
        let sym = format!("xferbench_plugin_v{v}\0");
        // SAFETY: only looked up, never called.
        if unsafe { lib.get::<*const c_void>(sym.as_bytes()) }.is_ok() {
            return Error::usage(format!(
                "plugin: {shown} speaks plugin ABI {v} (it exports xferbench_plugin_v{v}); this xferbench speaks ABI {}: rebuild the plugin against this xferbench's include/xferbench/plugin.h",
                ffi::ABI_MAJOR
            ));
        }
    }
    Error::usage(format!(
        "plugin: {shown} exports no xferbench_plugin_v1 symbol, so it is not an xferbench plugin (ABI {}); a plugin defines `const xb_plugin *xferbench_plugin_v1(uint32_t, uint32_t)` from include/xferbench/plugin.h (check with nm -D)",
        ffi::ABI_MAJOR
    ))
}

/// A C string from the plugin, if it gave one.
fn cstr(p: *const c_char) -> Option<String> {
    // SAFETY: the header makes these NUL-terminated strings or NULL.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Makes a message one line: the error channel is one line per problem.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Takes the message a plugin wrote, leaving the buffer empty for the next.
fn read_message(msg: &mut [u8; 1024]) -> String {
    let n = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    let s = one_line(&String::from_utf8_lossy(&msg[..n]));
    msg[0] = 0;
    s
}

/// The error for a negative status from `op`, with the plugin's message.
/// Refusals of what was asked (XB_E_INVAL, XB_E_UNSUPPORTED) are usage
/// errors; everything else is a failed run.
fn status_error(name: &str, op: &str, st: c_int, what: &str, text: &str) -> Error {
    let m = format!(
        "plugin {name}: {op}{what} failed ({}): {}",
        ffi::status_name(st),
        if text.is_empty() {
            "the plugin gave no message"
        } else {
            text
        }
    );
    if st == ffi::XB_E_INVAL || st == ffi::XB_E_UNSUPPORTED {
        Error::usage(m)
    } else {
        Error::run(m)
    }
}

/// One open device handle. Dropping it frees its buffers and closes it.
/// Every call into the plugin is watched by its [`Guard`]: one that does
/// not return within the bound is named, and the device abandoned.
pub struct Device {
    pub lib: &'static Library,
    handle: *mut c_void,
    /// The plugin writes its messages here for the device's whole life, so
    /// the buffer stays where it was (boxed).
    msg: Box<[u8; 1024]>,
    allocs: Vec<*mut c_void>,
    closed: bool,
    /// Watches every call; its bound is also how long close is waited for.
    pub guard: Arc<Guard>,
    submit: ffi::SubmitFn,
    poll: ffi::PollFn,
}

// SAFETY: the header lets calls on one device come from different threads,
// never at once; `&mut self` on every call keeps them serialised.
unsafe impl Send for Device {}

/// A buffer kind, as alloc() names it.
pub fn kind_name(kind: u32) -> &'static str {
    match kind {
        ffi::BUF_RAW => "raw",
        ffi::BUF_MMIO => "mmio",
        _ => "user",
    }
}

impl Device {
    /// Opens a device with the spec's plugin options.
    pub fn open(
        lib: &'static Library,
        options: &[(String, String)],
        completion: u32,
        cpu: Option<usize>,
        bound: Duration,
    ) -> Result<Device> {
        lib.check_options(options)?;
        let mut keep = Vec::with_capacity(options.len() * 2);
        for (k, v) in options {
            for s in [k, v] {
                keep.push(CString::new(s.as_str()).map_err(|_| {
                    Error::usage(format!("plugin {}: option {k} holds a NUL byte", lib.name))
                })?);
            }
        }
        let opts: Vec<XbOption> = keep
            .chunks(2)
            .map(|kv| XbOption {
                key: kv[0].as_ptr(),
                value: kv[1].as_ptr(),
            })
            .collect();
        let mut msg = Box::new([0u8; 1024]);
        let params = XbOpenParams {
            struct_size: std::mem::size_of::<XbOpenParams>() as u32,
            completion,
            responder_cpu: cpu.map_or(-1, |c| c as i32),
            reserved: 0,
            options: opts.as_ptr(),
            n_options: opts.len(),
            msg: msg.as_mut_ptr().cast(),
            msg_len: msg.len(),
        };
        let mut handle = std::ptr::null_mut();
        let guard = Guard::new(format!("plugin {}", lib.name), bound);
        guard.set_context(format!(
            "opening with {}",
            if options.is_empty() {
                "no options".to_string()
            } else {
                options
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }
        ));
        // SAFETY: params and everything it points to outlive the call; the
        // message buffer outlives the device (it moves into it, boxed).
        let st = guard.call(Call::Open, || unsafe {
            (lib.open_fn())(&params, &mut handle)
        });
        guard.set_context("");
        if st < 0 {
            return Err(status_error(
                &lib.name,
                "open",
                st,
                "",
                &read_message(&mut msg),
            ));
        }
        Ok(Device {
            lib,
            handle,
            msg,
            allocs: Vec::new(),
            closed: false,
            guard,
            submit: lib.table.submit.expect("checked at load"),
            poll: lib.table.poll.expect("checked at load"),
        })
    }

    /// The error for a negative status from `op`, with the plugin's message.
    /// Refusals of what was asked (XB_E_INVAL, XB_E_UNSUPPORTED) are usage
    /// errors; everything else is a failed run.
    pub fn failure(&mut self, op: &str, st: c_int, what: &str) -> Error {
        let text = read_message(&mut self.msg);
        status_error(&self.lib.name, op, st, what, &text)
    }

    /// Takes the plugin's last message, leaving the buffer empty.
    pub fn message(&mut self) -> String {
        read_message(&mut self.msg)
    }

    /// A broken promise of the plugin's: a run error naming the operation.
    pub fn misuse(&self, op: &str, what: impl std::fmt::Display) -> Error {
        Error::run(format!("plugin {}: {op} {what}", self.lib.name))
    }

    /// The device's capabilities, checked for consistency with the table.
    pub fn caps(&mut self) -> Result<XbCaps> {
        let mut c = XbCaps {
            struct_size: std::mem::size_of::<XbCaps>() as u32,
            ..XbCaps::default()
        };
        let (f, h) = (self.lib.caps_fn(), self.handle);
        // SAFETY: c is a writable xb_caps of struct_size bytes.
        let st = self.guard.call(Call::Caps, || unsafe { f(h, &mut c) });
        if st < 0 {
            return Err(self.failure("caps", st, ""));
        }
        let bad = |what: &str| Err(self.misuse("caps()", what));
        let modes = ffi::BUF_USER | ffi::BUF_RAW | ffi::BUF_MMIO;
        if c.buffer_modes & modes == 0 {
            return bad(
                "declared no buffer modes: set buffer_modes to XB_BUF_USER and/or XB_BUF_RAW, XB_BUF_MMIO",
            );
        }
        if c.completion_modes & (ffi::COMPLETE_POLL | ffi::COMPLETE_BLOCK) == 0 {
            return bad(
                "declared no completion modes: set completion_modes to XB_COMPLETE_POLL and/or XB_COMPLETE_BLOCK",
            );
        }
        if c.max_request == 0 || c.max_reply == 0 {
            return bad(
                "declared max_request or max_reply 0: set the largest lengths the device carries",
            );
        }
        if c.max_inflight == 0 {
            return bad("declared max_inflight 0: a device takes at least one job at a time");
        }
        if c.alignment > 1 && !c.alignment.is_power_of_two() {
            return bad(format!("declared alignment {}, not a power of two", c.alignment).as_str());
        }
        if c.buffer_modes & (ffi::BUF_RAW | ffi::BUF_MMIO) != 0
            && (self.lib.alloc().is_none() || self.lib.free().is_none())
        {
            return bad("declared raw or mmio buffers but the table's alloc or free is NULL");
        }
        if c.buffer_modes & ffi::BUF_MMIO != 0 && c.max_mmio == 0 {
            return bad("declared mmio buffers with max_mmio 0");
        }
        if c.completion_modes & ffi::COMPLETE_BLOCK != 0
            && self.lib.wait().is_none()
            && self.lib.completion_fd().is_none()
        {
            return bad(
                "declared block completion but the table has neither wait nor completion_fd",
            );
        }
        Ok(c)
    }

    /// Device memory of `kind` for `len` bytes, checked for NULL and alignment.
    pub fn alloc(&mut self, kind: u32, len: u64, align: u32) -> Result<*mut u8> {
        let Some(f) = self.lib.alloc() else {
            return Err(self.misuse("alloc", "is NULL in the table"));
        };
        let mut p = std::ptr::null_mut();
        let h = self.handle;
        // SAFETY: as the header defines alloc.
        let st = self
            .guard
            .call(Call::Alloc, || unsafe { f(h, kind, len.max(1), &mut p) });
        let what = format!("({}, {len} bytes)", kind_name(kind));
        if st < 0 {
            return Err(self.failure("alloc", st, &what));
        }
        if p.is_null() {
            return Err(self.misuse(&format!("alloc{what}"), "returned XB_OK with a NULL buffer"));
        }
        self.allocs.push(p);
        if align > 1 && !(p as usize).is_multiple_of(align as usize) {
            return Err(self.misuse(
                &format!("alloc{what}"),
                format!("returned {p:p}, not aligned to the {align} bytes its caps declare"),
            ));
        }
        Ok(p.cast())
    }

    pub fn configure(&mut self, request: u64, reply: u64, delay_ns: u64) -> Result<()> {
        let (f, h) = (self.lib.configure_fn(), self.handle);
        // SAFETY: as the header defines configure.
        let st = self.guard.call(Call::Configure, || unsafe {
            f(h, request, reply, delay_ns)
        });
        if st < 0 {
            return Err(self.failure(
                "configure",
                st,
                &format!("(request {request}, reply {reply}, delay {delay_ns} ns)"),
            ));
        }
        Ok(())
    }

    /// Queues one job: `Ok(false)` when the device is busy.
    #[inline]
    pub fn submit(&mut self, job: &XbJob) -> Result<bool> {
        self.guard.job(job.tag);
        self.guard.enter(Call::Submit);
        // SAFETY: the job's buffers stay valid until its completion (the link owns them).
        let st = unsafe { (self.submit)(self.handle, job) };
        self.guard.leave();
        match st {
            ffi::XB_OK => Ok(true),
            ffi::XB_BUSY => Ok(false),
            st => Err(self.failure("submit", st, &format!("(tag {})", job.tag))),
        }
    }

    /// Collects finished jobs without sleeping.
    #[inline]
    pub fn poll(&mut self, out: &mut [XbCompletion]) -> Result<usize> {
        let mut n = 0u32;
        self.guard.enter(Call::Poll);
        // SAFETY: out has out.len() writable entries.
        let st = unsafe { (self.poll)(self.handle, out.as_mut_ptr(), out.len() as u32, &mut n) };
        self.guard.leave();
        self.counted("poll", st, n, out.len())
    }

    /// Sleeps in the plugin's wait() until a completion or the timeout.
    pub fn wait(&mut self, out: &mut [XbCompletion], timeout_ns: u64) -> Result<usize> {
        let Some(f) = self.lib.wait() else {
            return Err(self.misuse("wait", "is NULL in the table"));
        };
        let mut n = 0u32;
        self.guard.enter(Call::Wait);
        // SAFETY: out has out.len() writable entries.
        let st = unsafe {
            f(
                self.handle,
                out.as_mut_ptr(),
                out.len() as u32,
                &mut n,
                timeout_ns,
            )
        };
        self.guard.leave();
        self.counted("wait", st, n, out.len())
    }

    fn counted(&mut self, op: &str, st: c_int, n: u32, max: usize) -> Result<usize> {
        if st < 0 {
            return Err(self.failure(op, st, ""));
        }
        if st != ffi::XB_OK {
            return Err(self.misuse(op, format!("returned {st}, which only submit may return")));
        }
        if n as usize > max {
            return Err(self.misuse(
                op,
                format!("reported {n} completions into an array of {max}"),
            ));
        }
        Ok(n as usize)
    }

    /// The file descriptor that signals completions (block mode without wait).
    pub fn completion_fd(&mut self) -> Result<c_int> {
        let Some(f) = self.lib.completion_fd() else {
            return Err(self.misuse("completion_fd", "is NULL in the table"));
        };
        let mut fd = -1;
        let h = self.handle;
        // SAFETY: as the header defines completion_fd.
        let st = self
            .guard
            .call(Call::CompletionFd, || unsafe { f(h, &mut fd) });
        if st < 0 {
            return Err(self.failure("completion_fd", st, ""));
        }
        if fd < 0 {
            return Err(self.misuse("completion_fd", format!("returned XB_OK with fd {fd}")));
        }
        Ok(fd)
    }

    /// The device's counters, if the plugin keeps any.
    pub fn counters(&mut self) -> Option<Result<serde_json::Value>> {
        let f = self.lib.counters()?;
        let mut buf = vec![0u8; 64 << 10];
        let h = self.handle;
        // SAFETY: buf is writable for its length.
        let st = self.guard.call(Call::Counters, || unsafe {
            f(h, buf.as_mut_ptr().cast(), buf.len())
        });
        if st < 0 {
            return Some(Err(self.failure("counters", st, "")));
        }
        let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Some(
            serde_json::from_slice::<serde_json::Value>(&buf[..n])
                .map_err(|e| {
                    self.misuse("counters", format!("returned text that is not JSON ({e})"))
                })
                .and_then(|v| {
                    if v.is_object() {
                        Ok(v)
                    } else {
                        Err(self.misuse("counters", "returned JSON that is not an object"))
                    }
                }),
        )
    }
}

/// A pointer handed to the closing thread.
struct SendPtr(*mut c_void);
// SAFETY: the device's handle and buffers move to the thread that closes
// it; nothing else uses them after (the header allows any thread).
unsafe impl Send for SendPtr {}

impl Device {
    /// Frees the device's buffers and closes it, giving up after the
    /// guard's bound if the plugin's close never returns (a stuck worker
    /// join): then the device is abandoned, and the error (naming close)
    /// tells the caller to leak whatever the plugin might still touch.
    /// Said once: a second call, or the drop after it, does nothing.
    ///
    /// With `free_buffers` false (jobs may still be in flight) the buffers
    /// are left to close, which stops the device before releasing them.
    /// A device abandoned in another call is neither freed nor closed.
    ///
    /// Once a close of this plugin has hung, no later close is waited for:
    /// it is started (it may yet release the device) and the device is
    /// abandoned at once, with an error that says why.
    pub fn shutdown(&mut self, free_buffers: bool) -> std::result::Result<(), String> {
        self.close_as(free_buffers, "an earlier close() of this plugin")
    }

    /// Closes the device opened to read the plugin's capabilities: as
    /// [`shutdown`](Device::shutdown), and if it hangs, the closes after it
    /// say that this one did.
    pub fn close_probe(mut self) -> std::result::Result<(), String> {
        self.close_as(
            true,
            "the close() of the device opened to read its capabilities",
        )
    }

    /// [`shutdown`](Device::shutdown), `what` naming this close in the
    /// errors of the closes after it if it hangs.
    fn close_as(&mut self, free_buffers: bool, what: &str) -> std::result::Result<(), String> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.guard.abandoned() {
            self.forget_buffers();
            return Ok(());
        }
        let lib = self.lib;
        let handle = SendPtr(self.handle);
        let allocs: Vec<SendPtr> = self.allocs.drain(..).map(SendPtr).collect();
        let allocs = if free_buffers { allocs } else { Vec::new() };
        // The guard goes with the closing thread: a supervisor told of a
        // close in progress reads it from there (and a close stuck for
        // ever keeps it, as it keeps everything the device held).
        let guard = self.guard.clone();
        let work = move || {
            let handle = handle;
            guard.closing(true);
            if let Some(free) = lib.free() {
                for p in allocs {
                    // SAFETY: each pointer came from this device's alloc.
                    unsafe { free(handle.0, p.0) };
                }
            }
            // SAFETY: opened by open(); nothing uses the handle after this.
            unsafe { (lib.close_fn())(handle.0) };
            guard.closing(false);
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("xb-plugin-close".into())
            .spawn(move || {
                work();
                let _ = tx.send(());
            });
        if let Some((before, waited)) = lib.close_hung() {
            self.forget_buffers();
            let _ = self.guard.abandon(Call::Close, waited);
            return Err(format!(
                "plugin {}: close() was not waited for: {before} did not return within {:.1}s, so this device was abandoned as well (close() must stop the plugin's threads and return)",
                lib.name,
                waited.as_secs_f64()
            ));
        }
        let timeout = self.guard.bound();
        if spawned.is_ok() && rx.recv_timeout(timeout).is_ok() {
            return Ok(());
        }
        self.forget_buffers();
        lib.note_close_hung(what, timeout);
        Err(self.guard.abandon(Call::Close, timeout))
    }

    /// The plugin may still write its message buffer: keep it alive.
    fn forget_buffers(&mut self) {
        std::mem::forget(std::mem::replace(&mut self.msg, Box::new([0u8; 1024])));
        self.allocs.clear();
    }

    /// The device was given up on (a call that never returned).
    pub fn abandoned(&self) -> bool {
        self.guard.abandoned()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Err(m) = self.shutdown(true) {
            eprintln!("xferbench: warning: {}", crate::error::inert(&m));
        }
    }
}
