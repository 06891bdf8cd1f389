//! `xferbench stream`'s text is fio 3.33's normal output for what it
//! measures: scripts written against fio's text find their lines in it
//! (checked with `grep -E`, as such a script would), and xferbench's own
//! notes follow fio's part, never inside it. Times and speeds are never
//! asserted; a line whose unit depends on the machine (nsec, usec, msec)
//! is matched with any of them.

mod common;

use std::path::Path;
use std::process::Command;

/// How many lines of `file` match the extended regular expression `re`.
fn grep(file: &Path, re: &str) -> usize {
    let o = Command::new("grep")
        .args(["-cE", "--", re])
        .arg(file)
        .output()
        .expect("grep runs");
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

const UNIT: &str = r"\((nsec|usec|msec)\)";

#[test]
fn the_text_has_fios_lines_for_scripts_that_grep_them() {
    // On a disk where there is one, so that `Disk stats` shows.
    let base = Path::new("/var/tmp");
    let dir = if base.is_dir() {
        tempfile::tempdir_in(base).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let f = dir.path().join("f");
    // Mixed reads and writes with syncs, a queued engine (slat), and a
    // second group of two clones reported as one; rate-capped so that the
    // 20 ms bandwidth and IOPS windows take samples.
    let job = format!(
        "[global]\nfilename={}\nsize=256k\nbs=4k\nioengine=psync\nbwavgtime=20\niopsavgtime=20\nrate=2m\n\
         [mix]\nrw=randrw\nrwmixread=50\nfsync=4\n\
         [aio]\nioengine=posixaio\niodepth=4\nrw=read\n\
         [grp]\nstonewall\nrw=write\nnumjobs=2\ngroup_reporting\n",
        f.display()
    );
    let jf = dir.path().join("t.fio");
    std::fs::write(&jf, job).unwrap();
    let mut c = common::xferbench();
    c.args(["--quiet", "stream", "--output-format", "normal"])
        .arg(&jf)
        .current_dir(dir.path());
    let o = common::finish(c);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let out = dir.path().join("out.txt");
    std::fs::write(&out, &text).unwrap();

    let size = r"[0-9.]+([kKMGTP]i?)?B";
    let rate = r"[0-9.]+([kKMGTP]i?)?B/s";
    let first = format!(
        r"^mix: \(g=0\): rw=randrw, bs=\(R\) {size}-{size}, \(W\) {size}-{size}, \(T\) {size}-{size}, ioengine=psync, iodepth=1$"
    );
    let head = r"^[a-z]+: \(groupid=[0-9]+, jobs=[0-9]+\): err= 0: pid=[0-9]+: [A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} [0-9]{4}$";
    let dir_line =
        format!(r"^  (read|write): IOPS=[0-9.]+[kM]?, BW={rate} \({rate}\)\({size}/[0-9]+msec\)");
    let pct = r"^     \|  1\.00th=\[ *[0-9]+\],  5\.00th=\[ *[0-9]+\], 10\.00th=\[";
    let status = format!(
        r"^   READ: bw={rate} \({rate}\), {rate}-{rate} \({rate}-{rate}\), io={size} \({size}\), run=[0-9]+-[0-9]+msec$"
    );
    // (pattern, lines it must match at least)
    let want: Vec<(String, usize)> = vec![
        (first, 1),
        (r"^aio: \(g=0\): rw=read, .*ioengine=posixaio, iodepth=4$".into(), 1),
        (r"^grp: \(g=1\): rw=write, .*$".into(), 1),
        (r"^\.\.\.$".into(), 1),
        (r"^Starting 4 processes$".into(), 1),
        (head.into(), 3),
        (r"^grp: \(groupid=1, jobs=2\)".into(), 1),
        (r"^\s+read: IOPS=".into(), 2),
        (dir_line, 4),
        (r"^  write: IOPS=.*; 0 zone resets$".into(), 2),
        (format!(r"^    slat {UNIT}: min=[0-9.]+k?, max=[0-9.]+k?, avg=[ 0-9.]+, stdev=[ 0-9.]+$"), 1),
        (format!(r"^    clat {UNIT}: min="), 4),
        (format!(r"^     lat {UNIT}: min="), 4),
        (r"clat percentiles \((nsec|usec|msec)\):$".into(), 4),
        (pct.into(), 4),
        (r"99\.99th=\[ *[0-9]+\]$".into(), 4),
        (r"^   bw \(  [KM]iB/s\): min= *[0-9]+, max= *[0-9]+, per=[0-9.]+%, avg=[ 0-9.]+, stdev=[ 0-9.]+, samples=[0-9]+$".into(), 1),
        (r"^   iops        : min= *[0-9]+, max= *[0-9]+, avg=[ 0-9.]+, stdev=[ 0-9.]+, samples=[0-9]+$".into(), 1),
        (r"^  lat \((nsec|usec|msec)\)   : (>=)?[0-9]+=[0-9.]+%".into(), 3),
        (r"^  fsync/fdatasync/sync_file_range:$".into(), 1),
        (format!(r"^    sync {UNIT}: min="), 1),
        (r"^  cpu          : usr=[0-9.]+%, sys=[0-9.]+%, ctx=[0-9]+, majf=[0-9]+, minf=[0-9]+$".into(), 3),
        (r"^  IO depths    : 1=[0-9.]+%, 2=[0-9.]+%, 4=[0-9.]+%, 8=[0-9.]+%, 16=[0-9.]+%, 32=[0-9.]+%, >=64=[0-9.]+%$".into(), 3),
        (r"^     submit    : 0=[0-9.]+%, 4=[0-9.]+%, 8=".into(), 3),
        (r"^     complete  : 0=[0-9.]+%, 4=[0-9.]+%, 8=".into(), 3),
        (r"^     issued rwts: total=[0-9]+,[0-9]+,[0-9]+,[0-9]+ short=[0-9]+,[0-9]+,[0-9]+,0 dropped=[0-9]+,[0-9]+,[0-9]+,0$".into(), 3),
        (r"^     latency   : target=[0-9]+, window=[0-9]+, percentile=[0-9.]+%, depth=[0-9]+$".into(), 3),
        (r"^Run status group 0 \(all jobs\):$".into(), 1),
        (r"^Run status group 1 \(all jobs\):$".into(), 1),
        (status, 1),
        (r"^  WRITE: bw=".into(), 2),
    ];
    for (re, n) in &want {
        let got = grep(&out, re);
        assert!(got >= *n, "{got} lines match {re:?}, want {n}:\n{text}");
    }
    // The writes of the mixed job and both groups: exactly the three jobs
    // shown (the group's clones merged).
    assert_eq!(grep(&out, r"^[a-z]+: \(groupid="), 3, "{text}");
    if text.contains("Disk stats") {
        let disk = r"^  [a-zA-Z0-9_.!-]+: ios=[0-9]+/[0-9]+, merge=[0-9]+/[0-9]+, ticks=[0-9]+/[0-9]+, in_queue=[0-9]+, util=[0-9.]+%$";
        assert_eq!(grep(&out, r"^Disk stats \(read/write\):$"), 1, "{text}");
        assert!(grep(&out, disk) >= 1, "{text}");
    }

    // fio's order: first lines, Starting, blocks, groups, disks, then
    // xferbench's notes, then its tables.
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("{s:?} missing:\n{text}"))
    };
    assert!(at("mix: (g=0)") < at("Starting 4 processes"));
    assert!(at("Starting 4 processes") < at("mix: (groupid=0"));
    assert!(at("grp: (groupid=1") < at("Run status group 0"));
    assert!(at("Run status group 1") < at("xferbench, per job"));
    let notes = &text[at("xferbench, per job")..];
    assert!(notes.contains("    completion: interrupt"), "{notes}");
    assert!(notes.contains("    file: "), "{notes}");
    // Nothing of fio's shape in xferbench's part.
    for fio in ["IOPS=", "bw=", "err=", "lat (", "groupid=", "Run status"] {
        assert!(
            !notes.contains(fio),
            "{fio:?} in xferbench's notes:\n{notes}"
        );
    }
}

