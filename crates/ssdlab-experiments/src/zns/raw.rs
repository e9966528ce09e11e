//! The raw workload of the ZNS paper's §5.1 (Bjørling et al., "ZNS: Avoiding the Block
//! Interface Tax for Flash-based SSDs", USENIX ATC 2021), driving zones directly (no host
//! layer): [`WRITERS`] writers, each writing [`WRITE_BYTES`] requests sequentially into a
//! zone of its own; when no empty zone is left (the device is full) a writer takes a full
//! zone chosen at random (none being written) and rewrites it. On the zoned device the zone
//! is reset first (Zone Management Send, Reset); on the conventional device the same LBA
//! range (a zone's capacity) is simply overwritten: no trim, the device's GC finds out.
//!
//! Paper: 1010 MiB/s on ZNS against 370 / 590 MiB/s on the conventional device at 7 % /
//! 28 % OP; under a write load, random-read latency on ZNS 19 % / 5 % lower than
//! conventional at 7 % / 28 % OP at 5 % write load and 45 % / 16 % lower at 15 %.
//!
//! Rows: throughput (writers closed loop, QD 1 each: they keep the write buffer full, the
//! back end sets the pace) with device WAF and zone resets; then read latency under a write
//! load: the writers open loop at [`WRITE_LOADS`] of the ZNS throughput row's rate, one
//! reader of [`READ_BYTES`] random reads (QD 1) in full zones.

use super::{request_errors, zone_resets, Device, ZnsParams, ZNS_WAF_TOLERANCE};
use crate::experiment::Check;
use crate::{ExperimentError, Result};
use rand::Rng;
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::Mode;
use ssdlab_core::stats::LatencySummary;
use ssdlab_core::{Config, NoProgress, Results, Simulation};
use ssdlab_workload::rng::{stream, tag, SimRng};
use ssdlab_workload::{Arrival, Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadError};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Writers (paper: 4 threads).
pub const WRITERS: usize = 4;
/// Size of a writer's requests (paper: 64 KiB).
pub const WRITE_BYTES: u64 = 64 << 10;
/// Size of the reader's requests: one mapping unit of the study's device (16 KiB; the
/// paper's reads were 4 KiB, below this device's unit).
pub const READ_BYTES: u64 = 16384;
/// Writes of the functional warm-up after the fill (every zone written once), in
/// multiples of the zones' capacity: every zone rewritten about twice, GC at steady state.
pub const WARMUP_CAPACITY_MULTIPLE: f64 = 2.0;
/// Writes of the timed throughput phase, in multiples of the zones' capacity.
pub const MEASURE_CAPACITY_MULTIPLE: f64 = 1.0;
/// The write loads of the latency rows: the writers' rate as a share of the ZNS throughput
/// row's (paper: 5 % and 15 %).
pub const WRITE_LOADS: [f64; 2] = [0.05, 0.15];
/// Simulated time of each latency row at scale 1 (divided by the scale).
pub const LATENCY_DURATION_NS: u64 = 8_000_000_000;
/// `[device.zns] zone_dies` of the raw rows: 0, a zone over every die, as the paper's
/// device (a WD Ultrastar DC ZN540: 1077 MiB zones, far more than one die's erase block).
pub const ZONE_DIES: u32 = 0;

/// A writer never rewrites one of the zones filled last (their data may still be in the
/// write buffer, where a reset would drop it): the zone is drawn among the others.
pub const YOUNG_ZONES: usize = 2 * WRITERS;

/// The paper's throughput, MiB/s: ZNS, conventional at 7 % and at 28 % OP.
pub const PAPER_MIB_S: (f64, f64, f64) = (1010.0, 370.0, 590.0);
/// The paper's read-latency gains of ZNS: (write load, vs 7 % OP, vs 28 % OP).
pub const PAPER_READ_GAIN: [(f64, f64, f64); 2] = [(0.05, 0.19, 0.05), (0.15, 0.45, 0.16)];

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Writers closed loop: how fast the device takes them.
    Throughput,
    /// Writers open loop at this share of the ZNS throughput, one reader.
    Latency(f64),
}

