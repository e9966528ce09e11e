//! A CacheLib-like flash cache (`[workload] kind = "flash-cache"`): the block I/O of
//! CacheLib's flash engine, Navy, as Allison et al. ran it on FDP SSDs ("Towards
//! Efficient Flash Caches with Emerging NVMe Flexible Data Placement SSDs", EuroSys 2025,
//! arXiv 2503.11665; docs/reproduce-fdp.md). No keys are kept: the model writes and reads
//! where Navy's two engines would.
//!
//! * The **cache** takes `utilization_percent` \[100\] of the device's logical space
//!   (the paper's *utilization*: cache size / device capacity; the rest is never written,
//!   host over-provisioning). `soc_percent` \[4\] of it is the **small-object cache**
//!   (SOC, Navy's BigHash; 4 % is the paper's SOC share), the rest the **large-object
//!   cache** (LOC, Navy's BlockCache): the LOC at the start of the space, the SOC after it.
//! * **LOC**: regions of `region_bytes` \[16 MiB, Navy's default region size\], filled in
//!   memory by large objects and written whole, sequentially, in writes of
//!   [`LOC_WRITE_BYTES`]; the next region written is the oldest (FIFO eviction: the LOC is
//!   a circular log). The paper sizes regions to the device's reclaim unit (the
//!   experiment: an erase block on every plane).
//! * **SOC**: buckets of `bucket_bytes` \[4096, BigHash's bucket\]; each small-object set
//!   rewrites one bucket chosen at random (the key's hash) — random 4 KiB writes over the
//!   small SOC share.
//! * **Object mix**: `set_percent` \[20\] of the operations are sets (the rest gets);
//!   `small_object_percent` \[90\] of the objects are small (SOC), `small_object_bytes`
//!   \[100..=2048\] uniform, the rest large, `large_object_bytes` \[4096..=65536\]
//!   uniform (Navy sends objects below ~2 KiB to BigHash, the rest to BlockCache; these
//!   sizes and ratios stand for a key-value cache trace, not a published figure).
//!   A get reads the object's bucket (small) or the object's bytes at a random LOC offset
//!   (large); a large set issues no I/O until its region is full.
//! * **FDP** (`fdp` \[false\]): SOC writes carry placement identifier 1, LOC writes 0 (one
//!   placement identifier per engine, as CacheLib's FDP support does); it needs a device
//!   with at least 2 identifiers (`[device.fdp] handles = 2`).
//! * One closed-loop flow at `queue_depth` \[16\]; `requests` \[1,000,000\] requests (0 =
//!   no limit) or `duration_ns`.

use crate::rng::{stream, tag, SimRng};
use crate::stats::WorkloadStats;
use crate::{
    Arrival, Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadContext, WorkloadError,
};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Size of each write a LOC region is flushed in (the region is written front to back).
pub const LOC_WRITE_BYTES: u64 = 1 << 20;

/// The placement identifier of the SOC's writes with `fdp = true` (the LOC's: 0).
pub const SOC_PLACEMENT_ID: u16 = 1;

/// `[workload] kind = "flash-cache"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FlashCacheConfig {
    /// Cache size / logical capacity, in percent (0 < x ≤ 100).
    pub utilization_percent: f64,
    /// Share of the cache given to the small-object cache, in percent (0 < x < 100).
    pub soc_percent: f64,
    /// LOC region size (a multiple of the mapping unit).
    pub region_bytes: u64,
    /// SOC bucket size (a multiple of the mapping unit).
    pub bucket_bytes: u64,
    /// Share of the operations that are sets, in percent.
    pub set_percent: f64,
    /// Share of the objects that are small (SOC), in percent.
    pub small_object_percent: f64,
    /// Smallest and largest small object (bytes, uniform).
    pub small_object_min_bytes: u64,
    pub small_object_max_bytes: u64,
    /// Smallest and largest large object (bytes, uniform; at most `region_bytes`).
    pub large_object_min_bytes: u64,
    pub large_object_max_bytes: u64,
    /// SOC writes on placement identifier 1, LOC writes on 0.
    pub fdp: bool,
    pub queue_depth: u32,
    /// Stop after this many requests (0 = no request limit).
    pub requests: u64,
    /// Stop the run at this simulated time (0 = no time limit). At least one limit is needed.
    pub duration_ns: u64,
}

