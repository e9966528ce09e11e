//! fio-like synthetic generator: read/write/trim mix, fixed or split block sizes, address
//! patterns (sequential, uniform, zipf, hot/cold, normal), closed or open loop.

use crate::address::{AddressKind, AddressSampler};
use crate::rng::{stream, tag, SimRng};
use crate::stats::WorkloadStats;
use crate::WorkloadError;
use crate::MAX_FLOWS;
use crate::{Arrival, Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadContext};
use rand::Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};

/// Address pattern of a synthetic flow.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AddressPattern {
    /// Consecutive blocks, wrapping at the end of the working set.
    Sequential,
    /// Every aligned block equally likely.
    #[default]
    Uniform,
    /// Zipf over blocks with exponent `zipf_theta`; popular blocks are scattered over the
    /// working set by a fixed bijection so hot data is not all at low addresses.
    Zipf,
    /// `hot_io_percent` of requests go uniformly to the first `hot_space_percent` of the
    /// working set, the rest uniformly to the remainder.
    HotCold,
    /// Block index ~ Normal(centre, sigma) truncated to the working set (spec 03 traces).
    Normal,
}

/// `[workload] kind = "synthetic"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticConfig {
    /// Share of requests that are reads, in percent (0–100).
    pub read_percent: f64,
    /// Share of requests that are trims, in percent; the rest are writes.
    pub trim_percent: f64,
    /// Request size when `block_size_split` is empty.
    pub block_size_bytes: u64,
    /// fio `bssplit`: list of [size_bytes, weight_percent]; weights must add up to 100.
    pub block_size_split: Vec<(u64, f64)>,
    /// Alignment of request offsets; 0 = the smallest request size.
    pub align_bytes: u64,
    /// Requests in flight per flow (closed loop). Ignored for open loop.
    pub queue_depth: u32,
    /// Number of identical flows (each its own submission queue and random stream).
    pub flows: u32,
    pub pattern: AddressPattern,
    /// Zipf exponent for `pattern = "zipf"` (> 0).
    pub zipf_theta: f64,
    /// For `hot-cold` (and `normal` when `normal_sigma_percent` is 0): share of I/O to the hot part.
    pub hot_io_percent: f64,
    /// For `hot-cold` (and `normal`): size of the hot part as a share of the working set.
    pub hot_space_percent: f64,
    /// For `normal`: sigma as a share of the working set; 0 = derive it so that the central
    /// `hot_space_percent` of the blocks receives `hot_io_percent` of the requests.
    pub normal_sigma_percent: f64,
    /// For `normal`: centre as a share of the working set.
    pub normal_centre_percent: f64,
    /// Start of the working set in the logical space.
    pub working_set_offset_bytes: u64,
    /// Size of the working set; 0 = from the offset to the end of the logical space.
    pub working_set_bytes: u64,
    /// Stop after this many requests per flow (0 = no request limit).
    pub requests: u64,
    /// Stop after this many bytes per flow (0 = no byte limit).
    pub total_bytes: u64,
    /// Stop the run at this simulated time (0 = no time limit). At least one limit is needed.
    pub duration_ns: u64,
    /// Open loop: mean arrival rate per flow (Poisson arrivals). 0 = closed loop.
    pub open_loop_iops: f64,
    /// `"limits"` (default): stop at `requests` / `total_bytes` / `duration_ns`;
    /// `"failure"`: ignore them and write until the device wears out (lifetime runs).
    pub until: Until,
    /// For `hot-cold`: tag each write with a placement identifier by temperature, 1 for
    /// the hot part and 0 for the rest (reads and trims carry 0). Needs a device that
    /// takes placement identifiers: `[device.fdp]`, or the host log-structured layer
    /// (`kind = "log-structured"`), which consumes them itself to separate hot from cold.
    /// Off by default: a conventional device refuses placement identifiers.
    pub placement_by_temperature: bool,
}

/// When a synthetic workload ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Until {
    /// At the first of the configured limits.
    #[default]
    Limits,
    /// When the device can no longer serve writes (the run's status is `worn_out`).
    Failure,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            read_percent: 70.0,
            trim_percent: 0.0,
            block_size_bytes: 4096,
            block_size_split: Vec::new(),
            align_bytes: 0,
            queue_depth: 16,
            flows: 1,
            pattern: AddressPattern::Uniform,
            zipf_theta: 0.99,
            hot_io_percent: 80.0,
            hot_space_percent: 20.0,
            normal_sigma_percent: 0.0,
            normal_centre_percent: 50.0,
            working_set_offset_bytes: 0,
            working_set_bytes: 0,
            requests: 100_000,
            total_bytes: 0,
            duration_ns: 0,
            open_loop_iops: 0.0,
            until: Until::Limits,
            placement_by_temperature: false,
        }
    }
}

