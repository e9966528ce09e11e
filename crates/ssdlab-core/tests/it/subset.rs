//! Regions on plane subsets (region key `planes`) and partial-page programs
//! (`partial_programs_per_page`), issue 48 item 4: exact layouts and counts on tiny devices.

use ssdlab_core::flash::ids::{Lpn, PlaneId};
use ssdlab_core::flash::OpKind;
use ssdlab_core::sim::functional::SerialClock;
use ssdlab_core::{Config, NoProgress, Simulation};

/// Two planes of TLC with SLC 5× faster (as tests/it/slc.rs): a data region, an 8-block SLC
/// buffer on plane 0 only and an 8-block journal region on plane 1 only.
fn split_device() -> Config {
    let text = r#"
seed = 4
mode = "functional"
integrity = true
[device]
cell_mode = "tlc"
over_provisioning_ratio = 0.07
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 214
pages_per_block = 48
page_size_bytes = 16384
mapping_unit_bytes = 4096
[device.timing.slc]
read_ns = 20000
program_ns = 200000
erase_loop_ns = 2000000
erase_loops = [[0, 1]]
endurance_pe_cycles = 100000
partial_programs_per_page = 4
[ftl]
placement = { policy = "slc-journal", min_journal_bytes = 262144 }
gc_soft_free_blocks = 3
gc_hard_free_blocks = 1
idle_gc_after_ns = 1000000
regions = [{ name = "data", content = "data" }, { name = "slc", content = "cache", cell_mode = "slc", blocks_per_plane = 8, drain_when_idle = true, gc_soft_free_blocks = 1, gc_hard_free_blocks = 1, planes = [0] }, { name = "journal", content = "journal", cell_mode = "slc", blocks_per_plane = 8, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1, planes = [1] }]
[precondition]
enabled = false
[workload]
kind = "ext4"
mode = "data"
app = "fio"
journal_bytes = 1048576
fsync_every = 4
requests = 30000
"#;
    Config::from_toml_str(text, "subset-test").unwrap()
}

/// The layout: the data region keeps 206 blocks of each plane (indexes 0..206), the
/// buffer indexes 206..214 of plane 0 only, the journal 206..214 of plane 1 only. A run
/// writes (and reuses) the journal region on plane 1 only, and the buffer on plane 0.
#[test]
fn a_subset_region_has_blocks_and_gc_only_on_its_planes() {
    let c = split_device();
    let d = c.validate().unwrap();
    assert_eq!(d.regions[0].blocks_per_plane, 206);
    assert_eq!(d.regions[0].blocks, 412);
    let (buf, jr) = (&d.regions[1], &d.regions[2]);
    assert_eq!((buf.blocks, jr.blocks), (8, 8));
    assert_eq!((buf.plane_range(0), buf.plane_range(1)), (206..214, 0..0));
    assert_eq!((jr.plane_range(0), jr.plane_range(1)), (0..0, 206..214));
    assert_eq!(jr.planes, vec![1]);

    let mut sim = Simulation::new(c).unwrap();
    sim.run_workload(&mut NoProgress).unwrap();
    sim.ftl.check_invariants().unwrap();
    let m = sim.ftl.media();
    for (r, on, off) in [(1u8, 0u32, 1u32), (2, 1, 0)] {
        let off_state = m.plane_state(r, PlaneId(off));
        assert_eq!(
            (
                off_state.usable_blocks,
                off_state.host_units,
                off_state.free.len()
            ),
            (0, 0, 0),
            "region {r} on plane {off}"
        );
        let hu = m.plane_state(r, PlaneId(on)).host_units;
        assert!(hu > 400, "region {r}: {hu}");
        let region = &m.regions()[r as usize];
        assert!(region.plane_blocks(off).is_empty());
        let erased: u32 = region
            .plane_blocks(on)
            .map(|b| m.erase_counts()[b as usize])
            .sum();
        assert!(
            r == 1 || erased > 0,
            "region {r}: its blocks on plane {on} were reused"
        );
    }
    // No block of plane 0 belongs to the journal region, none of plane 1 to the buffer.
    let g = m.geometry();
    for b in 0..g.blocks {
        let plane = b / g.blocks_per_plane;
        let region = m.blocks().region[b as usize];
        assert!(
            !(region == 2 && plane == 0 || region == 1 && plane == 1),
            "block {b}"
        );
    }
    assert_eq!(sim.ftl.counters().relocated_units_by_region[2], 0);
}

