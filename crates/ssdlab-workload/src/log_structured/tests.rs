use super::*;
use crate::replay::VecSource;
use crate::synthetic::SyntheticConfig;
use proptest::prelude::*;

const U: u64 = 4096;
const K: u64 = 1024;

fn req(op: HostOp, offset_bytes: u64, size_bytes: u64) -> HostRequest {
    HostRequest {
        op,
        offset_bytes,
        size_bytes,
        ..Default::default()
    }
}

/// A write of logical units `a..b`.
fn w(a: u64, b: u64) -> HostRequest {
    req(HostOp::Write, a * U, (b - a) * U)
}

fn r(a: u64, b: u64) -> HostRequest {
    req(HostOp::Read, a * U, (b - a) * U)
}

/// Zones of 8 units (32 KiB) of which 4 (16 KiB) are writable.
fn geometry(zones: u32) -> ZoneGeometry {
    ZoneGeometry {
        zone_bytes: 8 * U,
        zone_capacity_bytes: 4 * U,
        zones,
        max_open_zones: 4,
        max_active_zones: 4,
    }
}

fn params(zones: u32, user_units: u64, gc_free_zones: u32) -> LayerParams {
    LayerParams {
        unit_bytes: U,
        geometry: geometry(zones),
        user_units,
        placement_ids: 1,
        separate_by_placement: true,
        gc_free_zones,
        gc_request_bytes: 0,
    }
}

fn run(layer: &mut HostLayer, r: HostRequest) -> Vec<HostRequest> {
    let mut out = VecDeque::new();
    layer.translate(&r, &mut out).unwrap();
    out.into()
}

/// (op, offset bytes, size bytes) of each request.
type Ops = Vec<(HostOp, u64, u64)>;

fn ops(v: &[HostRequest]) -> Ops {
    v.iter()
        .map(|r| (r.op, r.offset_bytes, r.size_bytes))
        .collect()
}

use HostOp::{Read as RD, Write as WR, ZoneReset as RESET};

#[test]
fn sequential_fill_takes_zones_in_order_at_their_write_pointers() {
    let stats = WorkloadStats::default();
    let mut l = HostLayer::new(&params(12, 16, 2), stats.clone()).unwrap();
    // 6 units: zone 0 whole (4 units), then 2 at zone 1's start (its byte 32 KiB).
    assert_eq!(
        ops(&run(&mut l, w(0, 6))),
        vec![(WR, 0, 16 * K), (WR, 32 * K, 8 * K)]
    );
    // The next write continues zone 1 at its write pointer, then zone 2.
    assert_eq!(
        ops(&run(&mut l, w(6, 12))),
        vec![(WR, 40 * K, 8 * K), (WR, 64 * K, 16 * K)]
    );
    let s = stats.snapshot();
    assert_eq!(s.host_user_write_bytes, 12 * U);
    assert_eq!(
        (s.host_gc_write_bytes, s.host_zone_resets, s.host_gc_runs),
        (0, 0, 0)
    );
}

