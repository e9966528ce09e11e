//! Flash translation layer: regions of blocks, mapping, free-block allocation, relocation
//! jobs (GC, wear leveling, retirement) and their pacing, bad blocks and wear-out.
//!
//! The FTL makes every decision and keeps the logical state; it never reads a clock. Each
//! NAND operation it decides on is handed to a [`NandSink`] and carries a typed
//! [`Owner`]. The FTL is told of every completion ([`Ftl::on_complete`]): the functional
//! sink completes operations as they are issued (`IMMEDIATE`), the timed driver when the
//! die finishes them. What changes when:
//!
//! * a host page's units are mapped when its program is issued (the write buffer keeps
//!   them readable until the program completes);
//! * a relocated unit is re-mapped when its copy's program completes (until then reads go
//!   to the old copy, whose block cannot be erased while reads of it are queued);
//! * a block becomes a GC candidate when its last page's program completes;
//! * an erased block rejoins its free pool when the erase completes, which is what makes
//!   GC back-pressure host writes in the timed mode.
//!
//! Background work (GC, wear leveling, retirement) runs as relocation jobs in `jobs/`,
//! the same in both modes; how GC shares a die with host programs is named here
//! ([`PressureView::gc_pressure`]) and applied by the timed scheduler.

mod check;
pub mod fdp;
mod health;
mod host;
mod jobs;
mod media;
mod pressure;
mod recover;
pub mod region;
mod reliability;
pub mod retry;
pub mod translation;
mod trims;
pub mod zones;

// The policy families live in the layer below config (`crate::policy`); the FTL's paths
// to them stay `ftl::gc`, `ftl::mapping`, ….
pub use crate::policy::{alloc, gc, mapping, placement, wear};

pub use health::{LifeEvent, Lifetime};
pub use recover::{power_cut_supported, RecoverySummary};
pub use trims::{is_record, TRIM_TAG};

use crate::config::{Config, Derived, Geometry};
use crate::error::{Result, SimError};
use crate::flash::{BlockState, BlockTable, Cause, NandOp, Oob, OpKind, Owner, TimingModel};
use crate::ids::{BlockId, Lpn, PlaneId, SlotId};
use crate::integrity::Integrity;
use health::Health;
use jobs::Jobs;
use mapping::{Mapping, MappingShape, MappingTable};
pub use media::Media;
use placement::{Placement, PlacementShape};
use pressure::Pressure;
pub use pressure::PressureView;
use region::Region;
use ssdlab_workload::rng::{stream, tag, SimRng};
use translation::{TransCounters, Translation};

/// Whether a mapping table of `logical_units` entries outgrows the caches, so that loops
/// which know their next units prefetch them.
pub fn prefetch_pays(logical_units: u32) -> bool {
    logical_units as usize > jobs::PREFETCH_MIN_UNITS
}

pub use crate::base::MAX_REGIONS;

/// Journal placement (spec 05): what the detector decided, per host write request, against
/// the workload's ground truth when it has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalCounters {
    pub true_positive: u64,
    pub false_positive: u64,
    pub false_negative: u64,
    pub true_negative: u64,
    /// Units relocated from one region into another (SLC → TLC migration).
    pub migrated_units: u64,
    /// Of those, units inside the workload's journal range.
    pub journal_units_migrated: u64,
    /// Host pages placed past the cache region because it held its current size
    /// (`slc-buffer`'s TurboWrite sizes).
    pub cache_bypassed_pages: u64,
}

impl JournalCounters {
    fn since(&self, b: &JournalCounters) -> JournalCounters {
        JournalCounters {
            true_positive: self.true_positive - b.true_positive,
            false_positive: self.false_positive - b.false_positive,
            false_negative: self.false_negative - b.false_negative,
            true_negative: self.true_negative - b.true_negative,
            migrated_units: self.migrated_units - b.migrated_units,
            journal_units_migrated: self.journal_units_migrated - b.journal_units_migrated,
            cache_bypassed_pages: self.cache_bypassed_pages - b.cache_bypassed_pages,
        }
    }
}

/// Receiver of the NAND operations the FTL issues.
pub trait NandSink {
    /// True when operations complete as they are issued (functional mode): the FTL then
    /// applies each completion itself. Otherwise the driver calls [`Ftl::on_complete`].
    const IMMEDIATE: bool;
    /// The driver's simulated time (ns): the timed mode's event time, the functional
    /// mode's serial clock (which already includes the operations issued so far). The
    /// FTL reads no clock of its own; it stamps block state with this
    /// ([`BlockTable::first_program_ns`]).
    fn now_ns(&self) -> u64;
    fn issue(&mut self, op: NandOp);
    /// `op` issued `times` times (an immediate sink's bulk form of [`NandSink::issue`]).
    #[inline]
    fn issue_times(&mut self, op: NandOp, times: u64) {
        for _ in 0..times {
            self.issue(op);
        }
    }
}

/// A sink lent out (a driver hands the FTL its own sink for one command).
impl<S: NandSink> NandSink for &mut S {
    const IMMEDIATE: bool = S::IMMEDIATE;
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }

    #[inline(always)]
    fn issue(&mut self, op: NandOp) {
        (**self).issue(op)
    }

    #[inline(always)]
    fn issue_times(&mut self, op: NandOp, times: u64) {
        (**self).issue_times(op, times)
    }
}

/// Operation counts by kind and cause, counted when issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NandCounts {
    pub ops: [[u64; crate::flash::Cause::COUNT]; 3],
}

impl NandCounts {
    pub fn get(&self, kind: OpKind, cause: Cause) -> u64 {
        self.ops[kind as usize][cause as usize]
    }
    pub fn total(&self, kind: OpKind) -> u64 {
        self.ops[kind as usize].iter().sum()
    }
    pub fn since(&self, earlier: &NandCounts) -> NandCounts {
        let mut d = *self;
        for k in 0..3 {
            for c in 0..Cause::COUNT {
                d.ops[k][c] -= earlier.ops[k][c];
            }
        }
        d
    }
}

/// What a host read of a run of units needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    /// NAND reads issued (all stages; data and translation pages).
    pub nand_reads: u32,
    /// NAND programs issued on the read's path (a dirty translation page written back).
    pub nand_programs: u32,
    /// Of those operations, ones of a later stage (they start when the earlier stage
    /// completes).
    pub staged_ops: u32,
    pub buffer_hits: u32,
    pub unmapped: u32,
}

/// FTL event counters (monotone; phases are measured as differences).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlCounters {
    pub nand: NandCounts,
    /// Units written by the host into pages (after buffer merging).
    pub host_units_programmed: u64,
    /// Units relocated by GC.
    pub gc_copied_units: u64,
    /// Victims collected.
    pub gc_invocations: u64,
    /// Empty slots programmed because a page was flushed before it was full (with
    /// partial-page programs: counted when the page is given up partly programmed).
    pub padding_units: u64,
    /// Programs that appended host units to a page already partly programmed
    /// (`partial_programs_per_page` > 1).
    pub partial_programs: u64,
    pub trimmed_units: u64,
    /// Durable trims (`trims.rs`): record slots written (each a mapping unit of ranges of
    /// trimmed units), and the pages that held them (NAND programs, cause `mapping`).
    pub trim_records: u64,
    pub trim_record_pages: u64,
    /// Blocks retired during the run (worn out or failed), factory bad blocks excluded.
    pub blocks_retired: u64,
    /// Units moved by wear leveling.
    pub wear_leveling_units: u64,
    /// Wear-leveling migrations (blocks).
    pub wear_leveling_migrations: u64,
    /// Units moved out of blocks retired after a failed program.
    pub retired_units_moved: u64,
    /// Read reclaim and retention refresh (`reliability.rs`): blocks taken, units moved.
    pub reclaimed_blocks: u64,
    pub reclaimed_units: u64,
    pub refreshed_blocks: u64,
    pub refreshed_units: u64,
    /// Of those blocks, the ones the `rber` policies found due (the rest: by read count
    /// or age), and the reliability jobs that became urgent.
    pub reclaimed_blocks_rber: u64,
    pub refreshed_blocks_rber: u64,
    pub urgent_relocations: u64,
    /// Failed page programs and erases (injected).
    pub program_failures: u64,
    pub erase_failures: u64,
    /// Translation-page traffic of a demand-based mapping (spec 04).
    pub translation: TransCounters,
    /// Read retries (`[device.reliability]`).
    pub reliability: retry::RetryCounters,
    /// Host units programmed per region (region id order), and units relocated out of
    /// each region (GC, migration, wear leveling, retirement). Filled in by
    /// [`Ftl::counters_now`] (the FTL keeps them per region and plane).
    pub host_units_by_region: [u64; MAX_REGIONS],
    pub relocated_units_by_region: [u64; MAX_REGIONS],
    pub journal: JournalCounters,
}

