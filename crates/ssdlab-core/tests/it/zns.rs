//! Zoned namespaces and FDP (`[device.zns]`, `[device.fdp]`, docs/zns.md): the zone state
//! machine and its errors on a tiny device in both modes, zone append at queue depth > 1,
//! the integrity oracle through resets, and FDP handles never sharing a block.

use crate::common;
use ssdlab_core::config::Mode;
use ssdlab_core::sim::timed::Completion;
use ssdlab_core::sim::{NoProgress, Results};
use ssdlab_core::{Config, Simulation};
use ssdlab_workload::{HostOp, HostRequest};
use std::sync::{Arc, Mutex};

const U: u64 = 4096;
/// Units per zone of [`zoned`]: 2 planes × 1 block × 4 pages × 4 units.
const Z: u64 = 32;

/// 1 die, 2 planes of 8 blocks of 4 pages of 4 units; zones of one block per plane, 2
/// spare blocks per plane: 6 zones of 32 units; at most 2 open, 3 active.
fn zoned(mode: Mode) -> Config {
    let mut c = common::tiny(2, 8, 4, 4, 0.0);
    c.mode = mode;
    c.device.zns = Some(ssdlab_core::config::ZnsConfig {
        max_open_zones: 2,
        max_active_zones: 3,
        ..Default::default()
    });
    c
}

fn r(op: HostOp, unit: u64, units: u64) -> HostRequest {
    HostRequest {
        op,
        offset_bytes: unit * U,
        size_bytes: units * U,
        ..Default::default()
    }
}

fn run(c: Config, reqs: Vec<HostRequest>, qd: u32) -> (Results, Vec<Completion>) {
    let mut sim = Simulation::new(c).unwrap();
    let done = Arc::new(Mutex::new(Vec::new()));
    let d = done.clone();
    if sim.config.mode == Mode::Timed {
        sim.set_completion_sink(Box::new(move |c: &Completion| {
            d.lock().unwrap().push(c.clone())
        }));
    }
    let res = sim
        .run_workload_with(common::closed(reqs, qd), &mut NoProgress)
        .unwrap();
    let v = done.lock().unwrap().clone();
    (res, v)
}

/// Every transition and error of the state machine, with the counts they leave.
#[test]
fn zone_state_machine_and_errors_in_both_modes() {
    use HostOp::*;
    let reqs = vec![
        r(Write, 0, 8),         // zone 0 implicitly open, wp 8
        r(Write, 4, 1),         // not at the write pointer
        r(Write, Z, 4),         // zone 1 implicitly open
        r(Write, 2 * Z, 4),     // zone 2: the open limit closes zone 0 (implicitly)
        r(ZoneOpen, 3 * Z, 0),  // zone 3 would be the 4th active zone
        r(ZoneFinish, 0, 0),    // zone 0 full (closed → full)
        r(Write, 8, 1),         // zone is full
        r(ZoneReset, 0, 0),     // zone 0 empty
        r(Write, 0, 4),         // at its start again (zone 1 implicitly closed)
        r(Write, Z + 4, 40),    // crosses zone 1's end
        r(ZoneAppend, Z, 4),    // lands at zone 1's write pointer (unit 36)
        r(ZoneReset, 3, 0),     // not a zone start
        r(Trim, 2 * Z, 4),      // no trims on a zoned namespace
        r(Read, Z - 2, 4),      // a read across two zones
        r(Read, 0, 4),          // fine
        r(ZoneReport, 0, 4096), // counted
        r(ZoneClose, 5 * Z, 0), // an empty zone cannot be closed
        r(ZoneOpen, 5 * Z, 0),  // zones 0, 1, 2 are active: too many
        r(ZoneClose, 2 * Z, 0), // zone 2 is closed already (by the append): no-op
    ];
    for mode in [Mode::Functional, Mode::Timed] {
        let (res, done) = run(zoned(mode), reqs.clone(), 1);
        let z = res.zns.as_ref().expect("a zns section");
        assert_eq!((z.zones, z.zone_bytes), (6, Z * U), "{mode:?}");
        let e = |k: &str| z.errors.get(k).copied().unwrap_or(0);
        assert_eq!(e("zone_invalid_write"), 1, "{mode:?} {z:?}");
        assert_eq!(e("too_many_active_zones"), 2, "{mode:?} {z:?}");
        assert_eq!(e("zone_is_full"), 1, "{mode:?} {z:?}");
        assert_eq!(e("zone_boundary_error"), 2, "{mode:?} {z:?}");
        assert_eq!(e("invalid_field"), 1, "{mode:?} {z:?}");
        assert_eq!(e("invalid_command_opcode"), 1, "{mode:?} {z:?}");
        assert_eq!(e("invalid_zone_state_transition"), 1, "{mode:?} {z:?}");
        assert_eq!(z.errors.values().sum::<u64>(), 9, "{mode:?} {z:?}");
        // Failed requests count as failed only: not as reads, writes, bytes or latency.
        let h = &res.host.counters;
        assert_eq!(
            (
                h.failed_requests,
                h.writes,
                h.reads,
                h.trims,
                h.zone_commands
            ),
            (9, 5, 1, 0, 4),
            "{mode:?}"
        );
        assert_eq!(h.write_bytes, (8 + 4 + 4 + 4 + 4) * U, "{mode:?}");
        assert_eq!(res.host.requests, reqs.len() as u64, "{mode:?}");
        if let Some(l) = &res.latency_ns {
            assert_eq!((l.read.count, l.write.count), (1, 5));
        }
        assert_eq!(
            (
                z.resets,
                z.finishes,
                z.explicit_opens,
                z.closes,
                z.appends,
                z.reports
            ),
            (1, 1, 0, 0, 1, 1),
            "{mode:?}"
        );
        // Zone 0 closed by zone 2's open, zone 1 by zone 0's reopening, zone 2 by the
        // append reopening zone 1 (the oldest implicitly opened zone goes first).
        assert_eq!(z.implicit_closes, 3, "{mode:?} {z:?}");
        let st = |k: &str| z.states.get(k).copied().unwrap_or(0);
        assert_eq!(
            (st("implicitly_opened"), st("closed"), st("empty")),
            (2, 1, 3),
            "{mode:?} {z:?}"
        );
        // The reset erased zone 0's two partly written blocks.
        assert_eq!(res.nand.erases.host, 2, "{mode:?}");
        if mode == Mode::Timed {
            assert_eq!(done.len(), reqs.len());
            let append = done.iter().find(|c| c.op == ZoneAppend).unwrap();
            assert_eq!(
                append.offset_bytes,
                (Z + 4) * U,
                "the append lands at the wp"
            );
            assert!(append.error.is_none());
            assert_eq!(done.iter().filter(|c| c.error.is_some()).count(), 9);
        }
    }
}

