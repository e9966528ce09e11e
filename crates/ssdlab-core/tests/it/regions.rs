//! Block regions: layout and validation, a cache region in SLC mode in front of a TLC data
//! region (placement `cache-first`, the cache's GC relocating into the data region), and
//! multi-plane batches that never mix cell modes.

use crate::common;
use ssdlab_core::flash::ids::Lpn;

use common::{closed, flush, req};
use ssdlab_core::config::{Mode, RegionContent};
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::HostOp;

/// 1 die × 2 planes × 20 blocks × 12 TLC pages of 8 KiB (2 units): an SLC cache of 4 blocks
/// per plane (4 pages each) in front of a 16-block TLC data region.
fn hybrid(mode: Mode, extra: &str) -> Config {
    let text = format!(
        r#"
seed = 2
mode = "{}"
integrity = true
[device]
cell_mode = "tlc"
over_provisioning_ratio = 1.0
command_overhead_ns = 1000
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 20
pages_per_block = 12
page_size_bytes = 8192
[ftl]
placement = {{ policy = "cache-first" }}
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
write_buffer_bytes = 65536
{extra}
[[ftl.regions]]
name = "slc"
content = "cache"
cell_mode = "slc"
blocks_per_plane = 4
gc = {{ policy = "fifo" }}
[[ftl.regions]]
name = "data"
"#,
        if mode == Mode::Timed {
            "timed"
        } else {
            "functional"
        }
    );
    Config::from_toml_str(&text, "hybrid").unwrap()
}

#[test]
fn layout_sizes_and_costs() {
    let d = hybrid(Mode::Functional, "").validate().unwrap();
    let (slc, data) = (&d.regions[0], &d.regions[1]);
    assert_eq!((slc.first_index, slc.blocks_per_plane), (0, 4));
    assert_eq!((data.first_index, data.blocks_per_plane), (4, 16));
    assert_eq!(slc.pages_per_block, 4, "a third of the TLC pages");
    assert_eq!(slc.physical_bytes * 3, slc.native_bytes, "SLC costs 3x");
    assert_eq!(slc.relocate_to, 1, "a cache drains into the data region");
    assert_eq!(data.content, RegionContent::Data);
    // The logical capacity comes from the data region alone: 2 × 16 × 24 units / 2.
    assert_eq!(d.logical_units, 384);
    assert_eq!(d.data_region, 1);
}

#[test]
fn region_errors_name_the_key() {
    let mut c = hybrid(Mode::Functional, "");
    c.ftl.regions[0].content = RegionContent::Data;
    c.ftl.regions[0].blocks_per_plane = Some(8);
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.starts_with("ftl.regions") && e.contains("exactly one region may hold data"),
        "{e}"
    );
    let mut c = hybrid(Mode::Functional, "");
    c.ftl.regions[0].relocate_to = Some("nowhere".into());
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.starts_with("ftl.regions[0].relocate_to") && e.contains("nowhere"),
        "{e}"
    );
    let mut c = hybrid(Mode::Functional, "");
    c.ftl.regions[0].blocks_per_plane = Some(20);
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("leaving none"), "{e}");
    let mut c = hybrid(Mode::Functional, "");
    c.ftl.placement = Default::default();
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.starts_with("ftl.placement") && e.contains("cache-first"),
        "{e}"
    );
    let mut c = hybrid(Mode::Functional, "");
    c.ftl.regions[0].cell_mode = Some(ssdlab_core::config::CellMode::Qlc);
    let e = c.validate().unwrap_err().to_string();
    assert!(e.starts_with("ftl.regions[0].cell_mode"), "{e}");
}

/// Region of the block holding `lpn`.
fn region_of(sim: &Simulation, lpn: u32) -> u8 {
    let slot = sim.ftl.media().slot_of(Lpn(lpn));
    sim.ftl.media().blocks().region[sim.ftl.geometry().block_of_slot(slot).idx()]
}

#[test]
fn cache_takes_writes_then_drains_into_data() {
    let mut sim = Simulation::new(hybrid(Mode::Functional, "")).unwrap();
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    // The cache holds 2 planes × 4 blocks × 8 units; host writes stop one block short of
    // the GC reserve. 20 units fit.
    for lpn in 0..20 {
        d.write_unit(lpn).unwrap();
    }
    d.flush().unwrap();
    assert_eq!(d.ftl.counters().gc_copied_units, 0);
    assert!(
        (0..20).all(|l| region_of(&sim, l) == 0),
        "all in the SLC cache"
    );
    // Keep writing: the cache's GC moves what is valid into the data region, and host
    // pages go straight to the data region while the cache is at its reserve.
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for i in 0..400u32 {
        d.write_unit((i * 7) % 384).unwrap();
    }
    d.flush().unwrap();
    for lpn in 0..384 {
        d.submit(&req(HostOp::Read, lpn as u64, 1)).unwrap();
    }
    d.ftl.check_invariants().unwrap();
    let c = d.ftl.counters();
    assert!(c.gc_copied_units > 0, "cache GC relocated data");
    let in_data = (0..384)
        .filter(|&l| sim.ftl.media().is_mapped(Lpn(l)) && region_of(&sim, l) == 1)
        .count();
    assert!(in_data > 300, "{in_data} units in the data region");
    let r = sim.region_summaries();
    assert_eq!((r[0].name.as_str(), r[1].name.as_str()), ("slc", "data"));
    assert_eq!(
        r[0].valid_units + r[1].valid_units,
        sim.ftl.media().mapped_units(),
        "every mapped unit lives in one region"
    );
}

#[test]
fn hybrid_device_keeps_integrity_in_timed_mode() {
    let mut sim = Simulation::new(hybrid(Mode::Timed, "")).unwrap();
    let mut reqs = Vec::new();
    for i in 0..3000u64 {
        let lpn = (i * 37) % 384;
        reqs.push(req(
            if i % 4 == 0 {
                HostOp::Read
            } else {
                HostOp::Write
            },
            lpn,
            1,
        ));
    }
    reqs.push(flush());
    let r = sim
        .run_workload_with(closed(reqs, 4), &mut NoProgress)
        .unwrap();
    assert!(r.gc.invocations > 10);
    assert!(r.integrity.unwrap().checked_reads > 500);
    sim.ftl.check_invariants().unwrap();
    assert!(r.regions[0].physical_bytes < r.regions[1].physical_bytes);
}
