//! One meaning and one execution of a host request for both drivers (`host::command`):
//! on tiny cases the functional and the timed mode issue the same NAND operations, by
//! cause, and count the same host work (buffer hits, unmapped units, read-modify-write
//! reads) for the same requests (each write group ends with a flush, so both modes program
//! the same pages); on the swarm's configurations, under request sequences whose outcome
//! timing cannot change (see `both_modes_agree_where_timing_cannot_matter`), they agree
//! exactly; and the cases the modes disagreed on (FDP read-modify-write reads, a journal
//! unit closing a data page, a served failure's status) by hand.

use crate::common;
use ssdlab_core::config::Mode;
use ssdlab_core::ftl::zones::ZoneError;
use ssdlab_core::sim::serve::WriteData;
use ssdlab_core::sim::{NoProgress, Results};
use ssdlab_core::{Config, Simulation};
use ssdlab_workload::{HostOp, HostRequest};

fn bytes(op: HostOp, offset_bytes: u64, size_bytes: u64) -> HostRequest {
    HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op,
        offset_bytes,
        size_bytes,
        journal: None,
    }
}

fn run(mode: Mode, planes: u32, reqs: &[HostRequest]) -> Results {
    let mut c = common::tiny(planes, 8, 8, 4, 2.0);
    c.mode = mode;
    let mut sim = Simulation::new(c).unwrap();
    sim.run_workload_with(common::closed(reqs.to_vec(), 1), &mut NoProgress)
        .unwrap()
}

/// Writes of whole pages, partial writes over written and unwritten units (read-modify-
/// write of the written ones only), reads over flash and unmapped units, trims, flushes.
fn case() -> Vec<HostRequest> {
    use HostOp::*;
    let u = 4096;
    vec![
        bytes(Write, 0, 8 * u),
        common::flush(),
        // Units 7 (written: read first) and 8 (never written: no read), both partly covered.
        bytes(Write, 7 * u + 512, u),
        common::flush(),
        // Units 3..=5, both ends partly (written: read first); then 12 partly (never written).
        bytes(Write, 3 * u + 100, 2 * u),
        bytes(Write, 12 * u, 1024),
        common::flush(),
        bytes(Read, 0, 16 * u),
        bytes(Read, 5 * u, 3 * u + 7),
        bytes(Trim, 4 * u, 3 * u),
        bytes(Read, 3 * u, 5 * u),
        bytes(Write, 5 * u + 1, 10),
        common::flush(),
        bytes(Read, 0, 16 * u),
    ]
}

#[test]
fn both_modes_issue_the_same_nand_operations_by_cause() {
    for planes in [1, 2] {
        let reqs = case();
        let f = run(Mode::Functional, planes, &reqs);
        let t = run(Mode::Timed, planes, &reqs);
        common::assert_all_completed(&t, &reqs);
        let json = |r: &Results| {
            (
                serde_json::to_value(r.nand).unwrap(),
                serde_json::to_value(r.host.counters).unwrap(),
            )
        };
        assert_eq!(json(&f), json(&t), "{planes} plane(s)");
        // By hand: read-modify-write reads of units 7, 3 and 5 (not of 8 and 12, never
        // written, nor of 5 the second time: trimmed); host pages 0..4, 4..8, {7, 8}
        // padded, {3, 4, 5, 12} full, {5} padded.
        let h = f.host.counters;
        assert_eq!(h.rmw_reads, 3, "units 7, 3 and 5");
        assert_eq!(f.nand.programs.host, 5, "three full pages, two padded ones");
    }
}

/// `slc-journal` on one plane of 4-unit pages, with a journal region; units 100..108 are
/// the log the detector learns (2 pages: `min_journal_bytes`).
fn journal_device(mode: Mode) -> Config {
    let mut c = common::tiny(1, 24, 12, 4, 1.0);
    c.mode = mode;
    let text = r#"
placement = { policy = "slc-journal", min_journal_bytes = 32768 }
regions = [{ name = "data", content = "data" }, { name = "journal", content = "journal", cell_mode = "slc", blocks_per_plane = 6, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1 }]
"#;
    let ftl: toml::Table = toml::from_str(text).unwrap();
    let mut t: toml::Table = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
    for (k, v) in ftl {
        t["ftl"].as_table_mut().unwrap().insert(k, v);
    }
    Config::from_toml_str(&toml::to_string(&t).unwrap(), "journal").unwrap()
}

