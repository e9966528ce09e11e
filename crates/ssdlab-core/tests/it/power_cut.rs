//! Power cuts: the next power-on rebuilds the FTL from the OOB of what was durably
//! programmed (`Ftl::recover`). A hand-checked functional case with exact counts; random
//! cut points in a timed phase driven event by event; unsupported configurations.

use crate::common;
use ssdlab_core::flash::ids::Lpn;

use common::{closed, flush, req};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use ssdlab_core::config::{Config, Mode};
use ssdlab_core::flash::{BlockState, CellState, OpKind};
use ssdlab_core::ftl::{power_cut_supported, Ftl, RecoverySummary};
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::sim::timed::{Completion, TimedSim};
use ssdlab_core::{NoProgress, SimError};
use ssdlab_workload::rng::SimRng;
use ssdlab_workload::{HostOp, HostRequest};
use std::collections::{BTreeSet, HashMap};

/// The core's tiny test device (`testutil::TINY_TOML`) with pages of 4 units: 1 die,
/// 2 planes × 8 blocks × 4 pages.
const TINY4_TOML: &str = r#"
seed = 7
integrity = true
[device]
over_provisioning_ratio = 2.0
channel_rate_mb_per_s = 800
command_overhead_ns = 0
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 8
pages_per_block = 4
page_size_bytes = 16384
mapping_unit_bytes = 4096
[ftl]
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
write_buffer_bytes = 32768
"#;

fn unit_bytes(tag: u32) -> Vec<u8> {
    vec![tag as u8; 4096]
}

/// Units 0..6 written and flushed (two pages: one full, one padded), then units 0 and 1
/// rewritten without a flush (they wait in the one-page packer): the recovery maps exactly
/// the flushed versions, scans exactly the two programmed pages, and a second recovery
/// finds the same; the recovered device then takes a workload with GC and integrity checks.
#[test]
fn recovery_maps_exactly_the_flushed_versions() {
    let c = Config::from_toml_str(TINY4_TOML, "tiny").unwrap();
    let d = c.validate().unwrap();
    let mut ftl = Ftl::new(&c, &d).unwrap();
    ftl.store_data().unwrap();
    {
        let mut drv = FunctionalDriver::new(&mut ftl);
        for (tag, lpn) in (1..).zip([0u32, 1, 2, 3, 4, 5, 0, 1]) {
            drv.ftl
                .data_mut()
                .unwrap()
                .put_payload(tag, lpn as u64 * 4096, unit_bytes(tag));
            drv.write_unit_tagged(lpn, tag).unwrap();
            if lpn == 5 {
                drv.flush().unwrap(); // versions 1..=6 durable
            }
        }
        // Versions 7 (unit 0) and 8 (unit 1) wait in the packer when the power goes.
        assert_eq!(drv.stored_version(0), Some(7));
    }
    let programs = ftl.nand_counts().total(OpKind::Program);
    assert_eq!(programs, 2, "a full page and a padded one");
    let before = *ftl.counters();
    let (rec, sum) = Ftl::recover(&c, &d, ftl).unwrap();
    let t = rec.timing();
    let mode = rec.media().blocks().cell_mode[0];
    // Two pages read (array read + 16 KiB at 800 MB/s = 20,480 ns each) on the one die.
    let page_ns = t.array_ns(OpKind::Read, CellState::fresh(mode)) + 20_480;
    assert_eq!(t.transfer_ns(16384), 20_480);
    assert_eq!(
        sum,
        RecoverySummary {
            pages_scanned: 2,
            erases: 0,
            time_ns: 2 * page_ns,
            units_recovered: 6,
            blocks_closed_partial: 2,
            blocks_resumed: 0,
        }
    );
    for lpn in 0..6u32 {
        assert_eq!(rec.flash_version(lpn), Some(lpn as u64 + 1), "unit {lpn}");
        let want = unit_bytes(lpn + 1);
        assert_eq!(
            rec.read_data(lpn, None),
            Some(&want[..]),
            "bytes of unit {lpn}"
        );
    }
    assert_eq!(rec.flash_version(6), None);
    assert_eq!(*rec.counters(), before, "the device's counters carry over");
    rec.check_invariants().unwrap();
    let sealed: Vec<usize> = (0..rec.media().blocks().len())
        .filter(|&b| rec.media().blocks().sealed[b])
        .collect();
    assert_eq!(sealed.len(), 2);
    for &b in &sealed {
        assert_eq!(
            rec.media().blocks().programmed[b],
            1,
            "block {b}: one durable page, sealed"
        );
    }

    // A second cut right away finds the same (the sealed blocks' unused pages are not read).
    let (mut rec, sum2) = Ftl::recover(&c, &d, rec).unwrap();
    assert_eq!(sum2, sum);
    assert_eq!(rec.flash_version(0), Some(1));

    // The recovered device works: versions go on (9, …), GC reclaims the sealed blocks,
    // every read is checked against the recovered versions.
    rec.set_check_every_ops(64);
    let units = rec.logical_units();
    let mut drv = FunctionalDriver::new(&mut rec);
    assert_eq!(drv.ftl.new_version(20), 9, "versions stay unique");
    for i in 0..6 * units {
        drv.submit(&req(HostOp::Write, ((i * 7) % units) as u64, 1))
            .unwrap();
    }
    drv.submit(&flush()).unwrap();
    drv.submit(&req(HostOp::Read, 0, units as u64)).unwrap();
    assert!(drv.ftl.counters().gc_invocations > before.gc_invocations);
    assert!(
        (0..rec.media().blocks().len())
            .all(|b| !rec.media().blocks().sealed[b] || rec.media().blocks().programmed[b] == 1),
        "an erase clears the seal"
    );
    rec.check_invariants().unwrap();
}