impl FtlCounters {
    /// `self − earlier`, field by field.
    pub fn since(&self, b: &FtlCounters) -> FtlCounters {
        FtlCounters {
            nand: self.nand.since(&b.nand),
            host_units_programmed: self.host_units_programmed - b.host_units_programmed,
            gc_copied_units: self.gc_copied_units - b.gc_copied_units,
            gc_invocations: self.gc_invocations - b.gc_invocations,
            padding_units: self.padding_units - b.padding_units,
            partial_programs: self.partial_programs - b.partial_programs,
            trimmed_units: self.trimmed_units - b.trimmed_units,
            trim_records: self.trim_records - b.trim_records,
            trim_record_pages: self.trim_record_pages - b.trim_record_pages,
            blocks_retired: self.blocks_retired - b.blocks_retired,
            wear_leveling_units: self.wear_leveling_units - b.wear_leveling_units,
            wear_leveling_migrations: self.wear_leveling_migrations - b.wear_leveling_migrations,
            retired_units_moved: self.retired_units_moved - b.retired_units_moved,
            reclaimed_blocks: self.reclaimed_blocks - b.reclaimed_blocks,
            reclaimed_units: self.reclaimed_units - b.reclaimed_units,
            refreshed_blocks: self.refreshed_blocks - b.refreshed_blocks,
            refreshed_units: self.refreshed_units - b.refreshed_units,
            reclaimed_blocks_rber: self.reclaimed_blocks_rber - b.reclaimed_blocks_rber,
            refreshed_blocks_rber: self.refreshed_blocks_rber - b.refreshed_blocks_rber,
            urgent_relocations: self.urgent_relocations - b.urgent_relocations,
            program_failures: self.program_failures - b.program_failures,
            erase_failures: self.erase_failures - b.erase_failures,
            translation: self.translation.since(&b.translation),
            reliability: self.reliability.since(&b.reliability),
            host_units_by_region: std::array::from_fn(|i| {
                self.host_units_by_region[i] - b.host_units_by_region[i]
            }),
            relocated_units_by_region: std::array::from_fn(|i| {
                self.relocated_units_by_region[i] - b.relocated_units_by_region[i]
            }),
            journal: self.journal.since(&b.journal),
        }
    }
}

/// The FTL state of one device: the media and the parts that decide over it. Each part
/// owns its state; `Ftl` orchestrates them.
#[derive(Clone)]
pub struct Ftl {
    /// Blocks, OOB, mapping table, regions and their planes: what is on the device.
    media: Media,
    /// What DRAM holds of the table and what the rest costs (spec 04).
    mapping: Mapping,
    /// Translation pages on flash (demand-based mappings).
    trans: Translation,
    /// Where host pages go: the placement policy and the stripe cursors.
    placer: host::Placer,
    /// Per die: the GC pressure rank of its most pressing plane ([`PressureView::die_gc_pressure`]).
    pressure: Pressure,
    jobs: Jobs,
    /// Read reclaim and retention refresh: their policies and the blocks due.
    reliab: reliability::Reliability,
    health: Health,
    /// Each read's retries: the RBER model, the retry policy, their draws.
    retry: retry::ReadRetry,
    /// How host writes are laned: plain, FDP placement handles or zones, decided at build.
    lanes: Lanes,
    /// Options of the crash-consistent (served) device, each decided at build.
    durable: Durable,
    integrity: Option<Integrity>,
    counters: FtlCounters,
    rng: SimRng,
    /// The write buffer is power-loss protected (`ftl.power_loss_protection`; not on a
    /// zoned device, which fails when a zone finds no block): what it acknowledged is
    /// programmed even after the device failed ([`Ftl::write_host_page`]).
    protected_buffer: bool,
    /// Whether the functional mode's bulk fast paths may run ([`Ftl::per_unit_features`]:
    /// none is on). Decided once, when the FTL is built.
    bulk: bool,
    /// Debug builds: when the full invariant checker runs next.
    checks: CheckClock,
    /// The first broken control-plane rule (illegal block-state change, job ended twice,
    /// read pin underflow, …), checked in every build; the next public call returns it as
    /// [`SimError::Internal`].
    internal: Option<String>,
    /// Unit-test hook: every host read first reads page 0 of this block (cause `mapping`,
    /// stage 0), a staged plan of known shape on the page-mapped test device.
    #[cfg(test)]
    pub(crate) staged_read_hook: Option<u32>,
}

/// How host writes are laned (a device is zoned or has placement handles, not both).
#[derive(Clone)]
enum Lanes {
    /// One host stream.
    Plain,
    /// An FDP device (`[device.fdp]`): its counters (its lanes are the `fdp` placement
    /// policy's).
    Fdp(Box<fdp::Fdp>),
    /// The zones of a zoned device (`[device.zns]`).
    Zoned(Box<zones::Zones>),
}

impl Lanes {
    #[inline]
    fn is_zoned(&self) -> bool {
        matches!(self, Lanes::Zoned(_))
    }

    #[inline]
    fn zones(&self) -> Option<&zones::Zones> {
        match self {
            Lanes::Zoned(z) => Some(z),
            _ => None,
        }
    }

    #[inline]
    fn zones_mut(&mut self) -> Option<&mut zones::Zones> {
        match self {
            Lanes::Zoned(z) => Some(z),
            _ => None,
        }
    }
}

/// The crash-consistency options (`hold_overwritten_until_durable`, `ssdlab serve`).
#[derive(Clone, Default)]
struct Durable {
    /// The bytes the host stored, by physical slot (`ssdlab serve`; needs integrity
    /// versions): [`Ftl::store_data`].
    data: Option<Box<crate::flash::SlotData>>,
    /// Blocks holding a unit's previous version, pinned against their erase until the
    /// program of its overwrite completes ([`Ftl::hold_overwritten_until_durable`]).
    held: Option<Box<HeldOverwrites>>,
    /// Trims recorded on flash (with the hold and integrity versions: `trims.rs`).
    trims: Option<Box<trims::TrimJournal>>,
}

impl Durable {
    /// The host page just issued with `token` (timed sinks) holds the blocks of the
    /// versions it overwrote until its program completes.
    fn hold_overwritten<S: NandSink>(
        &mut self,
        media: &mut Media,
        internal: &mut Option<String>,
        token: u32,
    ) {
        let Some(h) = self.held.as_deref_mut() else {
            return;
        };
        if !S::IMMEDIATE && !h.page.is_empty() {
            for &b in &h.page {
                media.pin(internal, b);
            }
            let blocks = std::mem::take(&mut h.page);
            h.by_token.insert(token, blocks);
        }
        h.page.clear();
    }