/// Appends to one zone at queue depth 8 land at distinct, increasing locations in the
/// order they were submitted.
#[test]
fn zone_appends_at_queue_depth_8_land_in_submission_order() {
    let mut reqs = Vec::new();
    for i in 0..16u32 {
        let mut q = r(HostOp::ZoneAppend, Z, 1 + (i % 3) as u64);
        q.tag = i;
        reqs.push(q);
    }
    let (res, done) = run(zoned(Mode::Timed), reqs.clone(), 8);
    assert_eq!(done.len(), 16);
    let mut by_tag: Vec<&Completion> = done.iter().collect();
    by_tag.sort_by_key(|c| c.tag);
    let mut at = Z * U;
    for (c, q) in by_tag.iter().zip(&reqs) {
        assert!(c.error.is_none());
        assert_eq!(
            c.offset_bytes, at,
            "append {} lands at the write pointer",
            c.tag
        );
        at += q.size_bytes;
    }
    assert!(done.windows(2).any(|w| w[0].tag > w[1].tag) || done.len() == 16);
    assert_eq!(res.zns.unwrap().appends, 16);
}

/// The integrity oracle checks every read through zone fills, finishes, resets and
/// refills (each reset erases the zone's blocks); no device GC ever copies.
#[test]
fn integrity_holds_through_resets_in_both_modes() {
    use HostOp::*;
    let mut reqs = Vec::new();
    for round in 0..6u64 {
        for z in 0..6u64 {
            // Zones fill in chunks of 3 units (pages and chunks do not line up).
            let cap = if (z + round) % 3 == 0 { 20 } else { Z };
            let mut wp = 0;
            while wp < cap {
                let n = 3.min(cap - wp);
                reqs.push(r(Write, z * Z + wp, n));
                wp += n;
            }
            if cap < Z {
                reqs.push(r(ZoneFinish, z * Z, 0));
            }
            reqs.push(r(Read, z * Z, cap));
        }
        for z in 0..6u64 {
            reqs.push(r(Read, z * Z + 1, 7));
            reqs.push(r(ZoneReset, z * Z, 0));
            reqs.push(r(Read, z * Z, 4));
        }
    }
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = zoned(mode);
        c.integrity = true;
        let (res, _) = run(c, reqs.clone(), if mode == Mode::Timed { 4 } else { 1 });
        let z = res.zns.as_ref().unwrap();
        assert!(z.errors.is_empty(), "{mode:?}: {:?}", z.errors);
        assert_eq!(z.resets, 36);
        assert_eq!(res.nand.programs.gc, 0, "{mode:?}: no device GC");
        assert_eq!(res.nand.erases.gc, 0, "{mode:?}");
        // Every zone's two blocks are erased at each of its 6 resets. In the timed mode a
        // reset may drop a finished zone's last units before they reached NAND (fewer
        // blocks to erase), and a reset completes once its erases are issued, so the last
        // one's may still run when the measured phase ends.
        let erased = res.nand.erases.host;
        match mode {
            Mode::Functional => {
                assert_eq!(erased, 72);
                assert_eq!(z.reset_erased_blocks, 72);
            }
            _ => {
                assert!(erased <= z.reset_erased_blocks, "{erased}");
                assert!((66..=72).contains(&z.reset_erased_blocks), "{z:?}");
                assert!(erased + 2 >= z.reset_erased_blocks, "{erased} {z:?}");
            }
        }
        assert!(res.integrity.as_ref().unwrap().checked_reads > 0);
        if mode == Mode::Functional {
            // Every zone's units filled whole pages before its reset: nothing dropped.
            assert_eq!(z.dropped_units, 0);
        }
        assert!(
            (res.waf - 1.0).abs() < 0.2,
            "{mode:?}: device WAF {}",
            res.waf
        );
    }
}