/// One row of the raw workload.
#[derive(Clone, Debug, Serialize)]
pub struct RawRun {
    pub kind: Kind,
    pub device: Device,
    /// OP of the conventional device (0 on ZNS).
    pub spare: f64,
    /// Zones (LBA ranges on the conventional device) and their writable bytes.
    pub zones: u32,
    pub zone_capacity_bytes: u64,
    /// Bytes written in the measured phase, its simulated time, and the rate (MiB/s).
    pub write_bytes: u64,
    pub sim_time_ns: u64,
    pub write_mib_per_s: f64,
    /// NAND programs / host writes in the measured phase.
    pub device_waf: f64,
    /// Zone resets in the measured phase (ZNS).
    pub zone_resets: Option<u64>,
    pub request_errors: u64,
    pub write: LatencySummary,
    /// The reader's latency (latency rows).
    pub read: Option<LatencySummary>,
    pub wall_s: f64,
    pub audit_warnings: Vec<crate::AuditWarning>,
}

impl RawRun {
    pub fn label(&self) -> String {
        match self.device {
            Device::Zns => "zns".into(),
            d => format!("{} {:.0} %", d.name(), self.spare * 100.0),
        }
    }
}

/// The writers' and the reader's shared view of the zones.
struct Zoned {
    zone_stride: u64,
    zone_cap: u64,
    /// Reset a zone before rewriting it (ZNS).
    reset: bool,
    empty: VecDeque<u32>,
    /// Full zones, oldest filled first.
    full: Vec<u32>,
    /// Per writer: its zone and the next offset in it.
    cursor: Vec<Option<(u32, u64)>>,
    /// Per writer: the arrival of its next write (open loop), and the interval.
    next_ns: Vec<u64>,
    interval_ns: Option<u64>,
    /// Write bytes left in the phase (the writers stop at 0).
    budget: i64,
    rng: SimRng,
}

impl Zoned {
    fn write(&mut self, w: usize) -> Result<Option<HostRequest>, WorkloadError> {
        if self.budget <= 0 {
            return Ok(None);
        }
        let at = self.next_ns[w];
        let (zone, off) = match self.cursor[w] {
            Some(c) if c.1 < self.zone_cap => c,
            _ => {
                if let Some((z, _)) = self.cursor[w].take() {
                    self.full.push(z);
                }
                let z = match self.empty.pop_front() {
                    Some(z) => z,
                    None if !self.full.is_empty() => {
                        // Not one of the last few filled: their data may still be in
                        // the write buffer, and a host rewrites data that has aged.
                        let n = self.full.len().saturating_sub(YOUNG_ZONES).max(1);
                        let z = self.full.remove(self.rng.gen_range(0..n));
                        if self.reset {
                            self.cursor[w] = Some((z, 0));
                            return Ok(Some(HostRequest {
                                arrival_ns: at,
                                op: HostOp::ZoneReset,
                                offset_bytes: z as u64 * self.zone_stride,
                                ..Default::default()
                            }));
                        }
                        z
                    }
                    None => {
                        return Err(WorkloadError::Config {
                            key: "raw".into(),
                            reason: "no zone to write (fewer zones than writers)".into(),
                        })
                    }
                };
                (z, 0)
            }
        };
        let size = WRITE_BYTES.min(self.zone_cap - off);
        self.cursor[w] = Some((zone, off + size));
        self.budget -= size as i64;
        if let Some(i) = self.interval_ns {
            self.next_ns[w] += i;
        }
        Ok(Some(HostRequest {
            arrival_ns: at,
            op: HostOp::Write,
            offset_bytes: zone as u64 * self.zone_stride + off,
            size_bytes: size,
            ..Default::default()
        }))
    }