    /// The program of buffer page `token` completed: its overwritten versions may go (a
    /// job waiting to erase one of their blocks is woken).
    fn release_overwritten(
        &mut self,
        media: &mut Media,
        jobs: &mut Jobs,
        internal: &mut Option<String>,
        token: u32,
    ) {
        let Some(blocks) = self.held.as_mut().and_then(|h| h.by_token.remove(&token)) else {
            return;
        };
        for b in blocks {
            media.unpin(internal, b);
            if media.blocks.pins[b.idx()] == 0 && media.blocks.state[b.idx()] == BlockState::Victim
            {
                jobs.wake_block(b);
            }
        }
    }
}

/// Debug builds: run the full invariant checker every `every_ops` operations (0 = off).
#[derive(Clone, Copy)]
struct CheckClock {
    every_ops: u64,
    until_next: u64,
}

impl CheckClock {
    /// Debug builds: count `n` operations towards the next invariant check.
    #[inline]
    fn count_ops(&mut self, n: u64) {
        if cfg!(debug_assertions) {
            self.until_next = self.until_next.saturating_sub(n);
        }
    }

    /// Debug builds: count an operation towards the next invariant check.
    #[inline]
    fn count_op(&mut self) {
        self.count_ops(1);
    }
}

/// The blocks of overwritten units' previous versions, per host program in flight.
#[derive(Clone, Default)]
struct HeldOverwrites {
    /// The page being filled.
    page: Vec<BlockId>,
    /// Buffer page token → the blocks its program holds.
    by_token: std::collections::HashMap<u32, Vec<BlockId>>,
}

/// Keep the first broken control-plane rule in `internal` (the field, borrowed alone so
/// callers may hold other parts of the FTL).
#[inline(always)]
fn note(internal: &mut Option<String>, check: std::result::Result<(), String>) {
    if let Err(what) = check {
        note_cold(internal, what);
    }
}

#[cold]
#[inline(never)]
fn note_cold(internal: &mut Option<String>, what: String) {
    if internal.is_none() {
        *internal = Some(what);
    }
}

impl Ftl {
    /// Build the FTL of a fresh device: every block erased and free, but for the factory
    /// bad blocks (`device.bad_block_ratio`).
    pub fn new(cfg: &Config, d: &Derived) -> Result<Ftl> {
        let g = d.geometry;
        let mut blocks = BlockTable::new(g.blocks, cfg.device.cell_mode);
        let regions: Vec<Region> = d
            .regions
            .iter()
            .map(|r| Region::new(&g, r, &cfg.ftl.wear_leveling, cfg))
            .collect();
        let ps = regions
            .iter()
            .flat_map(|r| (0..g.planes).map(|p| r.plane_state(PlaneId(p), &cfg.ftl.allocation)))
            .collect();
        let cache_region = d
            .regions
            .iter()
            .find(|r| r.content == crate::config::RegionContent::Cache)
            .map(|r| r.id);
        let mapping = Mapping::new(
            &cfg.ftl.mapping,
            &MappingShape {
                logical_units: d.logical_units,
                page_bytes: g.page_bytes,
            },
        );
        let trans_region = d
            .regions
            .iter()
            .find(|r| r.content == crate::config::RegionContent::Translation)
            .map(|r| r.id);
        // Functional mode draws each stripe round's plane order (its own stream per
        // stripe), timed mode keeps the fixed order its dies' timing skews.
        let shuffle = |i: u64| {
            (cfg.mode == crate::config::Mode::Functional).then(|| stream(cfg.seed, tag::STRIPE + i))
        };
        // Die-affine host writes: the stripe's dies in groups (0: one group).
        let (affine, die_of) = (cfg.ftl.die_affine_group_dies, |p: u32| g.die_of_plane(p));
        let placer = host::Placer {
            policy: Placement::build(
                &cfg.ftl.placement,
                &PlacementShape {
                    data_region: d.data_region,
                    cache_region,
                    journal_region: d
                        .regions
                        .iter()
                        .find(|r| r.content == crate::config::RegionContent::Journal)
                        .map(|r| r.id),
                    logical_units: d.logical_units,
                    unit_bytes: g.unit_bytes,
                    placement_handles: cfg.device.fdp.as_ref().map(fdp::placement_handles),
                },
            ),
            stripe: host::Stripe::new(d.stripe_planes.clone(), affine, die_of, shuffle(0)),
            region_stripes: d
                .regions
                .iter()
                .map(|r| {
                    // A region on some planes only visits them on a cursor of its own.
                    (r.own_stripe || !r.planes.is_empty()).then(|| {
                        let order: Vec<u32> = (d.stripe_planes.iter().copied())
                            .filter(|&p| r.on_plane(p))
                            .collect();
                        let s = shuffle(1 + r.id as u64);
                        host::Stripe::new(order, affine, die_of, s)
                    })
                })
                .collect(),
            journal_truth: None,
            plain: false,
            single: false,
            direct: None,
            cache_rule: cache_region.and_then(|c| {
                let size = cfg.ftl.placement.params().cache_size()?;
                let r = &d.regions[c as usize];
                Some(host::CacheRule {
                    region: c,
                    size,
                    density: (d.regions[d.data_region as usize].cell_mode.bits()
                        / r.cell_mode.bits())
                    .max(1) as u64,
                    planes: g.planes as u64,
                    block_bytes: r.units_per_block as u64 * g.unit_bytes as u64,
                })
            }),
        };
        let media = Media {
            geo: g,
            timing: cfg.device.timing_model(),
            table: MappingTable::new(d.logical_units),
            blocks: BlockTable::new(0, cfg.device.cell_mode),
            oob: Oob::new(g.slots, cfg.integrity),
            regions,
            ps,
            data_region: d.data_region,
            logical_units: d.logical_units,
            program_seq: 0,
        };
        let check_every_ops = if cfg!(debug_assertions) {
            (4 * g.slots).max(4096)
        } else {
            0
        };
        let mut ftl = Ftl {
            media,
            trans: Translation::new(trans_region, mapping.entries_per_tpage(), d.logical_units),
            mapping,
            placer,
            pressure: Pressure::new(g.dies),
            jobs: Jobs::new(cfg.ftl.gc_window_pages),
            reliab: reliability::Reliability::new(cfg, g.blocks, g.page_bytes),
            health: Health::new(cfg),
            retry: retry::ReadRetry::new(cfg, g.blocks, g.unit_bytes, g.page_bytes),
            lanes: match &cfg.device.fdp {
                Some(f) => Lanes::Fdp(Box::new(fdp::Fdp::new(f))),
                None => Lanes::Plain,
            },
            durable: Durable::default(),
            integrity: cfg
                .integrity
                .then(|| Integrity::new(d.logical_units, g.unit_bytes)),
            counters: FtlCounters::default(),
            rng: stream(cfg.seed, tag::FTL),
            protected_buffer: cfg.ftl.power_loss_protection && cfg.device.zns.is_none(),
            bulk: false,
            checks: CheckClock {
                every_ops: check_every_ops,
                until_next: check_every_ops,
            },
            internal: None,
            #[cfg(test)]
            staged_read_hook: None,
        };
        if cfg.ftl.hold_overwritten_until_durable {
            ftl.hold_overwritten_until_durable();
        }
        ftl.bulk = ftl.per_unit_features().iter().all(|&(_, on)| !on);
        let partial = ftl
            .media
            .regions
            .iter()
            .any(|r| r.partial_programs_per_page > 1);
        ftl.placer.set_single(partial);
        ftl.placer.set_direct(d.data_region);
        for r in &ftl.media.regions {
            for plane in 0..g.planes {
                for b in r.plane_blocks(plane) {
                    blocks.region[b as usize] = r.id();
                    blocks.rp[b as usize] = r.id() as u32 * g.planes + plane;
                    blocks.cell_mode[b as usize] = r.geo.cell_mode;
                }
            }
        }
        ftl.media.blocks = blocks;
        let bad = ftl.health.draw_factory_bad_blocks(g.blocks);
        for b in 0..g.blocks {
            let ps = &mut ftl.media.ps[ftl.media.blocks.rp[b as usize] as usize];
            if bad.contains(&b) {
                note(
                    &mut ftl.internal,
                    ftl.media
                        .blocks
                        .set_state(BlockId(b), BlockState::Free, BlockState::Bad),
                );
                ps.usable_blocks -= 1;
            } else {
                ftl.media.blocks.state[b as usize] = BlockState::Free;
                ps.free.push(BlockId(b), 0);
            }
        }
        if let Some(z) = &cfg.device.zns {
            let data = &d.regions[d.data_region as usize];
            ftl.lanes = Lanes::Zoned(Box::new(zones::Zones::new(
                z,
                &g,
                data.blocks_per_plane,
                g.unit_bytes as u64,
            )));
            // Factory-bad blocks beyond the spares take zones offline from the start.
            if let Some(mut zv) = ftl.zoned() {
                for plane in 0..g.planes {
                    zv.block_retired(plane);
                }
            }
        }
        ftl.media
            .update_capacity()
            .map_err(|why| SimError::config("device.bad_block_ratio", why))?;
        Ok(ftl)
    }