impl Default for FlashCacheConfig {
    fn default() -> Self {
        FlashCacheConfig {
            utilization_percent: 100.0,
            soc_percent: 4.0,
            region_bytes: 16 << 20,
            bucket_bytes: 4096,
            set_percent: 20.0,
            small_object_percent: 90.0,
            small_object_min_bytes: 100,
            small_object_max_bytes: 2048,
            large_object_min_bytes: 4096,
            large_object_max_bytes: 64 << 10,
            fdp: false,
            queue_depth: 16,
            requests: 1_000_000,
            duration_ns: 0,
        }
    }
}

/// Where the two caches lie, in bytes of the logical space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// LOC: `0 .. loc_bytes`, `loc_bytes / region_bytes` regions.
    pub loc_bytes: u64,
    pub region_bytes: u64,
    /// SOC: `soc_first .. soc_first + buckets · bucket_bytes`.
    pub soc_first: u64,
    pub buckets: u64,
    pub bucket_bytes: u64,
}

impl Layout {
    /// Regions of the LOC.
    pub fn regions(&self) -> u64 {
        self.loc_bytes / self.region_bytes
    }

    /// Bytes the cache holds (LOC + SOC).
    pub fn cache_bytes(&self) -> u64 {
        self.loc_bytes + self.buckets * self.bucket_bytes
    }
}

fn bad(key: &str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::config(key, reason)
}

impl FlashCacheConfig {
    /// The cache's layout on a device, every key checked.
    pub fn layout(&self, ctx: &WorkloadContext) -> Result<Layout, WorkloadError> {
        let pct = |key: &str, v: f64, lo_open: bool| {
            let ok = v.is_finite() && v <= 100.0 && if lo_open { v > 0.0 } else { v >= 0.0 };
            if ok {
                Ok(v / 100.0)
            } else {
                Err(bad(
                    key,
                    format!(
                        "{v} must be a percentage in {}..=100",
                        if lo_open { "(0" } else { "0" }
                    ),
                ))
            }
        };
        let util = pct("utilization_percent", self.utilization_percent, true)?;
        let soc = pct("soc_percent", self.soc_percent, true)?;
        if soc >= 1.0 {
            return Err(bad(
                "soc_percent",
                "100 leaves no large-object cache: must be below 100",
            ));
        }
        pct("set_percent", self.set_percent, false)?;
        pct("small_object_percent", self.small_object_percent, false)?;
        let unit = ctx.unit_bytes.max(1);
        for (key, v) in [
            ("region_bytes", self.region_bytes),
            ("bucket_bytes", self.bucket_bytes),
        ] {
            if v == 0 || !v.is_multiple_of(unit) {
                return Err(bad(
                    key,
                    format!("{v} must be a positive multiple of the mapping unit ({unit} bytes)"),
                ));
            }
        }
        if self.small_object_min_bytes == 0
            || self.small_object_min_bytes > self.small_object_max_bytes
            || self.small_object_max_bytes > self.bucket_bytes
        {
            return Err(bad(
                "small_object_max_bytes",
                format!(
                    "small objects {}..={} bytes: need 0 < min <= max <= bucket_bytes ({})",
                    self.small_object_min_bytes, self.small_object_max_bytes, self.bucket_bytes
                ),
            ));
        }
        if self.large_object_min_bytes == 0
            || self.large_object_min_bytes > self.large_object_max_bytes
            || self.large_object_max_bytes > self.region_bytes
        {
            return Err(bad(
                "large_object_max_bytes",
                format!(
                    "large objects {}..={} bytes: need 0 < min <= max <= region_bytes ({})",
                    self.large_object_min_bytes, self.large_object_max_bytes, self.region_bytes
                ),
            ));
        }
        if self.queue_depth == 0 {
            return Err(bad("queue_depth", "must be > 0"));
        }
        if self.requests == 0 && self.duration_ns == 0 {
            return Err(bad(
                "requests",
                "set requests or duration_ns (both are 0: the run would never end)",
            ));
        }
        if self.fdp && ctx.placement_ids < 2 {
            return Err(bad(
                "fdp",
                format!(
                    "the SOC's writes use placement identifier {SOC_PLACEMENT_ID}: the device needs FDP with at least 2 placement identifiers ([device.fdp] handles = 2), it has {}",
                    ctx.placement_ids
                ),
            ));
        }
        let cache = (ctx.logical_bytes as f64 * util) as u64;
        let buckets = (cache as f64 * soc) as u64 / self.bucket_bytes;
        let soc_bytes = buckets * self.bucket_bytes;
        let loc_bytes = (cache.saturating_sub(soc_bytes) / self.region_bytes) * self.region_bytes;
        if buckets == 0 || loc_bytes == 0 {
            return Err(bad(
                "utilization_percent",
                format!(
                    "a cache of {cache} bytes holds {buckets} SOC buckets and {} LOC regions: both must be > 0",
                    loc_bytes / self.region_bytes
                ),
            ));
        }
        Ok(Layout {
            loc_bytes,
            region_bytes: self.region_bytes,
            soc_first: loc_bytes,
            buckets,
            bucket_bytes: self.bucket_bytes,
        })
    }
}