    fn read(&mut self) -> Option<HostRequest> {
        if self.full.is_empty() {
            return None;
        }
        let z = self.full[self.rng.gen_range(0..self.full.len())];
        let units = (self.zone_cap / READ_BYTES).max(1);
        let off = self.rng.gen_range(0..units) * READ_BYTES;
        Some(HostRequest {
            op: HostOp::Read,
            offset_bytes: z as u64 * self.zone_stride + off,
            size_bytes: READ_BYTES,
            ..Default::default()
        })
    }
}

struct Writer(usize, Arc<Mutex<Zoned>>);

impl RequestSource for Writer {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        self.1
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write(self.0)
    }
}

struct Reader(Arc<Mutex<Zoned>>);

impl RequestSource for Reader {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        Ok(self.0.lock().unwrap_or_else(|p| p.into_inner()).read())
    }
}

/// One phase's workload over the shared zones: the writers (closed loop, QD 1, or open
/// loop at `interval_ns` each, staggered) and, with `reader`, the reader.
fn phase(z: &Arc<Mutex<Zoned>>, budget: u64, interval_ns: Option<u64>, reader: bool) -> Workload {
    {
        let mut s = z.lock().unwrap_or_else(|p| p.into_inner());
        s.budget = budget.min(i64::MAX as u64) as i64;
        s.interval_ns = interval_ns;
        // Open loop: the writers staggered evenly over one interval.
        let i = interval_ns.unwrap_or(0);
        for (w, t) in s.next_ns.iter_mut().enumerate() {
            *t = i * w as u64 / WRITERS as u64;
        }
    }
    let mut flows: Vec<Flow> = (0..WRITERS)
        .map(|w| Flow {
            name: format!("writer{w}"),
            arrival: match interval_ns {
                Some(_) => Arrival::Open,
                None => Arrival::Closed { queue_depth: 1 },
            },
            source: Box::new(Writer(w, z.clone())),
        })
        .collect();
    if reader {
        flows.push(Flow {
            name: "reader".into(),
            arrival: Arrival::Closed { queue_depth: 1 },
            source: Box::new(Reader(z.clone())),
        });
    }
    Workload {
        flows,
        duration_ns: None,
        stats: Default::default(),
    }
}

/// The device of a raw row: the study's device (ZNS with zones over every die) or the
/// conventional one at `spare` OP.
pub fn config(p: &ZnsParams, device: Device, spare: f64) -> Result<Config> {
    let mut c = p.config(device, spare)?;
    if let Some(z) = c.device.zns.as_mut() {
        z.zone_dies = ZONE_DIES;
    }
    c.validate()?;
    Ok(c)
}

/// The rows run: ZNS, then the conventional device at each spare (of those in
/// `p.devices`).
pub fn devices(p: &ZnsParams) -> Vec<(Device, f64)> {
    let mut out = Vec::new();
    if p.devices.contains(&Device::Zns) {
        out.push((Device::Zns, 0.0));
    }
    if p.devices.contains(&Device::Conventional) {
        out.extend(p.spare.iter().map(|&s| (Device::Conventional, s)));
    }
    out
}