    /// The media: blocks, OOB, mapping table, regions and plane states (read-only).
    #[inline]
    pub fn media(&self) -> &Media {
        &self.media
    }

    /// Fault in the mapping table and the OOB arrays now ([`crate::prefetch::populate`]):
    /// preconditioning's fill is about to write every mapping entry and most OOB words,
    /// which an empty device's zeroed tables otherwise fault in page by page.
    pub fn populate_tables(&mut self) {
        crate::prefetch::populate(self.media.table.slots_mut());
        self.media.oob.populate();
    }

    /// The device geometry.
    #[inline]
    pub fn geometry(&self) -> &Geometry {
        &self.media.geo
    }

    /// The NAND timing model.
    #[inline]
    pub fn timing(&self) -> &TimingModel {
        &self.media.timing
    }

    /// Host pages take the stripe's fixed order (timed mode's) in any mode: for tests
    /// that compare the two modes operation for operation. Call before any write.
    pub fn fixed_stripe_order(&mut self) {
        self.placer.fix_order();
    }

    /// Logical capacity in mapping units.
    #[inline]
    pub fn logical_units(&self) -> u32 {
        self.media.logical_units
    }

    /// Erase count of every block, by block id.
    pub fn erase_counts(&self) -> &[u32] {
        self.media.erase_counts()
    }

    /// The event counters so far (monotone; the per-region figures are filled in by
    /// [`Ftl::counters_now`]).
    #[inline]
    pub fn counters(&self) -> &FtlCounters {
        &self.counters
    }

    /// NAND operations issued so far, by kind and cause.
    #[inline]
    pub fn nand_counts(&self) -> &NandCounts {
        &self.counters.nand
    }

    /// The integrity checker (integrity mode).
    #[inline]
    pub fn integrity(&self) -> Option<&Integrity> {
        self.integrity.as_ref()
    }

    /// Whether loops that know their next units prefetch (the mapping table outgrows the
    /// caches).
    #[inline]
    pub fn prefetches(&self) -> bool {
        prefetch_pays(self.media.logical_units)
    }

