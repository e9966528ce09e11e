//! Golden `results.json` snapshots of three small configurations (timed, functional, an
//! MSR trace): any change in behaviour shows up as a diff here. When a change is
//! deliberate, regenerate them with `SSDLAB_UPDATE_GOLDEN=1 cargo test -p ssdlab-core --test it golden` and
//! say why in the commit.

use ssdlab_core::{Config, NoProgress, Simulation};
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// A deterministic MSR Cambridge trace: bursts of 4-64 KiB requests, 60 % writes, with
/// idle gaps of 5 ms between bursts.
fn write_trace(dir: &Path) {
    let mut s = String::from("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut t: u64 = 128_166_372_000_000_000; // Windows filetime, 100 ns ticks
    for i in 0..6000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t += if i % 50 == 49 { 50_000 } else { 200 + x % 300 };
        let kind = if x % 10 < 6 { "Write" } else { "Read" };
        let size = 4096 << ((x >> 20) % 5);
        let offset = (x >> 8) % (60 << 20) / 4096 * 4096;
        s.push_str(&format!("{t},hm,0,{kind},{offset},{size},10\n"));
    }
    std::fs::write(dir.join("trace.csv"), s).unwrap();
}

fn check(name: &str) {
    let dir = golden_dir();
    let cfg = Config::from_file(&dir.join(format!("{name}.toml"))).unwrap();
    let mut sim = Simulation::new(cfg).unwrap();
    if name == "trace" {
        let tmp = std::env::temp_dir().join(format!("ssdlab-golden-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        write_trace(&tmp);
        sim.base_dir = Some(tmp);
    }
    sim.precondition(&mut NoProgress).unwrap();
    let r = sim.run_workload(&mut NoProgress).unwrap();
    if name == "trace" {
        let _ = std::fs::remove_dir_all(sim.base_dir.as_ref().unwrap());
    }
    let got = serde_json::to_string_pretty(&r).unwrap() + "\n";
    let path = dir.join(format!("{name}.json"));
    if std::env::var_os("SSDLAB_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with SSDLAB_UPDATE_GOLDEN=1)", path.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{name}: results differ from {} from line {}:\n  got:  {}\n  want: {}\n(if the change is deliberate, regenerate with SSDLAB_UPDATE_GOLDEN=1 and say why)",
            path.display(),
            line + 1,
            got.lines().nth(line).unwrap_or(""),
            want.lines().nth(line).unwrap_or("")
        );
    }
}

#[test]
fn golden_timed() {
    check("timed");
}

#[test]
fn golden_functional() {
    check("functional");
}

#[test]
fn golden_trace() {
    check("trace");
}