fn bad(key: &str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::config(key, reason)
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p_low = 0.02425;
    if p < p_low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - p_low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

/// Validated, derived parameters of one synthetic flow.
#[derive(Clone, Debug)]
struct Plan {
    read_threshold: f64,
    trim_threshold: f64,
    sizes: Vec<(u64, f64)>, // (bytes, cumulative probability)
    align_bytes: u64,
    ws_offset_bytes: u64,
    slots: u64, // number of aligned start positions
    pattern: AddressPattern,
    zipf_theta: f64,
    hot_slots: u64,
    hot_io: f64,
    normal_centre: f64,
    normal_sigma: f64,
    requests: u64,
    total_bytes: u64,
    open_loop_iops: f64,
    /// Writes to slots below this carry placement id 1 (0: no tagging).
    placement_hot_slots: u64,
}

impl Plan {
    fn new(c: &SyntheticConfig, ctx: &WorkloadContext) -> Result<Plan, WorkloadError> {
        let pct = |key: &str, v: f64| -> Result<f64, WorkloadError> {
            if !(0.0..=100.0).contains(&v) || v.is_nan() {
                Err(bad(key, format!("{v} is not a percentage in 0..=100")))
            } else {
                Ok(v / 100.0)
            }
        };
        let read = pct("read_percent", c.read_percent)?;
        let trim = pct("trim_percent", c.trim_percent)?;
        if read + trim > 1.0 + 1e-9 {
            return Err(bad(
                "trim_percent",
                "read_percent + trim_percent exceeds 100",
            ));
        }
        let mut sizes = Vec::new();
        if c.block_size_split.is_empty() {
            if c.block_size_bytes == 0 {
                return Err(bad("block_size_bytes", "must be > 0"));
            }
            sizes.push((c.block_size_bytes, 1.0));
        } else {
            let mut acc = 0.0;
            for (i, &(bytes, w)) in c.block_size_split.iter().enumerate() {
                if bytes == 0 {
                    return Err(bad(&format!("block_size_split[{i}]"), "size must be > 0"));
                }
                acc += pct(&format!("block_size_split[{i}]"), w)?;
                sizes.push((bytes, acc));
            }
            if (acc - 1.0).abs() > 1e-6 {
                return Err(bad(
                    "block_size_split",
                    format!("weights add up to {}%, not 100%", acc * 100.0),
                ));
            }
            if let Some(last) = sizes.last_mut() {
                last.1 = 1.0;
            }
        }
        let min_size = sizes.iter().map(|s| s.0).min().unwrap_or(1);
        let max_size = sizes.iter().map(|s| s.0).max().unwrap_or(1);
        let align_bytes = if c.align_bytes == 0 {
            min_size
        } else {
            c.align_bytes
        };
        if c.working_set_offset_bytes >= ctx.logical_bytes {
            return Err(bad(
                "working_set_offset_bytes",
                format!(
                    "{} is beyond the logical capacity {} bytes",
                    c.working_set_offset_bytes, ctx.logical_bytes
                ),
            ));
        }
        let ws_bytes = if c.working_set_bytes == 0 {
            ctx.logical_bytes - c.working_set_offset_bytes
        } else {
            c.working_set_bytes
        };
        if c.working_set_offset_bytes + ws_bytes > ctx.logical_bytes {
            return Err(bad(
                "working_set_bytes",
                format!(
                    "offset + size = {} exceeds the logical capacity {} bytes",
                    c.working_set_offset_bytes + ws_bytes,
                    ctx.logical_bytes
                ),
            ));
        }
        if ws_bytes < max_size && c.working_set_bytes == 0 {
            // The working set is the logical space (from the offset): the request is too big.
            let key = if c.block_size_split.is_empty() {
                "block_size_bytes"
            } else {
                "block_size_split"
            };
            return Err(bad(
                key,
                format!(
                    "a {max_size}-byte request does not fit in the working set ({ws_bytes} bytes: the logical space from working_set_offset_bytes)"
                ),
            ));
        }
        if ws_bytes < max_size {
            return Err(bad(
                "working_set_bytes",
                format!("{ws_bytes} is smaller than the largest request ({max_size} bytes)"),
            ));
        }
        let slots = (ws_bytes - max_size) / align_bytes + 1;
        if c.flows == 0 {
            return Err(bad("flows", "must be >= 1"));
        }
        if c.flows > MAX_FLOWS {
            return Err(bad(
                "flows",
                format!(
                    "{} is more than {MAX_FLOWS} (NVMe's most I/O queues)",
                    c.flows
                ),
            ));
        }
        if c.open_loop_iops == 0.0 && c.queue_depth == 0 {
            return Err(bad("queue_depth", "must be >= 1 for a closed-loop flow"));
        }
        if c.open_loop_iops < 0.0 || c.open_loop_iops.is_nan() {
            return Err(bad("open_loop_iops", "must be >= 0"));
        }
        let to_failure = c.until == Until::Failure;
        if to_failure && c.read_percent + c.trim_percent >= 100.0 {
            return Err(bad(
                "until",
                "\"failure\" needs writes (read_percent + trim_percent < 100), or the run never ends",
            ));
        }
        if !to_failure && c.requests == 0 && c.total_bytes == 0 && c.duration_ns == 0 {
            return Err(bad(
                "requests",
                "set at least one of requests, total_bytes, duration_ns",
            ));
        }
        let hot_io = pct("hot_io_percent", c.hot_io_percent)?;
        let hot_space = pct("hot_space_percent", c.hot_space_percent)?;
        let hot_slots = ((slots as f64 * hot_space).round() as u64).clamp(1, slots);
        if c.pattern == AddressPattern::HotCold && (hot_slots == slots && hot_io < 1.0) {
            return Err(bad("hot_space_percent", "leaves no cold space"));
        }
        if c.pattern == AddressPattern::Zipf && (c.zipf_theta <= 0.0 || c.zipf_theta.is_nan()) {
            return Err(bad("zipf_theta", "must be > 0"));
        }
        let normal_centre = pct("normal_centre_percent", c.normal_centre_percent)? * slots as f64;
        let normal_sigma = if c.normal_sigma_percent > 0.0 {
            c.normal_sigma_percent / 100.0 * slots as f64
        } else {
            if c.pattern == AddressPattern::Normal
                && !(hot_io > 0.0 && hot_io < 1.0 && hot_space > 0.0)
            {
                return Err(bad("hot_io_percent", "normal pattern without normal_sigma_percent needs 0 < hot_io_percent < 100 and hot_space_percent > 0"));
            }
            // P(|X - centre| < hot_space/2 * slots) = hot_io  =>  sigma = half-width / z.
            let z = normal_quantile((1.0 + hot_io) / 2.0);
            (hot_space / 2.0 * slots as f64 / z).max(1e-9)
        };
        if c.placement_by_temperature {
            if c.pattern != AddressPattern::HotCold {
                return Err(bad(
                    "placement_by_temperature",
                    format!(
                        "needs pattern = \"hot-cold\" (the temperature of a write), not {}",
                        // Every other pattern's name is one word.
                        format!("{:?}", c.pattern).to_lowercase()
                    ),
                ));
            }
            if ctx.placement_ids < 2 {
                return Err(bad(
                    "placement_by_temperature",
                    format!(
                        "tags writes with placement ids 0 and 1, but the device accepts {} placement ids ([device.fdp] with 2 handles or more, or the log-structured host layer)",
                        ctx.placement_ids
                    ),
                ));
            }
        }
        Ok(Plan {
            read_threshold: read,
            trim_threshold: read + trim,
            sizes,
            align_bytes,
            ws_offset_bytes: c.working_set_offset_bytes,
            slots,
            pattern: c.pattern,
            zipf_theta: c.zipf_theta,
            hot_slots,
            hot_io,
            normal_centre,
            normal_sigma,
            requests: if to_failure { 0 } else { c.requests },
            total_bytes: if to_failure { 0 } else { c.total_bytes },
            open_loop_iops: c.open_loop_iops,
            placement_hot_slots: if c.placement_by_temperature {
                hot_slots
            } else {
                0
            },
        })
    }
}

/// One synthetic flow.
pub struct SyntheticSource {
    plan: Plan,
    rng: SimRng,
    sampler: AddressSampler,
    issued_requests: u64,
    issued_bytes: u64,
    /// Requests and bytes to issue (`u64::MAX`: no limit).
    limit_requests: u64,
    limit_bytes: u64,
    /// The one request size and the slots it spans, when there is one size.
    fixed_size: Option<(u64, u64)>,
    clock_ns: f64,
    inter_arrival: Option<Exp<f64>>,
}

impl SyntheticSource {
    fn new(plan: Plan, mut rng: SimRng) -> Result<Self, WorkloadError> {
        let (kind, key) = match plan.pattern {
            AddressPattern::Sequential => (AddressKind::Sequential, "pattern"),
            AddressPattern::Uniform => (AddressKind::Uniform, "pattern"),
            AddressPattern::Zipf => (
                AddressKind::Zipf {
                    theta: plan.zipf_theta,
                },
                "zipf_theta",
            ),
            AddressPattern::HotCold => (
                AddressKind::HotCold {
                    hot_slots: plan.hot_slots,
                    hot_io: plan.hot_io,
                },
                "hot_io_percent",
            ),
            AddressPattern::Normal => (
                AddressKind::Normal {
                    centre: plan.normal_centre,
                    sigma: plan.normal_sigma,
                },
                "normal_sigma_percent",
            ),
        };
        let sampler = AddressSampler::new(&kind, plan.slots, 0.0, &mut rng, key)?;
        let inter_arrival = if plan.open_loop_iops > 0.0 {
            Some(
                Exp::new(plan.open_loop_iops / 1e9)
                    .map_err(|e| bad("open_loop_iops", e.to_string()))?,
            )
        } else {
            None
        };
        Ok(SyntheticSource {
            rng,
            sampler,
            issued_requests: 0,
            issued_bytes: 0,
            limit_requests: if plan.requests > 0 {
                plan.requests
            } else {
                u64::MAX
            },
            limit_bytes: if plan.total_bytes > 0 {
                plan.total_bytes
            } else {
                u64::MAX
            },
            fixed_size: (plan.sizes.len() == 1)
                .then(|| (plan.sizes[0].0, Self::step_slots(&plan, plan.sizes[0].0))),
            plan,
            clock_ns: 0.0,
            inter_arrival,
        })
    }

    /// Aligned slots a request of `size_bytes` spans (at least 1).
    fn step_slots(plan: &Plan, size_bytes: u64) -> u64 {
        let a = plan.align_bytes;
        // Alignments are powers of two in practice: a shift, not a 64-bit division.
        let step = if a.is_power_of_two() {
            (size_bytes + a - 1) >> a.trailing_zeros()
        } else {
            size_bytes.div_ceil(a)
        };
        step.max(1)
    }
}

impl RequestSource for SyntheticSource {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let mut r = HostRequest {
            tag: 0,
            placement_id: 0,
            arrival_ns: 0,
            op: HostOp::Write,
            offset_bytes: 0,
            size_bytes: 0,
            journal: None,
        };
        Ok(self.next_into(&mut r)?.then_some(r))
    }

    #[inline]
    fn next_into(&mut self, out: &mut HostRequest) -> Result<bool, WorkloadError> {
        Ok(self.draw(out))
    }

    /// Synthetic sources keep no counters: a batch drawn early is the same requests.
    fn next_batch(&mut self, out: &mut [HostRequest]) -> (usize, Option<WorkloadError>) {
        let mut n = 0;
        while n < out.len() && self.draw(&mut out[n]) {
            n += 1;
        }
        (n, None)
    }
}