fn measure(
    p: &ZnsParams,
    device: Device,
    spare: f64,
    kind: Kind,
    ref_mib_s: f64,
) -> Result<RawRun> {
    let t = Instant::now();
    // The zones: the zoned device's (ZNS) and as many LBA ranges of a zone's capacity as
    // the conventional device's logical space holds.
    let zg = Simulation::new(config(p, Device::Zns, 0.0)?)?
        .workload_context()
        .zones
        .ok_or_else(|| {
            ExperimentError::invalid("device.zns", "the zoned device reports no zones")
        })?;
    let mut sim = Simulation::new(config(p, device, spare)?)?;
    let ctx = sim.workload_context();
    let (zones, stride) = match device {
        Device::Zns => (zg.zones, zg.zone_bytes),
        _ => (
            (ctx.logical_bytes / zg.zone_capacity_bytes) as u32,
            zg.zone_capacity_bytes,
        ),
    };
    if (zones as usize) < 2 * WRITERS {
        return Err(ExperimentError::invalid(
            "device",
            format!(
                "{zones} zones: the raw workload needs at least {}",
                2 * WRITERS
            ),
        ));
    }
    let cap = zg.zone_capacity_bytes;
    let total = zones as u64 * cap;
    let z = Arc::new(Mutex::new(Zoned {
        zone_stride: stride,
        zone_cap: cap,
        reset: device == Device::Zns,
        empty: (0..zones).collect(),
        full: Vec::new(),
        cursor: vec![None; WRITERS],
        next_ns: vec![0; WRITERS],
        interval_ns: None,
        budget: 0,
        rng: stream(p.base.seed, tag::ZNS_RAW),
    }));
    // The fill (every zone once), then the warm-up, functional.
    sim.config.mode = Mode::Functional;
    let warm = total + (WARMUP_CAPACITY_MULTIPLE * total as f64) as u64;
    let w0 = sim.run_workload_with(phase(&z, warm, None, false), &mut NoProgress)?;
    sim.config.mode = Mode::Timed;
    let r: Results = match kind {
        Kind::Throughput => {
            let meas = (MEASURE_CAPACITY_MULTIPLE * total as f64) as u64;
            sim.run_workload_with(phase(&z, meas, None, false), &mut NoProgress)?
        }
        Kind::Latency(load) => {
            if ref_mib_s.is_nan() || ref_mib_s <= 0.0 {
                return Err(ExperimentError::invalid(
                    "raw",
                    "the latency rows need the throughput row's rate",
                ));
            }
            // Each writer's share of `load` × the reference rate.
            let bytes_per_ns = load * ref_mib_s * (1u64 << 20) as f64 / 1e9;
            let interval = (WRITERS as f64 * WRITE_BYTES as f64 / bytes_per_ns).round() as u64;
            let mut w = phase(&z, u64::MAX, Some(interval.max(1)), true);
            w.duration_ns = Some(LATENCY_DURATION_NS / p.scale as u64);
            sim.run_workload_with(w, &mut NoProgress)?
        }
    };
    let lat = r
        .latency_ns
        .as_ref()
        .ok_or_else(|| ExperimentError::invalid("mode", "the raw rows need the timed mode"))?;
    let write_bytes = r.host.counters.write_bytes;
    let sim_time_ns = r.host.sim_time_ns;
    let read = match kind {
        Kind::Latency(_) => lat.per_flow.get(WRITERS).map(|f| f.latency.read.clone()),
        Kind::Throughput => None,
    };
    Ok(RawRun {
        kind,
        device,
        spare,
        zones,
        zone_capacity_bytes: cap,
        write_bytes,
        sim_time_ns,
        write_mib_per_s: write_bytes as f64
            / (1u64 << 20) as f64
            / (sim_time_ns.max(1) as f64 / 1e9),
        device_waf: r.waf,
        zone_resets: zone_resets(&r).map(|n| n - zone_resets(&w0).unwrap_or(0)),
        request_errors: request_errors(&r) - request_errors(&w0),
        write: lat.write.clone(),
        read,
        wall_s: t.elapsed().as_secs_f64(),
        audit_warnings: crate::AuditWarning::of(
            &r,
            format!(
                "raw {} {}",
                match kind {
                    Kind::Throughput => "throughput".to_string(),
                    Kind::Latency(l) => format!("{:.0} % write load", l * 100.0),
                },
                device.name()
            ),
        ),
    })
}

