//! NVIDIA GPUs through the CUDA driver API, loaded at run time (cudarc's
//! `dynamic-loading`): xferbench builds and runs without the toolkit or a
//! driver, and says so when asked for a GPU that is not there.
//!
//! This module is the thin layer the `cuda` transport and the bandwidth
//! sweep share: a context that owns everything allocated in it, pinned and
//! device memory, the device programs (PTX in `kernels.ptx`, from
//! `kernels.cu`), streams, events and waits that always give up.

use crate::error::{Error, Result};
use crate::link::CompletionMode;
use crate::measure::env::Gpu;
use cudarc::driver::sys::{self, CUresult};
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The device programs, generated from `kernels.cu` by `build-ptx.sh`.
pub const PTX: &str = include_str!("kernels.ptx");

/// Entry points `PTX` must define, with their parameter counts (checked by
/// the tests against the PTX text).
#[cfg(test)]
const ENTRIES: &[(&str, usize)] = &[
    ("xb_echo", 5),
    ("xb_latch", 3),
    ("xb_copy", 3),
    ("xb_mmio", 5),
];

/// Why CUDA cannot be used here, or the number of devices: decided once.
fn driver() -> &'static std::result::Result<i32, String> {
    static STATE: OnceLock<std::result::Result<i32, String>> = OnceLock::new();
    STATE.get_or_init(|| {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { sys::is_culib_present() } {
            return Err("libcuda not found".into());
        }
        // SAFETY: libcuda is present; cuInit may be called any number of times.
        let r = unsafe { sys::cuInit(0) };
        if r != CUresult::CUDA_SUCCESS {
            return Err(format!("no usable GPU: cuInit says {}", name(r)));
        }
        let mut n = 0;
        // SAFETY: n outlives the call.
        let r = unsafe { sys::cuDeviceGetCount(&mut n) };
        if r != CUresult::CUDA_SUCCESS || n == 0 {
            return Err("no CUDA device".into());
        }
        Ok(n)
    })
}

/// `Err(why)` when no GPU can be used: "libcuda not found", "no CUDA device"…
pub fn unavailable() -> Option<String> {
    driver().as_ref().err().cloned()
}

/// The one-line error a command gets when CUDA is not there.
pub fn not_here(why: &str) -> Error {
    Error::run(format!(
        "cuda: not available ({why}); run on a machine with an NVIDIA GPU and its driver (libcuda.so.1), or pick another transport"
    ))
}

/// The driver's name for an error code, e.g. CUDA_ERROR_OUT_OF_MEMORY.
fn name(r: CUresult) -> String {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver returns a static string or leaves p null.
    if unsafe { sys::cuGetErrorName(r, &mut p) } == CUresult::CUDA_SUCCESS && !p.is_null() {
        // SAFETY: a NUL-terminated static string from the driver.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("{r:?}")
    }
}

/// A driver call's result as ours, saying what was being done.
pub fn ck(r: CUresult, what: &str) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::run(format!("cuda: {what} failed: {}", name(r))))
    }
}

/// Devices used in this process, for the run's environment.
static USED: Mutex<Vec<Gpu>> = Mutex::new(Vec::new());

/// Every device a context was made on so far in this process.
pub fn used_devices() -> Vec<Gpu> {
    USED.lock().map(|v| v.clone()).unwrap_or_default()
}

/// Every device the driver lists, described, for `xferbench limits`: empty
/// where CUDA is not available (no library, no device). Makes no context.
pub fn devices() -> Vec<Gpu> {
    let Ok(n) = driver() else {
        return Vec::new();
    };
    (0..*n)
        .filter_map(|ordinal| {
            let mut dev: sys::CUdevice = 0;
            // SAFETY: dev outlives the call; the driver is initialised.
            let r = unsafe { sys::cuDeviceGet(&mut dev, ordinal) };
            (r == CUresult::CUDA_SUCCESS).then(|| describe(ordinal, dev))
        })
        .collect()
}

fn attribute(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> i32 {
    let mut v = 0;
    // SAFETY: v outlives the call; a failed query leaves 0.
    unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) };
    v
}

