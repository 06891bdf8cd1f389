//! The environment every result is recorded with: what machine, what kernel,
//! whether it is virtual (a VM inflates tails), what clock and what it costs.

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The machine and software a run was measured on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Env {
    /// The measuring tool's name ("xferbench").
    pub tool: String,
    /// The tool's version (the crate version).
    pub version: String,
    /// When the environment was captured (the run's start), RFC 3339, UTC, seconds.
    pub timestamp: String,
    /// The host's node name, from uname.
    pub hostname: String,
    /// Kernel name and release from uname, e.g. "Linux 6.1.0-18-amd64".
    pub kernel: String,
    /// CPU architecture the binary was built for ("x86_64", "aarch64"…).
    pub arch: String,
    /// The CPU's model string from /proc/cpuinfo, or "unknown".
    pub cpu_model: String,
    /// CPUs the kernel has online (0 when it cannot be read).
    pub cpus_online: usize,
    /// CPUs this process's affinity mask allows.
    pub cpus_allowed: usize,
    /// Whether the run was in a virtual machine or container.
    pub virtualization: Virtualization,
    /// The clock the samples were taken with, and what reading it costs.
    pub clock: Clock,
    /// CPU frequency governor of cpu0, where the kernel exposes one.
    pub governor: Option<String>,
    /// The exact command line that produced this run.
    pub command: Vec<String>,
    /// GPUs the run used (the cuda transport), as the driver describes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<Gpu>,
    /// The 1-minute load average (runnable threads, all processes) when
    /// the run began and ended: how busy the machine was beside it. Two
    /// runs on one machine loaded differently are not like with like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average: Option<[f64; 2]>,
}

impl std::fmt::Display for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GPU {}: {} (sm_{}, {} SMs, {}) at PCI {}, driver {}",
            self.ordinal,
            self.name,
            self.compute_capability.replace('.', ""),
            self.multiprocessors,
            crate::units::format_size(self.memory_bytes),
            self.pci_bus_id,
            self.driver_version
        )
    }
}

/// A GPU as the CUDA driver describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// The driver's device number (as in `cuda:device=N`).
    pub ordinal: i32,
    /// The device name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// e.g. "0000:17:00.0".
    pub pci_bus_id: String,
    /// Major.minor, e.g. "9.0".
    pub compute_capability: String,
    /// The CUDA version the driver supports, major.minor, e.g. "12.4".
    pub driver_version: String,
    /// Streaming multiprocessors (SMs) on the device.
    pub multiprocessors: i32,
    /// Total device memory, bytes.
    pub memory_bytes: u64,
}

/// Signs that the run was not on bare metal.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Virtualization {
    /// The CPU says it runs under a hypervisor.
    pub virtual_machine: bool,
    /// The hypervisor's name from CPUID, when it gives one (KVM, Hyper-V…).
    pub hypervisor: Option<String>,
    /// Container runtime, when one is detected (docker, podman, lxc, kubernetes).
    pub container: Option<String>,
}

/// The clock samples are read from, as calibrated at the start of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Clock {
    /// The clock the samples are read from.
    pub source: String,
    /// The kernel's clocksource behind it (tsc, kvm-clock, hpet…).
    pub kernel_clocksource: Option<String>,
    /// Cost of one clock read: the median gap between back-to-back reads.
    /// Every sample includes about one of these.
    pub overhead_ns: f64,
    /// The smallest nonzero gap seen between back-to-back reads.
    pub min_step_ns: u64,
    /// clock_getres(CLOCK_MONOTONIC).
    pub resolution_ns: u64,
    /// The instrument's share of every sample: the median sample of the
    /// timed loop around an exchange that does nothing (the clock reads and
    /// the call to the link). Measured by the experiments that run the
    /// sampler (roundtrip, curve, load); absent in files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_floor_ns: Option<f64>,
    /// One turn of that loop, recording included: how often the sampler can
    /// take a sample at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_ns: Option<f64>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// This host's name (`uname -n`).
pub fn hostname() -> String {
    uname().1
}