/// Demand-based mappings keep the table in translation pages on flash: not recovered
/// yet, refused before any work; so is a device without integrity versions.
#[test]
fn unsupported_configurations_are_refused_naming_the_key() {
    let text = TINY4_TOML
        .replace("blocks_per_plane = 8", "blocks_per_plane = 40")
        .replace("page_size_bytes = 16384", "page_size_bytes = 4096")
        + "mapping = { policy = \"dftl\", entry_bytes = 1024, cmt_bytes = 4096 }\n"
        + "regions = [{ name = \"data\", content = \"data\" }, "
        + "{ name = \"map\", content = \"translation\", blocks_per_plane = 12 }]\n";
    let c = Config::from_toml_str(&text, "dftl").unwrap();
    let d = c.validate().unwrap();
    let key_of = |e: SimError| match e {
        SimError::Config { key, reason } => {
            assert!(!reason.is_empty());
            key
        }
        other => panic!("not a config error: {other}"),
    };
    assert_eq!(key_of(power_cut_supported(&c).unwrap_err()), "ftl.mapping");
    let old = Ftl::new(&c, &d).unwrap();
    assert_eq!(
        key_of(Ftl::recover(&c, &d, old).err().unwrap()),
        "ftl.mapping"
    );

    let mut c = Config::from_toml_str(TINY4_TOML, "tiny").unwrap();
    c.integrity = false;
    assert_eq!(key_of(power_cut_supported(&c).unwrap_err()), "integrity");
}

/// A small timed device with integrity whose random workloads run GC.
fn timed_config() -> Config {
    let mut c = common::tiny(2, 8, 4, 2, 3.0);
    let min = c.validate().unwrap().min_over_provisioning_ratio;
    c.device.over_provisioning_ratio = min * 1.3;
    c.integrity = true;
    c.mode = Mode::Timed;
    c
}

/// What the host saw before the cut.
#[derive(Default)]
struct Seen {
    /// Versions each unit was ever given (polled from the buffer and the map).
    written: HashMap<u32, BTreeSet<u64>>,
    /// Per unit, what the newest completed flush covered: the unit's version when the
    /// flush was submitted (0: unmapped), the version the next write got then, and the
    /// flush's submission number.
    floor: HashMap<u32, (u64, u64, usize)>,
    /// Per unit, the submission number of its last trim.
    trimmed: HashMap<u32, usize>,
}

fn poll(sim: &TimedSim, units: u32, seen: &mut Seen) {
    for lpn in 0..units {
        let v = sim.buffered(lpn).or_else(|| sim.ftl().flash_version(lpn));
        if let Some(v) = v.filter(|&v| v != 0) {
            seen.written.entry(lpn).or_default().insert(v);
        }
        if let Some(v) = sim.ftl().flash_version(lpn).filter(|&v| v != 0) {
            seen.written.entry(lpn).or_default().insert(v);
        }
    }
}