fn describe(ordinal: i32, dev: sys::CUdevice) -> Gpu {
    use sys::CUdevice_attribute as A;
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer's length is passed; the driver NUL-terminates.
    let text = |r: CUresult, buf: &[std::ffi::c_char]| {
        if r == CUresult::CUDA_SUCCESS {
            // SAFETY: NUL-terminated by the driver within buf.
            unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        } else {
            String::new()
        }
    };
    // SAFETY: as above.
    let r = unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev) };
    let name = text(r, &buf);
    // SAFETY: as above.
    let r = unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, dev) };
    let pci_bus_id = text(r, &buf);
    let mut ver = 0;
    // SAFETY: ver outlives the call.
    unsafe { sys::cuDriverGetVersion(&mut ver) };
    let mut mem = 0usize;
    // SAFETY: mem outlives the call.
    unsafe { sys::cuDeviceTotalMem_v2(&mut mem, dev) };
    Gpu {
        ordinal,
        name,
        pci_bus_id,
        compute_capability: format!(
            "{}.{}",
            attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        ),
        driver_version: format!("{}.{}", ver / 1000, (ver % 1000) / 10),
        multiprocessors: attribute(dev, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        memory_bytes: mem as u64,
    }
}

/// The context flag a completion mode asks for: the driver spins (poll) or
/// sleeps on an interrupt (block) when it waits for the GPU.
pub fn sched_flags(completion: CompletionMode) -> u32 {
    let sched = match completion {
        CompletionMode::Poll => sys::CUctx_flags::CU_CTX_SCHED_SPIN,
        CompletionMode::Block => sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC,
    };
    sched as u32 | sys::CUctx_flags::CU_CTX_MAP_HOST as u32
}

/// A device program's entry points in a loaded module.
#[derive(Clone, Copy)]
pub struct Kernels {
    pub echo: sys::CUfunction,
    pub latch: sys::CUfunction,
    pub copy: sys::CUfunction,
    pub mmio: sys::CUfunction,
}

/// A context of its own (so each link has its own scheduling flag) that
/// owns every allocation, stream and module made in it: destroying it
/// releases them all, so nothing else needs a destructor.
pub struct Ctx {
    ctx: sys::CUcontext,
    pub info: Gpu,
    /// The context's scheduling flag: spin (poll) or blocking sync (block).
    pub completion: CompletionMode,
    pub kernels: Kernels,
}

// SAFETY: a CUDA context may be used from any thread once made current
// there; `enter` does that, and a Ctx is used by one thread at a time.
unsafe impl Send for Ctx {}

impl Ctx {
    pub fn new(ordinal: i32, completion: CompletionMode) -> Result<Ctx> {
        let count = match driver() {
            Ok(n) => *n,
            Err(why) => return Err(not_here(why)),
        };
        if ordinal < 0 || ordinal >= count {
            return Err(Error::usage(format!(
                "cuda: device={ordinal} does not exist (this machine has {count}: 0..{})",
                count - 1
            )));
        }
        let mut dev = 0;
        // SAFETY: dev outlives the call.
        ck(
            unsafe { sys::cuDeviceGet(&mut dev, ordinal) },
            "cuDeviceGet",
        )?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: ctx outlives the call; the new context becomes current here.
        ck(
            unsafe { sys::cuCtxCreate_v2(&mut ctx, sched_flags(completion), dev) },
            "creating a context (cuCtxCreate)",
        )?;
        let mut me = Ctx {
            ctx,
            info: describe(ordinal, dev),
            completion,
            kernels: Kernels {
                echo: std::ptr::null_mut(),
                latch: std::ptr::null_mut(),
                copy: std::ptr::null_mut(),
                mmio: std::ptr::null_mut(),
            },
        };
        me.kernels = me.load()?;
        if let Ok(mut used) = USED.lock()
            && !used.contains(&me.info)
        {
            used.push(me.info.clone());
        }
        Ok(me)
    }

    /// Loads the PTX (JIT-compiled by the driver for this GPU).
    fn load(&self) -> Result<Kernels> {
        let ptx = std::ffi::CString::new(PTX).map_err(|_| Error::run("cuda: PTX holds a NUL"))?;
        let mut module = std::ptr::null_mut();
        // SAFETY: a NUL-terminated PTX image; the module lives as long as the context.
        ck(
            unsafe { sys::cuModuleLoadData(&mut module, ptx.as_ptr() as *const c_void) },
            "loading the device programs (cuModuleLoadData)",
        )?;
        let get = |name: &str| -> Result<sys::CUfunction> {
            let c = std::ffi::CString::new(name).expect("no NUL");
            let mut f = std::ptr::null_mut();
            // SAFETY: module is loaded; f outlives the call.
            ck(
                unsafe { sys::cuModuleGetFunction(&mut f, module, c.as_ptr()) },
                &format!("finding {name} in the PTX"),
            )?;
            Ok(f)
        };
        Ok(Kernels {
            echo: get("xb_echo")?,
            latch: get("xb_latch")?,
            copy: get("xb_copy")?,
            mmio: get("xb_mmio")?,
        })
    }

