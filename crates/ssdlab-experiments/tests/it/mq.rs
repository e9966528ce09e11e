//! Issue 38's multi-queue study (`reproduce mq`) at its smallest scale (fixed seed): the
//! report's rows and their arithmetic (slowdown, fairness, throughput, Little's law), both
//! flows issuing for the whole run, and the expected-shape checks that hold at this scale.

use ssdlab_experiments::mq::{self, MqParams, MqReport, Sharing};

/// 24 pages per block, 125 ms per run.
const SCALE: u32 = 16;

fn report() -> (MqParams, MqReport) {
    let p = MqParams::paper(SCALE).unwrap();
    let r = mq::run(&p, &|_| {}).unwrap();
    (p, r)
}

#[test]
fn mq_study_rows_arithmetic_and_shape() {
    let (p, r) = report();
    assert_eq!(p.duration_ns, 125_000_000);
    assert_eq!(p.base.device.geometry.pages_per_block, 24);
    let hi = p.base.device.host_interface.as_ref().unwrap();
    assert_eq!(
        (hi.pcie_generation, hi.lanes, hi.max_commands_in_flight),
        (3, 4, 16)
    );
    // The duration is each flow's only limit (the generator's default of 100,000 requests
    // would stop the reads early at scale 1).
    for i in 0..2 {
        let c = p.flow_config(i);
        assert_eq!(
            (c.requests, c.total_bytes, c.duration_ns),
            (0, 0, p.duration_ns)
        );
    }

    // 10 runs, 16 rows in (GC state, sharing, flow) order.
    assert_eq!(r.runs.len(), 10);
    let order: Vec<(bool, Sharing, &str)> =
        r.rows.iter().map(|x| (x.gc, x.sharing, x.flow)).collect();
    let mut want = Vec::new();
    for gc in [false, true] {
        for s in Sharing::ALL {
            for f in ["reads", "writes"] {
                want.push((gc, s, f));
            }
        }
    }
    assert_eq!(order, want);
    let csv = r.csv();
    assert_eq!(csv.lines().next().unwrap(), mq::CSV_HEADER);
    assert_eq!(csv.lines().count(), 17);
    // The control runs: round robin with every command in a slot.
    for gc in [false, true] {
        let run = r
            .run_of(gc, Sharing::RoundRobinAllSlots, &["reads", "writes"])
            .unwrap();
        assert!(run.sim_time_ns >= p.duration_ns);
    }
    assert_eq!(
        p.config(Sharing::RoundRobinAllSlots)
            .unwrap()
            .device
            .host_interface
            .unwrap()
            .max_commands_in_flight,
        mq::ALL_SLOTS
    );

    // The flow study: one point per depth, each slowdown the ratio of its means, the
    // victim alone the same run for every point.
    let q = r.qd.as_ref().unwrap();
    let depths: Vec<u32> = q.points.iter().map(|x| x.other_qd).collect();
    assert_eq!(depths, mq::qd::OTHER_QDS.to_vec());
    for x in &q.points {
        assert_eq!(x.victim_alone_mean_ns, q.points[0].victim_alone_mean_ns);
        assert!(
            (x.victim_slowdown - x.victim_shared_mean_ns / x.victim_alone_mean_ns).abs() < 1e-9
        );
        assert!((x.other_slowdown - x.other_shared_mean_ns / x.other_alone_mean_ns).abs() < 1e-9);
        let (a, b) = (1.0 / x.victim_slowdown, 1.0 / x.other_slowdown);
        assert!((x.fairness - a.min(b) / a.max(b)).abs() < 1e-9);
        assert!(x.victim_requests > 0 && x.other_requests > 0, "{x:?}");
    }
    let qcsv = q.csv();
    assert_eq!(qcsv.lines().next().unwrap(), mq::qd::CSV_HEADER);
    assert!(mq::qd::CSV_HEADER.starts_with("other_qd,victim_slowdown,other_slowdown,fairness,"));
    assert_eq!(qcsv.lines().count(), 1 + mq::qd::OTHER_QDS.len());

    for run in &r.runs {
        // Every flow issued until the end of the run.
        assert!(run.sim_time_ns >= p.duration_ns, "{run:?}");
        assert!(run.link_down_utilization > 0.0 && run.link_up_utilization > 0.0);
    }
    for row in &r.rows {
        let run = r
            .runs
            .iter()
            .find(|x| {
                x.gc == row.gc
                    && x.sharing == row.sharing
                    && x.flows.contains(&row.flow)
                    && (x.flows.len() == 1) == (row.sharing == Sharing::Alone)
            })
            .unwrap();
        let s = run.sim_time_ns as f64 / 1e9;
        let block = if row.flow == "reads" { 4096 } else { 128 << 10 };
        assert_eq!(row.requests, row.latency.count);
        assert_eq!(row.iops, row.requests as f64 / s);
        assert_eq!(row.mb_per_s, (row.requests * block) as f64 / s / 1e6);
        let alone = r.row(row.gc, Sharing::Alone, row.flow).unwrap();
        match row.sharing {
            Sharing::Alone => assert_eq!((row.slowdown, row.fairness), (None, None)),
            _ => {
                assert_eq!(row.slowdown, Some(row.latency.mean / alone.latency.mean));
                let other = if row.flow == "reads" {
                    "writes"
                } else {
                    "reads"
                };
                let o = r.row(row.gc, row.sharing, other).unwrap().slowdown.unwrap();
                let me = row.slowdown.unwrap();
                assert_eq!(row.fairness, Some(me.min(o) / me.max(o)));
            }
        }
    }
    // Closed loop, one queue, no slot contention (QD 8 < 16 slots): Little's law for the
    // reads alone, 8 in flight.
    for gc in [false, true] {
        let a = r.row(gc, Sharing::Alone, "reads").unwrap();
        let in_flight = a.iops * a.latency.mean / 1e9;
        assert!((in_flight - 8.0).abs() < 0.05, "{in_flight}");
    }

    // The expected shape: what holds at this scale (as at scale 1).
    let shape = r.checks();
    let holds = |group: &str, start: &str| {
        let c = shape
            .iter()
            .find(|c| c.group == group && c.claim.starts_with(start))
            .unwrap_or_else(|| panic!("{group}: {start}: {shape:?}"));
        c.holds
    };
    for g in ["no GC", "GC"] {
        assert_eq!(holds(g, "design:"), Some(true), "{shape:?}");
        assert_eq!(holds(g, "RR: the reads slow down"), Some(true), "{shape:?}");
        assert_eq!(holds(g, "WRR protects"), Some(true), "{shape:?}");
        // The writes do not pay: they are bound by the dies and link, not by slots.
        assert_eq!(holds(g, "the write flow pays"), Some(false), "{shape:?}");
    }
    assert_eq!(holds("no GC", "RR: the writes slow down"), Some(true));
    assert_eq!(holds("GC vs no GC", "GC makes"), Some(true), "{shape:?}");
    // A failed check says why.
    for c in shape.iter().filter(|c| c.holds == Some(false)) {
        assert!(c.detail.contains("; "), "{c:?}");
    }
    let md = r.markdown();
    assert!(md.contains("| WRR | reads | high |"), "{md}");
    every_check_can_hold_and_fail(&r);
}