/// FDP is the placement policy `fdp`: named in `ftl.placement` it needs `[device.fdp]`
/// (a clear error without); a device with `[device.fdp]` runs it over the policy named,
/// so `direct` (the default) and `fdp` give the same run, byte for byte.
#[test]
fn fdp_is_the_placement_policy_of_a_device_with_placement_handles() {
    use ssdlab_core::config::{FdpConfig, PlacementConfig};
    let mut c = common::tiny(2, 16, 8, 4, 1.3);
    c.ftl.placement = PlacementConfig::by_name("fdp").unwrap();
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("ftl.placement") && e.contains("\"fdp\"") && e.contains("[device.fdp]"),
        "{e}"
    );
    c.device.fdp = Some(FdpConfig {
        handles: 3,
        placement_handles: vec![2, 0, 1, 1],
    });
    let logical = Simulation::new(c.clone()).unwrap().ftl.logical_units() as u64;
    let mut x: u64 = 11;
    let reqs: Vec<HostRequest> = (0..4000u64)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = if i < logical { i } else { (x >> 33) % logical };
            let mut q = r(HostOp::Write, unit, 1);
            // Identifier 4 is not in the table: those writes fail, counted.
            q.placement_id = ((x >> 20) % 5) as u16;
            q
        })
        .collect();
    for mode in [Mode::Functional, Mode::Timed] {
        c.mode = mode;
        let run = |placement: &str| {
            let mut c = c.clone();
            c.ftl.placement = PlacementConfig::by_name(placement).unwrap();
            let mut sim = Simulation::new(c).unwrap();
            let res = sim
                .run_workload_with(common::closed(reqs.clone(), 4), &mut NoProgress)
                .unwrap();
            serde_json::to_value(&res).unwrap()
        };
        let (fdp, direct) = (run("fdp"), run("direct"));
        assert_eq!(fdp, direct, "{mode:?}");
        let per = fdp["fdp"]["host_units_per_handle"].as_array().unwrap();
        assert!(
            per.iter().all(|n| n.as_u64().unwrap() > 0),
            "{mode:?}: {per:?}"
        );
        assert!(fdp["fdp"]["invalid_placement_ids"].as_u64().unwrap() > 0);
    }
}

/// FDP: hot and cold writes on two handles; GC runs (per handle), yet no erase block
/// ever holds valid units of both handles.
#[test]
fn fdp_handles_never_share_a_block_in_both_modes() {
    for mode in [Mode::Functional, Mode::Timed] {
        // OP 1.2: two handles keep four open blocks per plane (the minimum is 0.82).
        let mut c = common::tiny(2, 16, 8, 4, 1.0);
        c.mode = mode;
        c.device.fdp = Some(ssdlab_core::config::FdpConfig {
            handles: 2,
            placement_handles: vec![],
        });
        let logical = Simulation::new(c.clone()).unwrap().ftl.logical_units() as u64;
        // Units below a fifth of the space are hot (handle 1), the rest cold (handle 0).
        let hot = logical / 5;
        let mut reqs = Vec::new();
        let mut x: u64 = 7;
        for i in 0..6000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = if i < logical {
                i
            } else if (x >> 33) % 10 < 8 {
                (x >> 40) % hot
            } else {
                hot + (x >> 40) % (logical - hot)
            };
            let mut q = r(HostOp::Write, unit, 1);
            q.placement_id = (unit < hot) as u16;
            reqs.push(q);
        }
        let mut sim = Simulation::new(c).unwrap();
        let res = sim
            .run_workload_with(common::closed(reqs, 4), &mut NoProgress)
            .unwrap();
        assert!(res.nand.programs.gc > 0, "{mode:?}: GC ran");
        let f = res.fdp.as_ref().unwrap();
        assert_eq!(f.host_units_per_handle.iter().sum::<u64>(), 6000);
        let ftl = &sim.ftl;
        let mut mixed = 0;
        for b in 0..ftl.media().blocks().len() as u32 {
            let first = ftl
                .geometry()
                .first_slot_of_block(ssdlab_core::flash::ids::BlockId(b))
                .0;
            let lanes: std::collections::BTreeSet<bool> = (first
                ..first + ftl.geometry().units_per_block)
                .filter(|&s| ftl.media().oob().is_valid(s as usize))
                .map(|s| (ftl.media().oob().lpn[s as usize].get() as u64) < hot)
                .collect();
            if lanes.len() > 1 {
                mixed += 1;
            }
            if let Some(&is_hot) = lanes.iter().next() {
                assert_eq!(
                    ftl.media().blocks().lane[b as usize],
                    is_hot as u8,
                    "{mode:?} block {b}"
                );
            }
        }
        assert_eq!(mixed, 0, "{mode:?}: blocks holding both handles");
    }
}

/// Wear-out on a zoned device: blocks retire at their endurance (allocation spreads the
/// erases), a zone goes offline at the reset after which its die group cannot give every
/// zone its blocks, and the device fails when every zone is offline.
#[test]
fn zones_go_offline_as_blocks_wear_out_in_both_modes() {
    use HostOp::*;
    let mut reqs = Vec::new();
    for _ in 0..40 {
        for z in 0..6u64 {
            for k in 0..4 {
                reqs.push(r(Write, z * Z + 8 * k, 8));
            }
            reqs.push(r(ZoneReset, z * Z, 0));
        }
    }
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = zoned(mode);
        c.device.timing.tlc.endurance_pe_cycles = 4;
        let (res, _) = run(c, reqs.clone(), 1);
        let z = res.zns.as_ref().unwrap();
        assert_eq!(z.offline_zones, 6, "{mode:?}: {z:?}");
        assert!(
            z.errors.get("zone_is_offline").copied().unwrap_or(0) > 0,
            "{mode:?} {z:?}"
        );
        let lt = &res.lifetime;
        assert!(lt.first_bad_block.is_some(), "{mode:?}");
        assert!(
            lt.failure.is_some(),
            "{mode:?}: every zone offline fails the device"
        );
        assert!(res.wear.bad_blocks > 0);
        assert!(res.wear.erase_count_max <= 4, "{mode:?}");
    }
}