    /// Features that do work per unit on the host-program and copy paths. The functional
    /// mode's bulk fast paths (`place_host_page_plain`, `copy_run_plain`) do none of it, so
    /// they run only when every feature here is off: a new per-unit feature adds its line
    /// here and is then never skipped.
    fn per_unit_features(&self) -> [(&'static str, bool); 4] {
        [
            ("integrity versions", self.integrity.is_some()),
            ("demand-based mapping", self.trans.active()),
            ("injected program failures", self.health.programs_may_fail()),
            (
                "partial-page programs",
                self.media
                    .regions
                    .iter()
                    .any(|r| r.partial_programs_per_page > 1),
            ),
        ]
    }

    /// A host write request of `units` units at `lpn` arrived (before buffering): the
    /// placement policy learns from it (the journal detector). With ground truth — the
    /// request's own label, else the workload's journal range — the decision is counted.
    pub fn observe_host_write(&mut self, lpn: u32, units: u32, label: Option<bool>) {
        let said = self.placer.policy.observe_write(Lpn(lpn), units);
        let truth = label.or_else(|| {
            self.placer
                .journal_truth
                .map(|(lo, hi)| lpn >= lo && lpn < hi)
        });
        if let Some(truth) = truth {
            let c = &mut self.counters.journal;
            match (said, truth) {
                (true, true) => c.true_positive += 1,
                (true, false) => c.false_positive += 1,
                (false, true) => c.false_negative += 1,
                (false, false) => c.true_negative += 1,
            }
        }
    }

    /// Tell the FTL the workload's journal range (units), to count detector decisions and
    /// migrated journal units against it.
    pub fn set_journal_truth(&mut self, range: Option<(u32, u32)>) {
        self.placer.journal_truth = range;
    }

    /// The counters, with the per-region figures added up from the planes.
    pub fn counters_now(&self) -> FtlCounters {
        let mut c = self.counters;
        for ps in &self.media.ps {
            c.host_units_by_region[ps.region as usize] += ps.host_units;
            c.relocated_units_by_region[ps.region as usize] += ps.relocated_units;
        }
        c
    }

    /// Whether the placement policy packs journal units apart (`slc-journal`).
    pub fn packs_journal_apart(&self) -> bool {
        self.placer.policy.packs_journal_apart()
    }

    /// Whether `lpn` is placed as journal: buffers pack journal and other units apart.
    #[inline]
    pub fn packs_apart(&self, lpn: u32) -> bool {
        self.placer.policy.is_journal(Lpn(lpn))
    }

    /// The packing class of `lpn`: a page holds units of one class (journal or not with
    /// `slc-journal`; a zoned device's zone).
    #[inline]
    pub fn page_class(&self, lpn: u32) -> u32 {
        match self.lanes.zones() {
            Some(z) => z.zone_of(lpn),
            None => self.packs_apart(lpn) as u32,
        }
    }

    /// The journal range the placement policy has learned, if any.
    pub fn learned_journal(&self) -> Option<(u32, u32)> {
        self.placer.policy.journal_range()
    }

    /// Whether the mapping lives in translation pages on flash.
    pub fn mapping_is_demand(&self) -> bool {
        self.trans.active()
    }

    /// DRAM the mapping keeps.
    pub fn mapping_dram_bytes(&self) -> u64 {
        self.mapping.dram_bytes()
    }

    /// Count `op`, fill in its block's cell mode and erase loops, hand it to `sink`, and
    /// complete it at once when the sink is immediate.
    #[inline(always)]
    fn issue<S: NandSink>(&mut self, sink: &mut S, op: NandOp) -> Result<()> {
        self.counters.nand.ops[op.kind as usize][op.cause as usize] += 1;
        self.issue_uncounted(sink, op)
    }

    /// [`Ftl::issue`] for an operation already counted.
    #[inline(always)]
    fn issue_uncounted<S: NandSink>(&mut self, sink: &mut S, mut op: NandOp) -> Result<()> {
        // The block's cell mode and erase loops, from its state as the op is issued.
        let cell = self.media.blocks.cell_state(op.block);
        self.media.timing.stamp(&mut op, cell);
        if op.kind == OpKind::Read {
            if self.retry.on {
                self.retry.read(
                    &mut op,
                    &self.media.blocks,
                    sink.now_ns(),
                    &mut self.counters.reliability,
                );
            }
            self.media.blocks.count_reads(op.block, 1);
            self.check_read_limit(op.block, sink.now_ns());
            if !S::IMMEDIATE {
                self.media.pin(&mut self.internal, op.block);
            }
        }
        sink.issue(op);
        self.checks.count_op();
        if S::IMMEDIATE {
            self.completed(&op, sink)?;
        }
        Ok(())
    }

    /// Immediate sinks: count and hand over `times` reads or programs like `op` whose
    /// completions the caller applies (the bulk form of [`Ftl::issue`] for copy runs).
    #[inline(always)]
    fn issue_times<S: NandSink>(&mut self, sink: &mut S, mut op: NandOp, times: u64) {
        debug_assert!(S::IMMEDIATE && op.kind != OpKind::Erase);
        if times == 0 {
            return;
        }
        self.counters.nand.ops[op.kind as usize][op.cause as usize] += times;
        op.mode = self.media.blocks.cell_mode[op.block.idx()];
        if op.kind == OpKind::Read {
            if self.retry.on {
                return self.issue_reads_retrying(sink, op, times);
            }
            let t = u32::try_from(times).unwrap_or(u32::MAX);
            self.media.blocks.count_reads(op.block, t);
            self.check_read_limit(op.block, sink.now_ns());
        }
        sink.issue_times(op, times);
        self.checks.count_ops(times);
    }

    /// [`Ftl::issue_times`] of reads with the retry model on: all at once when none of
    /// them can retry, else each decided (and timed) on its own.
    #[cold]
    #[inline(never)]
    fn issue_reads_retrying<S: NandSink>(&mut self, sink: &mut S, op: NandOp, times: u64) {
        let quiet = self.retry.reads_quiet(
            &op,
            &self.media.blocks,
            sink.now_ns(),
            times,
            &mut self.counters.reliability,
        );
        if !quiet {
            return self.issue_reads_each(sink, op, times);
        }
        let t = u32::try_from(times).unwrap_or(u32::MAX);
        self.media.blocks.count_reads(op.block, t);
        self.check_read_limit(op.block, sink.now_ns());
        sink.issue_times(op, times);
        self.checks.count_ops(times);
    }

    /// [`Ftl::issue_times`] of reads that may retry: each decided (and timed) on its own.
    fn issue_reads_each<S: NandSink>(&mut self, sink: &mut S, op: NandOp, times: u64) {
        for _ in 0..times {
            let mut one = op;
            self.retry.read(
                &mut one,
                &self.media.blocks,
                sink.now_ns(),
                &mut self.counters.reliability,
            );
            self.media.blocks.count_reads(op.block, 1);
            sink.issue(one);
        }
        self.check_read_limit(op.block, sink.now_ns());
        self.checks.count_ops(times);
    }

    /// Read reclaim: `block`'s reads since its erase reached the policy's limit.
    #[inline(always)]
    fn check_read_limit(&mut self, block: BlockId, now_ns: u64) {
        if self.media.blocks.reads_since_erase[block.idx()] >= self.reliab.read_limit {
            self.read_limit_reached(block, now_ns);
        }
    }

    /// Debug builds: run the full invariant checker when `check_every_ops` operations have
    /// been issued since the last check. Called where the state is consistent: at the end
    /// of the FTL's public calls.
    /// Every build: a broken control-plane rule recorded since becomes the call's error.
    #[inline]
    fn check_due(&mut self) -> Result<()> {
        if self.internal.is_some() {
            return self.check_internal();
        }
        if !cfg!(debug_assertions) || self.checks.every_ops == 0 || self.checks.until_next > 0 {
            return Ok(());
        }
        self.checks.until_next = self.checks.every_ops;
        self.check_invariants()
            .map_err(|e| SimError::Integrity(format!("FTL invariant broken: {e}")))
    }

    /// The first broken control-plane rule recorded so far, as [`SimError::Internal`]
    /// (drivers call it at the end of a run; the FTL's public calls return it too).
    pub fn check_internal(&self) -> Result<()> {
        match &self.internal {
            None => Ok(()),
            Some(what) => Err(SimError::Internal { what: what.clone() }),
        }
    }

    /// Record a broken control-plane rule (the first one is kept).
    fn internal_error(&mut self, what: String) {
        note(&mut self.internal, Err(what));
    }

    /// Test hook: the next host write gets integrity version `v` (a device that has
    /// already written `v - 1` units; integrity mode).
    #[doc(hidden)]
    pub fn set_next_version(&mut self, v: crate::base::Version) {
        if let Some(i) = self.integrity.as_mut() {
            i.set_next_version(v);
        }
    }

    /// Whether results show the reliability section without retries (an aged device).
    pub fn reliability_aged(&self) -> bool {
        self.retry.aged
    }

    /// The erase of `block` had erase-suspension excess RBER `extra` (spec 01): the RBER
    /// model's suspension term for its data until its next erase.
    pub fn set_suspension_excess(&mut self, block: BlockId, extra: f64) {
        self.retry.set_suspension_excess(block, extra);
    }

    /// A new measured phase starts its clock at 0: every block's data counts as
    /// programmed at time 0 ([`BlockTable::restart_program_clock`]).
    pub fn restart_program_clock(&mut self) {
        self.media.blocks.restart_program_clock();
        self.reliab.restart_clock();
    }

    /// Test hook: the block table and the OOB, writable, for tests that break them on
    /// purpose to see the checks catch it.
    #[doc(hidden)]
    pub fn corrupt(&mut self) -> (&mut BlockTable, &mut Oob) {
        (&mut self.media.blocks, &mut self.media.oob)
    }

    /// Test hook: force a block-state change as a bug would (checked like any other).
    #[doc(hidden)]
    pub fn force_block_state(&mut self, block: BlockId, from: BlockState, to: BlockState) {
        self.media
            .set_block_state(&mut self.internal, block, from, to);
    }

    /// Run the full invariant checker every `ops` operations in debug builds and tests
    /// (0 = off; the default is about four passes over the device's slots between checks).
    pub fn set_check_every_ops(&mut self, ops: u64) {
        self.checks.every_ops = ops;
        self.checks.until_next = ops;
    }

    /// The driver reports that `op` completed (timed mode; immediate sinks never call this).
    pub fn on_complete<S: NandSink>(&mut self, op: &NandOp, sink: &mut S) -> Result<()> {
        self.completed(op, sink)?;
        self.run_background(sink)
    }

    /// Apply the completion of `op`.
    #[inline(always)]
    fn completed<S: NandSink>(&mut self, op: &NandOp, sink: &mut S) -> Result<()> {
        match op.kind {
            OpKind::Read => {
                if !S::IMMEDIATE {
                    let b = op.block.idx();
                    self.media.unpin(&mut self.internal, op.block);
                    if self.media.blocks.pins[b] == 0
                        && self.media.blocks.state[b] == BlockState::Victim
                    {
                        self.jobs.wake_block(op.block);
                    }
                }
                Ok(())
            }
            OpKind::Program => {
                if let Owner::TrimRecord { seq } = op.owner {
                    self.record_page_done(seq);
                }
                if let (false, Owner::HostProgram { token }) = (S::IMMEDIATE, op.owner) {
                    if self.durable.held.is_some() {
                        self.durable.release_overwritten(
                            &mut self.media,
                            &mut self.jobs,
                            &mut self.internal,
                            token,
                        );
                    }
                }
                if let (false, Owner::Job { job }) = (S::IMMEDIATE, op.owner) {
                    self.copy_programmed(job, op);
                }
                if op.flags & crate::flash::OP_APPEND != 0 {
                    // The page was counted by the program that opened it.
                    return Ok(());
                }
                if self.durable.trims.is_some()
                    && !self.trans.active()
                    && op.page != self.media.blocks.programmed[op.block.idx()]
                {
                    // A power-on scan takes a block's first `programmed` pages as durable
                    // (crash consistency; translation pages are not recovered and may be
                    // written by a host read's plan ahead of deferred ones).
                    self.internal_error(format!(
                        "page {} of block {} programmed before page {}",
                        op.page,
                        op.block,
                        self.media.blocks.programmed[op.block.idx()]
                    ));
                }
                self.page_programmed(op.block, sink)
            }
            OpKind::Erase => self.erase_done(op, sink),
        }
    }

    /// A program of `block` completed: close the block when it was the last page.
    #[inline(always)]
    fn page_programmed<S: NandSink>(&mut self, block: BlockId, sink: &mut S) -> Result<()> {
        let b = block.idx();
        let before = self.media.blocks.programmed[b];
        self.media
            .blocks
            .note_programmed(block, before, sink.now_ns());
        self.media.blocks.programmed[b] = before + 1;
        let p = self.media.blocks.programmed[b];
        if self.media.blocks.doomed[b] {
            if p == self.media.blocks.next_page[b] {
                self.start_retire(block.0, sink)?;
            }
            return Ok(());
        }
        self.close_if_full(block);
        Ok(())
    }

    /// `pages` programs of `block` (none failing) completed at once (immediate sinks), the
    /// last at `now_ns` (a block's first program stamped with the run's end: the
    /// functional clock's resolution).
    #[inline(always)]
    fn pages_programmed(&mut self, block: BlockId, pages: u32, now_ns: u64) {
        debug_assert!(!self.media.blocks.doomed[block.idx()]);
        let before = self.media.blocks.programmed[block.idx()];
        self.media.blocks.note_programmed(block, before, now_ns);
        self.media.blocks.programmed[block.idx()] = before + pages;
        self.close_if_full(block);
    }

    /// `block` has had its last page programmed: it is full, a GC candidate (a zone's
    /// block, erased if its zone was reset meanwhile).
    #[inline(always)]
    fn close_if_full(&mut self, block: BlockId) {
        let zoned = self.lanes.is_zoned();
        if self.media.close_if_full(&mut self.internal, block, zoned) {
            if zoned {
                if let Some(mut zv) = self.zoned() {
                    zv.block_closed(block);
                }
            }
            // Read while it was being written: asked now that it is full.
            if self.media.blocks.reads_since_erase[block.idx()] >= self.reliab.read_limit {
                self.read_limit_reached(block, 0);
            }
        }
    }

    /// Put `lpn` (with `version`, integrity mode) in `slot`, invalidating its old copy.
    #[inline(always)]
    fn map_unit(&mut self, lpn: u32, slot: SlotId, version: Option<crate::base::Version>) {
        let old = self.media.table.update(Lpn(lpn), slot);
        if !old.is_none() {
            self.media.invalidate(&mut self.jobs, old);
            if let Some(h) = self.durable.held.as_mut() {
                h.page.push(self.media.geo.block_of_slot(old));
            }
        } else if self.durable.trims.is_some() {
            self.record_rewritten(lpn);
        }
        self.media.oob.store(slot.idx(), lpn);
        if let Some(v) = version {
            self.media.oob.version[slot.idx()] = v;
            if let Some(check) = self.integrity.as_mut() {
                check.on_place(lpn, old.0, slot.0, v);
            }
            if let Some(d) = self.durable.data.as_mut() {
                note(&mut self.internal, d.program(lpn, v, slot.0));
            }
        }
    }

    /// Next free page of `plane`'s `stream` frontier in region `r`, opening a block when
    /// needed. Streams that do not free space may not take the region's last
    /// `gc_hard_free_blocks` free blocks of the plane.
    #[inline(always)]
    fn take_page(
        &mut self,
        r: u8,
        plane: PlaneId,
        stream: region::Stream,
    ) -> Option<(BlockId, u32)> {
        self.take_pages(r, plane, stream, 1)
            .map(|(block, page, _)| (block, page))
    }

    /// Up to `max` (≥ 1) consecutive free pages of one block of the frontier, as
    /// [`Ftl::take_page`] takes one: (block, first page, pages).
    #[inline(always)]
    fn take_pages(
        &mut self,
        r: u8,
        plane: PlaneId,
        stream: region::Stream,
        max: u32,
    ) -> Option<(BlockId, u32, u32)> {
        let rp = self.media.rp(r, plane);
        let ps = &mut self.media.ps[rp];
        let mut b = ps.open.get(stream);
        let opened = b.is_none();
        if opened {
            if ps.free.len() <= ps.reserve_for(stream) {
                return None;
            }
            b = ps.free.pop()?;
            ps.open.set(stream, b);
            note(
                &mut self.internal,
                self.media
                    .blocks
                    .set_state(b, BlockState::Free, BlockState::Open),
            );
            self.media.blocks.next_page[b.idx()] = 0;
            self.media.blocks.programmed[b.idx()] = 0;
            self.media.blocks.lane[b.idx()] = stream.lane();
        }
        let page = self.media.blocks.next_page[b.idx()];
        let pages = max.min(ps.pages_per_block - page);
        self.media.blocks.next_page[b.idx()] = page + pages;
        if page + pages == ps.pages_per_block {
            ps.open.set(stream, BlockId::NONE);
        }
        if opened {
            self.refresh_pressure(rp); // one free block fewer
        }
        Some((b, page, pages))
    }

    /// A program on `block` failed: the page holds nothing, the block leaves its stream
    /// and is retired once its valid data has moved.
    fn doom(&mut self, block: BlockId) {
        let b = block.idx();
        self.counters.program_failures += 1;
        self.media.blocks.doomed[b] = true;
        self.media.ps[self.media.blocks.rp[b] as usize]
            .open
            .forget(block);
    }

    /// Crash consistency (`ssdlab serve`, power cuts): a host program's overwritten units
    /// keep their previous versions — their blocks pinned against GC's erase, as a read
    /// pins them — until the program completes, so a cut never loses a unit's last durable
    /// version while its rewrite is in flight. Off by default: without power cuts it only
    /// delays erases.
    pub fn hold_overwritten_until_durable(&mut self) {
        self.durable.held.get_or_insert_with(Default::default);
        if self.integrity.is_some() && self.durable.trims.is_none() {
            self.durable.trims = Some(Box::new(trims::TrimJournal::new(
                self.media.geo.blocks,
                self.media.geo.unit_bytes,
            )));
        }
    }

    /// Whether trims are recorded on flash (the hold with integrity versions: `trims.rs`).
    pub fn durable_trims(&self) -> bool {
        self.durable.trims.is_some()
    }

    /// Whether background work is in progress anywhere (jobs started and not finished,
    /// or translation steps waiting).
    pub fn background_busy(&self) -> bool {
        self.jobs.active() > 0 || self.trans.has_deferred()
    }
}

#[cfg(test)]
mod tests {
    use crate::flash::OpKind;
    use crate::testutil::TINY_TOML;
    use crate::Config;