/// Six zones of 4 writable units, 8 user units, GC below 2 empty zones: a hand-made
/// history leaves every full zone with valid data, then a write needs a zone.
#[test]
fn gc_relocates_the_emptiest_zones_then_resets_them_exact_sequence() {
    let stats = WorkloadStats::default();
    let mut l = HostLayer::new(&params(6, 8, 1), stats.clone()).unwrap();
    let mut steps: Vec<(HostRequest, Ops)> = vec![
        // zone 0 = [L0 L1 L2 L3]
        (w(0, 4), vec![(WR, 0, 16 * K)]),
        // zone 1 = [L0 L1 ..]; zone 0 keeps L2 L3
        (w(0, 2), vec![(WR, 32 * K, 8 * K)]),
        // zone 1 = [x x L0 L1]
        (w(0, 2), vec![(WR, 40 * K, 8 * K)]),
        // zone 2 = [L4 L5 L6 L7]
        (w(4, 8), vec![(WR, 64 * K, 16 * K)]),
        // zone 3 = [L0]: zone 1 keeps L1 only
        (w(0, 1), vec![(WR, 96 * K, 4 * K)]),
    ];
    // zone 3 = [x x x L0]
    for at in [100, 104, 108] {
        steps.push((w(0, 1), vec![(WR, at * K, 4 * K)]));
    }
    // zone 4 = [x x x L4]: zone 2 keeps L5 L6 L7
    for at in [128, 132, 136, 140] {
        steps.push((w(4, 5), vec![(WR, at * K, 4 * K)]));
    }
    for (i, (rq, want)) in steps.iter().enumerate() {
        assert_eq!(ops(&run(&mut l, *rq)), *want, "step {i}");
    }
    assert_eq!(stats.snapshot().host_gc_runs, 0);
    // Valid units: zone 0: 2, zone 1: 1, zone 2: 3 -> 2 after this write, zone 3: 1,
    // zone 4: 1; only zone 5 is empty, so the write needs GC: zone 1 (L1) goes to the GC
    // zone (5), zone 1 is reset; still 1 empty, so zone 3 (L0) follows; then the write
    // lands in zone 1, the oldest empty zone.
    let out = run(&mut l, w(5, 6));
    assert_eq!(
        ops(&out),
        vec![
            (RD, 44 * K, 4 * K),
            (WR, 160 * K, 4 * K),
            (RESET, 32 * K, 0),
            (RD, 108 * K, 4 * K),
            (WR, 164 * K, 4 * K),
            (RESET, 96 * K, 0),
            (WR, 32 * K, 4 * K),
        ]
    );
    // The relocations (two reads, two writes, two resets) carry the relocation tag, the
    // write that needed them the user's.
    let (g, u) = (TAG_RELOCATION, TAG_USER);
    assert_eq!(
        out.iter().map(|r| r.tag).collect::<Vec<_>>(),
        vec![g, g, g, g, g, g, u]
    );
    let s = stats.snapshot();
    assert_eq!(s.host_user_write_bytes, 84 * K);
    assert_eq!(s.host_gc_write_bytes, 8 * K);
    assert_eq!((s.host_zone_resets, s.host_gc_runs), (2, 1));
    assert_eq!(s.host_waf(), Some(92.0 / 84.0));

    // Reads follow the data: L1 and L0 moved to zone 5, L2 L3 are still in zone 0.
    assert_eq!(ops(&run(&mut l, r(1, 2))), vec![(RD, 160 * K, 4 * K)]);
    assert_eq!(
        ops(&run(&mut l, r(0, 4))),
        vec![
            (RD, 164 * K, 4 * K),
            (RD, 160 * K, 4 * K),
            (RD, 8 * K, 8 * K)
        ]
    );
    // Byte-exact across two units contiguous in zone 2 (L6, L7 at its units 2 and 3).
    assert_eq!(
        ops(&run(&mut l, req(RD, 6 * U + 100, U - 50))),
        vec![(RD, 72 * K + 100, U - 50)]
    );
    // A trim unmaps only the units it covers whole (L3 here), and emits nothing.
    assert_eq!(run(&mut l, req(HostOp::Trim, 2 * U + 1, 2 * U - 1)), vec![]);
    assert_eq!(ops(&run(&mut l, r(2, 4))), vec![(RD, 8 * K, 4 * K)]);
    assert_eq!(run(&mut l, r(3, 4)), vec![]);
    let flush = req(HostOp::Flush, 0, 0);
    assert_eq!(run(&mut l, flush), vec![flush]);
    // A user request keeps the user's tag whatever the inner workload's was.
    let tagged = HostRequest { tag: 7, ..r(0, 1) };
    assert_eq!(run(&mut l, tagged)[0].tag, TAG_USER);
}

fn tiny_zoned_ctx(zones: u32) -> WorkloadContext {
    WorkloadContext {
        logical_bytes: zones as u64 * 8 * U,
        unit_bytes: U,
        seed: 3,
        base_dir: None,
        zones: Some(ZoneGeometry {
            zones,
            ..geometry(zones)
        }),
        placement_ids: 0,
    }
}

fn synthetic(requests: u64) -> SyntheticConfig {
    SyntheticConfig {
        read_percent: 0.0,
        queue_depth: 4,
        requests,
        ..Default::default()
    }
}