/// The host log-structured layer on a zoned device: its GC relocates and resets zones
/// while the integrity oracle checks every read, in both modes; the device never copies.
#[test]
fn integrity_holds_through_the_host_layers_gc_in_both_modes() {
    for mode in [Mode::Functional, Mode::Timed] {
        // 2 planes × 32 blocks; zones of one block per plane (32 units): 30 zones.
        let mut c = common::tiny(2, 32, 4, 4, 0.0);
        c.mode = mode;
        c.integrity = true;
        c.device.zns = Some(ssdlab_core::config::ZnsConfig {
            max_open_zones: 4,
            max_active_zones: 4,
            ..Default::default()
        });
        let text = r#"
kind = "log-structured"
spare_ratio = 0.5
[inner]
kind = "synthetic"
read_percent = 30.0
block_size_bytes = 4096
queue_depth = 4
pattern = "hot-cold"
placement_by_temperature = true
requests = 6000
"#;
        c.workload = toml::from_str(text).unwrap();
        let mut sim = Simulation::new(c).unwrap();
        let res = sim.run_workload(&mut NoProgress).unwrap();
        let z = res.zns.as_ref().unwrap();
        assert!(z.errors.is_empty(), "{mode:?}: {:?}", z.errors);
        let w = &res.workload;
        assert!(
            w.host_gc_write_bytes > 0,
            "{mode:?}: the host layer's GC ran"
        );
        assert!(
            w.host_zone_resets > 0 && z.resets == w.host_zone_resets,
            "{mode:?}"
        );
        assert_eq!(
            res.nand.programs.gc, 0,
            "{mode:?}: the device copies nothing"
        );
        assert!(
            res.integrity.as_ref().unwrap().checked_reads > 1000,
            "{mode:?}"
        );
    }
}

/// The host log-structured layer's requests carry their origin: with relocation requests
/// of one unit, k units relocated are exactly k relocation reads and k relocation writes
/// in `latency_ns.by_origin`, the user's counts are the inner workload's (a 4 KiB write
/// is one device write, a read of a written unit one device read, of an unwritten one
/// none), and the two add up to the device's requests (the audit's `origin_counts`).
#[test]
fn the_host_layers_latencies_split_user_and_relocation_requests_exactly() {
    let mut c = common::tiny(2, 32, 4, 4, 0.0);
    c.mode = Mode::Timed;
    c.device.zns = Some(ssdlab_core::config::ZnsConfig {
        max_open_zones: 4,
        max_active_zones: 4,
        ..Default::default()
    });
    let text = r#"
kind = "log-structured"
spare_ratio = 0.5
gc_request_bytes = 4096
[inner]
kind = "synthetic"
read_percent = 30.0
block_size_bytes = 4096
queue_depth = 4
requests = 4000
"#;
    c.workload = toml::from_str(text).unwrap();
    let mut sim = Simulation::new(c).unwrap();
    let res = sim.run_workload(&mut NoProgress).unwrap();
    let w = &res.workload;
    let l = res.latency_ns.as_ref().unwrap();
    let counts: Vec<(&str, u64, u64)> = l
        .by_origin
        .iter()
        .map(|o| (o.origin, o.latency.read.count, o.latency.write.count))
        .collect();
    let k = w.host_gc_write_bytes / 4096;
    assert!(k > 100, "the layer's GC relocated {k} units");
    let user_writes = w.host_user_write_bytes / 4096;
    let user_reads = (w.host_user_read_bytes - w.host_user_unmapped_read_bytes) / 4096;
    assert_eq!(
        counts,
        vec![("user", user_reads, user_writes), ("relocation", k, k)]
    );
    // Every inner request is a 4 KiB read or write: 4000 of them, the reads of units
    // never written emitting nothing.
    assert_eq!(user_writes + w.host_user_read_bytes / 4096, 4000, "{w:?}");
    let h = &res.host.counters;
    assert_eq!((h.reads, h.writes), (user_reads + k, user_writes + k));
    assert_eq!(h.zone_commands, w.host_zone_resets);
    let check = res
        .audit
        .checks
        .iter()
        .find(|c| c.name == "origin_counts")
        .expect("the origin check runs");
    assert_eq!(format!("{:?}", check.verdict), "Ok");
}

/// A write whose placement identifier the device does not have fails (NVMe: invalid
/// field), is counted, and the run goes on: on an FDP device and on one without FDP.
#[test]
fn an_unknown_placement_identifier_fails_the_write_in_both_modes() {
    for (fdp, pid) in [(true, 2u16), (false, 1)] {
        for mode in [Mode::Functional, Mode::Timed] {
            // OP 1.2: two handles keep four open blocks per plane (the minimum is 0.82).
            let mut c = common::tiny(2, 16, 8, 4, 1.0);
            c.mode = mode;
            if fdp {
                c.device.fdp = Some(ssdlab_core::config::FdpConfig::default());
            }
            let mut bad = r(HostOp::Write, 4, 1);
            bad.placement_id = pid;
            let reqs = vec![r(HostOp::Write, 0, 4), bad, r(HostOp::Read, 0, 8)];
            let (res, _) = run(c, reqs, 1);
            let h = &res.host.counters;
            assert_eq!((h.failed_requests, h.writes, h.write_units), (1, 1, 4));
            assert_eq!(res.host.requests, 3);
            assert_eq!(
                res.fdp
                    .map(|f| (f.invalid_placement_ids, f.host_units_per_handle)),
                fdp.then(|| (1, vec![4, 0])),
                "{mode:?}"
            );
        }
    }
}

/// Factory-bad blocks beyond the spare blocks take zones offline from the start: every
/// other zone fills completely, an offline zone refuses writes, in both modes.
#[test]
fn factory_bad_blocks_beyond_the_spares_take_zones_offline() {
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = zoned(mode);
        c.device.zns.as_mut().unwrap().spare_blocks_per_plane = 0;
        c.device.bad_block_ratio = 0.15;
        let sim = Simulation::new(c.clone()).unwrap();
        let z = sim.ftl.zones().unwrap();
        let offline: Vec<u64> = (0..z.count())
            .filter(|&i| z.state(i) == ssdlab_core::ftl::zones::ZoneState::Offline)
            .map(|i| i as u64)
            .collect();
        assert!(!offline.is_empty() && offline.len() < 8, "{offline:?}");
        let mut reqs = Vec::new();
        for zone in 0..8u64 {
            for k in 0..4 {
                reqs.push(r(HostOp::Write, zone * Z + 8 * k, 8));
            }
        }
        let (res, _) = run(c, reqs, 2);
        let s = res.zns.unwrap();
        assert_eq!(s.offline_zones as usize, offline.len(), "{mode:?}");
        assert_eq!(
            s.errors.get("zone_is_offline"),
            Some(&(4 * offline.len() as u64))
        );
        assert_eq!(
            s.states.get("full"),
            Some(&(8 - offline.len() as u32)),
            "{mode:?}"
        );
        assert!(res.lifetime.failure.is_none(), "{mode:?}");
    }
}