/// Run random requests (at most 4 in flight) and cut the power after `cut_events` events.
fn run_and_cut(c: &Config, ftl: &mut Ftl, seed: u64, n_ops: usize, cut_events: u64) -> Seen {
    let d = c.validate().unwrap();
    let units = ftl.logical_units();
    let mut rng = SimRng::seed_from_u64(seed);
    let mut sim = TimedSim::new(c, &d, ftl, closed(vec![], 1), 0);
    sim.begin().unwrap();
    sim.serve_externally();
    let mut seen = Seen::default();
    // Flushes submitted and not completed: tag → each unit's floor (see `Seen`).
    let mut flushes: HashMap<u32, Vec<(u64, u64, usize)>> = HashMap::new();
    let mut done: Vec<Completion> = Vec::new();
    let (mut submitted, mut events) = (0usize, 0u64);
    loop {
        while sim.in_flight() < 4 && submitted < n_ops {
            let tag = submitted as u32 + 1;
            let roll = rng.gen_range(0..10);
            let lpn = rng.gen_range(0..units);
            let n = rng.gen_range(1..4u32).min(units - lpn);
            let mut r = match roll {
                0..=5 => req(HostOp::Write, lpn as u64, n as u64),
                6 | 7 => req(HostOp::Read, lpn as u64, n as u64),
                8 => req(HostOp::Trim, lpn as u64, n as u64),
                _ => flush(),
            };
            r.tag = tag;
            if r.op == HostOp::Trim {
                for u in lpn..lpn + n {
                    seen.trimmed.insert(u, submitted);
                }
            }
            if r.op == HostOp::Flush {
                // The flush covers every unit in the buffer now (its mark), trims too.
                let next = sim.ftl().integrity().unwrap().next_version();
                let floor = (0..units)
                    .map(|u| {
                        let v = sim.buffered(u).or_else(|| sim.ftl().flash_version(u));
                        (v.unwrap_or(0), next, submitted)
                    })
                    .collect();
                flushes.insert(tag, floor);
            }
            sim.submit_now(r).unwrap();
            submitted += 1;
            poll(&sim, units, &mut seen);
        }
        if events == cut_events || !sim.step().unwrap() {
            break;
        }
        events += 1;
        poll(&sim, units, &mut seen);
        sim.drain_completions(&mut done);
        for comp in done.drain(..) {
            if let Some(floor) = flushes.remove(&comp.tag) {
                for (u, f) in floor.into_iter().enumerate() {
                    let e = seen.floor.entry(u as u32).or_default();
                    if f.2 >= e.2 {
                        *e = f;
                    }
                }
            }
        }
    }
    seen // the TimedSim is dropped here: power gone
}

/// Units whose newest version's program was in flight when the power went (mapped to a
/// page not yet programmed).
fn in_flight_units(ftl: &Ftl) -> BTreeSet<u32> {
    let g = ftl.geometry();
    (0..ftl.logical_units())
        .filter(|&lpn| {
            let slot = ftl.media().slot_of(Lpn(lpn));
            !slot.is_none() && {
                let b = g.block_of_slot(slot);
                (slot - g.first_slot_of_block(b)) / g.slots_per_page
                    >= ftl.media().blocks().programmed[b.idx()]
            }
        })
        .collect()
}

/// Check the recovered FTL against what the host saw; returns the units lost because a
/// flushed version's block was erased while the unit's newer version was only in flight
/// (possible only without `Ftl::hold_overwritten_until_durable`, which also makes trims
/// durable: without it a unit trimmed at some point is not checked).
fn check_recovered(
    rec: &Ftl,
    seen: &Seen,
    in_flight: &BTreeSet<u32>,
    hold: bool,
) -> std::result::Result<u32, String> {
    rec.check_invariants()?;
    let mut gap = 0;
    for lpn in 0..rec.logical_units() {
        let v = rec.flash_version(lpn).unwrap_or(0);
        if v != 0 && !seen.written.get(&lpn).is_some_and(|w| w.contains(&v)) {
            return Err(format!("unit {lpn} recovered at v{v}, never written to it"));
        }
        // A unit comes back as the flush left it or as a later write or trim made it.
        let (floor, next, at) = seen.floor.get(&lpn).copied().unwrap_or_default();
        if !hold && seen.trimmed.contains_key(&lpn) {
            continue;
        }
        let trimmed_since = seen.trimmed.get(&lpn).is_some_and(|&t| t > at);
        let ok = match v {
            0 => floor == 0 || trimmed_since,
            v => v == floor || v >= next,
        };
        if !ok {
            let newer = seen.written[&lpn].range(floor + 1..).next().is_some();
            if in_flight.contains(&lpn) && newer {
                gap += 1; // erased under an in-flight rewrite: no hold
                continue;
            }
            return Err(format!(
                "unit {lpn} recovered at v{v}, but a flush acknowledged v{floor} (0: trimmed)"
            ));
        }
    }
    Ok(gap)
}

