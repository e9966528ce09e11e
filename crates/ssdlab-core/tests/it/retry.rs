//! Read retry on hand-checked cases (docs/reliability.md): a constant RBER (only
//! `base_rber`) far above or below each step's capability makes every step's outcome
//! certain (failure probabilities within 1e-9 of 0 or 1), so latencies and counts are exact.

use crate::common::{closed, flush, req, tiny};
use ssdlab_core::config::{CellMode, Mode};
use ssdlab_core::flash::{CellState, OpKind};
use ssdlab_core::ftl::zones::ZoneError;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::HostOp;

/// 4 KiB at 800 MB/s; command; 4 KiB over the host data path.
const XFER_4K_NS: u64 = 5120;
const CMD_NS: u64 = 1000;
const HOST_4K_NS: u64 = 520;

/// The tiny device with a constant RBER `p` (wear, retention and disturb terms 0) in
/// every mode, 4 KiB codewords correcting `t` bits (soft: `soft`), `steps` retry steps
/// of factor 1/4, the retry policy `policy`.
fn forced(mode: Mode, p: f64, t: u32, soft: u32, steps: u32, policy: &str) -> Config {
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.mode = mode;
    let r = &mut c.device.reliability;
    r.codeword_bytes = 4096;
    r.correctable_bits_per_codeword = t;
    r.soft_correctable_bits_per_codeword = soft;
    r.retry_steps = steps;
    r.retry_rber_factor = 0.25;
    r.hard_decode_ns = 3_000;
    r.soft_decode_reads = 2;
    r.soft_decode_ns = 11_000;
    r.retry = ssdlab_core::policy::retry::RetryConfig::by_name(policy).unwrap();
    for m in [
        &mut r.rber.slc,
        &mut r.rber.mlc,
        &mut r.rber.tlc,
        &mut r.rber.qlc,
    ] {
        m.base_rber = p;
        m.wear_coefficient = 0.0;
        m.retention_coefficient = 0.0;
        m.disturb_coefficient = 0.0;
    }
    c.validate().unwrap();
    c
}

/// λ = 32768 bits × p = 3200 errors per codeword at step 0; steps at 800, 200, 50, …:
/// with t = 100 steps 0-2 fail (P(X ≤ 100 | 200) < 1e-9), step 3 succeeds (P(X > 100 | 50) < 1e-9).
const P3: f64 = 3200.0 / 32768.0;

/// One write, a flush, then `reads` reads of the unit: the reads' completions and results.
fn write_then_read(c: Config, reads: usize) -> (Simulation, ssdlab_core::Results) {
    let timed = c.mode == Mode::Timed;
    let mut s = Simulation::new(c).unwrap();
    s.trace_completions = timed;
    let mut v = vec![req(HostOp::Write, 3, 1), flush()];
    v.extend((0..reads).map(|_| req(HostOp::Read, 3, 1)));
    let r = s.run_workload_with(closed(v, 1), &mut NoProgress).unwrap();
    (s, r)
}

fn read_ns(s: &Simulation) -> u64 {
    s.ftl
        .timing()
        .array_ns(OpKind::Read, CellState::fresh(CellMode::Tlc))
}

#[test]
fn three_hard_retries_add_three_reads_transfers_and_decodes() {
    let (s, r) = write_then_read(forced(Mode::Timed, P3, 100, 0, 7, "table"), 1);
    let read = s.completions.iter().find(|c| c.op == HostOp::Read).unwrap();
    let t_r = read_ns(&s);
    let step = t_r + XFER_4K_NS + 3_000;
    assert_eq!(read.error, None);
    assert_eq!(
        read.latency_ns(),
        CMD_NS + t_r + XFER_4K_NS + HOST_4K_NS + 3 * step
    );
    let x = r
        .reliability
        .as_ref()
        .expect("retries: the section is there");
    assert_eq!((x.reads, x.retries, x.soft_decodes), (1, 3, 0));
    assert_eq!(x.retries_histogram, vec![0, 0, 0, 1]);
    assert_eq!(x.read_retries_mean, 3.0);
    assert!((x.rber_mean - P3).abs() < 1e-15 && (x.rber_max - P3).abs() < 1e-15);
    crate::common::assert_audited(&r);
}