/// Units a reset drops before any page held them never reach NAND: counted, in both modes.
#[test]
fn a_reset_drops_units_still_waiting_for_a_page() {
    use HostOp::*;
    // 3 units (less than a 4-unit page) wait in zone 0's buffer lane when it is reset;
    // zone 1's 8 units fill two pages.
    let reqs = vec![r(Write, 0, 3), r(Write, Z, 8), r(ZoneReset, 0, 0)];
    for mode in [Mode::Functional, Mode::Timed] {
        let (res, _) = run(zoned(mode), reqs.clone(), 1);
        let z = res.zns.as_ref().unwrap();
        assert_eq!(z.dropped_units, 3, "{mode:?}");
        assert_eq!(res.host.counters.write_units, 11, "{mode:?}");
        assert_eq!(res.nand.programs.host, 2, "{mode:?}: zone 1's pages only");
        assert_eq!(
            z.reset_erased_blocks, 0,
            "{mode:?}: zone 0 never opened a block"
        );
    }
}

/// Zone appends carry their data over the PCIe link as writes do (they crossed it with
/// none: 1,920 wire bytes down for 16 × 64 KiB and "38 GB/s" on a 3.9 GB/s link):
/// configs/zns.toml with the nvme preset's link, 16 appends of 64 KiB to zone 0 move the
/// same wire bytes as 16 sequential writes, 1,156,992 (per command: doorbell 30, entry 90,
/// data 65,536 + 256 TLPs × 26).
#[test]
fn zone_appends_carry_their_data_over_the_link() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/zns.toml");
    let mut c = Config::from_file(&path).unwrap();
    c.device.host_interface = Some(ssdlab_core::config::HostInterfaceConfig {
        command_ns: 1650,
        max_data_transfer_bytes: 524_288,
        ..Default::default()
    });
    let run = |op: HostOp| {
        let reqs = (0..16u64)
            .map(|i| HostRequest {
                op,
                offset_bytes: if op == HostOp::ZoneAppend { 0 } else { i << 16 },
                size_bytes: 1 << 16,
                ..Default::default()
            })
            .collect();
        let mut sim = Simulation::new(c.clone()).unwrap();
        sim.run_workload_with(common::closed(reqs, 1), &mut NoProgress)
            .unwrap()
    };
    for op in [HostOp::ZoneAppend, HostOp::Write] {
        let r = run(op);
        let h = r.host_interface.as_ref().unwrap();
        assert_eq!(h.down.wire_bytes, 1_156_992, "{op:?}");
        assert_eq!(h.per_flow[0].write_bytes, 16 << 16, "{op:?}");
        assert_eq!(r.host.counters.write_bytes, 16 << 16, "{op:?}");
        assert!(
            r.host.write_mb_per_s < h.link_gb_per_s * 1000.0,
            "{op:?}: {} MB/s",
            r.host.write_mb_per_s
        );
        assert_eq!(r.audit.data_path.bound, "device.host_interface");
    }
}

/// A request the device fails stays failed through the host interface: counted in
/// `failed_requests` only, in no latency (it was completed as a success, its latency a
/// write's).
#[test]
fn a_failed_request_stays_failed_through_the_host_interface() {
    let mut c = zoned(Mode::Timed);
    c.device.host_interface = Some(Default::default());
    let reqs = vec![
        r(HostOp::Write, 0, 8),
        r(HostOp::Write, 4, 1), // not at the write pointer
        r(HostOp::Read, 0, 1),
    ];
    let (res, done) = run(c, reqs, 1);
    assert_eq!(res.host.counters.failed_requests, 1);
    assert_eq!(res.host.counters.writes, 1);
    let l = res.latency_ns.as_ref().unwrap();
    assert_eq!((l.write.count, l.read.count), (1, 1));
    assert_eq!(done.iter().filter(|c| c.error.is_some()).count(), 1);
    assert_eq!(res.audit.errors, 0);
}

/// Lanes share the write buffer and a page packs one lane: with a one-page buffer and two
/// FDP handles written in turn by one-unit writes, the buffer fills with two half pages
/// and nothing is in flight. The fuller lane goes out padded instead of every write
/// waiting for ever ("device full … GC had nothing to reclaim" with every block free,
/// swarm seeds 302426, 307156, 307230, 308130, 309881).
#[test]
fn fdp_lanes_sharing_a_one_page_buffer_never_stall() {
    let mut c = common::tiny(1, 16, 8, 4, 0.8);
    c.mode = Mode::Timed;
    c.ftl.write_buffer_bytes = 4 * U;
    c.device.fdp = Some(ssdlab_core::config::FdpConfig {
        handles: 2,
        placement_handles: vec![],
    });
    let reqs: Vec<HostRequest> = (0..40u64)
        .map(|i| {
            let mut q = r(HostOp::Write, i, 1);
            q.placement_id = (i % 2) as u16;
            q
        })
        .collect();
    let (res, done) = run(c, reqs, 4);
    assert_eq!(done.len(), 40);
    assert_eq!(res.host.counters.writes, 40);
    let f = res.fdp.as_ref().unwrap();
    assert_eq!(f.host_units_per_handle, vec![20, 20]);
    // Padded pages: more programs than the 10 full pages 40 units would make.
    assert!(res.nand.programs.host > 10, "{:?}", res.nand.programs);
}