    /// The bulk fast paths run only when no per-unit feature is on; each feature alone
    /// turns them off.
    #[test]
    fn one_switch_turns_the_bulk_paths_off_for_every_per_unit_feature() {
        let bulk = |edit: &dyn Fn(&mut Config)| {
            let mut c = Config::from_toml_str(TINY_TOML, "tiny").unwrap();
            edit(&mut c);
            let d = c.validate().unwrap();
            super::Ftl::new(&c, &d).unwrap().bulk
        };
        assert!(bulk(&|_| {}));
        assert!(!bulk(&|c| c.integrity = true));
        assert!(!bulk(&|c| c.device.program_fail_rate = 1e-3));
        let demand = |c: &mut Config| {
            let text = TINY_TOML.replace("blocks_per_plane = 8", "blocks_per_plane = 40")
                + "mapping = { policy = \"dftl\", entry_bytes = 1024, cmt_bytes = 4096 }\n"
                + "regions = [{ name = \"data\", content = \"data\" }, "
                + "{ name = \"map\", content = \"translation\", blocks_per_plane = 12 }]\n";
            *c = Config::from_toml_str(&text, "tiny").unwrap();
        };
        assert!(!bulk(&demand));
    }

    /// A deferred sink (the timed mode's kind): operations complete when the test says,
    /// at the time the test sets (`.1`).
    #[derive(Default)]
    struct Queue(std::collections::VecDeque<super::NandOp>, u64);