#[test]
fn sync_slat_and_lat_percentiles_as_fio_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f").display().to_string();
    let out = dir.path().join("out.txt");
    let mut c = common::xferbench();
    c.args([
        "fio",
        "--name=p",
        &format!("--filename={f}"),
        "--size=256k",
        "--bs=4k",
        "--rw=write",
        "--ioengine=libaio",
        "--iodepth=2",
        "--fsync=8",
        "--lat_percentiles=1",
        "--slat_percentiles=1",
        &format!("--output={}", out.display()),
    ]);
    let o = common::finish(c);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    // fio's order: slat, clat, lat percentiles; the syncs' after their line.
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("no '{needle}' in:\n{text}"))
    };
    let (s, c, l) = (
        at("    slat percentiles ("),
        at("    clat percentiles ("),
        at("    lat percentiles ("),
    );
    assert!(s < c && c < l, "{text}");
    assert!(at("    sync (") < at("    sync percentiles ("), "{text}");
    assert_eq!(grep(&out, r"^     \| 99\.99th=\["), 4, "{text}");
    // Without the options: clat's alone, as fio's default.
    let plain = dir.path().join("plain.txt");
    let mut c = common::xferbench();
    c.args([
        "fio",
        "--name=p",
        &format!("--filename={f}"),
        "--size=256k",
        "--bs=4k",
        "--rw=write",
        "--ioengine=libaio",
        &format!("--output={}", plain.display()),
    ]);
    assert!(common::finish(c).status.success());
    assert_eq!(grep(&plain, r"^    clat percentiles "), 1);
    assert_eq!(grep(&plain, r"^    (s?lat|sync) percentiles "), 0);
}
