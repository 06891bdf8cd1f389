//! I/O buffers as fio's `iomem=` allocates them. Every kind is page-aligned,
//! which `direct=1` requires and which keeps copies at full speed (see
//! `buffer`).

use crate::buffer::PageBuf;
use crate::error::{Error, Result};
use crate::job::IoMem;

/// `slots` buffers of `len` bytes each, one per I/O in flight.
pub struct IoMemory {
    kind: IoMem,
    heap: Option<PageBuf>,
    map: *mut u8,
    map_len: usize,
    slot_len: usize,
    slots: usize,
}

// SAFETY: IoMemory owns its mapping exclusively and is used by one worker.
unsafe impl Send for IoMemory {}

impl IoMemory {
    pub fn new(kind: IoMem, slots: usize, len: usize) -> Result<IoMemory> {
        let slot_len = crate::buffer::page_round(len.max(1));
        let total = slot_len
            .checked_mul(slots)
            .ok_or_else(|| Error::usage("bs × iodepth overflows memory"))?;
        let mut m = IoMemory {
            kind,
            heap: None,
            map: std::ptr::null_mut(),
            map_len: 0,
            slot_len,
            slots,
        };
        match kind {
            IoMem::Malloc => m.heap = Some(PageBuf::zeroed(total)),
            IoMem::Mmap | IoMem::MmapHuge => {
                let huge = kind == IoMem::MmapHuge;
                let len = if huge {
                    total.div_ceil(2 << 20) * (2 << 20)
                } else {
                    total
                };
                let flags = libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | if huge { libc::MAP_HUGETLB } else { 0 };
                // SAFETY: anonymous mapping, no aliasing.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        flags,
                        -1,
                        0,
                    )
                };
                if p == libc::MAP_FAILED {
                    let e = std::io::Error::last_os_error();
                    return Err(if huge {
                        Error::run(format!(
                            "iomem=mmaphuge: cannot map {len} bytes of huge pages ({e}); reserve some (echo 64 > /proc/sys/vm/nr_hugepages) or use iomem=mmap"
                        ))
                        .with_source(e)
                    } else {
                        Error::run_from(format!("iomem=mmap: cannot map {len} bytes"), e)
                    });
                }
                m.map = p.cast();
                m.map_len = len;
                // Touch every page now so first-use faults stay out of the timed loop.
                // SAFETY: the mapping is `len` writable bytes.
                unsafe { std::ptr::write_bytes(m.map, 0, len) };
            }
        }
        Ok(m)
    }

    pub fn kind(&self) -> IoMem {
        self.kind
    }

    /// How many slots there are.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Each slot's length: the block size rounded up to whole pages.
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// Start of slot `i`.
    pub fn slot_ptr(&mut self, i: usize) -> *mut u8 {
        let base = match &mut self.heap {
            Some(b) => b.as_mut_ptr(),
            None => self.map,
        };
        // SAFETY: callers ask only for slots that were allocated.
        unsafe { base.add(i * self.slot_len) }
    }

    /// Slot `i`, `len` bytes of it.
    pub fn slot(&mut self, i: usize, len: usize) -> &mut [u8] {
        let p = self.slot_ptr(i);
        // SAFETY: len ≤ slot_len, inside the allocation, and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(p, len.min(self.slot_len)) }
    }
}

impl Drop for IoMemory {
    fn drop(&mut self) {
        if !self.map.is_null() {
            // SAFETY: mapped in `new` with this length.
            unsafe { libc::munmap(self.map.cast(), self.map_len) };
        }
    }
}