/// Every raw row, on the caller's rayon pool: the throughput rows, then the latency rows
/// (their write rate is a share of the ZNS throughput row's; without a ZNS row, of the
/// fastest row's). `on_run` is called after each.
pub fn run(p: &ZnsParams, on_run: &(dyn Fn(&RawRun) + Sync)) -> Result<Vec<RawRun>> {
    let devs = devices(p);
    let mut rows: Vec<RawRun> = devs
        .par_iter()
        .map(|&(d, s)| {
            let r = measure(p, d, s, Kind::Throughput, 0.0)?;
            on_run(&r);
            Ok(r)
        })
        .collect::<Result<_>>()?;
    let reference = rows
        .iter()
        .find(|r| r.device == Device::Zns)
        .map(|r| r.write_mib_per_s)
        .unwrap_or_else(|| rows.iter().map(|r| r.write_mib_per_s).fold(0.0, f64::max));
    let jobs: Vec<(f64, Device, f64)> = WRITE_LOADS
        .iter()
        .flat_map(|&l| devs.iter().map(move |&(d, s)| (l, d, s)))
        .collect();
    let lat: Vec<RawRun> = jobs
        .par_iter()
        .map(|&(l, d, s)| {
            let r = measure(p, d, s, Kind::Latency(l), reference)?;
            on_run(&r);
            Ok(r)
        })
        .collect::<Result<_>>()?;
    rows.extend(lat);
    Ok(rows)
}

pub const CSV_HEADER: &str = "kind,write_load,device,spare,zones,zone_capacity_bytes,write_bytes,sim_time_ns,write_mib_per_s,device_waf,zone_resets,request_errors,write_mean_ns,write_p99_ns,read_mean_ns,read_p99_ns,read_count";

/// `zns-raw.csv`.
pub fn csv(rows: &[RawRun]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in rows {
        let (kind, load) = match r.kind {
            Kind::Throughput => ("throughput", String::new()),
            Kind::Latency(l) => ("latency", format!("{l}")),
        };
        let rd = r.read.as_ref();
        s += &format!(
            "{kind},{load},{},{},{},{},{},{},{:.2},{:.4},{},{},{:.0},{},{},{},{}\n",
            r.device.name(),
            r.spare,
            r.zones,
            r.zone_capacity_bytes,
            r.write_bytes,
            r.sim_time_ns,
            r.write_mib_per_s,
            r.device_waf,
            r.zone_resets.map_or(String::new(), |x| x.to_string()),
            r.request_errors,
            r.write.mean,
            r.write.p99,
            rd.map_or(String::new(), |x| format!("{:.0}", x.mean)),
            rd.map_or(String::new(), |x| x.p99.to_string()),
            rd.map_or(String::new(), |x| x.count.to_string()),
        );
    }
    s
}

fn find(rows: &[RawRun], kind: Kind, device: Device, spare: f64) -> Option<&RawRun> {
    rows.iter().find(|r| {
        r.kind == kind && r.device == device && (device == Device::Zns || r.spare == spare)
    })
}