impl Env {
    /// Describes this machine now; calibrates the clock (about 10,000 reads).
    /// `gpus` starts empty: the run fills it with the devices it used.
    pub fn capture() -> Env {
        let uts = uname();
        Env {
            // The product, whichever of its crates records it; every crate shares
            // the workspace's version.
            tool: "xferbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            timestamp: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            hostname: uts.1,
            kernel: uts.0,
            arch: std::env::consts::ARCH.into(),
            cpu_model: cpu_model(),
            cpus_online: std::fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|s| crate::units::parse_cpu_list(s.trim()).ok().flatten())
                .map_or(0, |v| v.len()),
            cpus_allowed: crate::measure::placement::allowed_cpus().len(),
            virtualization: virtualization(),
            clock: Clock::calibrate(),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            command: std::env::args().collect(),
            gpus: Vec::new(),
            load_average: load_average().map(|l| [l, l]),
        }
    }

    /// Records the load average at the end of the run.
    pub fn ended(&mut self) {
        if let (Some(la), Some(now)) = (&mut self.load_average, load_average()) {
            la[1] = now;
        }
    }

    /// Warnings that apply to every figure taken in this environment.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.virtualization.virtual_machine {
            w.push(format!(
                "running in a virtual machine ({}): vCPU scheduling inflates tails (p99 and beyond) and can shift means",
                self.virtualization.hypervisor.as_deref().unwrap_or("hypervisor unknown")
            ));
        }
        if self.cpus_allowed < 2 {
            w.push("only one CPU is available: initiator and responder share it, and polling measures the scheduler".into());
        }
        if let Some(g) = &self.governor
            && g != "performance"
        {
            w.push(format!("cpu frequency governor is '{g}', not 'performance': latency varies with clock speed"));
        }
        w
    }
}

impl Clock {
    /// Reads the clock back to back many times; the median gap is the cost one
    /// sample carries.
    pub fn calibrate() -> Clock {
        const N: usize = 10_001;
        let mut gaps = vec![0u64; N - 1];
        // Warm the vDSO page and the branch predictors.
        for _ in 0..1000 {
            std::hint::black_box(Instant::now());
        }
        let mut prev = Instant::now();
        for g in gaps.iter_mut() {
            let now = Instant::now();
            *g = (now - prev).as_nanos() as u64;
            prev = now;
        }
        gaps.sort_unstable();
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_getres fills a timespec we own.
        unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
        Clock {
            source: "CLOCK_MONOTONIC (std::time::Instant)".into(),
            kernel_clocksource: read(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
            overhead_ns: gaps[gaps.len() / 2] as f64,
            min_step_ns: gaps.iter().copied().find(|&g| g > 0).unwrap_or(0),
            resolution_ns: ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
            sample_floor_ns: None,
            loop_ns: None,
        }
    }
}

fn uname() -> (String, String) {
    // SAFETY: utsname is plain C data (char arrays), for which all zeroes
    // is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a live, writable utsname; uname writes only into it,
    // each field a NUL-terminated string within its array.
    if unsafe { libc::uname(&mut u) } != 0 {
        return ("unknown".into(), "unknown".into());
    }
    let s = |f: &[libc::c_char]| {
        // SAFETY: `f` is one of `u`'s fields, which uname NUL-terminated
        // inside the array (and the zeroed start ends in NUL too), so the
        // string read stops within `f`, alive while `u` is.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    (
        format!("{} {}", s(&u.sysname), s(&u.release)),
        s(&u.nodename),
    )
}

/// Memory the kernel says can be had without swapping (`MemAvailable`).
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The CPU's model as `/proc/cpuinfo` names it ("unknown" without one).
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    for key in ["model name", "Model", "cpu model", "Hardware"] {
        if let Some(v) = info
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
        {
            return v.1.trim().to_string();
        }
    }
    "unknown".into()
}

fn virtualization() -> Virtualization {
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let vm = flags
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let container = if std::path::Path::new("/.dockerenv").exists() {
        Some("docker".to_string())
    } else if std::path::Path::new("/run/.containerenv").exists() {
        Some("podman".to_string())
    } else {
        let cg = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
        ["kubepods", "docker", "lxc", "containerd"]
            .iter()
            .find(|k| cg.contains(*k))
            .map(|k| k.to_string())
    };
    Virtualization {
        virtual_machine: vm,
        hypervisor: if vm { hypervisor_name() } else { None },
        container,
    }
}

#[cfg(target_arch = "x86_64")]
fn hypervisor_name() -> Option<String> {
    // CPUID leaf 0x40000000: the hypervisor's vendor signature in ebx, ecx, edx.
    let r = std::arch::x86_64::__cpuid(0x4000_0000);
    let mut b = Vec::with_capacity(12);
    for w in [r.ebx, r.ecx, r.edx] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    let sig = String::from_utf8_lossy(&b)
        .trim_matches(char::from(0))
        .trim()
        .to_string();
    let name = match sig.as_str() {
        "KVMKVMKVM" => "KVM",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU TCG",
        " lrpepyh  vr" | "lrpepyh  vr" => "Parallels",
        "ACRNACRNACRN" => "ACRN",
        "" => return None,
        other => other,
    };
    Some(name.to_string())
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor_name() -> Option<String> {
    None
}

/// The 1-minute load average, from /proc/loadavg.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
