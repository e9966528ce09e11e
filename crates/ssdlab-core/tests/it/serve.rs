//! A served phase keeps the host's bytes with the slots that hold them: random writes
//! (whole and partial units), trims and reads, with GC moving data all the while, read
//! back exactly what a byte-level model of the device says, in both modes.

use crate::common::tiny;
use crate::common::Rng;
use ssdlab_core::config::Mode;
use ssdlab_core::sim::serve::WriteData;
use ssdlab_core::sim::timed::Completion;
use ssdlab_core::Simulation;
use ssdlab_workload::{HostOp, HostRequest};

/// A request in flight: op, offset, size, the bytes a read must return.
type InFlight = (HostOp, u64, u64, Vec<u8>);

/// Run `requests` random requests against a served phase, at most `depth` in flight on
/// disjoint ranges, and check every read against the model; returns the results.
fn serve_random(mode: Mode, seed: u64, requests: u32, depth: usize) -> ssdlab_core::Results {
    let mut cfg = tiny(2, 16, 8, 2, 0.5);
    cfg.mode = mode;
    cfg.integrity = true;
    let mut sim = Simulation::new(cfg).unwrap();
    let logical = sim.derived.logical_bytes;
    let mut model = vec![0u8; logical as usize];
    let mut served = sim.serve().unwrap();
    let mut rng = Rng(seed | 1);
    // In flight: tag → (op, offset, size, expected bytes for reads).
    let mut flight: Vec<Option<InFlight>> = vec![None; depth];
    let mut done = Vec::new();
    let (mut submitted, mut reads_checked) = (0, 0);
    let sector = 512u64;
    while submitted < requests || flight.iter().any(|f| f.is_some()) {
        if submitted < requests {
            if let Some(tag) = flight.iter().position(|f| f.is_none()) {
                let size = sector * (1 + rng.below(24));
                let offset = rng.below((logical - size) / sector) * sector;
                let overlaps = flight.iter().flatten().any(|&(_, o, s, _)| {
                    offset < o + s + 4096 && o < offset + size + 4096 // whole units apart
                });
                if !overlaps {
                    let op = match rng.below(10) {
                        0..=5 => HostOp::Write,
                        6..=8 => HostOp::Read,
                        _ => HostOp::Trim,
                    };
                    let (o, s) = (offset as usize, size as usize);
                    let (req_off, req_size) = if op == HostOp::Trim {
                        // Trims of whole units only (a partial trim leaves data: undefined).
                        let lo = offset.div_ceil(4096) * 4096;
                        let hi = (offset + size) / 4096 * 4096;
                        if hi <= lo {
                            continue;
                        }
                        (lo, hi - lo)
                    } else {
                        (offset, size)
                    };
                    let mut payload = None;
                    let mut expect = Vec::new();
                    match op {
                        HostOp::Write if rng.below(4) == 0 => {
                            // Zeros, held as nothing until their units enter the buffer.
                            model[o..o + s].fill(0);
                            payload = Some(WriteData::Zeros);
                        }
                        HostOp::Write => {
                            let bytes: Vec<u8> = (0..s).map(|_| rng.next() as u8).collect();
                            model[o..o + s].copy_from_slice(&bytes);
                            payload = Some(WriteData::Bytes(bytes));
                        }
                        HostOp::Read => expect = model[o..o + s].to_vec(),
                        _ => model[req_off as usize..(req_off + req_size) as usize].fill(0),
                    }
                    let r = HostRequest {
                        arrival_ns: 0,
                        op,
                        offset_bytes: req_off,
                        size_bytes: req_size,
                        journal: None,
                        tag: tag as u32,
                        placement_id: 0,
                    };
                    flight[tag] = Some((op, req_off, req_size, expect));
                    served.submit(r, payload).unwrap();
                    submitted += 1;
                    if submitted % 256 == 0 {
                        // A snapshot mid-run (requests and transfers in flight): its
                        // figures are audited too, and must all be possible.
                        let (snap, _) = served.results();
                        crate::common::assert_audited(&snap);
                        // Audited as the snapshot it is: what the buffer holds is not
                        // judged as absorbed.
                        let absorbed = snap
                            .audit
                            .checks
                            .iter()
                            .find(|c| c.name == "buffer_absorbed");
                        assert_eq!(
                            absorbed.map(|c| c.verdict),
                            Some(ssdlab_core::sim::audit::Verdict::Skipped),
                            "{:?}",
                            snap.status
                        );
                    }
                    continue;
                }
            }
        }
        served.drain_completions(&mut done);
        if done.is_empty() {
            assert!(served.step().unwrap(), "requests in flight, no event left");
            continue;
        }
        for c in done.drain(..) {
            let Completion { tag, op, .. } = c;
            let (fop, off, size, expect) = flight[tag as usize].take().expect("tag in flight");
            assert_eq!(op, fop);
            if op == HostOp::Read {
                let mut got = Vec::new();
                served.read_data(off, size, &mut got);
                assert!(
                    got == expect,
                    "seed {seed}: read of {size} bytes at {off} differs"
                );
                reads_checked += 1;
            }
        }
    }
    assert!(
        reads_checked > requests / 5,
        "{reads_checked} reads checked"
    );
    // Every byte of the device, read back now.
    let mut all = Vec::new();
    served.read_data(0, logical, &mut all);
    assert!(
        all == model,
        "seed {seed}: the device's bytes differ from the model"
    );
    let (results, _) = served.finish().unwrap();
    crate::common::assert_audited(&results);
    results
}

#[test]
fn bytes_survive_gc_in_the_timed_mode() {
    for seed in [1, 2, 3] {
        let r = serve_random(Mode::Timed, seed, 3000, 6);
        assert!(r.gc.copied_units > 0, "GC copied data: {:?}", r.gc);
        assert!(r.waf > 1.0, "WAF {}", r.waf);
    }
}

#[test]
fn bytes_survive_gc_in_the_functional_mode() {
    let r = serve_random(Mode::Functional, 9, 3000, 1);
    assert!(r.gc.copied_units > 0, "GC copied data: {:?}", r.gc);
}