    impl super::NandSink for Queue {
        const IMMEDIATE: bool = false;
        fn now_ns(&self) -> u64 {
            self.1
        }
        fn issue(&mut self, op: super::NandOp) {
            self.0.push_back(op);
        }
    }

    /// Complete every queued operation (and those their completions issue), oldest first.
    fn drain(ftl: &mut super::Ftl, q: &mut Queue) {
        while let Some(op) = q.0.pop_front() {
            ftl.on_complete(&op, q).unwrap();
        }
    }

    /// Die-affine stripes (`ftl.die_affine_group_dies`) on 2 channels × 2 dies × 2 planes:
    /// stripe order CWDP = planes 0, 4, 2, 6, 1, 5, 3, 7 (dies 0, 2, 1, 3). Host page i
    /// (lpn i) is refused by die `busy` while i is in `during` (its queue is full), every
    /// program completing before the next page. Returns each page's plane.
    fn affine_planes(k: u32, busy: u32, during: std::ops::Range<u32>) -> Vec<Option<u32>> {
        let text = TINY_TOML
            .replace("seed = 7\n", "seed = 7\nmode = \"timed\"\n")
            .replace("channels = 1", "channels = 2")
            .replace("dies_per_chip = 1", "dies_per_chip = 2")
            + &format!("die_affine_group_dies = {k}\n");
        let c = Config::from_toml_str(&text, "tiny").unwrap();
        let d = c.validate().unwrap();
        let mut ftl = super::Ftl::new(&c, &d).unwrap();
        let mut q = Queue::default();
        let out = (0..8u32)
            .map(|i| {
                let refused = |p: u32| during.contains(&i) && p / 2 == busy;
                let placed = ftl.write_host_page(0, &[i], &[], i, &mut q, |p| !refused(p));
                drain(&mut ftl, &mut q);
                placed.unwrap()
            })
            .collect();
        ftl.check_invariants().unwrap();
        out
    }

    /// The searches chosen at build ([`host::Placer::single`]: one group, no cache rule,
    /// no partial-page programs, with or without [`host::Placer::direct`]'s shortcut;
    /// [`host::Placer::plain`]: die groups, neither of the others) place every page on the plane the general search would, with planes
    /// refusing pages (`accept`; a die group then keeps its page waiting) and GC running,
    /// in both modes (functional: shuffled rounds; timed: the fixed order).
    #[test]
    fn the_searches_chosen_at_build_place_pages_where_the_general_one_does() {
        for (mode, k) in [
            ("functional", 0),
            ("timed", 0),
            ("functional", 1),
            ("timed", 1),
        ] {
            let text = TINY_TOML
                .replace("seed = 7\n", &format!("seed = 7\nmode = \"{mode}\"\n"))
                .replace(
                    "over_provisioning_ratio = 2.0",
                    "over_provisioning_ratio = 0.4",
                )
                .replace("blocks_per_plane = 8", "blocks_per_plane = 32")
                .replace("channels = 1", "channels = 2")
                .replace("dies_per_chip = 1", "dies_per_chip = 2")
                + &format!("die_affine_group_dies = {k}\n");
            let c = Config::from_toml_str(&text, "tiny").unwrap();
            let d = c.validate().unwrap();
            let fast = super::Ftl::new(&c, &d).unwrap();
            assert!(fast.placer.plain, "{mode} {k}");
            assert_eq!(fast.placer.single, k == 0, "{mode} {k}");
            assert_eq!(fast.placer.direct, Some(d.data_region), "{mode} {k}");
            let mut general = fast.clone();
            (general.placer.single, general.placer.plain) = (false, false);
            // The single-group search through the policy's targets (not `direct`'s).
            let mut looped = fast.clone();
            looped.placer.direct = None;
            let units = fast.logical_units();
            let mut planes = Vec::new();
            for mut ftl in [fast, general, looped] {
                let mut q = Queue::default();
                let placed: Vec<_> = (0..3000u32)
                    .map(|i| {
                        let refused = |p: u32| (i * 7 + p).is_multiple_of(5);
                        let lpn = (i.wrapping_mul(2_654_435_761) >> 9) % units;
                        let at = ftl.write_host_page(0, &[lpn], &[], i, &mut q, |p| !refused(p));
                        drain(&mut ftl, &mut q);
                        at.unwrap()
                    })
                    .collect();
                ftl.check_invariants().unwrap();
                assert!(ftl.counters().gc_copied_units > 0, "{mode} {k}: GC ran");
                planes.push(placed);
            }
            assert_eq!(planes[0], planes[1], "{mode} {k}");
            assert_eq!(planes[0], planes[2], "{mode} {k}");
            // Every plane took pages.
            assert!((0..8).all(|p| planes[0].contains(&Some(p))), "{mode} {k}");
        }
    }

    /// Without die affinity a page whose die cannot take it goes to the stripe's next
    /// plane; with a group per die it waits for its die (and the turn stays there); with
    /// groups of two dies the groups take turns, a page going around a busy die only
    /// within its group.
    #[test]
    fn die_affine_stripes_keep_a_page_to_its_die_group() {
        let s = |v: &[u32]| v.iter().map(|&p| Some(p)).collect::<Vec<_>>();
        assert_eq!(affine_planes(0, 2, 1..3), s(&[0, 2, 6, 1, 5, 3, 7, 0]));
        assert_eq!(affine_planes(0, 2, 0..0), s(&[0, 4, 2, 6, 1, 5, 3, 7]));
        assert_eq!(affine_planes(4, 2, 1..3), s(&[0, 2, 6, 1, 5, 3, 7, 0]));
        assert_eq!(affine_planes(1, 2, 0..0), s(&[0, 4, 2, 6, 1, 5, 3, 7]));
        assert_eq!(
            affine_planes(1, 2, 1..3),
            vec![
                Some(0),
                None,
                None,
                Some(4),
                Some(2),
                Some(6),
                Some(1),
                Some(5)
            ]
        );
        assert_eq!(affine_planes(2, 2, 0..0), s(&[0, 2, 4, 6, 1, 3, 5, 7]));
        assert_eq!(affine_planes(2, 2, 2..3), s(&[0, 2, 1, 6, 5, 3, 0, 7]));
    }