impl SyntheticSource {
    /// The next request into `out`; false when the flow has issued all it should.
    #[inline(always)]
    fn draw(&mut self, out: &mut HostRequest) -> bool {
        let p = &self.plan;
        if self.issued_requests >= self.limit_requests || self.issued_bytes >= self.limit_bytes {
            return false;
        }
        let u: f64 = self.rng.gen();
        let op = if u < p.read_threshold {
            HostOp::Read
        } else if u < p.trim_threshold {
            HostOp::Trim
        } else {
            HostOp::Write
        };
        let (size_bytes, step) = match self.fixed_size {
            Some(fixed) => fixed,
            None => {
                let v: f64 = self.rng.gen();
                let size = p
                    .sizes
                    .iter()
                    .find(|s| v < s.1)
                    .unwrap_or(&p.sizes[p.sizes.len() - 1])
                    .0;
                (size, Self::step_slots(p, size))
            }
        };
        let slot = self.sampler.next_slot(&mut self.rng, step);
        let p = &self.plan;
        let arrival_ns = match &self.inter_arrival {
            Some(e) => {
                self.clock_ns += e.sample(&mut self.rng);
                self.clock_ns as u64
            }
            None => 0,
        };
        self.issued_requests += 1;
        self.issued_bytes += size_bytes;
        out.arrival_ns = arrival_ns;
        out.op = op;
        out.offset_bytes = p.ws_offset_bytes + slot * p.align_bytes;
        out.size_bytes = size_bytes;
        out.journal = None;
        out.placement_id = (op == HostOp::Write && slot < p.placement_hot_slots) as u16;
        true
    }
}