/// The request stream of the flash cache.
pub struct FlashCacheSource {
    c: FlashCacheConfig,
    layout: Layout,
    rng: SimRng,
    issued: u64,
    /// Large-object bytes in the region being filled in memory.
    fill: u64,
    /// The region written next (FIFO: the oldest) and the bytes of it written so far
    /// while a flush is under way (`None`: no flush).
    region: u64,
    flushing: Option<u64>,
}

impl FlashCacheSource {
    pub fn new(c: &FlashCacheConfig, ctx: &WorkloadContext) -> Result<Self, WorkloadError> {
        Ok(FlashCacheSource {
            layout: c.layout(ctx)?,
            c: c.clone(),
            rng: stream(ctx.seed, tag::FLASH_CACHE),
            issued: 0,
            fill: 0,
            region: 0,
            flushing: None,
        })
    }

    /// The layout in use.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    fn request(op: HostOp, offset_bytes: u64, size_bytes: u64, placement_id: u16) -> HostRequest {
        HostRequest {
            op,
            offset_bytes,
            size_bytes,
            placement_id,
            ..HostRequest::default()
        }
    }

    /// The next chunk of the region being flushed.
    fn flush_chunk(&mut self, done: u64) -> HostRequest {
        let l = &self.layout;
        let size = LOC_WRITE_BYTES.min(l.region_bytes - done);
        let offset = self.region * l.region_bytes + done;
        if done + size == l.region_bytes {
            self.flushing = None;
            self.region = (self.region + 1) % l.regions();
        } else {
            self.flushing = Some(done + size);
        }
        Self::request(HostOp::Write, offset, size, 0)
    }
}