/// A page holds units of one class (`slc-journal`: journal or not): a journal unit after a
/// waiting data unit closes the data unit's page at once, in both modes. By hand: three
/// laps of the log (1-unit writes of units 100..108, the detector learns the range during
/// the second), a flush, data unit 5, journal unit 100 — unit 5's page goes out padded —
/// then a read of unit 5 goes to NAND in both modes (the timed buffer used to keep unit 5
/// until a page's worth waited: a buffer hit there, a NAND read in the functional mode).
#[test]
fn a_journal_unit_after_a_data_unit_closes_its_page_in_both_modes() {
    let mut reqs = Vec::new();
    for _lap in 0..3 {
        for lpn in 100..108 {
            reqs.push(common::req(HostOp::Write, lpn, 1));
        }
    }
    reqs.push(common::flush());
    reqs.push(common::req(HostOp::Write, 5, 1));
    reqs.push(common::req(HostOp::Write, 100, 1));
    reqs.push(common::req(HostOp::Read, 5, 1));
    // One at a time, each after the device is idle (one second apart).
    for (i, r) in reqs.iter_mut().enumerate() {
        r.arrival_ns = i as u64 * 1_000_000_000;
    }
    let mut figures = Vec::new();
    for mode in [Mode::Functional, Mode::Timed] {
        let mut sim = Simulation::new(journal_device(mode)).unwrap();
        let r = sim
            .run_workload_with(common::open(reqs.clone()), &mut NoProgress)
            .unwrap();
        let j = r.journal.as_ref().unwrap();
        assert_eq!(
            j.learned_range_bytes,
            Some([100 * 4096, 108 * 4096]),
            "{mode:?}"
        );
        figures.push((
            r.host.counters.buffer_read_hits,
            r.nand.reads.host,
            r.nand.programs.host,
        ));
    }
    // Reads: unit 5 from NAND. Programs: 6 full pages of the laps, {5} padded, {100}
    // padded at the end.
    assert_eq!(figures, vec![(0, 1, 8); 2]);
}

// ---- Both modes agree wherever timing cannot change the outcome ----
//
// The class of request sequences:
// 1. one request at a time, each arriving after the device has finished everything the
//    one before started (an open-loop flow with `GAP_NS` between arrivals, and a final
//    flush `GAP_NS` after the last request, so that the end-of-run settling also meets an
//    idle device);
// 2. no write carries more than a page of units;
// 3. the timed write buffer holds every lane's partial page besides a write, as the
//    functional packers do (a smaller shared buffer makes writes wait for space);
// 4. no background work: a case compares the requests before the first GC, wear-leveling,
//    migration or mapping-relocation operation of its functional run. With background
//    work, timing changes the outcome even one request at a time: a GC job picks its next
//    victim while its own copies' programs are in flight (a block becomes a candidate only
//    once its last program completes), jobs of several planes draw victims from one
//    random stream in die order, `cost-benefit` ages blocks by the program sequence.
// Then both drivers meet the same device state and buffer contents at every request (the
// timed buffer holds what the functional packers hold: each lane's open partial page), and
// pacing, queueing and die order cannot change what a command does. A translation page
// loaded while its program is in flight is served from DRAM in the timed mode: loads are
// compared (NAND reads plus loads served from DRAM). Injected program and erase failures
// are left out (their draws follow the order of issue), and so is the host interface (the
// functional mode does not model it: its transfer-size splits make other commands).

/// Simulated time between two requests of an agreement case: far more than any request's
/// NAND work takes on the swarm's devices (and an idle-time GC, if it starts, ends the
/// compared requests).
const GAP_NS: u64 = 60_000_000_000;

/// Cases of a plain run; `SSDLAB_AGREE_CASES=N` runs N, `SSDLAB_AGREE_START=S` from seed S.
const AGREE_CASES: u64 = 200;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    })
}