/// Each check of the shape, on `r` changed to make it hold and to make it fail.
fn every_check_can_hold_and_fail(r: &MqReport) {
    use crate::shape::{assert_each_can_hold_and_fail, Change};
    let holds = |r: &MqReport, key: &str| {
        let (group, start) = key.split_once(": ").unwrap();
        r.checks()
            .iter()
            .find(|c| c.group == group && c.claim.starts_with(start))
            .unwrap_or_else(|| panic!("{key}"))
            .holds
    };
    // Set the slowdown of (GC state, sharing, flow).
    fn sd(r: &mut MqReport, gc: bool, s: Sharing, flow: &str, x: f64) {
        let row = r
            .rows
            .iter_mut()
            .find(|w| w.gc == gc && w.sharing == s && w.flow == flow)
            .unwrap();
        row.slowdown = Some(x);
    }
    fn p99(r: &mut MqReport, gc: bool, ns: u64) {
        let row = r
            .rows
            .iter_mut()
            .find(|w| w.gc == gc && w.sharing == Sharing::RoundRobinAllSlots && w.flow == "reads")
            .unwrap();
        row.latency.p99 = ns;
    }
    fn victims(r: &mut MqReport, gc: bool, n: u64) {
        for run in r.runs.iter_mut().filter(|x| x.gc == gc) {
            run.gc_victims = n;
        }
    }
    let mut cases: Vec<(String, Change<MqReport>, Change<MqReport>)> = Vec::new();
    for (gc, g) in [(false, "no GC"), (true, "GC")] {
        cases.push((
            format!("{g}: design:"),
            Box::new(move |r| victims(r, gc, if gc { 5 } else { 0 })),
            Box::new(move |r| victims(r, gc, if gc { 0 } else { 5 })),
        ));
        for flow in ["reads", "writes"] {
            cases.push((
                format!("{g}: RR: the {flow} slow down"),
                Box::new(move |r| sd(r, gc, Sharing::RoundRobin, flow, 2.0)),
                Box::new(move |r| sd(r, gc, Sharing::RoundRobin, flow, 1.005)),
            ));
        }
        cases.push((
            format!("{g}: WRR protects"),
            Box::new(move |r| {
                sd(r, gc, Sharing::RoundRobin, "reads", 2.0);
                sd(r, gc, Sharing::WeightedRoundRobin, "reads", 1.5);
            }),
            Box::new(move |r| {
                sd(r, gc, Sharing::RoundRobin, "reads", 2.0);
                sd(r, gc, Sharing::WeightedRoundRobin, "reads", 1.99);
            }),
        ));
        cases.push((
            format!("{g}: the write flow pays"),
            Box::new(move |r| {
                sd(r, gc, Sharing::RoundRobin, "writes", 1.1);
                sd(r, gc, Sharing::WeightedRoundRobin, "writes", 1.5);
            }),
            Box::new(move |r| {
                sd(r, gc, Sharing::RoundRobin, "writes", 1.1);
                sd(r, gc, Sharing::WeightedRoundRobin, "writes", 1.105);
            }),
        ));
    }
    cases.push((
        "GC vs no GC: GC makes".into(),
        Box::new(|r| {
            sd(r, false, Sharing::RoundRobin, "reads", 2.0);
            sd(r, true, Sharing::RoundRobin, "reads", 3.0);
        }),
        Box::new(|r| {
            sd(r, false, Sharing::RoundRobin, "reads", 3.0);
            sd(r, true, Sharing::RoundRobin, "reads", 3.0);
        }),
    ));
    cases.push((
        "GC vs no GC: back end".into(),
        Box::new(|r| {
            p99(r, false, 1_000_000);
            p99(r, true, 3_000_000);
        }),
        Box::new(|r| {
            p99(r, false, 1_000_000);
            p99(r, true, 1_005_000);
        }),
    ));
    fn qd(r: &mut MqReport, f: impl Fn(&mut mq::qd::QdPoint)) {
        r.qd.as_mut().unwrap().points.iter_mut().for_each(f);
    }
    cases.push((
        "flow study: the victim's slowdown rises".into(),
        Box::new(|r| qd(r, |x| x.victim_slowdown = x.other_qd as f64)),
        Box::new(|r| qd(r, |x| x.victim_slowdown = 100.0 / x.other_qd as f64)),
    ));
    cases.push((
        "flow study: the victim at least".into(),
        Box::new(|r| qd(r, |x| x.victim_slowdown = 4.5)),
        Box::new(|r| qd(r, |x| x.victim_slowdown = 3.5)),
    ));
    cases.push((
        "flow study: the other flow at most".into(),
        Box::new(|r| qd(r, |x| x.other_slowdown = 1.1)),
        Box::new(|r| qd(r, |x| x.other_slowdown = 1.3)),
    ));
    assert_each_can_hold_and_fail(r, r.checks().len(), holds, cases);
}

#[test]
fn mq_refuses_a_bad_scale_and_a_missing_host_interface() {
    let e = MqParams::paper(3).unwrap_err().to_string();
    assert!(e.starts_with("scale: 3: a power of two up to 16"), "{e}");
    let mut p = MqParams::paper(16).unwrap();
    p.base.device.host_interface = None;
    let e = p.check().unwrap_err().to_string();
    assert!(e.starts_with("device.host_interface: "), "{e}");
    // The study gives the flows their classes; one given by the user is refused, not
    // silently replaced.
    let mut p = MqParams::paper(16).unwrap();
    let hi = p.base.device.host_interface.as_mut().unwrap();
    hi.flow_priority = vec![ssdlab_core::policy::arbitration::Priority::Low];
    let e = p.check().unwrap_err().to_string();
    assert_eq!(
        e,
        "device.host_interface.flow_priority: the study sets each flow's class itself (reads high, writes low) for its weighted-round-robin runs"
    );
}