/// The zoned analogue cannot be padded away (a zone's page holds only that zone's next
/// units): a buffer that could fill with a partial page of every active zone is refused,
/// naming the key and the size needed.
#[test]
fn a_zoned_buffer_must_hold_a_page_beyond_a_partial_page_per_active_zone() {
    let mut c = zoned(Mode::Timed);
    // 3 active zones × 3 units + 1 = 10 units; 8 (a page per plane of the die) is refused.
    c.ftl.write_buffer_bytes = 8 * U;
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("ftl.write_buffer_bytes")
            && e.contains("40960")
            && e.contains("max_active_zones"),
        "{e}"
    );
    c.ftl.write_buffer_bytes = 10 * U;
    c.validate().unwrap();
    // Three zones, each left a partial page, then more to each: all complete.
    let mut reqs = Vec::new();
    for round in 0..4u64 {
        for z in 0..3u64 {
            reqs.push(r(HostOp::Write, z * Z + round * 3, 3));
        }
    }
    let (res, done) = run(c, reqs, 4);
    assert_eq!(done.len(), 12);
    assert_eq!(res.host.counters.writes, 12);
    assert_eq!(res.host.counters.failed_requests, 0);
}

/// Each FDP handle keeps an open host block and an open GC block per plane: the minimum OP
/// counts them (it grows with the handles), and at 2 % above it random writes spread
/// over every handle run to the end in both modes (before, 4 handles filled the device
/// at the minimum OP of one: "GC cannot reclaim space").
#[test]
fn fdp_handles_open_blocks_count_in_the_minimum_op() {
    let mut mins = Vec::new();
    for handles in [1u32, 2, 4] {
        for mode in [Mode::Functional, Mode::Timed] {
            let mut c = common::tiny(1, 24, 8, 4, 1.0);
            c.mode = mode;
            c.device.fdp = Some(ssdlab_core::config::FdpConfig {
                handles,
                placement_handles: vec![],
            });
            let min = c.validate().unwrap().min_over_provisioning_ratio;
            c.device.over_provisioning_ratio = min * 1.02;
            let logical = Simulation::new(c.clone()).unwrap().ftl.logical_units() as u64;
            let mut reqs = Vec::new();
            let mut x: u64 = 7;
            for i in 0..20000u64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let unit = if i < logical { i } else { (x >> 33) % logical };
                let mut q = r(HostOp::Write, unit, 1);
                q.placement_id = ((x >> 20) % handles as u64) as u16;
                reqs.push(q);
            }
            let (res, _) = run(c, reqs, 4);
            assert_eq!(
                res.host.counters.writes, 20000,
                "{mode:?}, {handles} handles"
            );
            assert!(
                res.nand.programs.gc > 0,
                "{mode:?}, {handles} handles: GC ran"
            );
            mins.push(min);
        }
    }
    // Reserve 3 blocks of 24 (host + GC + gc_hard_free_blocks), then 5 and 9.
    assert!(mins[0] < mins[2] && mins[2] < mins[4], "{mins:?}");
    // 8 handles keep 16 open blocks + 1: the 24-block plane has no room.
    let mut c = common::tiny(1, 24, 8, 4, 1.0);
    c.device.fdp = Some(ssdlab_core::config::FdpConfig {
        handles: 8,
        placement_handles: vec![],
    });
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("over_provisioning_ratio") || e.contains("blocks_per_plane"),
        "{e}"
    );
}

/// A full zone keeps its write lane until its last page is placed, and a die takes two
/// host programs per plane at a time: one-page zones filled faster than the die programs
/// them used up the device's 31 lanes, and valid writes to new zones failed with
/// `too_many_active_zones` (the host had at most one zone active). Now such a write waits
/// for a lane: every write succeeds, and every zone's page is programmed.
#[test]
fn writes_wait_for_a_lane_when_full_zones_hold_them_all() {
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = common::tiny(2, 64, 4, 4, 0.0);
        c.mode = mode;
        c.ftl.write_buffer_bytes = 64 * 4 * U;
        c.device.zns = Some(ssdlab_core::config::ZnsConfig {
            zone_capacity_bytes: 4 * U,
            max_open_zones: 2,
            max_active_zones: 3,
            ..Default::default()
        });
        // Zones of 2 planes × 1 block × 4 pages × 4 units, capacity one page: 62 zones.
        let reqs: Vec<HostRequest> = (0..62u64).map(|z| r(HostOp::Write, z * Z, 4)).collect();
        let (res, _) = run(c, reqs, 32);
        let zns = res.zns.as_ref().unwrap();
        assert_eq!(zns.errors, Default::default(), "{mode:?}");
        assert_eq!(res.host.counters.writes, 62, "{mode:?}");
        assert_eq!(zns.states.get("full"), Some(&62), "{mode:?}");
        assert_eq!(res.nand.programs.host, 62, "{mode:?}");
    }
}