/// After the recovery a short random workload runs on the device with every read checked.
fn run_after(c: &Config, rec: &mut Ftl, seed: u64) {
    let d = c.validate().unwrap();
    let units = rec.logical_units();
    let mut rng = SimRng::seed_from_u64(seed ^ 0x5eed);
    let mut reqs: Vec<HostRequest> = (0..60)
        .map(|_| {
            let lpn = rng.gen_range(0..units);
            let n = rng.gen_range(1..4u32).min(units - lpn) as u64;
            match rng.gen_range(0..3) {
                0 => req(HostOp::Read, lpn as u64, n),
                _ => req(HostOp::Write, lpn as u64, n),
            }
        })
        .collect();
    reqs.push(req(HostOp::Read, 0, units as u64));
    let n = reqs.len() as u64;
    let out = TimedSim::new(c, &d, rec, closed(reqs, 3), 0)
        .run(&mut NoProgress)
        .unwrap();
    assert_eq!(out.host.requests(), n, "every request completed");
    rec.check_invariants().unwrap();
}

/// Cut the power of a timed phase (overwrites held, trims durable, as `ssdlab serve`
/// runs) after `cut` events; the recovered FTL passes the checker, the scan's counts are
/// exact, every unit holds a version written to it and is as a completed flush left it or
/// as a later write or trim made it, and the device works on.
fn cut_and_check(seed: u64, n_ops: usize, cut: u64) -> std::result::Result<(), String> {
    let c = timed_config();
    let d = c.validate().unwrap();
    let mut ftl = Ftl::new(&c, &d).unwrap();
    ftl.set_check_every_ops(256);
    ftl.hold_overwritten_until_durable(); // as `ssdlab serve` does
    let seen = run_and_cut(&c, &mut ftl, seed, n_ops, cut);
    let in_flight = in_flight_units(&ftl);
    // What the scan must find: the programmed pages of blocks neither retired nor
    // being erased; each interrupted erase done again.
    let erasing: Vec<usize> = (0..ftl.media().blocks().len())
        .filter(|&b| ftl.media().blocks().state[b] == BlockState::Erasing)
        .collect();
    let scanned: u64 = (0..ftl.media().blocks().len())
        .filter(|&b| {
            !matches!(
                ftl.media().blocks().state[b],
                BlockState::Erasing | BlockState::Bad
            )
        })
        .map(|b| ftl.media().blocks().programmed[b] as u64)
        .sum();
    let mut wear = ftl.erase_counts().to_vec();
    for &b in &erasing {
        wear[b] += 1;
    }
    let (mut rec, sum) = Ftl::recover(&c, &d, ftl).map_err(|e| e.to_string())?;
    let counts = (sum.units_recovered, sum.pages_scanned, sum.erases);
    let want = (rec.media().mapped_units(), scanned, erasing.len() as u64);
    if counts != want || rec.erase_counts() != wear {
        return Err(format!(
            "recovery (units, pages, erases) {counts:?}, expected {want:?}"
        ));
    }
    if check_recovered(&rec, &seen, &in_flight, true)? != 0 {
        return Err("a flushed version lost under the hold".into());
    }
    run_after(&c, &mut rec, seed);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// [`cut_and_check`] at random cut points.
    #[test]
    fn random_cuts_lose_no_flushed_write(seed in any::<u64>(), n_ops in 20..600usize, cut in 0..20000u64) {
        prop_assert_eq!(cut_and_check(seed, n_ops, cut), Ok(()));
    }
}

