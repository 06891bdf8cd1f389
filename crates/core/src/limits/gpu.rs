//! GPUs, found the two ways a run knows one: by the PCI bus id its driver
//! reports (the CUDA driver's `cuDeviceGetPCIBusId` gives
//! `00000000:41:00.0`, eight digits of domain), and by class in sysfs
//! (VGA, 3D and other display controllers) for `limits`' list.

use super::pci::{self, Function};
use super::sysfs::Sysfs;

/// The PCI function of a GPU a driver names by bus id, in sysfs's form.
pub fn function_of(bus_id: &str) -> Option<String> {
    pci::normalise(bus_id)
}

/// Every display or 3D controller of the tree, NVIDIA's (vendor 0x10de)
/// first as the ones a CUDA run drives.
pub fn gpus(sys: &Sysfs) -> Vec<Function> {
    let mut v: Vec<Function> = pci::functions(sys)
        .into_iter()
        .filter(Function::is_gpu)
        .collect();
    v.sort_by_key(|f| (f.vendor != Some(0x10de), f.address.clone()));
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cuda_drivers_bus_id_is_sysfs_address() {
        assert_eq!(
            super::function_of("00000000:41:00.0").as_deref(),
            Some("0000:41:00.0")
        );
        assert_eq!(
            super::function_of("0000:C1:00.0").as_deref(),
            Some("0000:c1:00.0")
        );
    }
}
