//! Spec 03 wear leveling on a scaled-down Table-2 device (256 blocks of 64 pages, endurance
//! 150, trace 1: the central 15 % of addresses get 85 % of the writes), run to failure.

use ssdlab_core::{Config, NoProgress, Results, RunStatus};

fn device(wear: &str, allocation: &str, integrity: bool) -> Config {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/wl-table2.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("blocks_per_plane = 2048", "blocks_per_plane = 256")
        .replace("gc_soft_free_blocks = 102", "gc_soft_free_blocks = 13")
        .replace("endurance_pe_cycles = 10000", "endurance_pe_cycles = 150")
        .replace("requests = 10000000", "until = \"failure\"")
        .replace(
            "wear_leveling = { policy = \"none\" }",
            &format!("wear_leveling = {wear}"),
        )
        .replace(
            "allocation = { policy = \"fifo\" }",
            &format!("allocation = {allocation}"),
        )
        .replace("integrity = false", "");
    let mut c = Config::from_toml_str(&text, path).unwrap();
    c.integrity = integrity;
    c
}

fn to_failure(wear: &str, allocation: &str) -> Results {
    let r = ssdlab_core::run(device(wear, allocation, false), &mut NoProgress).unwrap();
    assert_eq!(r.status, RunStatus::WornOut, "{wear}");
    r
}

fn first_bad_writes(r: &Results) -> u64 {
    r.lifetime
        .first_bad_block
        .as_ref()
        .unwrap()
        .host_write_units
}

const GA: &str = r#"{ policy = "none" }"#;
const FIFO: &str = r#"{ policy = "fifo" }"#;
const MIN_ERASE: &str = r#"{ policy = "min-erase" }"#;

#[test]
fn epet_outlives_pet_which_outlives_greedy() {
    let ga = to_failure(GA, FIFO);
    let pet = to_failure(r#"{ policy = "pet", th_percent = 90 }"#, FIFO);
    let epet = to_failure(r#"{ policy = "epet", th_percent = 90 }"#, MIN_ERASE);
    let (g, p, e) = (
        first_bad_writes(&ga),
        first_bad_writes(&pet),
        first_bad_writes(&epet),
    );
    assert!(
        e > p && p > g,
        "first bad after host writes: epet {e}, pet {p}, ga {g}"
    );
    // EPET's first bad block comes close to the failure (spec 03: the gap nearly closes).
    let gap = |r: &Results| {
        let f = r.lifetime.failure.as_ref().unwrap().host_write_units;
        (f - first_bad_writes(r)) as f64 / f as f64
    };
    assert!(
        gap(&epet) < gap(&ga),
        "gap epet {} ga {}",
        gap(&epet),
        gap(&ga)
    );
    assert!(epet.nand.programs.wear_leveling > 0 && ga.nand.programs.wear_leveling == 0);
}

#[test]
fn min_erase_allocation_evens_wear_and_closes_the_gap() {
    // Same host writes, well before any block wears out: the rotation through free blocks
    // is even under min-erase, so the spread is smaller.
    let spread = |allocation: &str| {
        let mut c = device(GA, allocation, false);
        if let ssdlab_workload::WorkloadConfig::Synthetic(s) = &mut c.workload {
            s.until = ssdlab_workload::synthetic::Until::Limits;
            s.requests = 300_000;
        }
        let r = ssdlab_core::run(c, &mut NoProgress).unwrap();
        assert_eq!(r.status, RunStatus::Completed);
        r.wear.erase_count_stddev
    };
    let (fifo, min) = (spread(FIFO), spread(MIN_ERASE));
    assert!(
        min < fifo,
        "erase-count stddev: min-erase {min}, fifo {fifo}"
    );
    // To failure: worn blocks are used last, so the first bad block comes near the end.
    let gap = |r: &Results| {
        let f = r.lifetime.failure.as_ref().unwrap().host_write_units;
        (f - first_bad_writes(r)) as f64 / f as f64
    };
    let (fifo, min) = (to_failure(GA, FIFO), to_failure(GA, MIN_ERASE));
    assert!(
        gap(&min) < gap(&fifo) / 2.0,
        "gap {} vs {}",
        gap(&min),
        gap(&fifo)
    );
    assert!(first_bad_writes(&min) > first_bad_writes(&fifo));
}

/// Every unit written is read back at its newest version through migrations and block
/// retirements, for every wear leveler (integrity mode checks each read).
#[test]
fn no_unit_is_lost_through_migrations_and_retirement() {
    for wear in [
        r#"{ policy = "dual-pool", threshold = 4 }"#,
        r#"{ policy = "bet", threshold = 4 }"#,
        r#"{ policy = "adaptive", min_bound = 2, max_bound = 8, window_erases = 64 }"#,
        r#"{ policy = "pet", th_percent = 60 }"#,
        r#"{ policy = "epet", th_percent = 60 }"#,
    ] {
        let mut c = device(wear, MIN_ERASE, true);
        if let ssdlab_workload::WorkloadConfig::Synthetic(s) = &mut c.workload {
            s.read_percent = 30.0;
        }
        let r = ssdlab_core::run(c, &mut NoProgress).unwrap();
        assert_eq!(r.status, RunStatus::WornOut, "{wear}");
        assert!(r.nand.programs.wear_leveling > 0, "{wear} never migrated");
        assert!(r.lifetime.retired_blocks > 0, "{wear}");
        let i = r.integrity.as_ref().expect("integrity summary");
        assert!(i.checked_reads > 20_000 && i.errors == 0, "{wear}: {i:?}");
    }
}