/// Cases the random cuts found while trims became durable: a trim's record page queued
/// apart from its block's earlier programs (run first, so the block's first pages were not
/// durable yet and the scan ignored the record); a trim dropping a buffered unit a pending
/// flush covered (the flush completed with neither durable); a plane left without a free
/// block by a cut (GC had used its reserve); record pages taking the GC reserve.
#[test]
fn cuts_that_once_lost_trims_or_writes() {
    for (seed, n_ops, cut) in [
        (8412297003947031475, 425, 1169),
        (5863952878764326967, 434, 676),
        (5863952878764326967, 434, 754),
        (8339140232204301625, 444, 695),
        (1553394775403180569, 124, 152),
    ] {
        assert_eq!(cut_and_check(seed, n_ops, cut), Ok(()), "seed {seed}");
    }
}

/// Why `ssdlab serve` holds overwritten versions: host units are mapped when their
/// program is issued, which invalidates the older copy at once. Without the hold, GC here
/// collected the block of a unit's flushed version (nothing valid to copy) and was
/// erasing it when the power went, while the unit's rewrite was still being programmed:
/// the recovery finds neither. With the hold (the same requests and cut) the erase waits
/// for the rewrite's program, and nothing a flush acknowledged is lost.
#[test]
fn a_flushed_version_survives_an_in_flight_rewrite_only_with_the_hold() {
    const SEED: u64 = 1553394775403180569;
    const CUT_EVENTS: u64 = 160;
    let c = timed_config();
    let d = c.validate().unwrap();
    let mut ftl = Ftl::new(&c, &d).unwrap();
    let seen = run_and_cut(&c, &mut ftl, SEED, 124, CUT_EVENTS);
    let in_flight = in_flight_units(&ftl);
    let old_block = (0..ftl.media().blocks().len())
        .find(|&b| ftl.media().blocks().state[b] == BlockState::Erasing)
        .unwrap();
    let first = old_block * ftl.geometry().units_per_block as usize;
    let erasing: Vec<u32> = ftl.media().oob().lpn
        [first..first + ftl.geometry().units_per_block as usize]
        .iter()
        .map(|w| w.get())
        .collect();
    // The unit: flushed, its newest version in flight, its flushed copy being erased.
    let lost = *in_flight
        .iter()
        .find(|u| seen.floor.contains_key(u) && erasing.contains(u))
        .expect("a flushed unit rewritten in flight, its old block erasing");
    let floor = seen.floor[&lost].0;
    let (rec, _) = Ftl::recover(&c, &d, ftl).unwrap();
    assert!(
        rec.flash_version(lost).is_none_or(|v| v < floor),
        "unit {lost} lost"
    );
    assert_eq!(check_recovered(&rec, &seen, &in_flight, false), Ok(1));

    let mut ftl = Ftl::new(&c, &d).unwrap();
    ftl.hold_overwritten_until_durable();
    let seen = run_and_cut(&c, &mut ftl, SEED, 124, CUT_EVENTS);
    let in_flight = in_flight_units(&ftl);
    let (rec, _) = Ftl::recover(&c, &d, ftl).unwrap();
    assert!(
        rec.flash_version(lost).is_some_and(|v| v >= floor),
        "unit {lost} kept"
    );
    assert_eq!(check_recovered(&rec, &seen, &in_flight, true), Ok(0));
}