#[test]
fn soft_decode_step_then_uncorrectable() {
    // One retry step (λ 800 > t = 100 fails), then the soft decoder: t_soft = 2000 corrects.
    let (s, r) = write_then_read(forced(Mode::Timed, P3, 100, 2000, 1, "table"), 1);
    let read = s.completions.iter().find(|c| c.op == HostOp::Read).unwrap();
    let t_r = read_ns(&s);
    let soft = 2 * (t_r + XFER_4K_NS) + 11_000;
    assert_eq!(read.error, None);
    assert_eq!(
        read.latency_ns(),
        CMD_NS + t_r + XFER_4K_NS + HOST_4K_NS + (t_r + XFER_4K_NS + 3_000) + soft
    );
    let x = r.reliability.unwrap();
    assert_eq!(
        (x.retries, x.soft_decodes, x.uncorrectable_reads),
        (2, 1, 0)
    );

    // t_soft = 400 < 800: nothing corrects it. The read is an error, counted; the data
    // was not checked (the integrity oracle knows it was reported).
    let (s, r) = write_then_read(forced(Mode::Timed, P3, 100, 400, 1, "table"), 2);
    let reads: Vec<_> = s
        .completions
        .iter()
        .filter(|c| c.op == HostOp::Read)
        .collect();
    assert_eq!(reads.len(), 2);
    for c in &reads {
        assert_eq!(c.error, Some(ZoneError::UnrecoveredRead));
        let t_r = read_ns(&s);
        // No data crosses the host data path.
        assert_eq!(
            c.latency_ns(),
            CMD_NS + t_r + XFER_4K_NS + (t_r + XFER_4K_NS + 3_000) + soft
        );
    }
    let x = r.reliability.as_ref().unwrap();
    assert_eq!((x.uncorrectable_reads, x.uncorrectable_host_reads), (2, 2));
    assert_eq!(r.host.counters.failed_requests, 2);
    assert_eq!(r.host.counters.reads, 0);
    crate::common::assert_audited(&r);
}

/// Four reads of one block needing 3 retries: `table` retries every time (12), `sticky`
/// only the first (3), `oracle` never; functional mode counts the same.
#[test]
fn policies_table_sticky_oracle() {
    for mode in [Mode::Timed, Mode::Functional] {
        for (policy, want) in [("table", 12), ("sticky", 3), ("oracle", 0)] {
            let (_, r) = write_then_read(forced(mode, P3, 100, 0, 7, policy), 4);
            let got = r.reliability.as_ref().map_or(0, |x| x.retries);
            assert_eq!(got, want, "{policy} {mode:?}");
            assert_eq!(r.host.counters.reads, 4);
        }
    }
}

/// A fresh device with the default model: no retries, no section, the same results as
/// with the model off.
#[test]
fn fresh_default_device_never_retries() {
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.mode = Mode::Timed;
    let (_, on) = write_then_read(c.clone(), 3);
    c.device.reliability.enabled = false;
    let (_, off) = write_then_read(c, 3);
    assert!(on.reliability.is_none());
    assert_eq!(
        serde_json::to_string(&on).unwrap(),
        serde_json::to_string(&off).unwrap()
    );
}

#[test]
fn bad_reliability_keys_are_named() {
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.device.reliability.codeword_bytes = 0;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("device.reliability.codeword_bytes"), "{e}");
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.device.reliability.retry_rber_factor = 1.0;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("device.reliability.retry_rber_factor"), "{e}");
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.device.reliability.rber.qlc.wear_exponent = 0.0;
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("device.reliability.rber.qlc.wear_exponent"),
        "{e}"
    );
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.device.reliability.soft_correctable_bits_per_codeword = 10;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("soft_correctable_bits_per_codeword"), "{e}");
}