impl RequestSource for FlashCacheSource {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        if self.c.requests > 0 && self.issued >= self.c.requests {
            return Ok(None);
        }
        self.issued += 1;
        if let Some(done) = self.flushing {
            return Ok(Some(self.flush_chunk(done)));
        }
        let set_p = self.c.set_percent / 100.0;
        let small_p = self.c.small_object_percent / 100.0;
        loop {
            let set = self.rng.gen::<f64>() < set_p;
            let small = self.rng.gen::<f64>() < small_p;
            let l = self.layout;
            if small {
                let _size = self
                    .rng
                    .gen_range(self.c.small_object_min_bytes..=self.c.small_object_max_bytes);
                let bucket = self.rng.gen_range(0..l.buckets);
                let offset = l.soc_first + bucket * l.bucket_bytes;
                return Ok(Some(if set {
                    let id = if self.c.fdp { SOC_PLACEMENT_ID } else { 0 };
                    Self::request(HostOp::Write, offset, l.bucket_bytes, id)
                } else {
                    Self::request(HostOp::Read, offset, l.bucket_bytes, 0)
                }));
            }
            let size = self
                .rng
                .gen_range(self.c.large_object_min_bytes..=self.c.large_object_max_bytes);
            if set {
                // Into the region in memory; a full region goes out whole.
                self.fill += size;
                if self.fill >= l.region_bytes {
                    self.fill -= l.region_bytes;
                    return Ok(Some(self.flush_chunk(0)));
                }
                continue;
            }
            let offset = self.rng.gen_range(0..=l.loc_bytes - size);
            return Ok(Some(Self::request(HostOp::Read, offset, size, 0)));
        }
    }
}