/// The raw rows' section of the report (`###` tables).
pub fn markdown(rows: &[RawRun]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let us = |ns: f64| format!("{:.0}", ns / 1e3);
    let mut s = String::new();
    let z = &rows[0];
    s += &format!(
        "\n### §5.1 raw workload: {WRITERS} writers of {} KiB into zones\n\n",
        WRITE_BYTES >> 10
    );
    s += &format!(
        "Zones of {} MiB (over every die); a full zone is replaced by a reset one (ZNS) or its LBA range overwritten (conventional). Paper MiB/s: ZNS {:.0}, conventional {:.0} (7 % OP) / {:.0} (28 % OP).\n\n",
        z.zone_capacity_bytes >> 20,
        PAPER_MIB_S.0,
        PAPER_MIB_S.1,
        PAPER_MIB_S.2
    );
    s += "| device | zones | write MiB/s | vs ZNS | device WAF | zone resets | write mean µs | errors |\n";
    s += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    let zns_rate = find(rows, Kind::Throughput, Device::Zns, 0.0).map(|r| r.write_mib_per_s);
    for r in rows.iter().filter(|r| r.kind == Kind::Throughput) {
        s += &format!(
            "| {} | {} | {:.1} | {} | {:.3} | {} | {} | {} |\n",
            r.label(),
            r.zones,
            r.write_mib_per_s,
            zns_rate.map_or("–".into(), |z| format!("{:.2}", r.write_mib_per_s / z)),
            r.device_waf,
            r.zone_resets.map_or("–".into(), |x| x.to_string()),
            us(r.write.mean),
            r.request_errors
        );
    }
    s += "\n#### §5.1 read latency under a write load\n\n";
    s += &format!(
        "One reader, {} KiB random reads at QD 1 in full zones, while the writers write at the share of the ZNS row's throughput given (open loop). Paper: ZNS's read latency {:.0} % / {:.0} % lower than conventional's (7 % / 28 % OP) at 5 % write load, {:.0} % / {:.0} % at 15 %.\n\n",
        READ_BYTES >> 10,
        PAPER_READ_GAIN[0].1 * 100.0,
        PAPER_READ_GAIN[0].2 * 100.0,
        PAPER_READ_GAIN[1].1 * 100.0,
        PAPER_READ_GAIN[1].2 * 100.0
    );
    s += "| write load | device | write MiB/s | device WAF | reads | read mean µs | read p99 µs | ZNS read mean vs this |\n";
    s += "|---:|---|---:|---:|---:|---:|---:|---:|\n";
    for r in rows.iter() {
        let Kind::Latency(l) = r.kind else { continue };
        let Some(rd) = &r.read else { continue };
        let zns = find(rows, r.kind, Device::Zns, 0.0).and_then(|z| z.read.as_ref());
        s += &format!(
            "| {:.0} % | {} | {:.1} | {:.3} | {} | {} | {} | {} |\n",
            l * 100.0,
            r.label(),
            r.write_mib_per_s,
            r.device_waf,
            rd.count,
            us(rd.mean),
            us(rd.p99 as f64),
            match (r.device, zns) {
                (Device::Zns, _) | (_, None) => "–".into(),
                (_, Some(z)) => format!("{:+.1} %", (z.mean / rd.mean - 1.0) * 100.0),
            }
        );
    }
    s
}