/// Replace the line of `text` that starts with `key` by `line` (appended under `[ftl]`
/// when there is none).
fn set_line(text: &str, key: &str, line: &str) -> String {
    let mut found = false;
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if !found && l.starts_with(key) {
                found = true;
                line.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    if !found {
        let at = out
            .iter()
            .position(|l| l == "[ftl]")
            .expect("an [ftl] table")
            + 1;
        out.insert(at, line.to_string());
    }
    out.join("\n") + "\n"
}

/// The swarm's configuration `seed` for an agreement case (see above); every fourth
/// conventional one made zoned instead. `None` when validation refuses it.
/// Preconditioning is off (it leaves the device where the first write starts GC).
fn agreement_config(seed: u64) -> Option<Config> {
    use rand::{Rng, SeedableRng};
    let mut text = crate::swarm::draw(seed);
    if let Some(at) = text.find("[device.host_interface]") {
        text.truncate(at);
    }
    // Read retries depend on data age, the modes' clocks (which differ): off.
    if let Some(at) = text.find("[device.reliability]") {
        text.truncate(at);
    }
    text += "[device.reliability]\nenabled = false\n";
    text = set_line(&text, "program_fail_rate", "program_fail_rate = 0.0");
    text = set_line(&text, "erase_fail_rate", "erase_fail_rate = 0.0");
    // Read reclaim and retention refresh are background work on each mode's own clock.
    text = set_line(&text, "read_reclaim = ", "");
    text = set_line(&text, "refresh = ", "");
    let rng = &mut rand_pcg::Pcg64::seed_from_u64(seed ^ 0x6167_7265);
    let zoned = !text.contains("[device.fdp]") && rng.gen_bool(0.25);
    if zoned {
        text = set_line(&text, "mapping = ", "mapping = { policy = \"page-map\" }");
        text = set_line(
            &text,
            "wear_leveling = ",
            "wear_leveling = { policy = \"none\" }",
        );
        text = set_line(&text, "placement = ", "placement = { policy = \"direct\" }");
        text = set_line(&text, "regions = ", "");
        let open = rng.gen_range(1..=4u32);
        text += &format!(
            "[device.zns]\nmax_open_zones = {open}\nmax_active_zones = {}\nblocks_per_plane = {}\n",
            open + rng.gen_range(0..=2u32),
            rng.gen_range(1..=2u32),
        );
    }
    let mut c = Config::from_toml_str(&text, "agreement").ok()?;
    if zoned {
        c.device.over_provisioning_ratio = 0.0;
        // A zone capacity below the zone size in a third of the cases.
        let d = c.validate().ok()?;
        let zone = c.host_zones(&d)?.zone_bytes;
        if rng.gen_bool(1.0 / 3.0) && zone > 4096 {
            let cap = zone - 4096 * rng.gen_range(1..=(zone / 4096 / 2).max(1));
            c.device.zns.as_mut()?.zone_capacity_bytes = cap;
        }
    } else {
        let min = c.validate().ok()?.min_over_provisioning_ratio;
        c.device.over_provisioning_ratio = min * rng.gen_range(1.1..2.0);
    }
    // The timed buffer holds every lane's partial page besides a write (as the functional
    // packers do).
    let d = c.validate().ok()?;
    let lanes = match (&c.device.fdp, &c.device.zns) {
        (Some(f), _) => f.handles,
        (_, Some(z)) => z.max_active_zones + 1,
        _ => 1,
    } as u64;
    let page = d.geometry.page_bytes as u64;
    c.ftl.write_buffer_bytes = c.ftl.write_buffer_bytes.max((lanes + 2) * page);
    c.precondition.enabled = false;
    c.validate().ok()?;
    Some(c)
}

/// The longest prefix of `reqs` whose functional run (the final flush and settling
/// included) issues no background operation: no GC (of any region), wear leveling,
/// migration or relocation of mapping entries. (A zone reset's erases are the host's.)
fn background_free_prefix(c: &Config, reqs: &[HostRequest]) -> usize {
    let quiet = |n: usize| {
        agreement_run(c, Mode::Functional, &reqs[..n]).is_ok_and(|r| {
            let n = r.nand;
            [n.reads, n.programs, n.erases]
                .iter()
                .all(|k| k.gc + k.wear_leveling + k.migration == 0)
                && r.mapping
                    .as_ref()
                    .is_none_or(|m| m.relocation_updates + m.translation_gc_programs == 0)
        })
    };
    if quiet(reqs.len()) {
        return reqs.len();
    }
    let (mut lo, mut hi) = (0, reqs.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if quiet(mid) {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo
}

/// `n` requests of the agreement class on the device `c` describes, `GAP_NS` apart.
fn agreement_requests(c: &Config, seed: u64, n: usize) -> Vec<HostRequest> {
    use rand::SeedableRng;
    let d = c.validate().unwrap();
    let rng = &mut rand_pcg::Pcg64::seed_from_u64(seed ^ 0x7265_7173);
    let mut reqs = match c.host_zones(&d) {
        Some(z) => zoned_requests(rng, &z, d.geometry.slots_per_page as u64, n),
        None => conventional_requests(rng, c, &d, n),
    };
    for (i, r) in reqs.iter_mut().enumerate() {
        r.arrival_ns = i as u64 * GAP_NS;
        r.tag = i as u32;
    }
    reqs
}

/// Reads, writes (partial units included: read-modify-write), trims and flushes on a
/// conventional or FDP device: a third of them at the last units written (what the
/// buffers may still hold), half of the rest on a hot eighth of the space; some a
/// sequential log (what the journal detector learns); FDP placement identifiers (an
/// invalid one now and then).
fn conventional_requests(
    rng: &mut rand_pcg::Pcg64,
    c: &Config,
    d: &ssdlab_core::config::Derived,
    n: usize,
) -> Vec<HostRequest> {
    use rand::Rng;
    use HostOp::*;
    let u = 4096u64;
    let spp = d.geometry.slots_per_page as u64;
    let units = d.logical_units as u64;
    let hot = (units / 8).max(2 * spp).min(units);
    // A log that wraps several times (the journal detector's `min_journal_bytes` is 4
    // pages in the swarm's configurations).
    let log = (8 * spp).min(units / 4).max(1);
    let pids = c.device.fdp.as_ref().map_or(1, |f| f.placement_ids()) as u32;
    let mut log_at = 0;
    let mut recent = [0u64; 4];
    let mut out: Vec<HostRequest> = Vec::with_capacity(n);
    for i in 0..n {
        let first = if rng.gen_bool(1.0 / 3.0) {
            recent[rng.gen_range(0..recent.len())]
        } else if rng.gen_bool(0.5) {
            rng.gen_range(0..hot)
        } else {
            rng.gen_range(0..units)
        };
        let kind = rng.gen_range(0..100);
        let (op, offset, size) = match kind {
            0..=44 => {
                // At most a page of units; a partly covered head and tail now and then.
                let head = if rng.gen_bool(0.4) {
                    512 * rng.gen_range(1..8)
                } else {
                    0
                };
                let max = spp * u - head;
                let size = if rng.gen_bool(0.5) {
                    512 * rng.gen_range(1..=max / 512)
                } else {
                    u * rng.gen_range(1..=spp) - head
                };
                let span = (head + size).div_ceil(u);
                let first = first.min(units - span);
                (Write, first * u + head, size)
            }
            45..=74 => {
                let count = rng.gen_range(1..=(2 * spp).min(units));
                let first = first.min(units - count);
                let trim_tail = if rng.gen_bool(0.3) { 100 } else { 0 };
                (Read, first * u, count * u - trim_tail)
            }
            75..=84 => {
                let count = rng.gen_range(1..=spp.min(units));
                (Trim, first.min(units - count) * u, count * u)
            }
            85..=87 => (Flush, 0, 0),
            _ => {
                let lpn = units - log + log_at;
                log_at = (log_at + 1) % log;
                (Write, lpn * u, u)
            }
        };
        let placement_id = if pids > 1 && op == Write {
            rng.gen_range(0..=pids) as u16 // `pids`: no such identifier
        } else {
            0
        };
        if op == Write {
            recent[i % recent.len()] = offset / u;
        }
        out.push(HostRequest {
            op,
            offset_bytes: offset,
            size_bytes: size,
            placement_id,
            ..Default::default()
        });
    }
    out
}

/// Zone writes at the write pointer (a wrong one now and then), appends, reads of written
/// units, finishes, resets, opens, closes, reports, flushes and a trim (refused), from a
/// host that follows the write pointers it expects.
fn zoned_requests(
    rng: &mut rand_pcg::Pcg64,
    z: &ssdlab_workload::ZoneGeometry,
    spp: u64,
    n: usize,
) -> Vec<HostRequest> {
    use rand::Rng;
    use HostOp::*;
    let u = 4096u64;
    let zone_units = z.zone_bytes / u;
    let cap = z.zone_capacity_bytes / u;
    let used = (z.max_active_zones + 2).min(z.zones) as u64;
    let mut wp = vec![0u64; used as usize];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let zi = rng.gen_range(0..used);
        let start = zi * zone_units;
        let w = &mut wp[zi as usize];
        let kind = rng.gen_range(0..100);
        let (op, unit, units) = match kind {
            0..=49 => {
                let k = rng.gen_range(1..=spp).min((cap - *w).max(1));
                let at = if rng.gen_bool(0.05) { *w + 1 } else { *w };
                *w = (*w + k).min(cap);
                (Write, start + at, k)
            }
            50..=59 => {
                let k = rng.gen_range(1..=spp).min((cap - *w).max(1));
                *w = (*w + k).min(cap);
                (ZoneAppend, start, k)
            }
            60..=79 if *w > 0 => {
                let from = rng.gen_range(0..*w);
                (
                    Read,
                    start + from,
                    rng.gen_range(1..=(*w - from).min(2 * spp)),
                )
            }
            80..=83 => {
                *w = cap;
                (ZoneFinish, start, 0)
            }
            84..=89 => {
                *w = 0;
                (ZoneReset, start, 0)
            }
            90..=92 => (ZoneOpen, start, 0),
            93..=95 => (ZoneClose, start, 0),
            96 => (ZoneReport, 0, 1),
            97 => (Trim, start, 1),
            _ => (Flush, 0, 0),
        };
        out.push(HostRequest {
            op,
            offset_bytes: unit * u,
            size_bytes: units * u,
            ..Default::default()
        });
    }
    out
}

/// What must agree: NAND operations by cause, the host counters, the zone and FDP figures,
/// the mapping's lookups. A translation page loaded while its program is still in flight
/// is served from DRAM (the timed mode; in the functional mode every program has
/// completed): translation loads agree, NAND reads plus loads served from DRAM.
fn agreed_figures(r: &Results) -> serde_json::Value {
    let mut nand = serde_json::to_value(r.nand).unwrap();
    let mut mapping = serde_json::Value::Null;
    if let Some(m) = &r.mapping {
        for k in ["mapping", "total"] {
            let reads = &mut nand["reads"][k];
            *reads = (reads.as_u64().unwrap() + m.loads_served_from_dram).into();
        }
        mapping = serde_json::json!([
            m.read_lookups,
            m.read_hits,
            m.write_lookups,
            m.write_hits,
            m.relocation_updates,
            m.translation_programs,
        ]);
    }
    serde_json::json!({
        "nand": nand,
        "host": r.host.counters,
        "zns": r.zns,
        "fdp": r.fdp,
        "mapping": mapping,
        "status": r.status,
    })
}

/// What a case's device has, for a failure message.
fn features(c: &Config) -> String {
    let name = |v: serde_json::Value| v["policy"].as_str().unwrap_or("?").to_string();
    let f = &c.ftl;
    format!(
        "{}{}mapping {}, placement {}, gc {}, wear {}, {} regions, {} planes/die, {} dies, plp {}, idle gc {} ns",
        if c.device.zns.is_some() { "zoned, " } else { "" },
        if c.device.fdp.is_some() { "FDP, " } else { "" },
        name(serde_json::to_value(&f.mapping).unwrap()),
        name(serde_json::to_value(&f.placement).unwrap()),
        name(serde_json::to_value(&f.gc).unwrap()),
        name(serde_json::to_value(&f.wear_leveling).unwrap()),
        f.regions.len(),
        c.device.geometry.planes_per_die,
        c.device.geometry.channels * c.device.geometry.dies_per_chip,
        f.power_loss_protection,
        f.idle_gc_after_ns,
    )
}

/// Run `reqs` on `c` in `mode` (preconditioned as configured), then a flush `GAP_NS`
/// after the last (so that the device settles, as each mode does at the end of a run,
/// once the last request's background work is done): the figures, or the error.
fn agreement_run(c: &Config, mode: Mode, reqs: &[HostRequest]) -> Result<Results, String> {
    let mut c = c.clone();
    c.mode = mode;
    let mut sim = Simulation::new(c).map_err(|e| e.to_string())?;
    // Functional mode's stripe rounds are drawn (not to alias with periodic writers):
    // the fixed order here, so that both modes place every page alike.
    sim.ftl.fixed_stripe_order();
    sim.precondition(&mut NoProgress)
        .map_err(|e| e.to_string())?;
    let mut reqs = reqs.to_vec();
    reqs.push(HostRequest {
        op: HostOp::Flush,
        arrival_ns: reqs.len() as u64 * GAP_NS,
        tag: reqs.len() as u32,
        ..Default::default()
    });
    sim.run_workload_with(common::open(reqs), &mut NoProgress)
        .map_err(|e| e.to_string())
}

/// The swarm's configurations (FDP, zoned, regions, demand-based mappings, every policy)
/// under request sequences whose outcome timing cannot change: the functional and the
/// timed mode issue the same NAND operations by cause and count the same host work.
#[test]
fn both_modes_agree_where_timing_cannot_matter() {
    let start = env_u64("SSDLAB_AGREE_START").unwrap_or(0);
    let cases = env_u64("SSDLAB_AGREE_CASES").unwrap_or(AGREE_CASES);
    let seeds: Vec<u64> = match env_u64("SSDLAB_AGREE_SEED") {
        Some(s) => vec![s],
        None => (start..start + cases).collect(),
    };
    let (mut ran, mut zoned, mut fdp, mut failed) = (0, 0, 0, Vec::new());
    let (mut whole, mut compared) = (0, 0);
    for &seed in &seeds {
        let Some(c) = agreement_config(seed) else {
            continue;
        };
        let mut reqs = agreement_requests(&c, seed, 300);
        reqs.truncate(background_free_prefix(&c, &reqs));
        whole += (reqs.len() == 300) as u32;
        compared += reqs.len();
        let f = agreement_run(&c, Mode::Functional, &reqs);
        let t = agreement_run(&c, Mode::Timed, &reqs);
        ran += 1;
        zoned += c.device.zns.is_some() as u32;
        fdp += c.device.fdp.is_some() as u32;
        let (f, t) = match (f, t) {
            (Ok(f), Ok(t)) => (agreed_figures(&f), agreed_figures(&t)),
            (f, t) => {
                let (f, t) = (f.err(), t.err());
                if f != t {
                    failed.push(format!("seed {seed}: errors differ: {f:?} vs {t:?}"));
                }
                continue;
            }
        };
        if f != t {
            failed.push(format!(
                "seed {seed} ({}):\n  functional {f}\n  timed      {t}\n  SSDLAB_AGREE_SEED={seed} cargo test -p ssdlab-core --test it both_modes_agree",
                features(&c)
            ));
        }
    }
    eprintln!(
        "agreement: {ran} cases ({zoned} zoned, {fdp} FDP; {whole} whole sequences), {compared} requests, {} differ",
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} of {ran} cases differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(seeds.len() < 20 || (zoned > 0 && fdp > 0 && ran * 10 >= seeds.len() * 8));
}

/// The FDP device of `configs/default.toml` with 2 KiB writes only, hot and cold on two
/// handles (`placement_by_temperature`), no preconditioning, 20,000 requests.
fn fdp_example(mode: Mode) -> Config {
    let text = include_str!("../../../../configs/default.toml");
    let mut c = Config::from_toml_str(text, "configs/default.toml").unwrap();
    c.mode = mode;
    c.precondition.enabled = false;
    c.device.fdp = Some(ssdlab_core::config::FdpConfig::default()); // 2 handles
    let ssdlab_workload::WorkloadConfig::Synthetic(w) = &mut c.workload else {
        panic!("a synthetic workload");
    };
    w.read_percent = 0.0;
    w.block_size_bytes = 2048;
    w.pattern = ssdlab_workload::synthetic::AddressPattern::HotCold;
    w.placement_by_temperature = true;
    w.requests = 20_000;
    c
}

/// The FDP example's disagreement: the functional mode counted a read-modify-write read
/// for every partly written unit on flash but issued the NAND read only in lane 0 (379
/// counted, 7 issued; the timed mode 334 and 334). Every counted read is issued in both
/// modes now (at queue depth 16: the timed buffer holds more rewritten units, so fewer
/// reads, than the functional mode's one page per lane). The same requests one at a time,
/// each after the device is idle, give both modes the same figures exactly.
#[test]
fn fdp_example_issues_every_read_modify_write_read_in_both_modes() {
    for mode in [Mode::Functional, Mode::Timed] {
        let mut sim = Simulation::new(fdp_example(mode)).unwrap();
        let r = sim.run_workload(&mut NoProgress).unwrap();
        let h = r.host.counters;
        assert_eq!((h.reads, h.writes), (0, 20_000), "{mode:?}");
        assert!(h.rmw_reads > 300, "{mode:?}: {}", h.rmw_reads);
        assert_eq!(
            r.nand.reads.host, h.rmw_reads,
            "{mode:?}: every counted read issued"
        );
    }
    // One at a time (the configured requests, a second apart).
    let run = |mode: Mode| {
        let mut sim = Simulation::new(fdp_example(mode)).unwrap();
        let mut w = sim.config.workload.build(&sim.workload_context()).unwrap();
        let mut reqs = Vec::new();
        while let Some(mut q) = w.flows[0].source.next_request().unwrap() {
            q.arrival_ns = reqs.len() as u64 * 1_000_000_000;
            reqs.push(q);
        }
        let r = sim
            .run_workload_with(common::open(reqs), &mut NoProgress)
            .unwrap();
        (
            serde_json::to_value(r.nand).unwrap(),
            serde_json::to_value(r.host.counters).unwrap(),
            r.fdp.unwrap().host_units_per_handle,
        )
    };
    let (f, t) = (run(Mode::Functional), run(Mode::Timed));
    assert_eq!(f, t);
    assert_eq!(f.1["rmw_reads"], f.0["reads"]["host"]);
    assert_eq!(f.1["rmw_reads"], 379);
    assert_eq!(f.0["programs"]["host"], 5001);
}

/// A failed request served (`ssdlab serve`'s core side) completes with its status in both
/// modes: here an FDP write naming a placement identifier the device does not have (the
/// functional mode's served completions carried no status).
#[test]
fn a_served_failure_completes_with_its_status_in_both_modes() {
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = common::tiny(1, 16, 8, 4, 2.0);
        c.mode = mode;
        c.integrity = true;
        c.device.fdp = Some(ssdlab_core::config::FdpConfig::default());
        let mut sim = Simulation::new(c).unwrap();
        let mut served = sim.serve().unwrap();
        for (tag, placement_id) in [(1, 9), (2, 1)] {
            let w = HostRequest {
                op: HostOp::Write,
                size_bytes: 4096,
                placement_id,
                tag,
                ..Default::default()
            };
            served
                .submit(w, Some(WriteData::Bytes(vec![7; 4096])))
                .unwrap();
        }
        while served.step().unwrap() {}
        let mut done = Vec::new();
        served.drain_completions(&mut done);
        let status: Vec<_> = done.iter().map(|c| (c.tag, c.error)).collect();
        assert_eq!(
            status,
            vec![(1, Some(ZoneError::InvalidField)), (2, None)],
            "{mode:?}"
        );
    }
}