/// Functional mode programs at once: after a flush everything is durable and the recovery
/// must give back every unit's version and bytes exactly, over many GC cycles with padded
/// pages — the slots a cycle leaves unwritten (padding) must not show the unit they held
/// in an earlier cycle (an erase empties the OOB).
#[test]
fn a_flushed_functional_device_comes_back_exactly() {
    let c = Config::from_toml_str(TINY4_TOML, "tiny").unwrap();
    let d = c.validate().unwrap();
    let mut ftl = Ftl::new(&c, &d).unwrap();
    ftl.store_data().unwrap();
    let units = ftl.logical_units();
    let mut rng = SimRng::seed_from_u64(11);
    for round in 0..30u32 {
        let mut drv = FunctionalDriver::new(&mut ftl);
        for tag in 1..=40u32 {
            let lpn = rng.gen_range(0..units);
            let tag = round * 100 + tag;
            let bytes = vec![(tag % 251) as u8 + 1; 4096];
            drv.ftl
                .data_mut()
                .unwrap()
                .put_payload(tag, lpn as u64 * 4096, bytes);
            drv.write_unit_tagged(lpn, tag).unwrap();
            if rng.gen_range(0..4) == 0 {
                drv.flush().unwrap();
            }
        }
        drv.flush().unwrap();
        let want: Vec<_> = (0..units)
            .map(|u| {
                (
                    ftl.flash_version(u),
                    ftl.read_data(u, None).map(|b| b.to_vec()),
                )
            })
            .collect();
        let (rec, _) = Ftl::recover(&c, &d, ftl).unwrap();
        for (u, w) in want.iter().enumerate() {
            let got = (
                rec.flash_version(u as u32),
                rec.read_data(u as u32, None).map(|b| b.to_vec()),
            );
            assert!(
                got == *w,
                "round {round}: unit {u}: {:?} recovered, {:?} stored",
                got.0,
                w.0
            );
        }
        ftl = rec;
    }
    assert!(ftl.counters().gc_invocations > 20);
}

/// Integrity versions are the OOB's sequence numbers: "the newest wins" holds only while
/// they never wrap. A device that has written nearly 2^32 units rewrites units across that
/// count; the recovery gives back the rewrites (32-bit versions wrapped to 1, 2, … and the
/// recovery took the first copies, older, for the newest).
#[test]
fn versions_past_two_to_the_32_recover_the_newest_copy() {
    let c = Config::from_toml_str(TINY4_TOML, "tiny").unwrap();
    let d = c.validate().unwrap();
    let mut ftl = Ftl::new(&c, &d).unwrap();
    ftl.store_data().unwrap();
    let start = (1u64 << 32) - 4;
    ftl.set_next_version(start);
    {
        let mut drv = FunctionalDriver::new(&mut ftl);
        for (tag, lpn) in (1..).zip([0u32, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]) {
            drv.ftl
                .data_mut()
                .unwrap()
                .put_payload(tag, lpn as u64 * 4096, unit_bytes(tag));
            drv.write_unit_tagged(lpn, tag).unwrap();
        }
        drv.flush().unwrap();
    }
    let (rec, _) = Ftl::recover(&c, &d, ftl).unwrap();
    for lpn in 0..6u32 {
        let want = start + 6 + lpn as u64;
        assert_eq!(rec.flash_version(lpn), Some(want), "unit {lpn}");
        assert_eq!(
            rec.read_data(lpn, None),
            Some(&unit_bytes(lpn + 7)[..]),
            "bytes of unit {lpn}"
        );
    }
    assert!(start + 11 > u32::MAX as u64, "the versions crossed 2^32");
}

/// A served request of `op` on units `lpn..lpn + n`, tagged `tag`, with bytes `fill` for a
/// write; stepped until it completes.
fn serve_one(
    served: &mut ssdlab_core::sim::serve::Served,
    op: HostOp,
    lpn: u64,
    n: u64,
    tag: u32,
    fill: u8,
) {
    let mut r = req(op, lpn, n);
    if op == HostOp::Flush {
        r = flush();
    }
    r.tag = tag;
    let payload = (op == HostOp::Write)
        .then(|| ssdlab_core::sim::serve::WriteData::Bytes(vec![fill; (n * 4096) as usize]));
    served.submit(r, payload).unwrap();
    let mut done = Vec::new();
    while done.is_empty() {
        assert!(served.step().unwrap(), "request {tag} never completes");
        served.drain_completions(&mut done);
    }
    assert_eq!(done[0].tag, tag);
}