/// The host log-structured layer hears of its requests' failures: zones offline from the
/// start (factory-bad blocks beyond the spares) refuse the layer's writes, and the run
/// stops with an error naming the request and its status, in both modes (before, the run
/// went on with the layer's map out of step with the device and reported its figures).
#[test]
fn the_host_layer_stops_the_run_when_its_request_fails() {
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = common::tiny(2, 32, 4, 4, 0.0);
        c.mode = mode;
        c.device.bad_block_ratio = 0.15;
        c.device.zns = Some(ssdlab_core::config::ZnsConfig {
            max_open_zones: 4,
            max_active_zones: 4,
            spare_blocks_per_plane: 0,
            ..Default::default()
        });
        c.workload = toml::from_str(
            "kind = \"log-structured\"\nspare_ratio = 0.5\n[inner]\nkind = \"synthetic\"\nread_percent = 0.0\nblock_size_bytes = 4096\nqueue_depth = 4\nrequests = 3000\n",
        )
        .unwrap();
        let mut sim = Simulation::new(c).unwrap();
        let z = sim.ftl.zones().unwrap();
        assert!(
            (0..z.count()).any(|i| z.state(i) == ssdlab_core::ftl::zones::ZoneState::Offline),
            "{mode:?}: a zone is offline"
        );
        let e = sim.run_workload(&mut NoProgress).unwrap_err().to_string();
        assert!(
            e.contains("log-structured layer's write") && e.contains("zone_is_offline"),
            "{mode:?}: {e}"
        );
    }
}

/// Through the host interface a failed request keeps its status: the completion names it,
/// no latency is recorded, and the source hears of it (before, the interface's completion
/// dropped it: the write counted in the latencies as a success).
#[test]
fn a_failed_request_keeps_its_status_through_the_host_interface() {
    let mut c = zoned(Mode::Timed);
    c.device.host_interface = Some(ssdlab_core::config::HostInterfaceConfig {
        max_data_transfer_bytes: 16384,
        ..Default::default()
    });
    // The second write is not at the write pointer; the third is split in two commands
    // (16 KiB each), the first of which is not at the write pointer: the request fails.
    let reqs = vec![
        r(HostOp::Write, 0, 8),
        r(HostOp::Write, 4, 1),
        r(HostOp::Write, 4, 8),
    ];
    let (res, done) = run(c, reqs, 1);
    let errors: Vec<Option<&str>> = done.iter().map(|c| c.error.map(|e| e.name())).collect();
    assert_eq!(
        errors,
        vec![None, Some("zone_invalid_write"), Some("zone_invalid_write")]
    );
    let lat = res.latency_ns.as_ref().unwrap();
    assert_eq!(lat.write.count, 1);
    assert_eq!(res.host.counters.failed_requests, 2);
    // Each request is counted once, when it completes, with its outcome: the split one
    // as failed only, though its second command landed (its bytes were counted as
    // written when each command was counted as the device took it).
    let h = &res.host.counters;
    assert_eq!((h.writes, h.write_bytes, res.host.requests), (1, 8 * U, 3));
}

/// The host log-structured layer at every zone capacity down to one mapping unit (a
/// quarter page): no request fails, the integrity oracle checks every read, in both
/// modes (at 64 KiB and below on `configs/zns.toml`, 40–60 % of the requests failed
/// once every write lane was held by full zones waiting for the dies).
#[test]
fn the_host_layer_works_at_every_zone_capacity() {
    for cap_units in [1u64, 2, 4, 8, 12] {
        for mode in [Mode::Functional, Mode::Timed] {
            // 2 planes × 256 blocks: 254 zones (more than the device's 31 write lanes).
            let mut c = common::tiny(2, 256, 4, 4, 0.0);
            c.mode = mode;
            c.integrity = true;
            c.ftl.write_buffer_bytes = 64 * 4 * U;
            c.device.zns = Some(ssdlab_core::config::ZnsConfig {
                max_open_zones: 4,
                max_active_zones: 4,
                zone_capacity_bytes: cap_units * U,
                ..Default::default()
            });
            c.workload = toml::from_str(
                "kind = \"log-structured\"\nspare_ratio = 0.5\n[inner]\nkind = \"synthetic\"\nread_percent = 20.0\nblock_size_bytes = 4096\nqueue_depth = 16\npattern = \"hot-cold\"\nplacement_by_temperature = true\nrequests = 8000\n",
            )
            .unwrap();
            let mut sim = Simulation::new(c).unwrap();
            let res = sim
                .run_workload(&mut NoProgress)
                .unwrap_or_else(|e| panic!("{mode:?}, {cap_units} units: {e}"));
            let z = res.zns.as_ref().unwrap();
            assert!(
                z.errors.is_empty(),
                "{mode:?}, {cap_units} units: {:?}",
                z.errors
            );
            assert_eq!(res.host.counters.failed_requests, 0);
            assert!(
                res.workload.host_zone_resets > 0,
                "{mode:?}, {cap_units} units"
            );
            assert!(res.integrity.as_ref().unwrap().checked_reads > 100);
        }
    }
}

