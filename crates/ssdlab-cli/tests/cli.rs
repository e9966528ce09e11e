//! The `ssdlab` binary end to end: presets validate, a run writes its four files with
//! deterministic results, bad input exits non-zero with the key named.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ssdlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ssdlab"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A test's scratch directory under the system temp dir, removed when the test ends
/// (passed or failed).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("ssdlab-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

#[test]
fn every_preset_validates() {
    for entry in std::fs::read_dir(repo().join("configs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = ssdlab()
                .args(["config", "check"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let show = ssdlab()
                .args(["config", "show"])
                .arg(&path)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&show.stdout);
            assert!(
                text.contains("logical_units") && text.contains("[device.geometry]"),
                "{text}"
            );
        }
    }
}

const SMALL: &str = r#"
seed = 5
[device]
over_provisioning_ratio = 0.3
[device.geometry]
channels = 2
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 32
pages_per_block = 16
page_size_bytes = 16384
[ftl]
write_buffer_bytes = 262144
[precondition]
enabled = true
random_overwrite_capacity_multiple = 0.5
[workload]
kind = "synthetic"
read_percent = 70.0
requests = 3000
queue_depth = 8
"#;

#[test]
fn run_writes_results_and_is_deterministic() {
    let dir = temp_dir("run");
    let cfg = dir.join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();
    let mut results = Vec::new();
    for i in 0..2 {
        let out_dir = dir.join(format!("out{i}"));
        let out = ssdlab()
            .arg("run")
            .arg(&cfg)
            .arg("--out")
            .arg(&out_dir)
            .arg("--quiet")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("read latency us") && stdout.contains("WAF"),
            "{stdout}"
        );
        for f in [
            "results.json",
            "latency.csv",
            "config.resolved.toml",
            "perf.json",
        ] {
            assert!(out_dir.join(f).exists(), "{f} missing");
        }
        results.push(std::fs::read(out_dir.join("results.json")).unwrap());
        let csv = std::fs::read_to_string(out_dir.join("latency.csv")).unwrap();
        assert!(
            csv.starts_with("op,percentile,latency_ns,samples\n") && csv.contains("read,p99.9999,"),
            "{csv}"
        );
        let perf: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("perf.json")).unwrap()).unwrap();
        assert!(perf["workload_wall_s"].as_f64().unwrap() > 0.0);
        assert!(perf["setup_wall_s"].as_f64().unwrap() > 0.0, "{perf}");
        // The test binary is a debug build without a profile.
        assert_eq!(perf["build"], "debug", "{perf}");
        // The resolved config is itself a valid config that reproduces the run.
        let resolved = out_dir.join("config.resolved.toml");
        assert!(ssdlab()
            .args(["config", "check"])
            .arg(&resolved)
            .status()
            .unwrap()
            .success());
    }
    assert_eq!(
        results[0], results[1],
        "same config and seed give byte-identical results.json"
    );
    let v: serde_json::Value = serde_json::from_slice(&results[0]).unwrap();
    for key in [
        "host",
        "latency_ns",
        "nand",
        "waf",
        "wear",
        "gc",
        "precondition",
    ] {
        assert!(v.get(key).is_some(), "results.json lacks {key}");
    }
    assert!(v["latency_ns"]["read"]["p99_9999"].as_u64().is_some());
}

#[test]
fn bad_config_exits_nonzero_naming_the_key() {
    let dir = temp_dir("bad");
    let cfg = dir.join("bad.toml");
    std::fs::write(
        &cfg,
        SMALL.replace("queue_depth = 8", "queue_depth = 8\nqueue_dpth = 2"),
    )
    .unwrap();
    let out = ssdlab().arg("run").arg(&cfg).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("queue_dpth"),
        "{err}"
    );
    std::fs::write(
        &cfg,
        SMALL.replace(
            "over_provisioning_ratio = 0.3",
            "over_provisioning_ratio = 0.01",
        ),
    )
    .unwrap();
    let out = ssdlab()
        .args(["config", "check"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("device.over_provisioning_ratio") && err.contains("minimum"),
        "{err}"
    );
}

/// A file that cannot be read (the config itself, or a trace it names) is an error that
/// names the file and says why once (the I/O error is the message, not also its cause).
#[test]
fn missing_files_are_named_with_the_reason_once() {
    let dir = temp_dir("missing");
    let absent = dir.join("absent.toml");
    let out = ssdlab().arg("run").arg(&absent).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("absent.toml"), "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
    let cfg = dir.join("trace.toml");
    std::fs::write(
        &cfg,
        format!(
            "{}[workload]\nkind = \"trace\"\nformat = \"msr\"\npath = \"no-such.csv\"\n",
            SMALL.split("[workload]").next().unwrap()
        ),
    )
    .unwrap();
    let out = ssdlab().arg("run").arg(&cfg).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such.csv"), "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
}

const DEVICE: &str = r#"
seed = 2
[device]
over_provisioning_ratio = 0.3
[device.geometry]
channels = 2
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 32
pages_per_block = 16
page_size_bytes = 16384
[ftl]
write_buffer_bytes = 262144
"#;