    /// Durable trims with a demand-based mapping: a trim that empties a full block of a
    /// plane waiting for a victim pins the block before the trim's background work runs,
    /// whose GC takes that block at once. (The pin came after it: the block was already
    /// being erased, an internal error, and the trimmed copy was no longer held until its
    /// record was durable.)
    #[test]
    fn a_trim_pins_the_block_it_empties_before_gc_can_erase_it() {
        use crate::flash::{BlockState, Owner};
        let text = TINY_TOML
            .replace("seed = 7\n", "seed = 7\nintegrity = true\n")
            .replace("blocks_per_plane = 8", "blocks_per_plane = 40")
            .replace("gc_soft_free_blocks = 2", "gc_soft_free_blocks = 24")
            + "mapping = { policy = \"dftl\", entry_bytes = 1024, cmt_bytes = 4096 }\n"
            + "regions = [{ name = \"data\", content = \"data\" }, "
            + "{ name = \"map\", content = \"translation\", blocks_per_plane = 12, "
            + "gc_soft_free_blocks = 2, gc_hard_free_blocks = 1 }]\n";
        let c = Config::from_toml_str(&text, "tiny").unwrap();
        let d = c.validate().unwrap();
        let mut ftl = super::Ftl::new(&c, &d).unwrap();
        ftl.hold_overwritten_until_durable();
        assert!(ftl.durable_trims() && ftl.mapping_is_demand());
        let mut q = Queue::default();
        // Plane 0 of the data region: four blocks of four valid units (no GC victim: a
        // victim has at most 3), then a block whose units 16 overwrites but the last.
        for (token, lpn) in (0u32..).zip((0..16).chain([16; 4])) {
            let v = ftl.new_version(lpn);
            let placed = ftl.write_host_page(0, &[lpn], &[v], token, &mut q, |p| p == 0);
            assert_eq!(placed.unwrap(), Some(0));
            drain(&mut ftl, &mut q);
        }
        let block = ftl
            .media
            .geo
            .block_of_slot(ftl.media.table.lookup(crate::ids::Lpn(16)));
        let b = block.idx();
        assert_eq!(ftl.media.blocks.state[b], BlockState::Full);
        assert_eq!(ftl.media.blocks.valid_units[b], 1);
        let rp = ftl.media.rp(ftl.media.data_region, crate::ids::PlaneId(0));
        assert!(ftl.media.ps[rp].starved && ftl.media.ps[rp].gc_job.is_none());
        let erases = ftl.counters.nand.total(OpKind::Erase);

        ftl.trim(16, &mut q).unwrap();
        ftl.check_internal().unwrap();
        // GC took the emptied block; the trim's record (written into the job's
        // destination) holds it until its program completes.
        assert_eq!(ftl.media.blocks.state[b], BlockState::Victim);
        assert_eq!(ftl.media.blocks.pins[b], 1);
        assert!(q
            .0
            .iter()
            .any(|op| matches!(op.owner, Owner::TrimRecord { .. })));
        assert!(!q.0.iter().any(|op| op.kind == OpKind::Erase));
        drain(&mut ftl, &mut q);
        ftl.check_internal().unwrap();
        assert_eq!(ftl.counters.nand.total(OpKind::Erase), erases + 1);
        assert_eq!(ftl.media.blocks.state[b], BlockState::Free);
        ftl.check_invariants().unwrap();
    }

    /// An immediate sink (the functional mode's kind) whose clock advances 10 ns per
    /// operation.
    struct Tick(u64);

    impl super::NandSink for Tick {
        const IMMEDIATE: bool = true;
        fn now_ns(&self) -> u64 {
            self.0
        }
        fn issue(&mut self, _op: super::NandOp) {
            self.0 += 10;
        }
        fn issue_times(&mut self, _op: super::NandOp, times: u64) {
            self.0 += 10 * times;
        }
    }

    /// Block `b` holds the state of an erased block: no reads, no first program.
    fn erased_state(ftl: &super::Ftl, b: usize) -> bool {
        let bt = &ftl.media.blocks;
        bt.reads_since_erase[b] == 0 && bt.first_program_ns[b] == super::BlockTable::NOT_PROGRAMMED
    }

    /// Per-block read disturb and data age: a block's first program stamps it with the
    /// sink's time (functional: the serial clock after the program; timed: the
    /// completion's event time), later programs do not; each page read of it counts
    /// (host reads here, GC's copy reads below); its erase clears both.
    #[test]
    fn blocks_count_reads_since_erase_and_stamp_their_first_program() {
        use crate::ids::Lpn;
        // Functional kind: four one-unit pages into plane 0's first block, 10 ns each.
        let mut ftl = crate::testutil::tiny_ftl();
        let mut t = Tick(0);
        for lpn in 0..4u32 {
            let placed = ftl.write_host_page(0, &[lpn], &[], 0, &mut t, |p| p == 0);
            assert_eq!(placed.unwrap(), Some(0));
        }
        let b = ftl
            .media
            .geo
            .block_of_slot(ftl.media.table.lookup(Lpn(0)))
            .idx();
        assert_eq!(ftl.media.blocks.first_program_ns[b], 10);
        assert_eq!(ftl.media.blocks.reads_since_erase[b], 0);
        ftl.read_units(0..3, |_| None, 0, &mut t).unwrap();
        ftl.read_units(1..2, |_| None, 1, &mut t).unwrap();
        assert_eq!(ftl.media.blocks.reads_since_erase[b], 4);
        assert_eq!(
            ftl.media
                .blocks
                .data_age_ns(crate::ids::BlockId(b as u32), 1000),
            990
        );
        let free = (0..ftl.media.blocks.len()).filter(|&x| x != b);
        assert!(free.clone().all(|x| erased_state(&ftl, x)));

        // Timed kind: the first program completes at 500, the others at 700.
        let text = TINY_TOML.replace("seed = 7\n", "seed = 7\nmode = \"timed\"\n");
        let c = Config::from_toml_str(&text, "tiny").unwrap();
        let mut ftl = super::Ftl::new(&c, &c.validate().unwrap()).unwrap();
        let mut q = Queue::default();
        for lpn in 0..4u32 {
            ftl.write_host_page(0, &[lpn], &[], lpn, &mut q, |p| p == 0)
                .unwrap();
            q.1 = if lpn == 0 { 500 } else { 700 };
            drain(&mut ftl, &mut q);
        }
        let b = ftl
            .media
            .geo
            .block_of_slot(ftl.media.table.lookup(Lpn(0)))
            .idx();
        assert_eq!(ftl.media.blocks.first_program_ns[b], 500);
        ftl.read_units(0..4, |_| None, 0, &mut q).unwrap();
        assert_eq!(ftl.media.blocks.reads_since_erase[b], 4);
        drain(&mut ftl, &mut q);
        assert_eq!(ftl.media.blocks.reads_since_erase[b], 4, "counted at issue");
        // Overwrite the four units until GC has erased blocks (empty victims: erased
        // without copies), some of them programmed again at 900.
        q.1 = 900;
        let mut token = 4;
        while ftl.counters.nand.total(OpKind::Erase) < 3 {
            for lpn in 0..4u32 {
                ftl.write_host_page(0, &[lpn], &[], token, &mut q, |p| p == 0)
                    .unwrap();
                token += 1;
                drain(&mut ftl, &mut q);
            }
            // Every block holding data is read before GC may erase it.
            ftl.read_units(0..4, |_| None, 0, &mut q).unwrap();
            drain(&mut ftl, &mut q);
            assert!(token < 200, "GC never ran");
        }
        ftl.check_invariants().unwrap();
        let bt = &ftl.media.blocks;
        let (mut free, mut reused) = (0, 0);
        for x in 0..bt.len() {
            match bt.state[x] {
                crate::flash::BlockState::Free => {
                    assert!(erased_state(&ftl, x), "block {x}");
                    free += (bt.erase_count[x] > 0) as u32;
                }
                _ if bt.erase_count[x] > 0 => {
                    assert_eq!(bt.first_program_ns[x], 900);
                    reused += 1;
                }
                _ => {}
            }
        }
        assert!(
            free > 0 && reused > 0,
            "{free} erased and free, {reused} reused"
        );
        // Block b holds stale data only (read 4 times, then once more per round while
        // it held a current unit); never erased.
        assert_eq!(bt.erase_count[b], 0);
        assert!(bt.reads_since_erase[b] >= 4);
    }
}
