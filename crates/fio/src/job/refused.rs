//! fio's engines xferbench does not run, and what it offers instead: part
//! of the job model (which `ioengine=` values are known), kept apart from
//! the engines themselves.

/// Why `ioengine=NAME` is refused, and what xferbench offers instead.
pub fn refusal(name: &str) -> String {
    let needs = match name {
        "sg" => "SCSI generic (sg) devices",
        "io_uring_cmd" => "NVMe passthrough (/dev/ngXnY)",
        "rdma"
        | "librpma_apm_client"
        | "librpma_apm_server"
        | "librpma_gpspm_client"
        | "librpma_gpspm_server" => "an RDMA NIC and a peer",
        "rbd" | "rados" => "a Ceph cluster",
        "http" => "an HTTP, WebDAV or S3 server",
        "libcufile" => "NVIDIA GPUDirect Storage (cuFile)",
        "nbd" => "an NBD server",
        "xnvme" => "the xNVMe library",
        "spdk" | "spdk_bdev" => "SPDK",
        "dfs" => "a DAOS pool",
        "nfs" => "an NFS server reached through libnfs",
        "libhdfs" => "HDFS",
        "gfapi" | "gfapi_async" => "GlusterFS",
        "libiscsi" => "an iSCSI target",
        "libpmem" | "dev-dax" => "persistent memory",
        "mtd" => "an MTD flash device",
        "libzbc" => "zoned SCSI/ATA devices",
        "ime_psync" | "ime_psyncv" | "ime_aio" => "DDN's IME",
        "libblkio" => "libblkio",
        "windowsaio" => "Windows",
        "solarisaio" => "Solaris",
        "splice" | "e4defrag" => {
            return format!(
                "ioengine={name} is not supported by xferbench; use sync, psync, vsync, pvsync, pvsync2, libaio, posixaio, io_uring or mmap"
            );
        }
        n if n.starts_with("external") => {
            return "external engines (fio's .so engines) do not load into xferbench; put the device behind a device plugin (filename=xfer:plugin:path=LIB.so, see docs/plugins.md)".into();
        }
        _ => {
            return "unknown engine; use sync, psync, vsync, pvsync, pvsync2, libaio, posixaio, io_uring, mmap, null, filecreate, filestat, filedelete, cpuio, exec, or transport (filename=xfer:NAME)".into();
        }
    };
    format!(
        "this engine needs {needs}, which xferbench does not drive; measure a vendor device or SDK through a device plugin (filename=xfer:plugin:path=LIB.so, see docs/plugins.md), and files or block devices with psync, libaio or io_uring"
    )
}