/// The subset regions must take as many blocks of every plane; a region on some planes
/// needs a size; the data region is on every plane; plane ids exist.
#[test]
fn subset_region_errors_name_the_key() {
    type Change = fn(&mut Config);
    let cases: [(Change, &str); 4] = [
        (
            |c| c.ftl.regions[1].planes = Some(vec![0, 1]),
            "ftl.regions",
        ),
        (
            |c| c.ftl.regions[2].planes = Some(vec![2]),
            "ftl.regions[2].planes",
        ),
        (
            |c| c.ftl.regions[2].planes = Some(vec![]),
            "ftl.regions[2].planes",
        ),
        (
            |c| c.ftl.regions[0].planes = Some(vec![0]),
            "ftl.regions[0].planes",
        ),
    ];
    for (change, key) in cases {
        let mut c = split_device();
        change(&mut c);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

/// One SLC plane, 4 units a page, NOP `nop`: host pages of 1, 1, 1, 1, 2 and 3 units.
/// NOP 4: the first four share a page (4 programs, 3 of them appends, no padding); 2
/// units open the next page, and 3 do not fit beside them (2 slots padding): 3 pages,
/// 6 programs. NOP 1: 6 pages, 15 slots padding.
fn nop_case(nop: u32) -> (ssdlab_core::ftl::FtlCounters, u32, [u32; 2]) {
    let text = format!(
        r#"
mode = "functional"
[device]
cell_mode = "slc"
over_provisioning_ratio = 0.5
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 1
blocks_per_plane = 16
pages_per_block = 8
page_size_bytes = 16384
mapping_unit_bytes = 4096
[device.timing.slc]
read_ns = 20000
program_ns = 200000
erase_loop_ns = 2000000
erase_loops = [[0, 1]]
endurance_pe_cycles = 100000
partial_programs_per_page = {nop}
[precondition]
enabled = false
"#
    );
    let mut sim = Simulation::new(Config::from_toml_str(&text, "nop").unwrap()).unwrap();
    let mut clock = SerialClock::new(sim.ftl.timing());
    for (i, lpns) in [&[1u32][..], &[2], &[3], &[4], &[5, 6], &[7, 8, 9]]
        .iter()
        .enumerate()
    {
        let plane = sim
            .ftl
            .write_host_page(0, lpns, &[], i as u32, &mut clock, |_| true)
            .unwrap();
        assert_eq!(plane, Some(0));
    }
    sim.ftl.check_invariants().unwrap();
    let m = sim.ftl.media();
    let block = m.geometry().block_of_slot(m.slot_of(Lpn(1)));
    let next = m.blocks().next_page[block.idx()];
    let slots = [
        m.slot_of(Lpn(2)).0 - m.slot_of(Lpn(1)).0,
        m.slot_of(Lpn(7)).0 - m.slot_of(Lpn(5)).0,
    ];
    (*sim.ftl.counters(), next, slots)
}

#[test]
fn partial_page_programs_share_a_page_and_count_exactly() {
    let (c, next, slots) = nop_case(4);
    assert_eq!(c.nand.total(OpKind::Program), 6);
    assert_eq!(c.partial_programs, 3);
    assert_eq!(c.host_units_programmed, 9);
    assert_eq!(c.padding_units, 2);
    assert_eq!(next, 3, "pages taken");
    assert_eq!(slots, [1, 4], "lpn 2 beside lpn 1; lpn 7 on the next page");
    let (c, next, slots) = nop_case(1);
    assert_eq!(c.nand.total(OpKind::Program), 6);
    assert_eq!(c.partial_programs, 0);
    assert_eq!(c.padding_units, 15);
    assert_eq!(next, 6);
    assert_eq!(slots, [4, 4]);
}

/// Power cuts refuse partial-page programs (a power-on scan cannot tell a page's later
/// partial programs in flight at the cut); NOP is 1 to units per page.
#[test]
fn partial_programs_are_validated_and_refused_with_power_cuts() {
    let mut c = split_device();
    let e = ssdlab_core::ftl::power_cut_supported(&c)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("device.timing.slc.partial_programs_per_page"),
        "{e}"
    );
    c.device.timing.slc.partial_programs_per_page = 5;
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("device.timing.slc.partial_programs_per_page"),
        "{e}"
    );
    c.device.timing.slc.partial_programs_per_page = 1;
    assert!(ssdlab_core::ftl::power_cut_supported(&c).is_ok());
}