/// Build the flash-cache workload for a device.
pub fn build(c: &FlashCacheConfig, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    let source = FlashCacheSource::new(c, ctx)?;
    Ok(Workload {
        flows: vec![Flow {
            name: "flash-cache".into(),
            arrival: Arrival::Closed {
                queue_depth: c.queue_depth,
            },
            source: Box::new(source),
        }],
        duration_ns: (c.duration_ns > 0).then_some(c.duration_ns),
        stats: WorkloadStats::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64 MiB device of 4 KiB units.
    fn ctx(placement_ids: u16) -> WorkloadContext {
        WorkloadContext {
            logical_bytes: 64 << 20,
            unit_bytes: 4096,
            seed: 9,
            base_dir: None,
            zones: None,
            placement_ids,
        }
    }

    fn tiny(fdp: bool) -> FlashCacheConfig {
        FlashCacheConfig {
            utilization_percent: 50.0,
            soc_percent: 4.0,
            region_bytes: 2 << 20,
            fdp,
            requests: 200_000,
            ..Default::default()
        }
    }

    /// 50 % of 64 MiB = 32 MiB: 4 % of it = 1342177 bytes = 327 buckets of 4 KiB; the
    /// rest, 32 MiB − 327 · 4 KiB, holds 15 regions of 2 MiB.
    #[test]
    fn the_layout_is_exact() {
        let l = tiny(false).layout(&ctx(0)).unwrap();
        assert_eq!(l.buckets, 327);
        assert_eq!(l.regions(), 15);
        assert_eq!(l.loc_bytes, 30 << 20);
        assert_eq!(l.soc_first, 30 << 20);
        assert_eq!(l.cache_bytes(), (30 << 20) + 327 * 4096);
    }

    /// LOC writes are whole regions, written front to back in 1 MiB writes, the regions in
    /// FIFO order around the LOC; SOC writes are single buckets inside the 4 % share; with
    /// FDP the SOC's writes carry id 1 and the LOC's 0; reads and writes keep to the cache.
    #[test]
    fn loc_writes_are_sequential_regions_and_soc_writes_hit_their_share() {
        for fdp in [false, true] {
            let c = tiny(fdp);
            let mut s = FlashCacheSource::new(&c, &ctx(2)).unwrap();
            let l = s.layout();
            let soc_end = l.soc_first + l.buckets * l.bucket_bytes;
            let (mut loc_next, mut loc_writes, mut soc_writes, mut reads) = (0u64, 0u64, 0u64, 0);
            let mut soc_buckets = std::collections::HashSet::new();
            let mut n = 0u64;
            while let Some(r) = s.next_request().unwrap() {
                n += 1;
                assert!(r.offset_bytes + r.size_bytes <= l.cache_bytes(), "{r:?}");
                match r.op {
                    HostOp::Write if r.offset_bytes < l.loc_bytes => {
                        assert_eq!(r.offset_bytes, loc_next, "sequential, FIFO: {r:?}");
                        assert_eq!(r.size_bytes, LOC_WRITE_BYTES);
                        assert_eq!(r.placement_id, 0);
                        loc_next = (loc_next + r.size_bytes) % l.loc_bytes;
                        loc_writes += 1;
                    }
                    HostOp::Write => {
                        assert!(r.offset_bytes >= l.soc_first && r.offset_bytes < soc_end);
                        assert_eq!((r.offset_bytes - l.soc_first) % 4096, 0);
                        assert_eq!(r.size_bytes, 4096);
                        assert_eq!(r.placement_id, if fdp { SOC_PLACEMENT_ID } else { 0 });
                        soc_buckets.insert(r.offset_bytes);
                        soc_writes += 1;
                    }
                    HostOp::Read => {
                        assert_eq!(r.placement_id, 0);
                        reads += 1;
                    }
                    op => panic!("{op:?}"),
                }
            }
            assert_eq!(n, 200_000);
            assert_eq!(reads + loc_writes + soc_writes, n);
            // Whole regions (2 MiB = 2 writes) only, apart from the one being flushed.
            assert!(loc_writes >= 2 * l.regions(), "{loc_writes}: laps the LOC");
            // Every bucket of the 327 is hit in ~ 200 000 × 0.8… draws.
            assert_eq!(soc_buckets.len() as u64, l.buckets);
            // Sets are 20 % of the operations, 90 % of the objects small: of the draws
            // that issue a read or a SOC write, 0.2·0.9 / (0.2·0.9 + 0.8) are SOC writes.
            let share = soc_writes as f64 / (soc_writes + reads) as f64;
            assert!((share - 0.18 / 0.98).abs() < 0.01, "{share}");
        }
    }

    /// The stream is the seed's: the same seed gives the same requests, another seed other ones.
    #[test]
    fn the_stream_is_seeded() {
        let draw = |seed: u64| {
            let mut c = ctx(0);
            c.seed = seed;
            let mut s = FlashCacheSource::new(&tiny(false), &c).unwrap();
            (0..1000)
                .map(|_| s.next_request().unwrap().unwrap().offset_bytes)
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }

    #[test]
    fn errors_name_the_key() {
        let err = |c: FlashCacheConfig, ids: u16| build(&c, &ctx(ids)).err().unwrap().to_string();
        assert!(err(tiny(true), 0).contains("workload.fdp"));
        let c = FlashCacheConfig {
            soc_percent: 100.0,
            ..tiny(false)
        };
        assert!(err(c, 0).contains("soc_percent"));
        let c = FlashCacheConfig {
            bucket_bytes: 1000,
            ..tiny(false)
        };
        assert!(err(c, 0).contains("bucket_bytes"));
        let c = FlashCacheConfig {
            utilization_percent: 0.0,
            ..tiny(false)
        };
        assert!(err(c, 0).contains("utilization_percent"));
        let c = FlashCacheConfig {
            large_object_max_bytes: 4 << 20,
            ..tiny(false)
        };
        assert!(err(c, 0).contains("large_object_max_bytes"));
        let text = "kind = \"flash-cache\"\nsoc_percnt = 4";
        let e = toml::from_str::<crate::WorkloadConfig>(text).unwrap_err();
        assert!(e.to_string().contains("soc_percnt"), "{e}");
        let w: crate::WorkloadConfig =
            toml::from_str("kind = \"flash-cache\"\nutilization_percent = 75").unwrap();
        assert_eq!(
            w,
            crate::WorkloadConfig::FlashCache(FlashCacheConfig {
                utilization_percent: 75.0,
                ..Default::default()
            })
        );
    }
}