    /// Makes this context current on the calling thread (a link may move
    /// between threads); cheap when it already is.
    pub fn enter(&self) -> Result<()> {
        let mut cur = std::ptr::null_mut();
        // SAFETY: cur outlives the call.
        let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        if r != CUresult::CUDA_SUCCESS || cur != self.ctx {
            // SAFETY: the context is alive while self is.
            ck(unsafe { sys::cuCtxSetCurrent(self.ctx) }, "cuCtxSetCurrent")?;
        }
        Ok(())
    }

    /// Pinned host memory, mapped into the device's address space (not
    /// write-combined: the CPU reads it too). Zeroed.
    pub fn host(&self, len: usize) -> Result<HostMem> {
        self.enter()?;
        let len = len.max(64);
        let mut p = std::ptr::null_mut();
        // SAFETY: p outlives the call.
        ck(
            unsafe { sys::cuMemHostAlloc(&mut p, len, sys::CU_MEMHOSTALLOC_DEVICEMAP) },
            &format!("allocating {len} bytes of pinned memory (cuMemHostAlloc)"),
        )?;
        let mut dev = 0;
        // SAFETY: p was allocated with DEVICEMAP in this context.
        ck(
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, p, 0) },
            "mapping pinned memory (cuMemHostGetDevicePointer)",
        )?;
        // SAFETY: fresh allocation of len bytes.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, len) };
        Ok(HostMem {
            ptr: p as *mut u8,
            len,
            dev,
        })
    }

    /// Device memory, zeroed.
    pub fn device(&self, len: usize) -> Result<sys::CUdeviceptr> {
        self.enter()?;
        let len = len.max(64);
        let mut d = 0;
        // SAFETY: d outlives the call.
        ck(
            unsafe { sys::cuMemAlloc_v2(&mut d, len) },
            &format!("allocating {len} bytes of device memory (cuMemAlloc)"),
        )?;
        // SAFETY: d holds len bytes.
        ck(unsafe { sys::cuMemsetD8_v2(d, 0, len) }, "cuMemsetD8")?;
        Ok(d)
    }

    /// A stream that does not synchronise with the legacy default stream.
    pub fn stream(&self) -> Result<sys::CUstream> {
        self.enter()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: s outlives the call.
        ck(
            unsafe {
                sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            },
            "cuStreamCreate",
        )?;
        Ok(s)
    }

    pub fn event(&self) -> Result<sys::CUevent> {
        self.enter()?;
        let mut e = std::ptr::null_mut();
        let flags = match self.completion {
            CompletionMode::Poll => sys::CUevent_flags::CU_EVENT_DEFAULT,
            CompletionMode::Block => sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC,
        };
        // SAFETY: e outlives the call.
        ck(
            unsafe { sys::cuEventCreate(&mut e, flags as u32) },
            "cuEventCreate",
        )?;
        Ok(e)
    }

    /// How many copy blocks keep every SM busy.
    pub fn copy_blocks(&self, len: usize) -> u32 {
        let want = len.div_ceil(16 * COPY_THREADS as usize).max(1);
        want.min(self.info.multiprocessors.max(1) as usize * 4) as u32
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the context is ours; destroying it frees all it owns.
        unsafe { sys::cuCtxDestroy_v2(self.ctx) };
    }
}

/// Threads per block of the SM copy kernel.
pub const COPY_THREADS: u32 = 512;

/// Pinned host memory (freed with its context).
pub struct HostMem {
    pub ptr: *mut u8,
    pub len: usize,
    /// The same memory as the device addresses it.
    pub dev: sys::CUdeviceptr,
}

// SAFETY: plain memory owned by the link that holds it.
unsafe impl Send for HostMem {}

