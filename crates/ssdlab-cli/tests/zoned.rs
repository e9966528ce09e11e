//! The `ssdlab` binary on zoned and FDP devices: the user's figures in sweeps and run
//! summaries (a host layer's relocations apart), the FDP summary line, and refusals at
//! check time (fio `zonemode=zbd` below the mapping unit, `op-advise` on a zoned device).

use std::path::{Path, PathBuf};
use std::process::Command;

fn ssdlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ssdlab"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A test's scratch directory, removed when the test ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("ssdlab-zoned-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `configs/zns.toml` cut to 32 blocks per plane (120 zones of 1 MiB) with uniform
/// random writes: the host layer's GC runs hard within 40,000 requests.
const SMALL_ZNS: [&str; 8] = [
    "--set",
    "device.geometry.blocks_per_plane=32",
    "--set",
    "workload.inner.pattern=\"uniform\"",
    "--set",
    "workload.inner.placement_by_temperature=false",
    "--set",
    "workload.inner.requests=40000",
];

/// A sweep of the host layer's spare on a zoned device: `mb_per_s` (the device's: every
/// byte the layer sent, its relocations included) is higher with less spare, the user's
/// throughput lower; the host and total WAF columns give the layer's amplification (the
/// device's `waf` is 1: it never copies). Before, the sweep had only the device's columns
/// (84.1 vs 78.2 MB/s, WAF 1.0000, where the user got 12.2 vs 24.5 MB/s).
#[test]
fn a_zoned_sweep_gives_the_users_throughput_and_the_host_and_total_waf() {
    let dir = temp_dir("sweep");
    let out = ssdlab()
        .arg("sweep")
        .arg(repo().join("configs/zns.toml"))
        .args(["--grid", "workload.spare_ratio=0.1,0.3", "--quiet"])
        .args(SMALL_ZNS)
        .arg("--out")
        .arg(&dir.0)
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let csv = std::fs::read_to_string(dir.0.join("sweep.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .map(|v| v.parse::<f64>().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let get = |row: usize, name: &str| rows[row][col(name)];
    // Less spare: the device moves more bytes, the user gets fewer.
    assert!(get(0, "mb_per_s") > get(1, "mb_per_s"), "{csv}");
    assert!(get(0, "user_mb_per_s") < get(1, "user_mb_per_s"), "{csv}");
    assert!(
        get(0, "host_waf") > get(1, "host_waf") && get(1, "host_waf") > 1.2,
        "{csv}"
    );
    for row in 0..2 {
        // No device GC: every unit programmed once, but for the units a run's end leaves
        // in the zone buffers (protected, not programmed) or a reset dropped there.
        assert!(get(row, "waf") <= 1.0 && get(row, "waf") > 0.99, "{csv}");
        let product = get(row, "host_waf") * get(row, "waf");
        assert!((get(row, "total_waf") - product).abs() < 1e-3, "{csv}");
        assert!(get(row, "user_mb_per_s") < get(row, "mb_per_s"), "{csv}");
    }
    // The same columns in the Parquet table.
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = std::fs::File::open(dir.0.join("sweep.parquet")).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let names: Vec<String> = r
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    for c in ["user_mb_per_s", "host_waf", "total_waf"] {
        assert!(names.iter().any(|n| n == c), "{names:?}");
    }
    // Each point's results.json holds the user's figures, and they add up with the
    // device's: user writes + relocations = device writes; user reads less the unwritten
    // part + relocation reads = device reads.
    for p in 0..2 {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.0.join(format!("points/{p}/results.json"))).unwrap(),
        )
        .unwrap();
        let n = |a: &str, b: &str| v[a][b].as_u64().unwrap();
        let gc = n("workload", "host_gc_write_bytes");
        assert_eq!(n("user", "write_bytes") + gc, n("host", "write_bytes"));
        assert_eq!(
            n("user", "read_bytes") - n("user", "unmapped_read_bytes") + gc,
            n("host", "read_bytes")
        );
    }
}