/// An MSR trace with a malformed line: an error naming file and line by default, replayed
/// with the line counted under `--skip-bad-lines 1`; the replayed ops are counted by kind.
#[test]
fn trace_workload_end_to_end() {
    let dir = temp_dir("trace");
    let trace = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
        128166372000000000,hm,0,Write,0,8192,10\n\
        128166372000010000,hm,0,Read,0,4096,10\n\
        128166372000020000,hm,0,Write,1048576,4096,10\n\
        this line is broken\n\
        128166372000030000,hm,0,Read,1048576,4096,10\n";
    std::fs::write(dir.join("t.csv"), trace).unwrap();
    let cfg = dir.join("trace.toml");
    std::fs::write(
        &cfg,
        format!("{DEVICE}\n[workload]\nkind = \"trace\"\npath = \"t.csv\"\nformat = \"msr\"\n"),
    )
    .unwrap();
    let out = ssdlab()
        .arg("run")
        .arg(&cfg)
        .arg("--quiet")
        .arg("--out")
        .arg(dir.join("o1"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("t.csv") && err.contains(":5") && err.contains("this line is broken"),
        "{err}"
    );
    let out = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args(["--quiet", "--skip-bad-lines", "1", "--out"])
        .arg(dir.join("o2"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("o2/results.json")).unwrap()).unwrap();
    assert_eq!(
        (v["host"]["reads"].as_u64(), v["host"]["writes"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(v["workload"]["skipped_bad_lines"].as_u64(), Some(1));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("workload input: 1 malformed lines skipped"),
        "the summary says what was skipped: {summary}"
    );
    assert_eq!(
        v["host"]["buffer_read_hits"].as_u64(),
        Some(2),
        "both reads hit freshly written data"
    );
    // The resolved config re-runs from anywhere (the trace path is absolute in it) and
    // gives the same results.
    let out = ssdlab()
        .current_dir(std::env::temp_dir())
        .arg("run")
        .arg(dir.join("o2/config.resolved.toml"))
        .args(["--quiet", "--out"])
        .arg(dir.join("o3"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(dir.join("o2/results.json")).unwrap(),
        std::fs::read(dir.join("o3/results.json")).unwrap()
    );
}

/// An fio job file with two jobs (two flows), fsync every 4 writes, unsupported key rejected.
#[test]
fn fio_workload_end_to_end() {
    let dir = temp_dir("fio");
    let job = "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=8m\niodepth=4\nnumber_ios=200\n\n\
        [writer]\nrw=randwrite\nfsync=4\n\n[reader]\nrw=randread\n";
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let cfg = dir.join("fio.toml");
    std::fs::write(
        &cfg,
        format!("{DEVICE}\n[workload]\nkind = \"fio\"\npath = \"job.fio\"\n"),
    )
    .unwrap();
    let out = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args(["--quiet", "--out"])
        .arg(dir.join("o"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("o/results.json")).unwrap()).unwrap();
    assert_eq!(
        (
            v["host"]["reads"].as_u64(),
            v["host"]["writes"].as_u64(),
            v["host"]["flushes"].as_u64()
        ),
        (Some(200), Some(200), Some(50))
    );
    assert_eq!(v["latency_ns"]["per_flow"].as_array().unwrap().len(), 2);
    std::fs::write(dir.join("job.fio"), format!("{job}verify=md5\n")).unwrap();
    let out = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args(["--quiet", "--out"])
        .arg(dir.join("o"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("job.fio") && err.contains("verify"), "{err}");
}

#[test]
fn sweep_runs_the_grid_once_and_resumes() {
    let dir = temp_dir("sweep");
    let cfg = dir.join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();
    let out_dir = dir.join("out");
    let sweep = || {
        let out = ssdlab()
            .arg("sweep")
            .arg(&cfg)
            .args(["--grid", "ftl.gc_soft_free_blocks=3,4", "--grid"])
            .arg(r#"ftl.gc={ policy = "greedy" },{ policy = "fifo" }"#)
            .args(["--set", "workload.requests=500", "--quiet", "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap()
    };
    let first = sweep();
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 5, "{first}");
    assert!(lines[0].starts_with("point,ftl.gc_soft_free_blocks,ftl.gc,status,requests,"));
    assert!(
        lines[4].starts_with(r#"3,4,"{ policy = ""fifo"" }",completed,500,"#),
        "{first}"
    );
    let stamp = |i: u32| {
        std::fs::metadata(out_dir.join(format!("points/{i}/results.json")))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = stamp(3);
    // A second run reuses every finished point and writes the same table.
    assert_eq!(sweep(), first);
    assert_eq!(stamp(3), before);
    // The same table in Parquet: 4 rows, the swept keys as text columns, figures typed.
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = std::fs::File::open(out_dir.join("sweep.parquet")).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let meta = r.metadata().file_metadata();
    assert_eq!(meta.num_rows(), 4);
    let names: Vec<&str> = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name())
        .collect();
    assert_eq!(
        &names[..5],
        [
            "point",
            "ftl.gc_soft_free_blocks",
            "ftl.gc",
            "status",
            "requests"
        ]
    );
    let rows: Vec<String> = r
        .get_row_iter(None)
        .unwrap()
        .map(|row| row.unwrap().to_string())
        .collect();
    assert!(
        rows[3].contains("ftl.gc_soft_free_blocks: \"4\"") && rows[3].contains("requests: 500.0"),
        "{}",
        rows[3]
    );
}

#[test]
fn bad_trace_line_fails_config_check_and_run_before_preconditioning() {
    let dir = temp_dir("badtrace");
    std::fs::write(
        dir.join("t.csv"),
        "128166372003061629,hm,0,Read,0,4096,100\nxx garbage line\n",
    )
    .unwrap();
    let cfg = dir.join("bad.toml");
    let base = SMALL.split("[workload]").next().unwrap();
    std::fs::write(
        &cfg,
        format!("{base}[workload]\nkind = \"trace\"\npath = \"t.csv\"\nformat = \"msr\"\nreplay = \"closed\"\n"),
    )
    .unwrap();
    // Both fail, and nothing was simulated: no results were written.
    for err in check_and_run_fail(&cfg, &dir.join("o")) {
        assert!(err.contains("t.csv:2"), "{err}");
    }
}

/// `config check CFG` and `run CFG -q --out OUT`, each of which must fail without writing
/// `OUT/results.json`: their error output.
fn check_and_run_fail(cfg: &Path, out: &Path) -> [String; 2] {
    ["check", "run"].map(|which| {
        let mut c = ssdlab();
        match which {
            "check" => c.args(["config", "check"]).arg(cfg),
            _ => c.arg("run").arg(cfg).args(["-q", "--out"]).arg(out),
        };
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{which}: {err}");
        assert!(!out.join("results.json").exists(), "{which}: {err}");
        err
    })
}

/// `reproduce dftl` at its smallest scale: every file, 24 rows in the CSV's documented
/// columns, and the shape table.
#[test]
fn reproduce_dftl_writes_its_table_csv_and_plot() {
    let out = temp_dir("reproduce-dftl");
    let o = ssdlab()
        .args([
            "reproduce",
            "dftl",
            "--scale",
            "32",
            "--requests",
            "20000",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("dftl.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "variant,workload,gc,iops,mbps,waf,read_p50_ns,read_p99_ns,read_p99_99_ns,cmt_hit_ratio,translation_reads,translation_writes,max_nand_reads_per_host_read,read_mean_ns,read_max_ns"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 24);
    for r in &rows {
        let num = |i: usize| r[i].parse::<f64>().unwrap();
        // The partitioned variants' reads never exceed two NAND reads.
        if r[0].starts_with("dftl-partitioned") && r[1] == "read" {
            assert!(r[12] == "2" || r[12] == "1", "{r:?}");
        }
        if r[1] == "read" {
            // Closed loop at QD 32, reads only: Little's law (mean x IOPS = 32), and no
            // read waits far beyond the others (page-granularity dftl starved reads whose
            // plan began with a write-back for the whole run).
            let (iops, mean_ns, max_ns) = (num(3), num(13), num(14));
            let in_flight = iops * mean_ns / 1e9;
            assert!((in_flight - 32.0).abs() < 1.0, "{r:?}: {in_flight}");
            assert!(max_ns < 50e6, "{r:?}: read max {max_ns} ns");
        }
    }
    let md = std::fs::read_to_string(out.join("dftl.md")).unwrap();
    assert!(
        md.contains("Expected shape") && md.contains("log / dftl"),
        "{md}"
    );
    assert!(std::fs::metadata(out.join("dftl.svg")).unwrap().len() > 1000);
    assert!(md.contains("tR 50 µs") && md.contains("Where the time goes"));
    assert!(md.contains("mixed: log / dftl IOPS ≈ 1.15 (within ±15 %)"));
    // The paper's timing (issue 36 item 5): tR 400 µs, the mixed ratio within ±25 %.
    let paper = temp_dir("reproduce-dftl-paper");
    let o = ssdlab()
        .args(["reproduce", "dftl", "--scale", "32", "--requests", "2000"])
        .args([
            "--variants",
            "dftl,dftl-partitioned-log",
            "--timing",
            "paper",
        ])
        .args(["-q", "--out"])
        .arg(&paper)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(paper.join("dftl.md")).unwrap();
    assert!(md.contains("tR 400 µs (`--timing paper`"), "{md}");
    assert!(
        md.contains("mixed: log / dftl IOPS ≈ 1.15 (within ±25 %)"),
        "{md}"
    );
    let o = ssdlab()
        .args(["reproduce", "dftl", "--timing", "fast", "--out"])
        .arg(&paper)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--timing"));
    let o = ssdlab()
        .args(["reproduce", "dftl", "--scale", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("scale"));
}

/// `reproduce`: each point's results audit warnings are said once on stderr (point, check,
/// words; with `-q` too) and kept with the point in the JSON (`audit_warnings`, empty
/// when it has none). Without the sequential fill the reads of the fresh device find
/// units never written.
#[test]
fn reproduce_says_and_keeps_each_points_audit_warnings() {
    let out = temp_dir("reproduce-audit");
    let o = ssdlab()
        .args(["reproduce", "dftl", "--scale", "32", "--requests", "2000"])
        .args(["--variants", "page-map", "-q"])
        .args(["--set", "precondition.sequential_fill=false", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("audit warning"))
        .collect();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("dftl.json")).unwrap()).unwrap();
    let mut kept = Vec::new();
    for row in json["rows"].as_array().unwrap() {
        let w = row["audit_warnings"].as_array().expect("audit_warnings");
        // Writes read nothing; reads and the mix read units never written.
        assert_eq!(w.is_empty(), row["workload"] == "write", "{row:#}");
        for x in w {
            assert_eq!(x["check"], "unwritten_reads", "{x:#}");
            kept.push(format!(
                "  audit warning: {}: unwritten_reads: {}",
                x["point"].as_str().unwrap(),
                x["message"].as_str().unwrap()
            ));
        }
    }
    assert_eq!(said, kept, "each kept warning said once, in order");
    assert_eq!(said.len(), 4, "{err}");
    assert!(
        said[0].starts_with("  audit warning: page-map read: unwritten_reads: 100 % of the units read were never written"),
        "{err}"
    );
}

/// `reproduce ssr` with a short read-intensity axis: its CSV and plot next to the QD 16
/// panel's, the axis and the shape table in the report; bad axis flags refused before any
/// work, naming the flag.
#[test]
fn reproduce_ssr_writes_its_intensity_axis() {
    let out = temp_dir("reproduce-ssr");
    let o = ssdlab()
        .args([
            "reproduce",
            "ssr",
            "--scale",
            "64",
            "--requests",
            "3000",
            "--intensity",
            "0.25,2",
            "--intensity-duration-ms",
            "200",
            "--intensity-warmup-ms",
            "100",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("ssr-intensity.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "reads_per_cycle,read_interarrival_per_die_ns,offered_read_iops,policy,erase_postponement_max_ns,max_suspensions_per_erase,max_suspensions_per_loop,erases,safe_limit_violations,write_count,write_p99_9_ns,write_p99_99_ns,write_max_ns,write_mb_per_s,read_count,read_p99_99_ns,sim_time_ns"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2 * 5);
    // 4 dies, 100 µs cycle: ρ 0.25 is a read every 400 µs per die, 10k reads/s in all.
    assert_eq!(&rows[0][..4], ["0.25", "400000", "10000", "none"]);
    assert_eq!(&rows[9][..4], ["2", "50000", "80000", "ssr-dynamic"]);
    let md = std::fs::read_to_string(out.join("ssr.md")).unwrap();
    for want in [
        "## Read-intensity axis",
        "Where the QD 16 panel sits:",
        "Expected shape (the paper's shape, spec 01)",
        "| QD 16 fio | ρ < 1 and I-ES / SSR(d) postponement below",
        "for 0.2 s of simulated time after 0.1 s of the writer alone",
        "* Host writes: die-affine (`ftl.die_affine_group_dies = 1`)",
    ] {
        assert!(md.contains(want), "{want}\n{md}");
    }
    assert!(
        std::fs::metadata(out.join("ssr-intensity.svg"))
            .unwrap()
            .len()
            > 1000
    );
    assert!(out.join("ssr.csv").exists() && out.join("ssr.svg").exists());
    for (args, flag) in [
        (&["--intensity", "1,0.5"][..], "--intensity"),
        (&["--intensity", "0,1"][..], "--intensity"),
        (
            &["--intensity-duration-ms", "0"][..],
            "--intensity-duration-ms",
        ),
    ] {
        let o = ssdlab()
            .args(["reproduce", "ssr", "--scale", "64", "--out"])
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("error: {flag}: ")),
            "{args:?}: {err}"
        );
    }
}

/// `reproduce mq` at its smallest scale: every file, the CSV's 12 rows in its documented
/// columns (slowdown and fairness only for the shared runs), the tables and the shape
/// check; a bad `--duration-ms` fails before any work.
#[test]
fn reproduce_mq_writes_its_table_csv_and_plot() {
    let out = temp_dir("reproduce-mq");
    let o = ssdlab()
        .args(["reproduce", "mq", "--scale", "16", "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("mq.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "gc,sharing,flow,priority,requests,iops,mb_per_s,mean_ns,p50_ns,p99_ns,p99_99_ns,max_ns,slowdown,fairness"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 16);
    for r in &rows {
        assert_eq!(r.len(), 14, "{r:?}");
        let shared = r[1] != "alone";
        assert_eq!(!r[12].is_empty(), shared, "{r:?}");
        assert_eq!(!r[13].is_empty(), shared, "{r:?}");
        assert_eq!(r[3], if r[2] == "reads" { "high" } else { "low" }, "{r:?}");
    }
    let md = std::fs::read_to_string(out.join("mq.md")).unwrap();
    for part in [
        "16 controller command slots",
        "### No GC",
        "### GC in effect",
        "## Expected shape (MQSim, FAST 2018)",
        "| GC vs no GC | GC makes interference worse",
    ] {
        assert!(md.contains(part), "{part}: {md}");
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("| WRR | reads | high |"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("mq.json")).unwrap()).unwrap();
    assert_eq!(json["slots"], 16);
    assert_eq!(json["runs"].as_array().unwrap().len(), 10);
    // The flow study: its CSV (one row per depth of the other flow) and plot.
    let qd = std::fs::read_to_string(out.join("mq-qd.csv")).unwrap();
    assert!(
        qd.starts_with("other_qd,victim_slowdown,other_slowdown,fairness,"),
        "{qd}"
    );
    assert_eq!(qd.lines().count(), 10);
    assert!(md.contains("### Flow study (MQSim Fig. 8)"), "{md}");
    let qsvg = std::fs::read_to_string(out.join("mq-qd.svg")).unwrap();
    assert!(qsvg.contains("fairness"), "mq-qd.svg");
    // Bars per arbitration (categories), no line joining RR to WRR (the series' lines
    // were 2 px wide).
    let svg = std::fs::read_to_string(out.join("mq.svg")).unwrap();
    assert!(!svg.contains("stroke-width=\"2\""), "a series line");
    assert!(svg.matches("<rect").count() > 2 * 2 * 2, "bars");
    let o = ssdlab()
        .args(["reproduce", "mq", "--duration-ms", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--duration-ms: 0: "), "{err}");
}

/// `reproduce zns` at its smallest scale with short phases: every file, the CSV's 12 rows
/// (2 workloads x 2 spares x 3 devices) in its documented columns, zone resets only on ZNS,
/// host WAF 1 off it, the tables and the shape section; a bad `--warmup` fails before any
/// work.
#[test]
fn reproduce_zns_writes_its_table_csv_and_plot() {
    let out = temp_dir("reproduce-zns");
    let o = ssdlab()
        .args([
            "reproduce",
            "zns",
            "--scale",
            "4",
            "--warmup",
            "1",
            "--measure",
            "0.5",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("zns.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "mix,spare,device,user_capacity_bytes,write_bytes,user_write_bytes,device_waf,host_waf,total_waf,user_mb_per_s,read_p99_ns,read_p99_99_ns,write_p99_ns,write_p99_99_ns,gc_victims,zone_resets,zone_resets_per_gb,request_errors,warmup_device_waf,user_reads,user_writes,relocation_reads,relocation_read_p99_ns,relocation_read_p99_99_ns,relocation_writes,relocation_write_p99_ns,relocation_write_p99_99_ns"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 12);
    for r in &rows {
        assert_eq!(r.len(), 27, "{r:?}");
        let zns = r[2] == "zns";
        assert_eq!(!r[15].is_empty(), zns, "{r:?}");
        // The host layer's relocations in their own columns (ZNS only).
        for c in 21..27 {
            assert_eq!(!r[c].is_empty(), zns, "{c}: {r:?}");
        }
        if !zns {
            assert_eq!(r[7], "1.0000", "{r:?}");
        }
    }
    let md = std::fs::read_to_string(out.join("zns.md")).unwrap();
    for part in [
        "### Uniform random writes",
        "### Hot/cold: 80 % of the writes to 20 % of the space",
        "## Expected shape (ZNS, USENIX ATC 2021; FDP)",
        "| all | device WAF = 1 on ZNS",
    ] {
        assert!(md.contains(part), "{part}: {md}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("zns.json")).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 12);
    // The §5.1 raw workload's rows: throughput then latency under two write loads, on
    // ZNS and the conventional device at two OPs.
    assert_eq!(json["raw"].as_array().unwrap().len(), 9);
    let raw = std::fs::read_to_string(out.join("zns-raw.csv")).unwrap();
    assert!(raw.starts_with("kind,write_load,device,spare,"), "{raw}");
    assert_eq!(raw.lines().count(), 10);
    // The LSM store's rows: conventional at two OPs, ZNS, FDP, in their own file.
    let lsm = std::fs::read_to_string(out.join("zns-lsm.csv")).unwrap();
    assert!(lsm.starts_with("device,spare,keys,"), "{lsm}");
    assert_eq!(lsm.lines().count(), 5);
    assert_eq!(json["lsm_runs"].as_array().unwrap().len(), 4);
    assert!(md.contains("### §5.1 raw workload"), "{md}");
    // Device, host and total WAF, for each workload.
    let svg = std::fs::read_to_string(out.join("zns.svg")).unwrap();
    for f in ["device WAF", "host WAF", "total WAF"] {
        for m in ["uniform", "hot-cold"] {
            assert!(svg.contains(&format!("{f}, {m}")), "{f}, {m}");
        }
    }
    let o = ssdlab()
        .args(["reproduce", "zns", "--warmup", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--warmup: 0: "), "{err}");
}

/// `reproduce fdp` at the tests' scale: 12 runs (6 utilizations, with and without FDP) in
/// its documented columns, the FDP runs near WAF 1 and the no-FDP one highest at 100 %,
/// the table, the shape section and both lines drawn; a bad `--measure` fails before any
/// work.
#[test]
fn reproduce_retry_writes_its_table_csv_and_plot() {
    let out = temp_dir("reproduce-retry");
    let o = ssdlab()
        .args(["reproduce", "retry", "--scale", "100", "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("retry.csv")).unwrap();
    assert!(csv.starts_with("workload,pe_cycles,retention_days,policy,reclaim,"));
    assert_eq!(csv.lines().count(), 36);
    let md = std::fs::read_to_string(out.join("retry.md")).unwrap();
    assert!(md.contains("## Expected shape"), "{md}");
    let svg = std::fs::read_to_string(out.join("retry.svg")).unwrap();
    assert!(svg.contains("read latency CCDF"), "{svg}");
}

#[test]
fn reproduce_fdp_writes_its_table_csv_and_plot() {
    let out = temp_dir("reproduce-fdp");
    let o = ssdlab()
        .args(["reproduce", "fdp", "--scale", "4", "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("fdp.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "utilization,fdp,device_waf,warmup_device_waf,cache_bytes,soc_bytes,regions,region_bytes,write_bytes,soc_write_share,gc_victims"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 12);
    let waf = |u: &str, fdp: &str| -> f64 {
        rows.iter().find(|r| r[0] == u && r[1] == fdp).unwrap()[2]
            .parse()
            .unwrap()
    };
    for u in ["50", "60", "70", "80", "90", "100"] {
        assert!(waf(u, "true") <= 1.1, "{u}");
        assert!(waf(u, "false") <= waf("100", "false"), "{u}");
    }
    assert!(waf("100", "false") >= 2.0);
    let md = std::fs::read_to_string(out.join("fdp.md")).unwrap();
    for part in [
        "| utilization | device WAF, no FDP | device WAF, FDP |",
        "## Expected shape (Allison et al., EuroSys 2025)",
        "| FDP | FDP device WAF ≤ 1.1 at every utilization (paper ~1.03) | yes |",
    ] {
        assert!(md.contains(part), "{part}: {md}");
    }
    let svg = std::fs::read_to_string(out.join("fdp.svg")).unwrap();
    assert!(svg.contains("no FDP") && svg.contains("FDP (SOC on its own handle)"));
    let o = ssdlab()
        .args(["reproduce", "fdp", "--measure", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("--measure: 0: "), "{err}");
}

/// The docs' generated tables that take seconds (`ssdlab doc-tables --fast`: the `zns` and
/// `mq` reports, docs/reproduce.md, and the policy lists of docs/config.md and README.md,
/// from the registry) match a fresh run: checked on a copy of docs/ with one figure of the
/// zns table changed, which must be the one line found stale.
#[test]
fn doc_tables_match_a_fresh_run() {
    let root = temp_dir("doc-tables");
    for dir in ["docs", "configs"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), root.join(dir).join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(repo().join("README.md"), root.join("README.md")).unwrap();
    let zns = std::fs::read_to_string(root.join("docs/zns.md")).unwrap();
    let block = zns.find("<!-- doc-table zns -->").unwrap();
    let (i, line) = (zns.lines().enumerate())
        .skip(zns[..block].lines().count())
        .find(|(_, l)| l.starts_with("| 28 % | zns | 1.000 |"))
        .unwrap();
    let perturbed = line.replacen("| 1.000 |", "| 1.001 |", 1);
    std::fs::write(root.join("docs/zns.md"), zns.replacen(line, &perturbed, 1)).unwrap();
    let o = ssdlab()
        .args(["doc-tables", "--check", "--fast", "--root"])
        .arg(&*root)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    let stale = format!(
        "docs/zns.md:{}: table zns is stale, 1 of its lines differ",
        i + 1
    );
    assert!(
        err.contains(&stale),
        "regenerate (docs/reproduce.md)? {stale}: {err}"
    );
    assert!(err.contains(&format!("doc:   {perturbed}")), "{err}");
    assert!(err.contains(&format!("fresh: {line}")), "{err}");
    assert!(
        err.contains("doc table mq: up to date"),
        "regenerate? {err}"
    );
    for (table, doc) in [
        ("policies", "docs/config.md"),
        ("policy-names", "README.md"),
    ] {
        assert!(
            err.contains(&format!("doc table {table}: up to date ({doc}")),
            "a policy added or changed: regenerate with `ssdlab doc-tables {table}`: {err}"
        );
    }
    assert_eq!(err.matches(" is stale").count(), 1, "{err}");
}

/// `reproduce slc` at its smallest scale with two fsync intervals: every file, the CSV
/// header, zero journal bytes migrated, and the shape table.
#[test]
fn reproduce_slc_writes_its_table_csv_and_plot() {
    let out = temp_dir("reproduce-slc");
    let o = ssdlab()
        .args([
            "reproduce",
            "slc",
            "--scale",
            "16",
            "--fsync-every",
            "2,64",
            "--filebench-requests",
            "20000",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("slc.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * (2 + 4));
    let col = header
        .iter()
        .position(|h| *h == "journal_bytes_migrated")
        .unwrap();
    let pol = header.iter().position(|h| *h == "policy").unwrap();
    for row in csv.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        if f[pol] == "slc-journal" {
            assert_eq!(f[col], "0", "{row}");
        }
    }
    let md = std::fs::read_to_string(out.join("slc.md")).unwrap();
    assert!(
        md.contains("Expected shape") && md.contains("varmail"),
        "{md}"
    );
    // The header states the scaled device's sizes, not scale 1's.
    for part in [
        "scaled down by 16): TLC 4.0 GiB logical, 16 KiB pages, 2 planes;",
        "`slc-buffer` 24 SLC blocks of buffer on every plane (48 MiB in all)",
        "24 blocks of journal region on 1 plane (24 MiB for the 8 MiB journal:",
        "96 MiB of application data",
    ] {
        assert!(md.contains(part), "{part}: {md}");
    }
    let header: String = md.lines().filter(|l| l.starts_with("* ")).collect();
    assert!(
        !header.contains("64 GiB") && !header.contains("128 MiB"),
        "{header}"
    );
    assert!(std::fs::metadata(out.join("slc.svg")).unwrap().len() > 1000);
}

/// `reproduce slc --journal-blocks-per-plane` outside 4..=20 fails before any work, with
/// one line naming the flag.
#[test]
fn reproduce_slc_refuses_a_journal_region_that_cannot_fit() {
    let out = temp_dir("slc-bad-journal");
    for bad in ["3", "21"] {
        let o = ssdlab()
            .args([
                "reproduce",
                "slc",
                "--journal-blocks-per-plane",
                bad,
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "error: --journal-blocks-per-plane: {bad}: must be 4..=20"
            )),
            "{err}"
        );
        assert!(!out.join("slc.csv").exists());
    }
}

/// `run --request-log`: one row per request, in CSV under zstd, each completing after it
/// was submitted; refused before any work in the functional mode.
#[test]
fn request_log_has_one_row_per_request() {
    let out = temp_dir("request-log");
    let cfg = repo().join("configs/default.toml");
    let o = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args([
            "--set",
            "workload.requests=5000",
            "--request-log",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = std::fs::File::open(out.join("requests.csv.zst")).unwrap();
    let mut text = String::new();
    use std::io::Read;
    ruzstd::decoding::StreamingDecoder::new(f)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("submit_ns,complete_ns,op,offset_bytes,size_bytes,flow")
    );
    let rows: Vec<Vec<u64>> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert!(matches!(f[2], "read" | "write"), "{l}");
            vec![
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[4].parse().unwrap(),
            ]
        })
        .collect();
    assert_eq!(rows.len(), 5000);
    assert!(rows.iter().all(|r| r[1] > r[0] && r[2] == 4096));
    assert!(!out.join("requests.csv.part").exists());
    let o = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args([
            "--set",
            "mode=\"functional\"",
            "--request-log",
            "-q",
            "--out",
        ])
        .arg(out.join("f"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--request-log needs"));
}

/// Range errors found when the configuration is validated name file, line and key, for
/// `config check` and before `run` does any work; workload errors too.
#[test]
fn validation_errors_name_file_line_and_key() {
    let dir = temp_dir("validation-lines");
    let text = std::fs::read_to_string(repo().join("configs/default.toml")).unwrap();
    for (from, to, want) in [
        (
            "over_provisioning_ratio = 0.25",
            "over_provisioning_ratio = -0.5",
            "device.over_provisioning_ratio",
        ),
        (
            "gc_soft_free_blocks = 4",
            "gc_soft_free_blocks = 1",
            "ftl.gc_soft_free_blocks",
        ),
        (
            "read_percent = 70.0",
            "read_percent = 170.0",
            "workload.read_percent",
        ),
    ] {
        let bad = text.replace(from, to);
        let line = bad.lines().position(|l| l.contains(to)).unwrap() + 1;
        let p = dir.join("bad.toml");
        std::fs::write(&p, &bad).unwrap();
        for args in [vec!["config", "check"], vec!["run"]] {
            let o = ssdlab().args(&args).arg(&p).output().unwrap();
            assert!(!o.status.success());
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains(&format!("bad.toml:{line}: {want}:")),
                "{args:?}: {err}"
            );
        }
    }
}

/// `bench` measures the functional figure on the `run` path, with exact NAND counts, and
/// says why when the C reference cannot be built; with a C compiler it alternates with the
/// reference and reports one ratio per pair.
#[test]
fn bench_functional_counts_and_pairs_with_the_c_reference() {
    let args = [
        "bench",
        "--functional-only",
        "--repeat",
        "2",
        "--functional-writes",
        "100000",
    ];
    let out = ssdlab()
        .args(args)
        .env("CC", "no-such-cc-for-ssdlab-test")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("over 2 runs; WAF 5.217; GC victims 3999, copied units 421749, erases 3999"),
        "{text}"
    );
    assert!(
        text.contains("C reference not measured: no C compiler `no-such-cc-for-ssdlab-test`"),
        "{text}"
    );
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_ok() {
        let out = ssdlab().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("ssdlab / C = ") && text.contains("(median of the 2 pairs; range "),
            "{text}"
        );
    }
}

/// A run into a directory an earlier run wrote leaves none of the earlier run's files that
/// it does not write itself (a stale plot or request log would look like this run's).
#[test]
fn a_rerun_removes_the_earlier_runs_outputs_it_does_not_make() {
    let out = temp_dir("stale");
    let cfg = repo().join("configs/default.toml");
    let run = |extra: &[&str]| {
        let o = ssdlab()
            .arg("run")
            .arg(&cfg)
            .args(["--set", "workload.requests=3000", "-q", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    // What a timed run with a request log and a time series writes, and a functional run
    // without them does not.
    let timed_only = [
        "latency.svg",
        "latency.csv",
        "timeseries.svg",
        "timeseries.csv",
        "requests.csv.zst",
    ];
    run(&[
        "--request-log",
        "--set",
        "output.timeseries_interval_ns=1000000",
    ]);
    for f in timed_only {
        assert!(out.join(f).exists(), "{f} written by the timed run");
    }
    run(&["--set", "mode=\"functional\""]);
    for f in timed_only {
        assert!(!out.join(f).exists(), "{f} left from the earlier run");
    }
    assert!(out.join("results.json").exists());
}

/// A `--set` that makes the configuration unreadable is named in the error (not a line of
/// the regenerated text the user never saw).
#[test]
fn a_bad_set_value_names_the_set() {
    let cfg = repo().join("configs/default.toml");
    let out = temp_dir("bad-set");
    for (set, expect) in [
        (
            "workload.requests=",
            "--set workload.requests=: invalid type",
        ),
        ("ftl.bogus=1", "--set ftl.bogus=1: unknown field `bogus`"),
        ("ftl.gc={ policy =", "is not a TOML value"),
    ] {
        let o = ssdlab()
            .arg("run")
            .arg(&cfg)
            .args(["-q", "--set", "workload.requests=10", "--set", set, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(expect), "{set}: {err}");
        assert!(!err.contains("line "), "{set}: {err}");
    }
}

/// A child process killed if the test fails before it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Send Ctrl-C (SIGINT) to `child` and wait (at most 10 s) for it to end; its exit
/// status and stderr.
fn interrupt(child: &mut Child) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    // SAFETY: sends SIGINT to our own child process.
    assert_eq!(unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) }, 0);
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed().as_secs() < 10,
            "still running 10 s after Ctrl-C"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

/// Every file under `dir` (relative path → bytes), temporary directories included.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                files.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    files
}

/// An MSR trace of `good` 4 KiB writes and reads, then (with `bad`) a malformed line and
/// a few more good ones: the up-front check reads the first 10,000 requests only.
fn long_trace(good: usize, bad: bool) -> String {
    let mut t = String::from("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n");
    let line = |i: usize| {
        let op = if i.is_multiple_of(3) { "Read" } else { "Write" };
        format!(
            "{},hm,0,{op},{},4096,10\n",
            128166372000000000u64 + i as u64 * 1000,
            (i * 7919 % 4096) * 4096
        )
    };
    for i in 0..good {
        t += &line(i);
    }
    if bad {
        t += "this line is broken\n";
        for i in good..good + 5 {
            t += &line(i);
        }
    }
    t
}

/// A run that fails part-way (a bad trace line past the first 10,000 requests, which the
/// up-front check does not read) into the directory of an earlier run leaves it exactly
/// as it was: no partial request log, no temporary directory; into a new directory, it
/// leaves none.
#[test]
fn a_failed_run_leaves_the_earlier_runs_outputs_as_they_were() {
    let dir = temp_dir("failed-run");
    let cfg = dir.join("trace.toml");
    std::fs::write(
        &cfg,
        format!("{DEVICE}\n[workload]\nkind = \"trace\"\npath = \"t.csv\"\nformat = \"msr\"\nreplay = \"closed\"\n"),
    )
    .unwrap();
    let out_dir = dir.join("o");
    let run = |out_dir: &Path| {
        ssdlab()
            .arg("run")
            .arg(&cfg)
            .args(["--quiet", "--request-log", "--out"])
            .arg(out_dir)
            .output()
            .unwrap()
    };
    std::fs::write(dir.join("t.csv"), long_trace(200, false)).unwrap();
    let o = run(&out_dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(out_dir.join("notes.txt"), "the user's own file").unwrap();
    let before = snapshot(&out_dir);
    assert!(before.contains_key(Path::new("results.json")));
    assert!(before.contains_key(Path::new("requests.csv.zst")));

    std::fs::write(dir.join("t.csv"), long_trace(10_050, true)).unwrap();
    let o = run(&out_dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("t.csv:10052"), "{err}");
    let after = snapshot(&out_dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "the failed run left files behind or removed some"
    );
    assert!(
        after == before,
        "the failed run changed the earlier run's files"
    );

    let fresh = dir.join("new");
    let o = run(&fresh);
    assert!(!o.status.success());
    assert!(
        !fresh.exists(),
        "a failed run into a new directory leaves none"
    );
}

/// Ctrl-C during a long `run --request-log` into an earlier run's directory: the log on
/// disk is zstd while the run goes on (valid up to where it was flushed), the process
/// exits with 130 within seconds saying it was interrupted, and the directory is exactly
/// as the earlier run left it (no temporary directory, no `.part` file).
#[test]
fn an_interrupted_run_leaves_the_earlier_runs_outputs_as_they_were() {
    use std::io::Read as _;
    let out_dir = temp_dir("interrupted-run");
    let cfg = repo().join("configs/default.toml");
    let small = [
        "--set",
        "workload.requests=2000",
        "--set",
        "precondition.enabled=false",
    ];
    let o = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args(small)
        .args(["-q", "--out"])
        .arg(&*out_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = snapshot(&out_dir);

    let child = ssdlab()
        .arg("run")
        .arg(&cfg)
        .args([
            "--set",
            "workload.requests=100000000",
            "--set",
            "precondition.enabled=false",
            "--request-log",
            "-q",
            "--out",
        ])
        .arg(&*out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Child(child);
    let staged_log = out_dir
        .join(format!(".ssdlab-tmp-{}", child.0.id()))
        .join("requests.csv.zst");
    let old_part = out_dir.join("requests.csv.part");
    // Wait until the log on disk holds a MB.
    let t0 = std::time::Instant::now();
    let log = loop {
        let found = [&staged_log, &old_part]
            .into_iter()
            // A MB: the stream's last block, written but not yet decodable, is then a
            // small part of the file (at 200 kB it made the ratio below 2.9 under load).
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 1_000_000));
        if let Some(p) = found {
            break p.clone();
        }
        assert!(
            t0.elapsed().as_secs() < 120,
            "no request log appeared: {:?}",
            snapshot(&out_dir).keys().collect::<Vec<_>>()
        );
        assert!(child.0.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        log, staged_log,
        "the log is written in the staged directory"
    );
    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(bytes[..4], [0x28, 0xb5, 0x2f, 0xfd], "zstd magic");
    // Decode what can be: a stream cut where the writer is; whole rows until the cut.
    let mut dec = ruzstd::decoding::StreamingDecoder::new(&bytes[..]).unwrap();
    let mut text = Vec::new();
    let mut buf = [0u8; 1 << 16];
    while let Ok(n) = dec.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.starts_with("submit_ns,complete_ns,op,offset_bytes,size_bytes,flow\n"),
        "{}",
        &text[..text.len().min(200)]
    );
    let rows = text.lines().skip(1).count();
    assert!(rows > 1000, "{rows} rows decoded");
    assert!(
        text.len() > 2 * bytes.len(),
        "compressed: {} bytes on disk for {} of CSV",
        bytes.len(),
        text.len()
    );

    let (status, err) = interrupt(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("interrupted by Ctrl-C (SIGINT)"), "{err}");
    let after = snapshot(&out_dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert!(
        after == before,
        "the interrupted run changed the earlier run's files"
    );
}

/// Ctrl-C during `reproduce`: exit 130, the output directory's files (an earlier run's and
/// the user's own) as they were, a directory created for it removed.
#[test]
fn an_interrupted_reproduce_leaves_its_directory_as_it_was() {
    let dir = temp_dir("interrupted-reproduce");
    let out_dir = dir.join("o");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("dftl.csv"), "an earlier run's table\n").unwrap();
    std::fs::write(out_dir.join("notes.txt"), "the user's own file\n").unwrap();
    let before = snapshot(&out_dir);
    for (out, existed) in [(&out_dir, true), (&dir.join("new"), false)] {
        let child = ssdlab()
            .args([
                "reproduce",
                "dftl",
                "--scale",
                "32",
                "--requests",
                "100000000",
                "-q",
                "--out",
            ])
            .arg(out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = Child(child);
        // Its staged directory exists once the outputs are checked, before the experiment.
        let staged = out.join(format!(".ssdlab-tmp-{}", child.0.id()));
        let t0 = std::time::Instant::now();
        while !staged.exists() && t0.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(1000));
        let (status, err) = interrupt(&mut child);
        assert_eq!(status.code(), Some(130), "{err}");
        assert!(err.contains("interrupted"), "{err}");
        if existed {
            assert!(snapshot(out) == before, "{:?}", snapshot(out).keys());
        } else {
            assert!(!out.exists());
        }
    }
}

/// `ssdlab sweep CONFIG --grid … [--set workload.requests=400] --out OUT` (progress lines
/// on; the `--set` for a synthetic workload, whose configuration names `requests`).
fn sweep_into(cfg: &Path, grids: &[&str], out: &Path) -> std::process::Output {
    let mut c = ssdlab();
    c.arg("sweep").arg(cfg);
    for g in grids {
        c.args(["--grid", g]);
    }
    if std::fs::read_to_string(cfg)
        .unwrap()
        .contains("requests = ")
    {
        c.args(["--set", "workload.requests=400"]);
    }
    c.args(["--jobs", "2", "--out"]).arg(out).output().unwrap()
}

/// The sweep's table after a successful sweep.
fn sweep_ok(cfg: &Path, grids: &[&str], out: &Path) -> (String, String) {
    let o = sweep_into(cfg, grids, out);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    (std::fs::read_to_string(out.join("sweep.csv")).unwrap(), err)
}

/// A sweep into an --out that holds another configuration's points re-runs them: a point
/// is reused only when its resolved configuration and input file are the same (issue 33).
#[test]
fn sweep_reuses_a_point_only_for_the_same_configuration_and_inputs() {
    let dir = temp_dir("sweep-reuse");
    let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
    std::fs::write(&a, SMALL).unwrap();
    std::fs::write(
        &b,
        SMALL.replace("read_percent = 70.0", "read_percent = 10.0"),
    )
    .unwrap();
    let grid = ["device.over_provisioning_ratio=0.25,0.35"];
    let shared = dir.join("shared");
    let (csv_a, _) = sweep_ok(&a, &grid, &shared);
    let (csv_b, err) = sweep_ok(&b, &grid, &shared);
    let (fresh_b, _) = sweep_ok(&b, &grid, &dir.join("fresh-b"));
    assert_ne!(csv_a, fresh_b, "the two configurations give different rows");
    assert_eq!(csv_b, fresh_b, "b's sweep holds b's results: {err}");
    assert!(!err.contains("reused"), "{err}");
    // An unchanged re-run reuses every point (its results.json untouched).
    let stamp = |out: &Path| {
        std::fs::metadata(out.join("points/1/results.json"))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = stamp(&shared);
    let (again, err) = sweep_ok(&b, &grid, &shared);
    assert_eq!(again, fresh_b);
    assert!(
        err.contains("point 0 reused") && err.contains("point 1 reused"),
        "{err}"
    );
    assert_eq!(stamp(&shared), before);
}

/// Editing the base configuration in place between two sweeps re-runs the points.
#[test]
fn sweep_reruns_points_when_the_base_configuration_is_edited() {
    let dir = temp_dir("sweep-edit");
    let b = dir.join("b.toml");
    std::fs::write(&b, SMALL).unwrap();
    let grid = ["device.over_provisioning_ratio=0.25,0.35"];
    let out = dir.join("out");
    let (before, _) = sweep_ok(&b, &grid, &out);
    std::fs::write(&b, SMALL.replace("seed = 5", "seed = 6")).unwrap();
    let (edited, err) = sweep_ok(&b, &grid, &out);
    let (fresh, _) = sweep_ok(&b, &grid, &dir.join("fresh"));
    assert_eq!(edited, fresh);
    assert_ne!(edited, before, "seed 6 gives other rows than seed 5");
    assert!(!err.contains("reused"), "{err}");
}

/// A changed trace (same path, same configuration) re-runs the points; a killed point
/// (no point.json) re-runs; points of an earlier, larger grid do not stay behind.
#[test]
fn sweep_reruns_when_the_trace_changes_and_leaves_no_stale_points() {
    let dir = temp_dir("sweep-trace");
    let head = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n";
    let line = |i: u64, op: &str, off: u64| {
        format!(
            "{},hm,0,{op},{off},4096,10\n",
            128166372000000000 + i * 10_000
        )
    };
    let trace = |writes: u64| {
        let mut t = head.to_string();
        for i in 0..writes {
            t += &line(i, "Write", (i * 4096) % (16 << 20));
        }
        t
    };
    std::fs::write(dir.join("t.csv"), trace(200)).unwrap();
    let cfg = dir.join("trace.toml");
    std::fs::write(
        &cfg,
        format!("{DEVICE}\n[workload]\nkind = \"trace\"\npath = \"t.csv\"\nformat = \"msr\"\n"),
    )
    .unwrap();
    let grid = ["ftl.gc_soft_free_blocks=3,4,5"];
    let out = dir.join("out");
    let (first, _) = sweep_ok(&cfg, &grid, &out);
    assert!(
        first.lines().nth(1).unwrap().contains(",completed,200,"),
        "{first}"
    );
    // The same path, other content: every point re-runs, with the new trace's results.
    std::fs::write(dir.join("t.csv"), trace(300)).unwrap();
    let (second, err) = sweep_ok(&cfg, &grid, &out);
    assert!(!err.contains("reused"), "{err}");
    let (fresh, _) = sweep_ok(&cfg, &grid, &dir.join("fresh"));
    assert_eq!(second, fresh);
    assert_ne!(second, first, "the two traces give different rows");
    // A point without point.json (killed before it finished) runs again; a partial
    // directory and the points beyond a smaller grid are removed.
    std::fs::remove_file(out.join("points/0/point.json")).unwrap();
    std::fs::create_dir_all(out.join("points/1.partial")).unwrap();
    let grid2 = ["ftl.gc_soft_free_blocks=3,4"];
    let (third, err) = sweep_ok(&cfg, &grid2, &out);
    assert!(
        err.contains("point 0 done") && err.contains("point 1 reused"),
        "{err}"
    );
    assert_eq!(third.lines().count(), 3, "{third}");
    assert!(
        !out.join("points/2").exists(),
        "a point of the old grid is left"
    );
    assert!(!out.join("points/1.partial").exists());
    assert!(out.join("points/0/point.json").exists());
}

/// One invalid point fails alone (status `failed`, its `error` naming file, line and key as
/// `ssdlab run` does); the others run, the tables are written, the exit status is non-zero
/// and names the failed point. A workload that fails its check fails its point the same way.
#[test]
fn sweep_marks_a_failed_point_and_runs_the_rest() {
    let dir = temp_dir("sweep-fail");
    let cfg = dir.join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();
    let out = dir.join("out");
    let o = sweep_into(&cfg, &["device.over_provisioning_ratio=0.25,-1,0.35"], &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("error: 1 of 3 points failed (point 1)"),
        "{err}"
    );
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[0].ends_with(",sim_time_ns,error"), "{csv}");
    assert!(
        lines[1].starts_with("0,0.25,completed,400,") && lines[1].ends_with(','),
        "{csv}"
    );
    assert!(
        lines[3].starts_with("3,0.35,completed,400,")
            || lines[3].starts_with("2,0.35,completed,400,"),
        "{csv}"
    );
    // Every figure column empty (however many the header has), then the error.
    let empty = ",".repeat(lines[0].split(',').count() - 3);
    let want = format!(
        "1,-1,failed{empty}{} (with --set workload.requests=400 --grid device.over_provisioning_ratio=-1):",
        cfg.display()
    );
    assert!(lines[2].starts_with(&want), "{csv}");
    assert!(
        lines[2].ends_with(": device.over_provisioning_ratio: -1 must be a finite number >= 0"),
        "{csv}"
    );
    // The Parquet table has the same columns, `error` last (as the Python DataFrame).
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r =
        SerializedFileReader::new(std::fs::File::open(out.join("sweep.parquet")).unwrap()).unwrap();
    let meta = r.metadata().file_metadata();
    assert_eq!(meta.num_rows(), 3);
    let names: Vec<&str> = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name())
        .collect();
    assert_eq!(names.join(","), lines[0]);
    // A trace with a bad line fails its point with `ssdlab run`'s message (file and line)
    // unless that point skips it.
    let trace = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
        128166372000000000,hm,0,Write,0,8192,10\n\
        this line is broken\n\
        128166372000030000,hm,0,Read,0,4096,10\n";
    std::fs::write(dir.join("t.csv"), trace).unwrap();
    let tcfg = dir.join("trace.toml");
    std::fs::write(
        &tcfg,
        format!("{DEVICE}\n[workload]\nkind = \"trace\"\npath = \"t.csv\"\nformat = \"msr\"\n"),
    )
    .unwrap();
    let o = sweep_into(&tcfg, &["workload.skip_bad_lines=0,1"], &dir.join("tout"));
    assert!(!o.status.success());
    let csv = std::fs::read_to_string(dir.join("tout/sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[1].starts_with("0,0,failed,"), "{csv}");
    assert!(
        lines[1].contains("t.csv:3") && lines[1].contains("this line is broken"),
        "{csv}"
    );
    assert!(lines[2].starts_with("1,1,completed,2,"), "{csv}");
}

/// A typo'd --grid key is reported under the flag the user typed; malformed grid syntax is
/// an error before anything runs (no table written).
#[test]
fn sweep_names_the_grid_flag_and_rejects_bad_syntax_at_once() {
    let dir = temp_dir("sweep-typo");
    let cfg = dir.join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();
    let o = sweep_into(&cfg, &["ftl.gc_sof_free_blocks=1,2"], &dir.join("out"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--grid ftl.gc_sof_free_blocks=1: unknown field `gc_sof_free_blocks`"),
        "{err}"
    );
    assert!(!err.contains("--set ftl.gc_sof"), "{err}");
    for bad in [
        "ftl.gc_soft_free_blocks",
        "ftl.gc_soft_free_blocks=1,",
        "ftl.gc={ policy",
    ] {
        let out = dir.join("bad");
        let o = sweep_into(&cfg, &[bad], &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(&format!("--grid {bad}")),
            "{err}"
        );
        assert!(!out.join("sweep.csv").exists(), "{err}");
    }
}

/// A scale an experiment refuses fails before its "N runs on T threads" banner: the only
/// output is the error.
#[test]
fn reproduce_refuses_a_bad_scale_before_announcing_runs() {
    let out = temp_dir("bad-scale");
    for (exp, scale) in [
        ("dftl", "3"),
        ("wl", "64"),
        ("slc", "32"),
        ("mq", "3"),
        ("zns", "8"),
    ] {
        let o = ssdlab()
            .args(["reproduce", exp, "--scale", scale, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{exp}: {err}");
        assert_eq!(err.lines().count(), 1, "{exp}: {err}");
        assert!(
            err.starts_with(&format!("error: scale: {scale}: ")),
            "{exp}: {err}"
        );
    }
}

/// The run's plots as a reader sees them: each operation named in the legend, the CCDF
/// axis reaching 1/N and not beyond what is drawn (a constant latency's legend entry:
/// `plots::tests`), every time-series panel's y axis labelled with its unit.
#[test]
fn run_plots_name_what_they_show() {
    let out = temp_dir("plots");
    let o = ssdlab()
        .arg("run")
        .arg(repo().join("configs/default.toml"))
        .args(["--set", "workload.requests=20000", "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The text elements of an SVG file, trimmed.
    let texts = |f: &str| -> Vec<String> {
        let svg = std::fs::read_to_string(out.join(f)).unwrap();
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    };
    let lat = texts("latency.svg");
    for label in ["read", "write"] {
        assert!(
            lat.iter()
                .any(|t| t == label || t.starts_with(&format!("{label}: all "))),
            "{label}: {lat:?}"
        );
    }
    let ts = texts("timeseries.svg");
    for unit in [
        "IOPS (requests / s)",
        "free blocks",
        "mapping units",
        "WAF (NAND / host pages)",
    ] {
        assert!(ts.iter().any(|t| t == unit), "{unit}: {ts:?}");
    }
}

/// `config show` prints nested arrays on one line, as written (TOML allows it).
/// `ssdlab policies` lists every family from the registry with its policies, their docs
/// and default parameters.
#[test]
fn policies_lists_families_policies_and_defaults() {
    let o = ssdlab().arg("policies").output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for family in [
        "[ftl.gc]  policy = \"…\" (default \"greedy\")",
        "[ftl.allocation]",
        "[ftl.wear_leveling]",
        "[ftl.placement]",
        "[ftl.mapping]",
        "[scheduler.erase_suspend]  policy = \"…\" (default \"none\")",
    ] {
        assert!(text.contains(family), "{family}\n{text}");
    }
    let o = ssdlab().args(["policies", "--markdown"]).output().unwrap();
    assert!(o.status.success());
    let md = String::from_utf8_lossy(&o.stdout);
    for row in [
        "| table | policy | parameters (default) | meaning |\n|---|---|---|---|\n| `ftl.gc` | `greedy` (default) | — | The full block with the fewest valid units (O(1) buckets). |\n",
        "|  | `d-choices` | `d` = `10` | The fewest valid units among d random full blocks (Van Houdt 2013). |\n",
        "|  | `ies` | `programs_preempt` = `false` | I-ES (Wu et al. 2014): suspend at once; reads arriving while suspended are served too. |\n",
    ] {
        assert!(md.contains(row), "{row}\n{md}");
    }
    for line in [
        "  d-choices              The fewest valid units among d random full blocks (Van Houdt 2013).\n                           d = 10\n",
        "  ssr-static             SSR(s): the next of `points_per_loop` evenly spaced safe points of the loop.\n",
        "                           points_per_loop = 10\n",
        "                           safe_points = [[0, 30], [1000, 10]]\n",
        "                           cmt_share = unset\n",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

#[test]
fn config_show_prints_nested_arrays_inline() {
    let o = ssdlab()
        .args(["config", "show"])
        .arg(repo().join("configs/default.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(text.contains("\nerase_loops = [[0, 5]]\n"), "{text}");
    assert!(
        text.contains("\nsafe_suspensions_per_loop = [[0, 30], [1000, 10]]\n"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.trim() == "0,"), "{text}");
}

/// `bench --repeat 0` and `run --seed -5` are argument errors naming the flag and value.
#[test]
fn zero_repeat_and_negative_seed_are_argument_errors() {
    let o = ssdlab().args(["bench", "--repeat", "0"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("invalid value '0' for '--repeat <REPEAT>': 0 is not in 1.."),
        "{err}"
    );
    for args in [
        vec!["run", "configs/default.toml"],
        vec!["reproduce", "slc"],
    ] {
        let o = ssdlab()
            .current_dir(repo())
            .args(&args)
            .args(["--seed", "-5"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(
            err.contains("invalid value '-5' for '--seed <SEED>': invalid digit found in string"),
            "{args:?}: {err}"
        );
    }
}

/// A trace without a request line (a header alone, or an empty file) is an error of
/// `workload.path` with the config's file and line, for `config check` and `run`.
#[test]
fn a_trace_without_requests_is_an_error() {
    let dir = temp_dir("no-requests");
    let base = SMALL.split("[workload]").next().unwrap();
    let cfg = dir.join("t.toml");
    std::fs::write(
        &cfg,
        format!("{base}[workload]\nkind = \"trace\"\nformat = \"msr\"\npath = \"t.csv\"\n"),
    )
    .unwrap();
    let line = base.lines().count() + 4;
    for content in [
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n",
        "",
    ] {
        std::fs::write(dir.join("t.csv"), content).unwrap();
        for err in check_and_run_fail(&cfg, &dir.join("o")) {
            assert!(
                err.contains(&format!(
                    "t.toml:{line}: workload.path: {}: a trace with no request lines",
                    dir.join("t.csv").display()
                )),
                "{content:?}: {err}"
            );
        }
    }
}

/// A trace or fio job file that cannot be read is an error of `workload.path`, with the
/// config's file and line.
#[test]
fn a_missing_input_file_names_the_config_key_and_line() {
    let dir = temp_dir("missing-input");
    let base = SMALL.split("[workload]").next().unwrap();
    let line = base.lines().count() + 3;
    for (kind, file) in [("trace", "no-such.csv"), ("fio", "no-such.fio")] {
        let cfg = dir.join(format!("{kind}.toml"));
        let fmt = if kind == "trace" {
            "format = \"msr\"\n"
        } else {
            ""
        };
        std::fs::write(
            &cfg,
            format!("{base}[workload]\nkind = \"{kind}\"\npath = \"{file}\"\n{fmt}"),
        )
        .unwrap();
        for args in [vec!["config", "check"], vec!["run", "-q"]] {
            let o = ssdlab().args(&args).arg(&cfg).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?}: {err}");
            assert!(
                err.contains(&format!(
                    "{kind}.toml:{line}: workload.path: cannot read {}: No such file or directory (os error 2)",
                    dir.join(file).display()
                )),
                "{args:?}: {err}"
            );
        }
    }
}

/// A valid device `run` refuses for memory on this machine (about 53 GiB), written into a
/// temp dir `name`; `None` (test skipped) on a machine with 40 GiB or more available.
fn huge_device(name: &str) -> Option<(Scratch, PathBuf)> {
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let l = t
                .lines()
                .find(|l| l.starts_with("MemAvailable:"))?
                .to_string();
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kib| kib * 1024);
    if avail.is_none_or(|a| a > 40 << 30) {
        eprintln!("skipped: needs a machine with less than 40 GiB available (the device needs about 53 GiB)");
        return None;
    }
    let dir = temp_dir(name);
    let text = std::fs::read_to_string(repo().join("configs/default.toml"))
        .unwrap()
        .replace("integrity = false", "integrity = true")
        .replace("blocks_per_plane = 256", "blocks_per_plane = 8000")
        .replace("chips_per_channel = 2", "chips_per_channel = 16")
        .replace("pages_per_block = 128", "pages_per_block = 1024");
    let cfg = dir.join("huge.toml");
    std::fs::write(&cfg, text).unwrap();
    Some((dir, cfg))
}

/// `config check` of a valid device that `run` would refuse for memory says so (exit 0:
/// the file is valid, the memory is this machine's), with run's estimate and message.
#[test]
fn config_check_warns_of_a_device_run_refuses_for_memory() {
    let Some((dir, cfg)) = huge_device("check-memory") else {
        return;
    };
    let o = ssdlab()
        .args(["config", "check"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains(": ok ("));
    let run = ssdlab()
        .arg("run")
        .arg(&cfg)
        .arg("--out")
        .arg(dir.join("o"))
        .output()
        .unwrap();
    let run_err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    // The same message as run's refusal, as a warning.
    let msg = run_err.trim().strip_prefix("error: ").unwrap();
    assert_eq!(
        err.trim(),
        format!("warning: {msg} (`ssdlab run` refuses it without that flag)"),
    );
}

/// The error of `ssdlab run CFG --set workload.requests=400 --set GRID` (stderr without
/// `error: `) and of the point `GRID` of `ssdlab sweep CFG --grid GRID` (its stderr line
/// `point 0 failed: TAG: …`), `--set workload.requests=400` on both when CFG names requests.
fn run_and_sweep_errors(cfg: &Path, grid: &str, dir: &Path) -> (String, String) {
    let text = std::fs::read_to_string(cfg).unwrap();
    let requests = text.contains("requests = ");
    let mut run = ssdlab();
    run.arg("run").arg(cfg);
    if requests {
        run.args(["--set", "workload.requests=400"]);
    }
    let o = run
        .args(["--set", grid, "-q", "--out"])
        .arg(dir.join("run-out"))
        .output()
        .unwrap();
    let run_err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{run_err}");
    assert!(!dir.join("run-out/results.json").exists());
    let o = sweep_into(cfg, &[grid], &dir.join("sweep-out"));
    let sweep_err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{sweep_err}");
    let tag = if requests {
        format!("workload.requests=400 {grid}")
    } else {
        grid.to_string()
    };
    let prefix = format!("  point 0 failed: {tag}: ");
    let point = sweep_err
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no failed point 0 in: {sweep_err}"));
    let run_msg = run_err.trim_end().strip_prefix("error: ").unwrap();
    (run_msg.to_string(), point.to_string())
}

/// A sweep point goes through `ssdlab run`'s one run sequence: a bad value (configuration
/// or workload check) fails it with run's message, file, line and key exactly (the flag
/// named as typed: `--grid` for `--set`); the line is the key's in the overridden text the
/// label announces (issue 34: a workload error named the file without "(with …)", so the
/// line pointed into text the user never saw).
#[test]
fn sweep_point_errors_are_runs_errors() {
    let dir = temp_dir("sweep-run-errors");
    let cases = [
        // (configuration text, grid, the key of the error)
        (SMALL.to_string(), "device.over_provisioning_ratio=-1", "device.over_provisioning_ratio: -1 must be a finite number >= 0"),
        (
            SMALL.replace("read_percent = 70.0", "read_percent = 170.0"),
            "seed=1",
            "workload.read_percent: 170 is not a percentage in 0..=100",
        ),
        (
            format!("{DEVICE}\n[workload]\nkind = \"trace\"\npath = \"missing.csv\"\nformat = \"msr\"\n"),
            "seed=1",
            "workload.path: cannot read",
        ),
    ];
    for (i, (text, grid, key)) in cases.iter().enumerate() {
        let cfg = dir.join(format!("c{i}.toml"));
        std::fs::write(&cfg, text).unwrap();
        let sub = dir.join(format!("o{i}"));
        std::fs::create_dir_all(&sub).unwrap();
        let (run_err, point_err) = run_and_sweep_errors(&cfg, grid, &sub);
        let sets = if text.contains("requests = ") {
            format!("--set workload.requests=400 --set {grid}")
        } else {
            format!("--set {grid}")
        };
        let head = format!("{} (with {sets}):", cfg.display());
        assert!(run_err.starts_with(&head), "{run_err}");
        let line: usize = run_err[head.len()..]
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("no line in {run_err}"));
        assert!(
            run_err[head.len()..].starts_with(&format!("{line}: {key}")),
            "{run_err}"
        );
        assert_eq!(
            point_err,
            run_err.replace(&format!("--set {grid}"), &format!("--grid {grid}")),
            "case {i}"
        );
    }
}

/// A device `run` refuses for memory is refused by a sweep point with the same message
/// (and `--allow-large-memory` is the sweep's way past it).
#[test]
fn sweep_refuses_what_runs_memory_check_refuses() {
    let Some((dir, cfg)) = huge_device("sweep-memory") else {
        return;
    };
    let (run_err, point_err) = run_and_sweep_errors(&cfg, "seed=1", &dir);
    assert!(
        run_err.starts_with(&format!("{}: the device needs about ", cfg.display()))
            && run_err.ends_with("; shrink it or pass --allow-large-memory"),
        "{run_err}"
    );
    // The same words and figures but the machine's available memory, read by each
    // command anew (other processes move it by a tenth of a GiB).
    let available = |e: &str| {
        let (a, b) = e.split_once(" GiB this machine has").unwrap_or((e, ""));
        (
            a.rsplit_once("the ").map(|x| x.0).unwrap_or(a).to_string(),
            b.to_string(),
        )
    };
    assert_eq!(available(&point_err), available(&run_err));
}

/// Ctrl-C during `sweep`: the running points stop, no table is written (it would look
/// complete), exit 130 with one line saying what was kept.
#[test]
fn ctrl_c_stops_a_sweep_without_a_table() {
    let dir = temp_dir("sweep-ctrl-c");
    let cfg = dir.join("long.toml");
    std::fs::write(
        &cfg,
        SMALL.replace("requests = 3000", "requests = 100000000"),
    )
    .unwrap();
    let out = dir.join("out");
    let mut child = Child(
        ssdlab()
            .arg("sweep")
            .arg(&cfg)
            .args(["--grid", "seed=1,2", "--jobs", "2", "-q", "--out"])
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let t0 = std::time::Instant::now();
    while !out.join("points/0.partial").exists() && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the sweep ended early"
    );
    let (status, err) = interrupt(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("interrupted by Ctrl-C (SIGINT): no table written"),
        "{err}"
    );
    assert!(!out.join("sweep.csv").exists());
    assert!(!out.join("sweep.parquet").exists());
    assert!(!out.join("points/0.partial").exists());
}

/// Every `reproduce` experiment takes the shared arguments (one flattened struct) with the
/// same help, word for word.
#[test]
fn reproduce_experiments_share_their_common_arguments() {
    let shared = [
        "--out <OUT> Output directory for EXPERIMENT.md, .csv, .json and .svg (default: out/reproduce-EXPERIMENT)",
        "--jobs <JOBS> Runs in parallel, each holding its own device (0 = one per core; default: 2, for `op` one per core)",
        "--seed <SEED> Override the preset's seed",
        "-q, --quiet No per-run progress lines on stderr",
        "--set <KEY=VALUE> Override a key of the experiment's base configuration (as `run --set`); repeatable",
    ];
    for exp in [
        "op", "ssr", "wl", "dftl", "slc", "mq", "zns", "fdp", "retry",
    ] {
        let o = ssdlab()
            .args(["reproduce", exp, "--help"])
            .output()
            .unwrap();
        assert!(o.status.success());
        let help = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for s in shared {
            assert!(help.contains(s), "{exp}: {s}\n{help}");
        }
    }
}

/// 128 KiB reads of a fresh device (configs/serve-small.toml): every byte crosses the host
/// data path, so MB/s stay within `device.host_transfer_mb_per_s` (they were "2,097,152
/// MB/s", read p50 1 µs); the summary warns that the units read were never written; and
/// timeseries.csv (rate × interval, the last, partial interval included) sums to the
/// requests counted (it left out up to a quarter of a short run's requests).
#[test]
fn reads_of_a_fresh_device_are_bounded_and_said() {
    let dir = temp_dir("fresh-reads");
    let out_dir = dir.join("out");
    let out = ssdlab()
        .arg("run")
        .arg(repo().join("configs/serve-small.toml"))
        .args([
            "--set",
            "workload.block_size_bytes=131072",
            "--set",
            "workload.requests=3000",
            "--set",
            "output.timeseries_interval_ns=10000000",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--quiet")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("warning (unwritten_reads): ")
            && stdout.contains("% of the units read were never written"),
        "{stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(v["audit"]["verdict"], "warnings");
    assert_eq!(v["audit"]["errors"], 0);
    assert!(
        v["host"]["mb_per_s"].as_f64().unwrap() <= 7877.0,
        "{}",
        v["host"]
    );
    // timeseries.csv as an outside reader sums it.
    let csv = std::fs::read_to_string(out_dir.join("timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (t, ri, wi) = (col("time_ns"), col("read_iops"), col("write_iops"));
    let (mut prev, mut reads, mut writes, mut last) = (0u64, 0.0, 0.0, 0u64);
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let now: u64 = f[t].parse().unwrap();
        let secs = (now - prev) as f64 / 1e9;
        reads += f[ri].parse::<f64>().unwrap() * secs;
        writes += f[wi].parse::<f64>().unwrap() * secs;
        prev = now;
        last = now;
    }
    let host = &v["host"];
    assert!(
        (reads - host["reads"].as_f64().unwrap()).abs() < 0.01,
        "{reads} {host}"
    );
    assert!(
        (writes - host["writes"].as_f64().unwrap()).abs() < 0.01,
        "{writes} {host}"
    );
    assert_eq!(last, host["sim_time_ns"].as_u64().unwrap());
}