/// The raw rows' shape checks (group `raw §5.1`), each with the paper's number.
pub fn checks(rows: &[RawRun]) -> Vec<Check> {
    let group = "raw §5.1";
    let mut out = Vec::new();
    if rows.is_empty() {
        return out;
    }
    let thr = |d: Device, s: f64| find(rows, Kind::Throughput, d, s);
    let zns = thr(Device::Zns, 0.0);
    // 1: device WAF 1 on ZNS.
    match zns {
        Some(z) => {
            let ok = (z.device_waf - 1.0).abs() <= ZNS_WAF_TOLERANCE;
            out.push(Check::new(
                group,
                format!("ZNS device WAF = 1 (within {ZNS_WAF_TOLERANCE}; paper 1.0)"),
                Some(ok),
                format!(
                    "{:.3}{}",
                    z.device_waf,
                    if ok {
                        ""
                    } else {
                        "; the zoned device copied data"
                    }
                ),
            ));
        }
        None => out.push(Check::missing(group, "ZNS device WAF = 1")),
    }
    // 2: throughput ordering 7 % < 28 % < ZNS.
    let claim = format!(
        "throughput: conventional 7 % OP < 28 % OP < ZNS (paper {:.0} < {:.0} < {:.0} MiB/s)",
        PAPER_MIB_S.1, PAPER_MIB_S.2, PAPER_MIB_S.0
    );
    match (
        thr(Device::Conventional, 0.07),
        thr(Device::Conventional, 0.28),
        zns,
    ) {
        (Some(a), Some(b), Some(z)) => {
            let (x, y, w) = (a.write_mib_per_s, b.write_mib_per_s, z.write_mib_per_s);
            let ok = x < y && y < w;
            let mut d = format!(
                "{x:.1} < {y:.1} < {w:.1} MiB/s (ZNS {:.2}× / {:.2}×; paper {:.2}× / {:.2}×); device WAF {:.2} / {:.2} / {:.2}",
                w / x,
                w / y,
                PAPER_MIB_S.0 / PAPER_MIB_S.1,
                PAPER_MIB_S.0 / PAPER_MIB_S.2,
                a.device_waf,
                b.device_waf,
                z.device_waf
            );
            if !ok {
                d += if w <= x.max(y) {
                    "; ZNS is not the fastest: its resets' erases cost more die time than the conventional device's GC copies"
                } else {
                    "; more OP did not make the conventional device faster: GC copies did not fall with it"
                };
            }
            out.push(Check::new(group, claim, Some(ok), d));
        }
        _ => out.push(Check::missing(group, claim)),
    }
    // 3: read latency under a write load lower on ZNS.
    for &(load, g7, g28) in &PAPER_READ_GAIN {
        for (spare, gain) in [(0.07, g7), (0.28, g28)] {
            let claim = format!(
                "{:.0} % write load: ZNS read latency (mean) < conventional {:.0} % OP's (paper −{:.0} %)",
                load * 100.0,
                spare * 100.0,
                gain * 100.0
            );
            let z = find(rows, Kind::Latency(load), Device::Zns, 0.0).and_then(|r| r.read.as_ref());
            let c = find(rows, Kind::Latency(load), Device::Conventional, spare)
                .and_then(|r| r.read.as_ref());
            match (z, c) {
                (Some(z), Some(c)) if z.count > 0 && c.count > 0 => {
                    let ok = z.mean < c.mean;
                    let mut d = format!(
                        "ZNS {:.1} µs vs {:.1} µs ({:+.1} %)",
                        z.mean / 1e3,
                        c.mean / 1e3,
                        (z.mean / c.mean - 1.0) * 100.0
                    );
                    if !ok {
                        d += "; the conventional device's GC did not delay its reads more than the zone resets' erases delayed ZNS's";
                    }
                    out.push(Check::new(group, claim, Some(ok), d));
                }
                _ => out.push(Check::missing(group, claim)),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat(mean: f64) -> LatencySummary {
        LatencySummary {
            count: 1000,
            mean,
            min: 0,
            p50: 0,
            p90: 0,
            p95: 0,
            p99: 0,
            p99_9: 0,
            p99_99: 0,
            p99_999: 0,
            p99_9999: 0,
            max: 0,
        }
    }

    fn row(kind: Kind, device: Device, spare: f64, mib_s: f64, waf: f64, read: f64) -> RawRun {
        RawRun {
            kind,
            device,
            spare,
            zones: 10,
            zone_capacity_bytes: 1 << 20,
            write_bytes: 0,
            sim_time_ns: 1,
            write_mib_per_s: mib_s,
            device_waf: waf,
            zone_resets: None,
            request_errors: 0,
            write: lat(0.0),
            read: matches!(kind, Kind::Latency(_)).then(|| lat(read)),
            wall_s: 0.0,
            audit_warnings: Vec::new(),
        }
    }

    /// Rows shaped like the paper's: ZNS 1010, conventional 370 / 590 MiB/s; ZNS reads
    /// faster under both loads.
    fn paper_rows() -> Vec<RawRun> {
        let mut v = vec![
            row(Kind::Throughput, Device::Zns, 0.0, 1010.0, 1.0, 0.0),
            row(
                Kind::Throughput,
                Device::Conventional,
                0.07,
                370.0,
                3.0,
                0.0,
            ),
            row(
                Kind::Throughput,
                Device::Conventional,
                0.28,
                590.0,
                1.6,
                0.0,
            ),
        ];
        for (l, _, _) in PAPER_READ_GAIN {
            v.push(row(Kind::Latency(l), Device::Zns, 0.0, 10.0, 1.0, 80.0));
            v.push(row(
                Kind::Latency(l),
                Device::Conventional,
                0.07,
                10.0,
                3.0,
                120.0,
            ));
            v.push(row(
                Kind::Latency(l),
                Device::Conventional,
                0.28,
                10.0,
                1.6,
                90.0,
            ));
        }
        v
    }

    fn holds(rows: &[RawRun]) -> Vec<Option<bool>> {
        checks(rows).iter().map(|c| c.holds).collect()
    }

    /// Every check holds on the paper's shape and each fails on its own perturbation,
    /// saying why; a missing row leaves its checks undecided.
    #[test]
    fn raw_checks_hold_on_the_papers_shape_and_fail_when_perturbed() {
        let good = paper_rows();
        assert_eq!(holds(&good), vec![Some(true); 6]);
        let perturb = |f: &dyn Fn(&mut Vec<RawRun>), failing: usize| {
            let mut r = paper_rows();
            f(&mut r);
            let c = checks(&r);
            for (i, c) in c.iter().enumerate() {
                assert_eq!(c.holds, Some(i != failing), "{c:?}");
                if i == failing {
                    assert!(c.detail.contains("; "), "{c:?}");
                }
            }
        };
        // ZNS copied: device WAF 1.05.
        perturb(&|r| r[0].device_waf = 1.05, 0);
        // ZNS slower than the conventional device at 28 % OP.
        perturb(&|r| r[0].write_mib_per_s = 500.0, 1);
        // More OP, less throughput.
        perturb(&|r| r[2].write_mib_per_s = 300.0, 1);
        // Conventional 7 % reads faster than ZNS's at 5 % write load.
        perturb(&|r| r[4].read = Some(lat(70.0)), 2);
        // Conventional 28 % reads faster at 15 % write load.
        perturb(&|r| r[8].read = Some(lat(75.0)), 5);
        assert!(checks(&[]).is_empty());
        let mut missing = paper_rows();
        missing.retain(|r| r.device == Device::Zns);
        assert_eq!(holds(&missing)[1..], [None; 5]);
    }

    /// The writers fill the empty zones in order, then rewrite full ones drawn among all
    /// but the youngest; on ZNS each rewrite starts with a reset of its zone.
    #[test]
    fn writers_fill_then_reset_and_rewrite() {
        let zones = 2 * WRITERS as u32 + YOUNG_ZONES as u32;
        let cap = 2 * WRITE_BYTES;
        let mut z = Zoned {
            zone_stride: 4 * WRITE_BYTES,
            zone_cap: cap,
            reset: true,
            empty: (0..zones).collect(),
            full: Vec::new(),
            cursor: vec![None; WRITERS],
            next_ns: vec![0; WRITERS],
            interval_ns: None,
            budget: (zones as u64 * cap) as i64,
            rng: stream(1, tag::ZNS_RAW),
        };
        // The fill: writer w's first write opens zone w, its third zone w + WRITERS, …
        let mut first = Vec::new();
        while let Some(r) = z.write(first.len() % WRITERS).unwrap() {
            assert_eq!((r.op, r.size_bytes), (HostOp::Write, WRITE_BYTES));
            first.push(r.offset_bytes);
        }
        assert_eq!(first.len() as u64, zones as u64 * 2);
        assert_eq!(
            &first[..WRITERS],
            &[0, 4 * WRITE_BYTES, 8 * WRITE_BYTES, 12 * WRITE_BYTES]
        );
        assert!(z.empty.is_empty());
        // Device full: the next write of writer 0 is a reset of an old zone, then writes
        // at its start.
        z.budget = i64::MAX;
        // Writer 0's zone is full: it goes to the full list, a reset follows.
        let r = z.write(0).unwrap().unwrap();
        assert_eq!(r.op, HostOp::ZoneReset);
        let zone = r.offset_bytes / z.zone_stride;
        assert!(zone < zones as u64);
        let young: Vec<u32> = z.full[z.full.len() - YOUNG_ZONES..].to_vec();
        assert!(
            !young.contains(&(zone as u32)),
            "{zone} is young: {young:?}"
        );
        let w = z.write(0).unwrap().unwrap();
        assert_eq!(
            (w.op, w.offset_bytes),
            (HostOp::Write, zone * z.zone_stride)
        );
        // The reader reads only full zones, one unit at a time.
        for _ in 0..100 {
            let r = z.read().unwrap();
            assert!(z.full.contains(&((r.offset_bytes / z.zone_stride) as u32)));
            assert_eq!(r.size_bytes, READ_BYTES);
        }
    }
}