/// The run summary of a host layer's run heads its throughput line with the user's
/// figure, the device's beside it.
#[test]
fn a_host_layer_runs_summary_gives_the_users_throughput_first() {
    let dir = temp_dir("run");
    let out = ssdlab()
        .arg("run")
        .arg(repo().join("configs/zns.toml"))
        .args(SMALL_ZNS)
        .arg("--out")
        .arg(&dir.0)
        .output()
        .unwrap();
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("throughput:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("MB/s for the user") && line.contains("the device:"),
        "{line}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("results.json")).unwrap())
            .unwrap();
    let user = v["user"]["mb_per_s"].as_f64().unwrap();
    assert!(
        line.starts_with(&format!("throughput: {user:.1} MB/s for the user")),
        "{line} vs {user}"
    );
    assert!(user < v["host"]["mb_per_s"].as_f64().unwrap());
}

/// An FDP run's summary has a line of its own: handles, placement ids, host units per
/// handle, refused writes.
#[test]
fn an_fdp_runs_summary_has_an_fdp_line() {
    let dir = temp_dir("fdp");
    let out = ssdlab()
        .arg("run")
        .arg(repo().join("configs/default.toml"))
        .args([
            "--set",
            "workload.requests=3000",
            "--set",
            "workload.read_percent=0",
            "--set",
            "workload.pattern=\"hot-cold\"",
            "--set",
            "workload.placement_by_temperature=true",
            "--set",
            "device.fdp={ handles = 2 }",
            "--set",
            "precondition.enabled=false",
            "--out",
        ])
        .arg(&dir.0)
        .output()
        .unwrap();
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("FDP:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("results.json")).unwrap())
            .unwrap();
    let per = v["fdp"]["host_units_per_handle"].as_array().unwrap();
    let (a, b) = (per[0].as_u64().unwrap(), per[1].as_u64().unwrap());
    assert!(a > 0 && b > 0, "{per:?}");
    assert!(
        line.starts_with("FDP: 2 handles, 2 placement ids; host units per handle ")
            && line.contains(&format!("{a} ("))
            && line.contains(&format!("{b} ("))
            && line.ends_with("0 writes refused (unknown placement id)"),
        "{line}"
    );
}

/// A fio `zonemode=zbd` job whose writes are smaller than the mapping unit would lose
/// every write (the device refuses them: a run of resets only): `config check` refuses it,
/// naming the job file, its line and the option.
#[test]
fn config_check_refuses_a_zbd_job_below_the_mapping_unit() {
    let dir = temp_dir("zbd");
    std::fs::write(
        dir.0.join("z.fio"),
        "[z]\nzonemode=zbd\nrw=randwrite\nbs=4k\nio_size=64m\n",
    )
    .unwrap();
    let cfg = std::fs::read_to_string(repo().join("configs/zns.toml")).unwrap();
    let cfg = cfg[..cfg.find("[workload]").unwrap()].to_string()
        + "[workload]\nkind = \"fio\"\npath = \"z.fio\"\n";
    std::fs::write(dir.0.join("c.toml"), cfg).unwrap();
    let out = ssdlab()
        .args(["config", "check"])
        .arg(dir.0.join("c.toml"))
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("z.fio:4:") && err.contains("bs") && err.contains("16384 bytes"),
        "{err}"
    );
}

/// `op-advise` sizes a conventional device's OP; on a zoned device it says why not (it
/// used to pick an OP it then could not simulate, exit 0).
#[test]
fn op_advise_refuses_a_zoned_device() {
    let out = ssdlab()
        .arg("op-advise")
        .arg(repo().join("configs/zns.toml"))
        .args(["--max-waf", "3", "--cost-per-gb", "0.08"])
        .output()
        .unwrap();
    let (stdout, err) = text(&out);
    assert!(!out.status.success(), "{stdout}{err}");
    assert!(
        err.contains("device.zns") && err.contains("workload.spare_ratio"),
        "{err}"
    );
    assert!(!stdout.contains("OP advisor"), "{stdout}");
}

/// `config show` of a zoned device gives its zones (count, size, capacity, user capacity
/// of the host layer) and the zone buffers' power-loss protection as in effect.
#[test]
fn config_show_of_a_zoned_device_gives_its_zones() {
    let out = ssdlab()
        .args(["config", "show"])
        .arg(repo().join("configs/zns.toml"))
        .output()
        .unwrap();
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    for want in [
        "power_loss_protection = true",
        "# [zones]",
        "# zones = 1016",
        "# zone_bytes = 1048576",
        "# zone_capacity_bytes = 1048576",
        "# capacity_bytes = 1065353216",
        // floor(1016 MiB / 1.28), whole 16 KiB units.
        "# host_layer_user_bytes = 832307200",
        "# power_loss_protected_buffers = true",
    ] {
        assert!(stdout.contains(want), "{want}:\n{stdout}");
    }
    assert!(
        !stdout.contains("power_loss_protection = false"),
        "{stdout}"
    );
}