fn config(spare_ratio: f64, inner: SyntheticConfig) -> LogStructuredConfig {
    LogStructuredConfig {
        spare_ratio,
        inner: Box::new(WorkloadConfig::Synthetic(inner)),
        ..Default::default()
    }
}

fn build_err(c: &LogStructuredConfig, ctx: &WorkloadContext) -> String {
    match build(c, ctx) {
        Ok(_) => panic!("built"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn needs_a_zoned_device() {
    let ctx = WorkloadContext {
        zones: None,
        ..tiny_zoned_ctx(8)
    };
    assert_eq!(
        build_err(&config(0.28, synthetic(10)), &ctx),
        "workload.kind: the log-structured host layer needs a zoned device ([device.zns])"
    );
}

#[test]
fn the_inner_workload_sees_the_user_capacity() {
    // 64 zones × 4 units = 256 units; / 1.28 = 200 units.
    let ctx = tiny_zoned_ctx(64);
    assert_eq!(user_units(&ctx.zones.unwrap(), U, 0.28), 200);
    let inner = SyntheticConfig {
        pattern: crate::synthetic::AddressPattern::Sequential,
        ..synthetic(300)
    };
    let mut wl = build(&config(0.28, inner), &ctx).unwrap();
    assert_eq!(wl.flows.len(), 1);
    assert_eq!(
        wl.flows[0].arrival,
        crate::Arrival::Closed { queue_depth: 4 }
    );
    let mut user = 0;
    while let Some(r) = wl.flows[0].source.next_request().unwrap() {
        if r.op == HostOp::Write {
            assert!(r.offset_bytes % (8 * U) + r.size_bytes <= 4 * U, "{r:?}");
        }
        user += 1;
    }
    assert!(user >= 300);
    let s = wl.stats.snapshot();
    // The sequential inner workload wraps at 200 units: the second pass overwrites
    // whole zones, so GC resets them without relocating anything.
    assert_eq!(s.host_user_write_bytes, 300 * U);
    assert_eq!(s.host_gc_write_bytes, 0);
    assert!(s.host_zone_resets > 0 && s.host_gc_runs > 0, "{s:?}");
    // An inner request beyond 200 units is refused.
    let beyond = SyntheticConfig {
        working_set_offset_bytes: 200 * U,
        ..synthetic(1)
    };
    let e = build_err(&config(0.28, beyond), &ctx);
    assert!(
        e.starts_with("workload.inner.working_set_offset_bytes:") && e.contains("819200"),
        "{e}"
    );
}

#[test]
fn too_little_spare_or_too_many_open_zones_is_refused_at_build() {
    // 16 zones × 4 units: 2 written at once + gc_free_zones 2 + 1 = 5 zones beyond the
    // data: the data may fill 11 zones (44 units): spare_ratio 64/44 - 1 = 0.4545….
    let ctx = tiny_zoned_ctx(16);
    assert!(build(&config(0.46, synthetic(10)), &ctx).is_ok());
    let e = build_err(&config(0.40, synthetic(10)), &ctx);
    assert!(
        e.starts_with(
            "workload.spare_ratio: the user data (45 units) fills 12 of the device's 16 zones"
        ) && e.contains("GC needs 5 more"),
        "{e}"
    );
    // Four placement ids + GC = 5 zones written at once; the device opens 4.
    let c = LogStructuredConfig {
        placement_ids: 4,
        ..config(2.0, synthetic(10))
    };
    let e = build_err(&c, &ctx);
    assert!(
        e.starts_with("workload.placement_ids: the layer writes 5 zones at once"),
        "{e}"
    );
    // Without separation the same ids share one zone.
    let c = LogStructuredConfig {
        separate_by_placement: false,
        ..c
    };
    assert!(build(&c, &ctx).is_ok());
    let c = LogStructuredConfig {
        gc_free_zones: 0,
        ..config(2.0, synthetic(10))
    };
    assert!(build_err(&c, &ctx).starts_with("workload.gc_free_zones:"));
}

#[test]
fn one_inner_flow_and_no_nesting() {
    let ctx = tiny_zoned_ctx(16);
    let two = SyntheticConfig {
        flows: 2,
        ..synthetic(10)
    };
    let e = build_err(&config(1.0, two), &ctx);
    assert!(
        e.starts_with("workload.inner.flows: the inner workload has 2 flows"),
        "{e}"
    );
    let nested = LogStructuredConfig {
        inner: Box::new(WorkloadConfig::LogStructured(config(1.0, synthetic(1)))),
        ..config(1.0, synthetic(1))
    };
    assert!(build_err(&nested, &ctx).starts_with("workload.inner.kind:"));
}

#[test]
fn toml_keys() {
    let text = r#"
kind = "log-structured"
spare_ratio = 0.5
gc_free_zones = 3
separate_by_placement = false
placement_ids = 2
gc_request_bytes = 65536
[inner]
kind = "synthetic"
read_percent = 0
"#;
    let c: WorkloadConfig = toml::from_str(text).unwrap();
    let WorkloadConfig::LogStructured(c) = c else {
        panic!("{c:?}")
    };
    assert_eq!(
        (
            c.spare_ratio,
            c.gc_free_zones,
            c.separate_by_placement,
            c.placement_ids,
            c.gc_request_bytes
        ),
        (0.5, 3, false, 2, 65536)
    );
    assert!(matches!(*c.inner, WorkloadConfig::Synthetic(ref s) if s.read_percent == 0.0));
    let e = toml::from_str::<WorkloadConfig>(&text.replace("gc_free_zones", "gc_free"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `gc_free`"), "{e}");
}

/// Hot writes carry placement id 1, and the layer never mixes them with cold ones.
#[test]
fn hot_and_cold_never_share_a_zone_when_separated() {
    let ctx = tiny_zoned_ctx(64);
    let inner = SyntheticConfig {
        pattern: crate::synthetic::AddressPattern::HotCold,
        hot_io_percent: 80.0,
        hot_space_percent: 20.0,
        placement_by_temperature: true,
        ..synthetic(3000)
    };
    let hot_bytes = (user_units(&ctx.zones.unwrap(), U, 1.0) as f64 * 0.2).round() as u64 * U;
    for separate in [true, false] {
        let c = LogStructuredConfig {
            separate_by_placement: separate,
            ..config(1.0, inner.clone())
        };
        // Drive the inner source alongside: the n-th user write is the n-th inner write.
        let mut shadow = crate::synthetic::build(
            &inner,
            &WorkloadContext {
                logical_bytes: user_units(&ctx.zones.unwrap(), U, 1.0) * U,
                zones: None,
                placement_ids: 2,
                ..ctx.clone()
            },
        )
        .unwrap();
        let mut wl = build(&c, &ctx).unwrap();
        // Temperature of each zone's data since its last reset: 0 cold, 1 hot, 2 GC.
        let mut zone_class: Vec<Option<u8>> = vec![None; 64];
        let mut mixed = false;
        let mut gc_reads = 0;
        while let Some(rq) = wl.flows[0].source.next_request().unwrap() {
            let z = (rq.offset_bytes / (8 * U)) as usize;
            match rq.op {
                HostOp::Read => gc_reads += 1,
                HostOp::ZoneReset => zone_class[z] = None,
                HostOp::Write => {
                    let class = if gc_reads > 0 {
                        2
                    } else {
                        let u = shadow.flows[0].source.next_request().unwrap().unwrap();
                        assert_eq!(u.placement_id, (u.offset_bytes < hot_bytes) as u16);
                        u.placement_id as u8
                    };
                    let c = zone_class[z].get_or_insert(class);
                    mixed |= *c != class;
                }
                _ => {}
            }
            if rq.op == HostOp::ZoneReset {
                gc_reads = 0;
            }
        }
        assert!(wl.stats.snapshot().host_zone_resets > 10);
        // Mixing is what separation prevents: without it, hot and cold share zones.
        assert_eq!(mixed, !separate, "separate_by_placement = {separate}");
    }
}

// ---- property test: a model of the device's zones checks every request ----

#[derive(Clone, Debug)]
struct Case {
    zones: u32,
    cap: u32,
    zone_units: u32,
    placement_ids: u16,
    separate: bool,
    gc_free_zones: u32,
    gc_request_units: u64,
    user_units: u64,
    /// (kind 0..10, first byte in 512-byte sectors, sectors, placement id)
    ops: Vec<(u8, u64, u64, u16)>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        2u32..6,
        0u32..3,
        1u16..4,
        any::<bool>(),
        1u32..4,
        0u64..4,
        1u32..6,
    )
        .prop_flat_map(|(cap, extra, ids, separate, t, gcu, slack)| {
            let open = if separate { ids as u32 } else { 1 } + 1;
            (3u32..8).prop_flat_map(move |data_zones| {
                let zones = data_zones + open + t + slack;
                let max_user = data_zones as u64 * cap as u64;
                (1..=max_user).prop_flat_map(move |user_units| {
                    let sectors = user_units * 8;
                    let op =
                        (0u8..10, 0..sectors, 1u64..24, 0..ids).prop_map(move |(k, s, n, p)| {
                            let n = n.min(sectors - s);
                            (k, s, n, p)
                        });
                    proptest::collection::vec(op, 1..300).prop_map(move |ops| Case {
                        zones,
                        cap,
                        zone_units: cap + extra,
                        placement_ids: ids,
                        separate,
                        gc_free_zones: t,
                        gc_request_units: gcu,
                        user_units,
                        ops,
                    })
                })
            })
        })
}

/// What the device holds, as the requests say.
struct Model {
    cap: u64,
    wp: Vec<u64>,
    /// Logical unit each written physical unit holds.
    content: Vec<Vec<Option<u64>>>,
    /// Where each logical unit's latest copy is.
    loc: Vec<Option<(usize, u64)>>,
    class: Vec<Option<u32>>,
    user_bytes: u64,
    gc_bytes: u64,
    resets: u64,
}

const GC: u32 = 1000;

impl Model {
    fn live(&self, z: usize) -> usize {
        (0..self.wp[z])
            .filter(|&o| {
                self.content[z][o as usize].is_some_and(|l| self.loc[l as usize] == Some((z, o)))
            })
            .count()
    }
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let g = ZoneGeometry {
        zone_bytes: c.zone_units as u64 * U,
        zone_capacity_bytes: c.cap as u64 * U,
        zones: c.zones,
        max_open_zones: 8,
        max_active_zones: 8,
    };
    let p = LayerParams {
        unit_bytes: U,
        geometry: g,
        user_units: c.user_units,
        placement_ids: c.placement_ids,
        separate_by_placement: c.separate,
        gc_free_zones: c.gc_free_zones,
        gc_request_bytes: c.gc_request_units * U,
    };
    let stats = WorkloadStats::default();
    let mut layer = HostLayer::new(&p, stats.clone()).unwrap();
    let zb = g.zone_bytes;
    let mut m = Model {
        cap: c.cap as u64,
        wp: vec![0; c.zones as usize],
        content: vec![vec![None; c.cap as usize]; c.zones as usize],
        loc: vec![None; c.user_units as usize],
        class: vec![None; c.zones as usize],
        user_bytes: 0,
        gc_bytes: 0,
        resets: 0,
    };
    for &(k, s, n, pid) in &c.ops {
        let (lo, hi) = (s * 512, (s + n) * 512);
        let op = match k {
            0..=5 => HostOp::Write,
            6..=7 => HostOp::Read,
            8 => HostOp::Trim,
            _ => HostOp::Flush,
        };
        let rq = HostRequest {
            op,
            offset_bytes: lo,
            size_bytes: hi - lo,
            placement_id: pid,
            ..Default::default()
        };
        let out = run(&mut layer, rq);
        // User units a write carries, in order; data GC read, to be written again.
        let mut pending: VecDeque<u64> = VecDeque::new();
        if op == HostOp::Write {
            pending.extend(lo / U..hi.div_ceil(U));
            // The write supersedes the old copies at once: GC need not keep them.
            for &l in &pending {
                m.loc[l as usize] = None;
            }
        }
        let mut relocating: VecDeque<u64> = VecDeque::new();
        let mut victim: Option<usize> = None;
        let mut user_pieces = Vec::new();
        let mut last_read: Option<(u64, u64)> = None;
        for q in &out {
            let z = (q.offset_bytes / zb) as usize;
            let at = q.offset_bytes % zb;
            prop_assert!(z < c.zones as usize, "{q:?}");
            match q.op {
                HostOp::Write => {
                    prop_assert_eq!(at, m.wp[z] * U, "write not at the write pointer: {:?}", q);
                    prop_assert!(q.size_bytes > 0 && q.size_bytes.is_multiple_of(U));
                    let units = q.size_bytes / U;
                    prop_assert!(
                        m.wp[z] + units <= m.cap,
                        "beyond the zone capacity: {:?}",
                        q
                    );
                    let gc = !relocating.is_empty();
                    let class = if gc {
                        m.gc_bytes += q.size_bytes;
                        prop_assert!(c.gc_request_units == 0 || units <= c.gc_request_units);
                        GC
                    } else {
                        m.user_bytes += q.size_bytes;
                        if c.separate {
                            pid as u32
                        } else {
                            0
                        }
                    };
                    let zc = m.class[z].get_or_insert(class);
                    prop_assert_eq!(*zc, class, "zone {} mixes streams", z);
                    for i in 0..units {
                        let l = if gc {
                            relocating.pop_front()
                        } else {
                            pending.pop_front()
                        };
                        prop_assert!(l.is_some(), "more written than carried: {:?}", q);
                        let l = l.unwrap();
                        let o = m.wp[z] + i;
                        m.content[z][o as usize] = Some(l);
                        m.loc[l as usize] = Some((z, o));
                    }
                    m.wp[z] += units;
                }
                HostOp::Read if op == HostOp::Write => {
                    // A relocation: whole valid units of one victim.
                    prop_assert!(
                        at.is_multiple_of(U) && q.size_bytes.is_multiple_of(U) && q.size_bytes > 0
                    );
                    prop_assert!(c.gc_request_units == 0 || q.size_bytes / U <= c.gc_request_units);
                    prop_assert!(at / U + q.size_bytes / U <= m.wp[z]);
                    if victim != Some(z) {
                        prop_assert!(victim.is_none() && relocating.is_empty());
                        victim = Some(z);
                        // Greedy: no full zone holds less valid data.
                        let full: Vec<usize> = (0..c.zones as usize)
                            .filter(|&y| m.wp[y] == m.cap)
                            .collect();
                        let least = full.iter().map(|&y| m.live(y)).min();
                        prop_assert!(m.wp[z] == m.cap);
                        prop_assert_eq!(Some(m.live(z)), least, "victim {} not greedy", z);
                    }
                    for o in at / U..at / U + q.size_bytes / U {
                        let l = m.content[z][o as usize];
                        prop_assert!(
                            l.is_some_and(|l| m.loc[l as usize] == Some((z, o))),
                            "relocating an invalid unit {} of zone {}",
                            o,
                            z
                        );
                        relocating.push_back(l.unwrap());
                    }
                }
                HostOp::Read => {
                    prop_assert_eq!(op, HostOp::Read);
                    prop_assert!(at + q.size_bytes <= m.wp[z] * U && q.size_bytes > 0);
                    // One request per contiguous run.
                    prop_assert!(last_read != Some((z as u64, at)), "unmerged run {:?}", q);
                    last_read = Some((z as u64, at + q.size_bytes));
                    let mut b = at;
                    while b < at + q.size_bytes {
                        let o = b / U;
                        let end = ((o + 1) * U).min(at + q.size_bytes);
                        let l = m.content[z][o as usize].unwrap();
                        prop_assert_eq!(m.loc[l as usize], Some((z, o)), "stale read");
                        user_pieces.push((l * U + b % U, l * U + (end - 1) % U + 1));
                        b = end;
                    }
                }
                HostOp::ZoneReset => {
                    prop_assert_eq!(at, 0);
                    prop_assert!(relocating.is_empty(), "reset before relocation ended");
                    prop_assert!(victim.is_none() || victim == Some(z));
                    prop_assert_eq!(m.wp[z], m.cap, "reset of a zone not full");
                    prop_assert_eq!(m.live(z), 0, "reset of zone {} with valid data", z);
                    m.wp[z] = 0;
                    m.content[z] = vec![None; c.cap as usize];
                    m.class[z] = None;
                    m.resets += 1;
                    victim = None;
                }
                HostOp::Flush => prop_assert_eq!(op, HostOp::Flush),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
            let open = m.wp.iter().filter(|&&w| w > 0 && w < m.cap).count() as u32;
            prop_assert!(open <= p.open_zones(), "{} zones open", open);
        }
        prop_assert!(pending.is_empty() && relocating.is_empty() && victim.is_none());
        match op {
            HostOp::Trim => {
                prop_assert!(out.is_empty());
                for l in lo.div_ceil(U)..hi / U {
                    m.loc[l as usize] = None;
                }
            }
            HostOp::Read => {
                // Exactly the mapped bytes, in order, from their latest copies.
                let want: Vec<(u64, u64)> = (lo / U..hi.div_ceil(U))
                    .filter(|&l| m.loc[l as usize].is_some())
                    .map(|l| (lo.max(l * U), hi.min((l + 1) * U)))
                    .collect();
                prop_assert_eq!(user_pieces, want);
            }
            HostOp::Flush => prop_assert_eq!(out.len(), 1),
            _ => {}
        }
        let s = stats.snapshot();
        prop_assert_eq!(s.host_user_write_bytes, m.user_bytes);
        prop_assert_eq!(s.host_gc_write_bytes, m.gc_bytes);
        prop_assert_eq!(s.host_zone_resets, m.resets);
        prop_assert!(s.host_gc_runs <= s.host_zone_resets);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn every_request_fits_the_zones_and_reads_find_the_latest_data(c in case()) {
        check(&c)?;
    }
}

/// The source: a wholly unmapped read becomes nothing; the next inner request follows.
#[test]
fn the_source_skips_requests_that_need_no_io_and_keeps_arrivals() {
    let inner = vec![
        HostRequest {
            arrival_ns: 5,
            ..r(0, 2)
        },
        HostRequest {
            arrival_ns: 9,
            ..w(0, 1)
        },
        HostRequest {
            arrival_ns: 12,
            ..r(0, 2)
        },
    ];
    let mut s = LogStructuredSource::new(
        Box::new(VecSource::new(inner)),
        &params(6, 8, 1),
        WorkloadStats::default(),
    )
    .unwrap();
    let mut got = Vec::new();
    while let Some(q) = s.next_request().unwrap() {
        got.push((q.arrival_ns, q.op, q.offset_bytes, q.size_bytes));
    }
    assert_eq!(got, vec![(9, WR, 0, U), (12, RD, 0, U)]);
    // An inner workload that never writes is an error, not an endless loop.
    let reads = vec![r(0, 1); MAX_SILENT_REQUESTS as usize];
    let mut s = LogStructuredSource::new(
        Box::new(VecSource::new(reads)),
        &params(6, 8, 1),
        WorkloadStats::default(),
    )
    .unwrap();
    let e = s.next_request().unwrap_err().to_string();
    assert!(
        e.starts_with("workload.inner: 1048576 requests in a row"),
        "{e}"
    );
}

#[test]
fn placement_ids_beyond_the_streams_and_zone_commands_are_refused() {
    let mut l = HostLayer::new(&params(6, 8, 1), WorkloadStats::default()).unwrap();
    let mut out = VecDeque::new();
    let e = l
        .translate(
            &HostRequest {
                placement_id: 1,
                ..w(0, 1)
            },
            &mut out,
        )
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("workload.placement_ids:"), "{e}");
    let e = l
        .translate(&req(HostOp::ZoneReset, 0, 0), &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("zone_reset"), "{e}");
    let e = l.translate(&w(7, 9), &mut out).unwrap_err().to_string();
    assert!(
        e.contains("beyond the layer's user capacity (32768 bytes)"),
        "{e}"
    );
}

#[test]
fn host_counters_stay_out_of_results_when_zero() {
    let s = crate::stats::WorkloadStatsSnapshot::default();
    let text = toml::to_string(&s).unwrap();
    assert!(!text.contains("host_"), "{text}");
    let s = crate::stats::WorkloadStatsSnapshot {
        host_user_write_bytes: 10,
        host_gc_write_bytes: 5,
        ..s
    };
    assert_eq!(s.host_waf(), Some(1.5));
    assert!(toml::to_string(&s)
        .unwrap()
        .contains("host_gc_write_bytes = 5"));
}
