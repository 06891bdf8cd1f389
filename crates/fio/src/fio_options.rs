//! Every fio option `Job::set` does not take itself, and what xferbench does
//! with it: a note where the option cannot change any figure xferbench
//! reports (logs, labels, percentile lists…), a refusal naming the option
//! where it would, and "not a fio option" for anything else, so a typo in a
//! job file is caught rather than silently measured without it.
//!
//! The names are fio 3.41's (options.c and the engines' option tables),
//! aliases included.

/// What becomes of an option `Job::set` does not implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unhandled {
    /// Accepted: it changes nothing xferbench measures. The text says why.
    Note(&'static str),
    /// Refused: it would change what is measured. The text says what to do.
    Refuse(&'static str),
    /// An option of an engine xferbench does not have (the job is refused
    /// by its `ioengine=` if it uses that engine): named for the note.
    EngineOnly(&'static str),
    /// Not a fio option at all.
    Unknown,
}

const LOG: &str =
    "xferbench keeps every run's histogram and intervals in its JSON instead of fio's log files";
const PCT: &str = "xferbench reports fixed percentiles from a full histogram kept in the JSON";
const CLOCK: &str = "xferbench times every I/O with its own clock, whose overhead it reports";
const LABEL: &str = "a label only";
const NO_ZBD: &str = "zoned block devices (zonemode=zbd) are not supported; run the job on a conventional target or use zonemode=strided";

/// General options xferbench accepts without implementing: none of them
/// changes a figure.
const NOTES: &[(&str, &str)] = &[
    ("block_error_percentiles", PCT),
    ("bwavgtime", LOG),
    ("clat_percentiles", PCT),
    ("clocksource", CLOCK),
    (
        "create_fsync",
        "files are created and laid out before timing starts",
    ),
    (
        "create_on_open",
        "files are created and laid out before timing starts",
    ),
    (
        "create_serialize",
        "files are created and laid out before timing starts",
    ),
    ("description", LABEL),
    ("disable_bw", CLOCK),
    ("disable_bw_measurement", CLOCK),
    ("disable_clat", CLOCK),
    ("disable_lat", CLOCK),
    ("disable_slat", CLOCK),
    ("disk_util", "xferbench does not sample disk utilisation"),
    (
        "error_dump",
        "errors are reported with their offset and errno",
    ),
    (
        "experimental_verify",
        "verification reads back the blocks written, whichever way",
    ),
    ("gtod_cpu", CLOCK),
    ("gtod_reduce", CLOCK),
    (
        "hugepage-size",
        "huge-page buffers use the system's default huge page size",
    ),
    ("iopsavgtime", LOG),
    ("job_start_clock_id", CLOCK),
    ("lat_percentiles", PCT),
    ("log_alternate_epoch", LOG),
    ("log_alternate_epoch_clock_id", LOG),
    ("log_avg_msec", LOG),
    ("log_compression", LOG),
    ("log_compression_cpus", LOG),
    ("log_entries", LOG),
    ("log_hist_coarseness", LOG),
    ("log_hist_msec", LOG),
    ("log_issue_time", LOG),
    ("log_max_value", LOG),
    ("log_offset", LOG),
    ("log_prio", LOG),
    ("log_store_compressed", LOG),
    ("log_unix_epoch", LOG),
    ("log_window_value", LOG),
    ("per_job_logs", LOG),
    ("percentile_list", PCT),
    ("rwmixcycle", "deprecated in fio and without effect there"),
    ("significant_figures", PCT),
    ("slat_percentiles", PCT),
    ("stats", CLOCK),
    (
        "unified_rw_reporting",
        "reads and writes are reported apart; the group line sums them",
    ),
    ("unique_filename", "only fio's client/server mode uses it"),
    ("unit_base", "xferbench reports bytes per second"),
    ("verifysort", "deprecated in fio"),
    ("verifysort_nr", "deprecated in fio"),
    ("write_bw_log", LOG),
    ("write_hist_log", LOG),
    (
        "write_iolog",
        "xferbench does not write I/O logs; its JSON holds each job's settings",
    ),
    ("write_iops_log", LOG),
    ("write_lat_log", LOG),
    ("flow_watermark", "deprecated in fio"),
];

/// General options that would change the measurement and that xferbench
/// does not implement: each refused with what to do instead.
const REFUSED: &[(&str, &str)] = &[
    (
        "cmdprio",
        "per-command I/O priorities are not supported; use prioclass=/prio= for the job",
    ),
    (
        "cmdprio_bssplit",
        "per-command I/O priorities are not supported; use prioclass=/prio= for the job",
    ),
    (
        "cmdprio_class",
        "per-command I/O priorities are not supported; use prioclass=/prio= for the job",
    ),
    (
        "cmdprio_hint",
        "per-command I/O priorities are not supported; use prioclass=/prio= for the job",
    ),
    (
        "cmdprio_percentage",
        "per-command I/O priorities are not supported; use prioclass=/prio= for the job",
    ),
    (
        "create_only",
        "a job that only creates its files is not supported; drop it",
    ),
    (
        "libaio_vectored",
        "vectored libaio commands are not supported; drop it",
    ),
    (
        "rate_ignore_thinktime",
        "rates always count think time here; drop it",
    ),
    (
        "thp",
        "transparent huge pages for mmap targets are not supported; drop it",
    ),
    (
        "allow_mounted_write",
        "xferbench never checks for mounted file systems; drop it",
    ),
    (
        "atomic",
        "atomic writes (RWF_ATOMIC) are not supported; drop it",
    ),
    (
        "blocksize_unaligned",
        "unaligned block sizes are not supported; drop it",
    ),
    (
        "bs_is_seq_rand",
        "different sequential and random block sizes are not supported; give one bs=",
    ),
    (
        "bs_unaligned",
        "unaligned block sizes are not supported; drop it",
    ),
    (
        "cgroup",
        "cgroups are not supported; start xferbench inside the cgroup instead",
    ),
    (
        "cgroup_nodelete",
        "cgroups are not supported; start xferbench inside the cgroup instead",
    ),
    (
        "cgroup_weight",
        "cgroups are not supported; start xferbench inside the cgroup instead",
    ),
    (
        "cpus_allowed_policy",
        "only the shared policy is supported; give each job its own cpus_allowed=",
    ),
    (
        "dataplacement",
        "NVMe data placement is not supported; drop it",
    ),
    (
        "data_placement",
        "NVMe data placement is not supported; drop it",
    ),
    (
        "dedupe_global",
        "xferbench writes unique random data; dedupe mixes are not supported",
    ),
    (
        "dedupe_mode",
        "xferbench writes unique random data; dedupe mixes are not supported",
    ),
    (
        "dedupe_percentage",
        "xferbench writes unique random data; dedupe mixes are not supported",
    ),
    (
        "dedupe_working_set_percentage",
        "xferbench writes unique random data; dedupe mixes are not supported",
    ),
    ("dp_scheme", "NVMe data placement is not supported; drop it"),
    (
        "exec_postrun",
        "xferbench runs no commands; run it after xferbench",
    ),
    (
        "exec_prerun",
        "xferbench runs no commands; run it before xferbench",
    ),
    (
        "fdp",
        "NVMe flexible data placement is not supported; drop it",
    ),
    (
        "fdp_pli",
        "NVMe flexible data placement is not supported; drop it",
    ),
    (
        "fdp_pli_select",
        "NVMe flexible data placement is not supported; drop it",
    ),
    (
        "filetype",
        "xferbench takes the target's type from the file itself; drop it",
    ),
    (
        "flow",
        "flow control between jobs is not supported; use rate= on each job",
    ),
    (
        "flow_id",
        "flow control between jobs is not supported; use rate= on each job",
    ),
    (
        "flow_sleep",
        "flow control between jobs is not supported; use rate= on each job",
    ),
    (
        "gid",
        "xferbench does not switch users; run it as that group",
    ),
    (
        "gpu_dev_id",
        "GPU placement of jobs is not supported; see xferbench curve -t cuda",
    ),
    ("ignore_zone_limits", NO_ZBD),
    (
        "io_submit_mode",
        "only inline submission is supported; drop it",
    ),
    (
        "ioscheduler",
        "xferbench does not change the I/O scheduler; set it in /sys/block/DEV/queue/scheduler first",
    ),
    ("job_max_open_zones", NO_ZBD),
    (
        "latency_percentile",
        "latency targets that tune the queue depth are not supported; give iodepth=",
    ),
    (
        "latency_run",
        "latency targets that tune the queue depth are not supported; give iodepth=",
    ),
    (
        "latency_target",
        "latency targets that tune the queue depth are not supported; give iodepth=",
    ),
    (
        "latency_window",
        "latency targets that tune the queue depth are not supported; give iodepth=",
    ),
    (
        "lockfile",
        "file locking between jobs is not supported; drop it",
    ),
    (
        "lockmem",
        "pinning memory away from the page cache is not supported; drop it",
    ),
    ("max_open_zones", NO_ZBD),
    ("merge_blktrace_file", "trace replay is not supported"),
    ("merge_blktrace_iters", "trace replay is not supported"),
    ("merge_blktrace_scalars", "trace replay is not supported"),
    ("num_range", "multi-range trims are not supported"),
    (
        "numa_mem_policy",
        "NUMA memory policies are not supported; run xferbench under numactl",
    ),
    (
        "opendir",
        "taking every file under a directory is not supported; name the files",
    ),
    (
        "percentage_sequential",
        "deprecated in fio, which refuses it; write percentage_random= with 100 minus the value",
    ),
    (
        "plid_select",
        "NVMe flexible data placement is not supported; drop it",
    ),
    (
        "plids",
        "NVMe flexible data placement is not supported; drop it",
    ),
    (
        "pre_read",
        "pre-reading files into the cache is not supported; run a read job first",
    ),
    ("priohint", "I/O priority hints are not supported; drop it"),
    (
        "profile",
        "fio's built-in profiles are not supported; write the jobs out",
    ),
    ("read_beyond_wp", NO_ZBD),
    ("read_iolog", "I/O log replay is not supported"),
    ("read_iolog_chunked", "I/O log replay is not supported"),
    ("recover_zbd_write_error", NO_ZBD),
    ("replay_align", "I/O log replay is not supported"),
    ("replay_no_stall", "I/O log replay is not supported"),
    ("replay_redirect", "I/O log replay is not supported"),
    ("replay_scale", "I/O log replay is not supported"),
    ("replay_skip", "I/O log replay is not supported"),
    ("replay_time_scale", "I/O log replay is not supported"),
    (
        "serialize_overlap",
        "overlap serialisation is not supported; drop it",
    ),
    ("softrandommap", "random maps are always kept; drop it"),
    ("sprandom", "SPRandom preconditioning is not supported"),
    (
        "spr_num_regions",
        "SPRandom preconditioning is not supported",
    ),
    ("spr_op", "SPRandom preconditioning is not supported"),
    (
        "steadystate",
        "steady-state detection is not supported; give runtime=",
    ),
    (
        "ss",
        "steady-state detection is not supported; give runtime=",
    ),
    (
        "steadystate_check_interval",
        "steady-state detection is not supported; give runtime=",
    ),
    (
        "ss_interval",
        "steady-state detection is not supported; give runtime=",
    ),
    (
        "steadystate_duration",
        "steady-state detection is not supported; give runtime=",
    ),
    (
        "ss_dur",
        "steady-state detection is not supported; give runtime=",
    ),
    (
        "steadystate_ramp_time",
        "steady-state detection is not supported; use ramp_time=",
    ),
    (
        "ss_ramp",
        "steady-state detection is not supported; use ramp_time=",
    ),
    (
        "sync_file_range",
        "sync_file_range is not supported; use fsync= or fdatasync=",
    ),
    (
        "thinkcycles",
        "CPU-cycle think time is not supported; use thinktime=",
    ),
    (
        "thinktime_blocks_type",
        "think time per issued block is not supported; drop it",
    ),
    (
        "thinktime_iotime",
        "think time after a span of I/O time is not supported; drop it",
    ),
    ("trim_backlog", "trim-and-verify is not supported"),
    ("trim_backlog_batch", "trim-and-verify is not supported"),
    ("trim_percentage", "trim-and-verify is not supported"),
    ("trim_verify_zero", "trim-and-verify is not supported"),
    (
        "uid",
        "xferbench does not switch users; run it as that user",
    ),
    (
        "verify_async_cpus",
        "verification runs in the job's own thread; drop it",
    ),
    (
        "write_barrier",
        "write barriers are not supported; use fsync=",
    ),
    (
        "write_hint",
        "write lifetime hints are not supported; drop it",
    ),
    ("zone_reset_frequency", NO_ZBD),
    ("zone_reset_threshold", NO_ZBD),
    ("zonecapacity", NO_ZBD),
];

/// Options of fio engines xferbench does not have, with the engine.
const ENGINE_ONLY: &[(&str, &str)] = &[
    ("no_completion_thread", "windowsaio"),
    ("apptag", "io_uring_cmd"),
    ("apptag_mask", "io_uring_cmd"),
    ("arguments", "exec"),
    ("brick", "gfapi"),
    ("bucket_name", "http"),
    ("busy_poll", "rados/rbd"),
    ("bindname", "rdma"),
    ("chunk_size", "dfs/libhdfs"),
    ("chunck_size", "libhdfs"),
    ("clientname", "rados/rbd"),
    ("clustername", "rados/rbd"),
    ("cmd_type", "io_uring_cmd"),
    ("conf", "rados"),
    ("cont", "dfs"),
    ("cuda_io", "libcufile"),
    ("deac", "io_uring_cmd"),
    ("device-names", "xnvme"),
    ("donorname", "e4defrag"),
    ("gpu_dev_ids", "libcufile"),
    ("grace_time", "exec"),
    ("hdfs_use_direct", "libhdfs"),
    ("hdfsdirectory", "libhdfs"),
    ("http_host", "http"),
    ("http_mode", "http"),
    ("http_object_mode", "http"),
    ("http_pass", "http"),
    ("http_s3_key", "http"),
    ("http_s3_keyid", "http"),
    ("http_s3_region", "http"),
    ("http_s3_security_token", "http"),
    ("http_s3_sse_customer_algorithm", "http"),
    ("http_s3_sse_customer_key", "http"),
    ("http_s3_storage_class", "http"),
    ("http_swift_auth_token", "http"),
    ("http_user", "http"),
    ("http_verbose", "http"),
    ("https", "http"),
    ("initiator", "libiscsi"),
    ("inplace", "e4defrag"),
    ("libblkio_driver", "libblkio"),
    ("libblkio_force_enable_completion_eventfd", "libblkio"),
    ("libblkio_num_entries", "libblkio"),
    ("libblkio_path", "libblkio"),
    ("libblkio_pre_connect_props", "libblkio"),
    ("libblkio_pre_start_props", "libblkio"),
    ("libblkio_queue_size", "libblkio"),
    ("libblkio_vectored", "libblkio"),
    ("libblkio_wait_mode", "libblkio"),
    ("libblkio_write_zeroes_on_trim", "libblkio"),
    ("md_per_io_size", "io_uring_cmd/xnvme"),
    ("namenode", "libhdfs"),
    ("nfs_url", "nfs"),
    ("object_class", "dfs"),
    ("pi_act", "io_uring_cmd/xnvme"),
    ("pi_chk", "io_uring_cmd/xnvme"),
    ("pool", "dfs/rados/rbd"),
    ("program", "exec"),
    ("rbdname", "rbd"),
    ("readfua", "sg/io_uring_cmd"),
    ("sg_write_mode", "sg"),
    ("single-instance", "gfapi"),
    ("single_instance", "libhdfs"),
    ("skip_bad", "mtd"),
    ("std_redirect", "exec"),
    ("stream_id", "sg"),
    ("svcl", "dfs"),
    ("touch_objects", "rados"),
    ("uri", "nbd"),
    ("verb", "rdma"),
    ("verify_mode", "io_uring_cmd"),
    ("volume", "gfapi"),
    ("write_mode", "io_uring_cmd"),
    ("writefua", "sg/io_uring_cmd"),
    ("xnvme_admin", "xnvme"),
    ("xnvme_async", "xnvme"),
    ("xnvme_be", "xnvme"),
    ("xnvme_dev_nsid", "xnvme"),
    ("xnvme_dev_subnqn", "xnvme"),
    ("xnvme_iovec", "xnvme"),
    ("xnvme_mem", "xnvme"),
    ("xnvme_sync", "xnvme"),
];

/// What xferbench does with `key`, an option `Job::set` does not handle.
pub fn unhandled(key: &str) -> Unhandled {
    let find =
        |t: &[(&'static str, &'static str)]| t.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    if let Some(why) = find(NOTES) {
        Unhandled::Note(why)
    } else if let Some(why) = find(REFUSED) {
        Unhandled::Refuse(why)
    } else if let Some(engine) = find(ENGINE_ONLY) {
        Unhandled::EngineOnly(engine)
    } else {
        Unhandled::Unknown
    }
}

/// The fio option spelled most like `key`, for "did you mean".
pub fn nearest(key: &str, handled: &[&'static str]) -> Option<&'static str> {
    NOTES
        .iter()
        .chain(REFUSED)
        .chain(ENGINE_ONLY)
        .map(|(k, _)| *k)
        .chain(handled.iter().copied())
        .map(|k| (strsim::damerau_levenshtein(key, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_disjoint_and_sorted_out() {
        let mut all: Vec<&str> = NOTES
            .iter()
            .chain(REFUSED)
            .chain(ENGINE_ONLY)
            .map(|(k, _)| *k)
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "an option is in two tables");
        assert_eq!(unhandled("write_bw_log"), Unhandled::Note(LOG));
        assert!(matches!(unhandled("bs_unaligned"), Unhandled::Refuse(_)));
        assert_eq!(unhandled("http_host"), Unhandled::EngineOnly("http"));
        assert_eq!(unhandled("direcotry"), Unhandled::Unknown);
    }

    #[test]
    fn near_misses_are_named() {
        assert_eq!(nearest("direcotry", &["directory"]), Some("directory"));
        assert_eq!(nearest("write_bw_logs", &[]), Some("write_bw_log"));
        assert_eq!(nearest("zzzzzzzz", &["directory"]), None);
    }
}