impl HostMem {
    pub fn slice(&self) -> &[u8] {
        // SAFETY: len bytes allocated and initialised (zeroed) by `host`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; &mut self gives exclusive host access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// Launches `f` on `grid` × `block` threads with these arguments (every
/// parameter of kernels.cu is 8 bytes: a device pointer or a u64). No
/// allocation: this is on the timed path.
pub(crate) fn launch(
    f: sys::CUfunction,
    grid: u32,
    block: u32,
    stream: sys::CUstream,
    args: &[u64],
) -> Result<()> {
    const MAX: usize = 8;
    assert!(args.len() <= MAX, "kernels take at most {MAX} arguments");
    let mut vals = [0u64; MAX];
    vals[..args.len()].copy_from_slice(args);
    let mut ptrs = [std::ptr::null_mut::<c_void>(); MAX];
    for (p, v) in ptrs.iter_mut().zip(vals.iter_mut()) {
        *p = v as *mut u64 as *mut c_void;
    }
    // SAFETY: ptrs point at values matching the kernel's 8-byte parameters,
    // alive until the call returns (the driver copies them).
    ck(
        unsafe {
            sys::cuLaunchKernel(
                f,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        },
        "launching a device program (cuLaunchKernel)",
    )
}

/// Waits for everything queued on `stream`: spinning on cuStreamQuery
/// (poll), or asleep in cuStreamSynchronize (block: the context sleeps on
/// an interrupt). A poll gives up after `timeout`; a blocking wait cannot
/// be interrupted, which is safe because every device program here is
/// bounded in time by its own timer.
pub(crate) fn wait(
    stream: sys::CUstream,
    completion: CompletionMode,
    timeout: Duration,
) -> Result<()> {
    match completion {
        CompletionMode::Block => ck(
            // SAFETY: a live stream of the current context.
            unsafe { sys::cuStreamSynchronize(stream) },
            "waiting for the GPU (cuStreamSynchronize)",
        ),
        CompletionMode::Poll => {
            let mut start: Option<Instant> = None;
            let mut spins = 0u32;
            loop {
                // SAFETY: a live stream of the current context.
                match unsafe { sys::cuStreamQuery(stream) } {
                    CUresult::CUDA_SUCCESS => return Ok(()),
                    CUresult::CUDA_ERROR_NOT_READY => {}
                    r => return ck(r, "waiting for the GPU (cuStreamQuery)"),
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) {
                    let s = start.get_or_insert_with(Instant::now);
                    if s.elapsed() > timeout {
                        return Err(Error::run(format!(
                            "cuda: the GPU did not finish within {} (--timeout)",
                            humantime::format_duration(timeout)
                        )));
                    }
                }
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PTX is what the driver will JIT: it must name its ISA and target
    /// and define every entry point with the parameters the host passes.
    #[test]
    fn ptx_is_well_formed() {
        assert!(PTX.contains(".version "), "no .version");
        assert!(PTX.contains(".target sm_"), "no .target");
        assert!(PTX.contains(".address_size 64"));
        for (name, params) in ENTRIES {
            let head = format!(".visible .entry {name}(");
            let at = PTX.find(&head).unwrap_or_else(|| panic!("{name} missing"));
            let sig = &PTX[at..at + PTX[at..].find(')').expect("closing paren")];
            assert_eq!(
                sig.matches(".param .u64").count(),
                *params,
                "{name} parameters"
            );
        }
        assert_eq!(PTX.matches('{').count(), PTX.matches('}').count());
        assert!(!PTX.contains('\0'));
        // The device programs bound their spins with the global timer.
        assert!(PTX.contains("%globaltimer"));
        // mmio's LL protocol: warp 0 shares the header and votes on flags.
        assert!(PTX.contains("shfl.sync.idx.b32") && PTX.contains("vote.sync.all"));
        // Several polling warps: one claims each request by compare-and-swap.
        assert!(PTX.contains("atom.shared.cas.b32"));
        // Device-side polls and stores of host memory are never cached.
        assert!(PTX.contains("ld.volatile.global.u64") && PTX.contains("st.volatile.global.u64"));
    }

    /// When the PTX generator is installed, the committed PTX is current.
    #[test]
    fn ptx_matches_its_source() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cuda");
        let out = std::env::temp_dir().join(format!("xb-ptx-{}.ptx", std::process::id()));
        let ran = std::process::Command::new("clang-14")
            .args([
                "-x",
                "cuda",
                "--cuda-device-only",
                "--cuda-gpu-arch=sm_70",
                "-nocudainc",
                "-nocudalib",
                "-O3",
                "-S",
                "-o",
            ])
            .arg(&out)
            .arg(dir.join("kernels.cu"))
            .output();
        match ran {
            Ok(o) if o.status.success() => {
                let fresh = std::fs::read_to_string(&out).expect("clang wrote the PTX");
                let _ = std::fs::remove_file(&out);
                let body = |s: &str| {
                    s.lines()
                        .filter(|l| !l.starts_with("//"))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                assert!(
                    body(&fresh) == body(PTX),
                    "kernels.ptx is stale: run src/transport/cuda/build-ptx.sh"
                );
            }
            _ => eprintln!("skipped: clang-14 is not installed (apt-get install clang-14)"),
        }
    }

    #[test]
    fn completion_modes_pick_scheduling_flags() {
        assert_eq!(sched_flags(CompletionMode::Poll), 1 | 8);
        assert_eq!(sched_flags(CompletionMode::Block), 4 | 8);
    }

    /// Without a driver every entry point fails with one line, never a panic.
    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        match unavailable() {
            Some(why) => {
                let e = Ctx::new(0, CompletionMode::Poll).err().expect("refused");
                let m = e.to_string();
                assert!(m.contains("cuda: not available") && m.contains(&why), "{m}");
                assert!(!m.contains('\n'));
            }
            None => eprintln!("skipped: a GPU is present"),
        }
    }
}