/// Durable trims: units written and flushed, rewritten and flushed (so an older copy
/// stays on flash), then trimmed and flushed, on the serve device; the power goes. The
/// trimmed units come back unmapped — reading zeros, neither the last durable version nor
/// the older one; the others keep their bytes. (Trims were not recorded: the recovery
/// brought back the flushed version the trim had dropped.)
#[test]
fn a_flushed_trim_survives_a_power_cut() {
    let text = include_str!("../../../../configs/serve-small.toml");
    let mut c = Config::from_toml_str(text, "serve-small").unwrap();
    c.integrity = true;
    c.ftl.hold_overwritten_until_durable = true;
    let mut sim = ssdlab_core::Simulation::new(c).unwrap();
    {
        let mut s = sim.serve().unwrap();
        serve_one(&mut s, HostOp::Write, 0, 64, 1, 0xaa);
        serve_one(&mut s, HostOp::Flush, 0, 0, 2, 0);
        serve_one(&mut s, HostOp::Write, 0, 32, 3, 0xbb);
        serve_one(&mut s, HostOp::Flush, 0, 0, 4, 0);
        serve_one(&mut s, HostOp::Trim, 8, 40, 5, 0);
        serve_one(&mut s, HostOp::Flush, 0, 0, 6, 0);
        let mut bytes = Vec::new();
        s.read_data(0, 64 * 4096, &mut bytes);
        assert!(bytes[8 * 4096..48 * 4096].iter().all(|&b| b == 0));
        let _ = s.cut();
    }
    let record_pages = sim.ftl.counters().trim_record_pages;
    sim.power_on().unwrap();
    sim.ftl.check_invariants().unwrap();
    let s = sim.serve().unwrap();
    for lpn in 0..64u64 {
        let mut bytes = Vec::new();
        s.read_data(lpn * 4096, 4096, &mut bytes);
        let want = match lpn {
            0..8 => 0xbb,
            8..48 => 0,
            _ => 0xaa,
        };
        assert!(
            bytes.iter().all(|&b| b == want),
            "unit {lpn}: {:#x}, want {want:#x}",
            bytes[0]
        );
    }
    // One page of trim records: the trim's 40 units as one range, before the last flush.
    assert_eq!(record_pages, 1);
}

/// Submit `r` (tagged `tag`) to a timed phase and step until it completes.
fn timed_one(sim: &mut TimedSim, mut r: HostRequest, tag: u32) {
    r.tag = tag;
    sim.submit_now(r).unwrap();
    let mut done = Vec::new();
    while done.is_empty() {
        assert!(sim.step().unwrap(), "request {tag} never completes");
        sim.drain_completions(&mut done);
    }
    assert_eq!(done[0].tag, tag);
}

/// A power-loss-protected device that failed (worn out) still programs its DRAM on its
/// capacitors when the power goes: a write acknowledged from its buffer and a trim in its
/// open batch of records (a flush programs neither on such a device) come back after the
/// recovery, the other units as they were. (A failed device used to program nothing more,
/// so both were lost: swarm seeds 615227 and 631592.)
#[test]
fn a_failed_protected_device_keeps_what_it_acknowledged() {
    let mut c = timed_config();
    c.ftl.power_loss_protection = true;
    let d = c.validate().unwrap();
    let mut ftl = Ftl::new(&c, &d).unwrap();
    ftl.hold_overwritten_until_durable();
    {
        let mut sim = TimedSim::new(&c, &d, &mut ftl, closed(vec![], 1), 0);
        sim.serve_externally();
        sim.begin().unwrap();
        timed_one(&mut sim, req(HostOp::Write, 0, 8), 1);
        sim.finish(&mut NoProgress).unwrap(); // settled: units 0..8 on flash
    }
    let flushed: Vec<_> = (0..8).map(|u| ftl.flash_version(u)).collect();
    assert!(flushed.iter().all(Option::is_some));
    let rewritten = {
        let mut sim = TimedSim::new(&c, &d, &mut ftl, closed(vec![], 1), 0);
        sim.serve_externally();
        sim.begin().unwrap();
        timed_one(&mut sim, req(HostOp::Trim, 2, 2), 1);
        timed_one(&mut sim, req(HostOp::Write, 5, 1), 2);
        timed_one(&mut sim, flush(), 3);
        let rewritten = sim.buffered(5).expect("the write waits in the buffer");
        sim.ftl_mut().force_failure("a test fails the device");
        sim.finish(&mut NoProgress).unwrap(); // the power goes: protected, so drained
        rewritten
    };
    assert!(ftl.worn_out());
    let (rec, _) = Ftl::recover(&c, &d, ftl).unwrap();
    for u in 0..8 {
        let want = match u {
            2 | 3 => None,
            5 => Some(rewritten),
            _ => flushed[u as usize],
        };
        assert_eq!(rec.flash_version(u), want, "unit {u}");
    }
}