/// Zone Report returns the zones as they stand, in both modes (served: the completion
/// carries them): the descriptors of the range asked, by state, start, write pointer and
/// capacity, after writes, a fill, a finish, a reset and an explicit open; a report
/// buffer holds a 64-byte header and 64 bytes per zone, and a report stops at the last
/// zone.
#[test]
fn zone_report_returns_the_zones_as_they_stand_in_both_modes() {
    use ssdlab_core::ftl::zones::ZoneState::{self, *};
    use ssdlab_core::host::command::ZoneDescriptor;
    use ssdlab_core::sim::serve::WriteData;
    use HostOp::*;
    const CAP: u64 = 24;
    let d = |zone: u32, state: ZoneState, written: u64| ZoneDescriptor {
        zone,
        state,
        start_bytes: zone as u64 * Z * U,
        write_pointer_bytes: (zone as u64 * Z + written) * U,
        capacity_bytes: CAP * U,
    };
    let report = |zone: u64, zones: u64| HostRequest {
        op: ZoneReport,
        offset_bytes: zone * Z * U,
        size_bytes: 64 + zones * 64,
        ..Default::default()
    };
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = zoned(mode);
        c.integrity = true;
        c.device.zns.as_mut().unwrap().zone_capacity_bytes = CAP * U;
        let mut sim = Simulation::new(c).unwrap();
        let mut served = sim.serve().unwrap();
        let reqs = [
            r(Write, 0, 8),          // zone 0: implicitly open, 8 written
            r(Write, Z, CAP),        // zone 1: full at its capacity
            r(Write, 3 * Z, 4),      // zone 3: 4 written ...
            r(ZoneFinish, 3 * Z, 0), // ... then finished
            r(Write, 4 * Z, 4),      // zone 4: 4 written ...
            r(ZoneReset, 4 * Z, 0),  // ... then reset: empty
            r(ZoneOpen, 2 * Z, 0),   // zone 2: explicitly open, empty
            report(0, 6),
            report(4, 4), // from zone 4: zones 4 and 5 only
            report(1, 0), // a buffer of the header only: no zone
            report(2, 1), // one zone
        ];
        for (tag, q) in (1..).zip(reqs) {
            let data = q.op.writes_data().then_some(WriteData::Zeros);
            served.submit(HostRequest { tag, ..q }, data).unwrap();
        }
        while served.step().unwrap() {}
        let mut done = Vec::new();
        served.drain_completions(&mut done);
        done.sort_by_key(|c| c.tag);
        assert_eq!(done.len(), reqs.len(), "{mode:?}");
        assert!(done.iter().all(|c| c.error.is_none()), "{mode:?}: {done:?}");
        let all = vec![
            d(0, ImplicitlyOpened, 8),
            d(1, Full, CAP),
            d(2, ExplicitlyOpened, 0),
            d(3, Full, 4),
            d(4, Empty, 0),
            d(5, Empty, 0),
        ];
        assert_eq!(done[7].zones, all, "{mode:?}");
        assert_eq!(done[8].zones, all[4..].to_vec(), "{mode:?}");
        assert_eq!(done[9].zones, vec![], "{mode:?}");
        assert_eq!(done[10].zones, all[2..3].to_vec(), "{mode:?}");
        assert!(done[..7].iter().all(|c| c.zones.is_empty()), "{mode:?}");
        // Reports are zone commands: counted once each, at completion.
        let (res, _) = served.results();
        assert_eq!(res.host.counters.zone_commands, 4 + 3, "{mode:?}");
        assert_eq!(res.host.counters.writes, 4, "{mode:?}");
    }
}

/// The LSM-tree store's put rate limit (`put_rate_limit_bytes_per_s`, a paced writer), timed:
/// below what the store sustains the phase lasts until its last put is due, (N − 1) ·
/// entry / R, and a little more, and the achieved rate is at most R · N / (N − 1); a limit
/// far above what it sustains changes nothing (the same results but the limit's field).
#[test]
fn the_lsm_put_rate_limit_paces_puts_and_a_high_one_changes_nothing() {
    // 4 KiB entries, one put per WAL write; 400 puts; a 64 KiB memtable.
    let run = |limit: u64| {
        let mut c = common::tiny(2, 64, 4, 4, 0.5);
        c.mode = Mode::Timed;
        c.workload = toml::from_str(&format!(
            r#"
kind = "lsm"
keys = 100
key_bytes = 96
value_bytes = 4000
puts = 400
size_divisor = 1
write_buffer_bytes = 65536
level_base_bytes = 262144
target_file_bytes = 65536
wal_write_bytes = 4096
io_bytes = 16384
extent_bytes = 65536
get_queue_depth = 1
put_rate_limit_bytes_per_s = {limit}
"#
        ))
        .unwrap();
        Simulation::new(c)
            .unwrap()
            .run_workload(&mut NoProgress)
            .unwrap()
    };
    let free = run(0);
    let l = free.workload.lsm;
    assert_eq!((l.puts, l.user_bytes), (400, 400 * 4096));
    assert_eq!(l.put_rate_limit_bytes_per_s, 0);
    let unlimited = l.put_rate_bytes_per_s;
    assert_eq!(
        unlimited as u128,
        l.user_bytes as u128 * 1_000_000_000 / free.host.sim_time_ns as u128
    );
    // A quarter of the unlimited rate: paced.
    let rate = unlimited / 4;
    let paced = run(rate);
    let p = paced.workload.lsm;
    assert_eq!(p.puts, 400);
    assert_eq!(p.put_rate_limit_bytes_per_s, rate);
    let last_due = (399u128 * 4096 * 1_000_000_000 / rate as u128) as u64;
    let t = paced.host.sim_time_ns;
    assert!(t >= last_due, "{t} < {last_due}");
    assert!(t < last_due + last_due / 20, "{t} vs {last_due}");
    assert!(
        p.put_rate_bytes_per_s as u128 <= rate as u128 * 400 / 399 + 1,
        "{} vs {rate}",
        p.put_rate_bytes_per_s
    );
    assert!(p.put_rate_bytes_per_s > rate * 95 / 100);
    assert_eq!(paced.audit.internal_error().map(|e| e.to_string()), None);
    // 1000 times the unlimited rate: the first queue depth's burst at time 0 is spread
    // over a few ns, nothing more (puts/s within 2 %).
    let near = run(unlimited * 1000).workload.lsm.put_rate_bytes_per_s;
    assert!(
        near.abs_diff(unlimited) < unlimited / 50,
        "{near} vs {unlimited}"
    );
    // A limit under which even that burst is due at time 0 (puts due every 0.004 ns):
    // the same run.
    let high = run(1_000_000_000_000_000);
    assert_eq!(
        high.workload.lsm.put_rate_limit_bytes_per_s,
        1_000_000_000_000_000
    );
    let mut a = serde_json::to_value(&free).unwrap();
    let mut b = serde_json::to_value(&high).unwrap();
    for v in [&mut a, &mut b] {
        v["workload"]["lsm"]["put_rate_limit_bytes_per_s"] = 0.into();
        v["audit"] = serde_json::Value::Null;
        v["engine"] = serde_json::Value::Null;
    }
    assert_eq!(a, b);
}