/// Build the flows of a synthetic workload.
pub fn build(c: &SyntheticConfig, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    let plan = Plan::new(c, ctx)?;
    let arrival = if c.open_loop_iops > 0.0 {
        Arrival::Open
    } else {
        Arrival::Closed {
            queue_depth: c.queue_depth,
        }
    };
    let mut flows = Vec::with_capacity(c.flows as usize);
    for f in 0..c.flows {
        let rng = stream(ctx.seed, tag::SYNTHETIC + f as u64);
        flows.push(Flow {
            name: format!("flow{f}"),
            arrival,
            source: Box::new(SyntheticSource::new(plan.clone(), rng)?),
        });
    }
    Ok(Workload {
        flows,
        duration_ns: (c.duration_ns > 0 && c.until == Until::Limits).then_some(c.duration_ns),
        stats: WorkloadStats::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> WorkloadContext {
        WorkloadContext {
            logical_bytes: 1 << 30,
            unit_bytes: 4096,
            seed: 7,
            base_dir: None,
            zones: None,
            placement_ids: 0,
        }
    }

    fn drain(c: &SyntheticConfig) -> Vec<HostRequest> {
        let mut w = build(c, &ctx()).unwrap();
        let mut out = Vec::new();
        while let Some(r) = w.flows[0].source.next_request().unwrap() {
            out.push(r);
        }
        out
    }

    /// Batches (odd sizes, across the end of the flow) are the requests one at a time.
    #[test]
    fn batches_are_the_same_requests_as_single_draws() {
        let c = SyntheticConfig {
            requests: 1000,
            read_percent: 30.0,
            trim_percent: 5.0,
            block_size_split: vec![(4096, 50.0), (16384, 30.0), (65536, 20.0)],
            open_loop_iops: 1e5,
            ..Default::default()
        };
        let single = drain(&c);
        assert_eq!(single.len(), 1000);
        let mut w = build(&c, &ctx()).unwrap();
        let blank = single[0];
        let mut batched = Vec::new();
        for size in [1usize, 7, 64].iter().cycle() {
            let mut buf = vec![blank; *size];
            let (n, err) = w.flows[0].source.next_batch(&mut buf);
            assert!(err.is_none());
            batched.extend_from_slice(&buf[..n]);
            if n < *size {
                break;
            }
        }
        assert_eq!(batched, single);
    }

    #[test]
    fn until_failure_ignores_limits_and_needs_writes() {
        let c = SyntheticConfig {
            requests: 5,
            duration_ns: 1000,
            read_percent: 50.0,
            until: Until::Failure,
            ..Default::default()
        };
        let mut w = build(&c, &ctx()).unwrap();
        assert_eq!(w.duration_ns, None);
        for _ in 0..1000 {
            assert!(w.flows[0].source.next_request().unwrap().is_some());
        }
        let reads_only = SyntheticConfig {
            read_percent: 100.0,
            ..c
        };
        let e = build(&reads_only, &ctx()).err().unwrap();
        assert!(e.to_string().contains("until"), "{e}");
    }

    #[test]
    fn sequential_wraps_and_counts() {
        let c = SyntheticConfig {
            pattern: AddressPattern::Sequential,
            requests: 5,
            read_percent: 0.0,
            working_set_bytes: 3 * 4096,
            ..Default::default()
        };
        let offs: Vec<u64> = drain(&c).iter().map(|r| r.offset_bytes).collect();
        assert_eq!(offs, vec![0, 4096, 8192, 0, 4096]);
    }

    #[test]
    fn mix_and_bounds() {
        let c = SyntheticConfig {
            requests: 20_000,
            read_percent: 70.0,
            ..Default::default()
        };
        let reqs = drain(&c);
        let reads = reqs.iter().filter(|r| r.op == HostOp::Read).count() as f64 / reqs.len() as f64;
        assert!((reads - 0.7).abs() < 0.02, "read share {reads}");
        assert!(reqs
            .iter()
            .all(|r| r.offset_bytes % 4096 == 0 && r.offset_bytes + r.size_bytes <= 1 << 30));
    }

    #[test]
    fn hot_cold_share() {
        let c = SyntheticConfig {
            pattern: AddressPattern::HotCold,
            hot_io_percent: 90.0,
            hot_space_percent: 10.0,
            requests: 20_000,
            ..Default::default()
        };
        let hot_limit = (1u64 << 30) / 10;
        let reqs = drain(&c);
        let hot =
            reqs.iter().filter(|r| r.offset_bytes < hot_limit).count() as f64 / reqs.len() as f64;
        assert!((hot - 0.9).abs() < 0.02, "hot share {hot}");
    }

    #[test]
    fn normal_central_share_matches_hot_ratio() {
        // spec 03 trace1: the central 15% of addresses receive 85% of the writes.
        let c = SyntheticConfig {
            pattern: AddressPattern::Normal,
            hot_io_percent: 85.0,
            hot_space_percent: 15.0,
            requests: 40_000,
            ..Default::default()
        };
        let n = (1u64 << 30) as f64;
        let reqs = drain(&c);
        let central = reqs
            .iter()
            .filter(|r| (r.offset_bytes as f64 - n / 2.0).abs() < 0.075 * n)
            .count() as f64
            / reqs.len() as f64;
        assert!((central - 0.85).abs() < 0.02, "central share {central}");
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let c = SyntheticConfig {
            pattern: AddressPattern::Zipf,
            zipf_theta: 1.2,
            requests: 20_000,
            ..Default::default()
        };
        let reqs = drain(&c);
        let mut counts = std::collections::BTreeMap::new();
        for r in &reqs {
            *counts.entry(r.offset_bytes).or_insert(0u32) += 1;
        }
        let top = counts.values().max().copied().unwrap();
        assert!(top > 1000, "most popular block got only {top} of 20000");
    }

    #[test]
    fn bssplit_and_errors_name_keys() {
        let c = SyntheticConfig {
            block_size_split: vec![(4096, 50.0), (8192, 40.0)],
            ..Default::default()
        };
        let e = build(&c, &ctx()).err().unwrap().to_string();
        assert!(e.contains("block_size_split") && e.contains("90"), "{e}");
        let c = SyntheticConfig {
            read_percent: 120.0,
            ..Default::default()
        };
        assert!(build(&c, &ctx())
            .err()
            .unwrap()
            .to_string()
            .contains("workload.read_percent"));
    }

    #[test]
    fn same_seed_same_stream() {
        let c = SyntheticConfig {
            requests: 1000,
            ..Default::default()
        };
        assert_eq!(drain(&c), drain(&c));
    }

    #[test]
    fn placement_by_temperature_tags_hot_writes_only() {
        let c = SyntheticConfig {
            pattern: AddressPattern::HotCold,
            hot_io_percent: 70.0,
            hot_space_percent: 10.0,
            read_percent: 30.0,
            trim_percent: 10.0,
            requests: 5000,
            placement_by_temperature: true,
            ..Default::default()
        };
        let fdp = WorkloadContext {
            placement_ids: 2,
            ..ctx()
        };
        let mut w = build(&c, &fdp).unwrap();
        let hot_limit = (1u64 << 30) / 10;
        let mut tagged = 0;
        while let Some(r) = w.flows[0].source.next_request().unwrap() {
            let want = (r.op == HostOp::Write && r.offset_bytes < hot_limit) as u16;
            assert_eq!(r.placement_id, want, "{r:?}");
            tagged += want as u32;
        }
        assert!(tagged > 1000, "{tagged}");
        // Off by default: no tags.
        let off = SyntheticConfig {
            placement_by_temperature: false,
            ..c.clone()
        };
        let mut w = build(&off, &fdp).unwrap();
        let mut buf = [HostRequest::default(); 64];
        buf.iter_mut().for_each(|r| r.placement_id = 9);
        let (n, _) = w.flows[0].source.next_batch(&mut buf);
        assert!(buf[..n].iter().all(|r| r.placement_id == 0));
        // A device without placement ids refuses it; so does a pattern without a hot set.
        let e = build(&c, &ctx()).err().unwrap().to_string();
        assert!(
            e.starts_with("workload.placement_by_temperature: tags writes with placement ids 0 and 1, but the device accepts 0 placement ids"),
            "{e}"
        );
        let uniform = SyntheticConfig {
            pattern: AddressPattern::Uniform,
            ..c
        };
        let e = build(&uniform, &fdp).err().unwrap().to_string();
        assert!(e.contains("needs pattern = \"hot-cold\""), "{e}");
    }

    #[test]
    fn normal_quantile_known_values() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((normal_quantile(0.5)).abs() < 1e-9);
        assert!((normal_quantile(0.01) + 2.326_348).abs() < 1e-5);
    }
}
