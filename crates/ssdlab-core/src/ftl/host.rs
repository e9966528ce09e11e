//! The FTL's host-facing operations: placing host pages, host reads, trims.

use super::region::{PartialPage, Stream};
use super::translation::Origin;
use super::{Ftl, NandSink, ReadOutcome};
use crate::base::Version;
use crate::error::{Result, SimError};
use crate::flash::{BlockState, Cause, NandOp, OpKind, Owner, NONE, OP_APPEND, OP_FAILS};
use crate::ids::{BlockId, Lpn, PlaneId, SlotId};
use crate::integrity::Found;
use crate::policy::placement::slc_buffer::CacheSize;
use crate::policy::placement::Placement;
use rand::Rng;
use ssdlab_workload::rng::SimRng;

/// Host pages' stripe order: plane ids in the order host pages visit them, in die groups
/// (`ftl.die_affine_group_dies`; one group of every plane when off), and the next.
/// Its state is this module's.
///
/// Consecutive host pages take the groups in turn; within its group a page takes the next
/// plane in stripe order that can take it. With one group (the default) that is any plane
/// of the stripe, so a die held by an erase is written around; with die groups a page
/// whose group has a plane that cannot take it now (its die's queue of host programs is
/// full) waits for it (die-affine writes). A group none of whose planes has room outside
/// its GC reserve is passed over (a die's space comes back at its own GC's pace, and a
/// plane without a victim would never take the page), and in a first pass so is one whose
/// planes all hold more than their share of valid data (planes of unequal usable blocks
/// keep data by their share, as without die groups).
///
/// With `shuffle` (functional mode) a group's order is drawn afresh, a seeded random
/// permutation, each time its cursor has gone round it: a fixed order would alias with
/// periodic writers (four writers in strict rotation on four or eight planes would each
/// land on planes of their own every time, data separated as no timed run, whose planes
/// are taken as their dies come free, separates it). Every plane still takes one page
/// a round, and a search for a plane (one pass) never reshuffles, so it sees each once.
/// The groups' turn is never shuffled: a timed run's die-affine pages take it strictly.
#[derive(Clone)]
pub(super) struct Stripe {
    /// Plane ids group by group, each group's in stripe order.
    order: Vec<u32>,
    /// Per group: its planes in `order` and its next one.
    cursors: Vec<Cursor>,
    /// The group the next host page goes to.
    turn: u32,
    shuffle: Option<SimRng>,
}

/// A die group of a [`Stripe`]: its planes are `order[lo..hi]`, the next `order[next]`.
#[derive(Clone, Copy)]
struct Cursor {
    next: u32,
    lo: u32,
    hi: u32,
    /// The cursor went round since the last draw.
    wrapped: bool,
}

/// Where host pages go: the placement policy (which regions), the stripe cursors (which
/// plane), and the workload's journal range the policy's decisions are counted against.
#[derive(Clone)]
pub(super) struct Placer {
    pub(super) policy: Placement,
    /// Plane ids in stripe order, and the next host page's.
    pub(super) stripe: Stripe,
    /// The cursors of regions with `own_stripe`, by region id (`None`: the shared one).
    pub(super) region_stripes: Vec<Option<Stripe>>,
    /// The workload's journal range (units), for counting only (never for decisions).
    pub(super) journal_truth: Option<(u32, u32)>,
    /// `slc-buffer`'s TurboWrite sizes on the cache region, if set.
    pub(super) cache_rule: Option<CacheRule>,
    /// No cache rule and no region with partial-page programs: host pages take
    /// [`Ftl::place_on_groups`], the search without the cache's size or a partial page
    /// (set once at build, [`Placer::set_single`]).
    pub(super) plain: bool,
    /// `plain`, and every stripe one die group: host pages take
    /// [`Ftl::place_on_single_stripe`], the search without the groups' turn either.
    pub(super) single: bool,
    /// The policy is `direct` (every host page of lane 0 to this region's host stream):
    /// with `single`, lane 0's pages skip the policy's dispatch and the targets' loop
    /// ([`Ftl::place_on_single_target`]). Set once at build.
    pub(super) direct: Option<u8>,
}

/// A cache region whose size follows the drive's free space (`slc-buffer`'s
/// `static_cache_bytes` + `dynamic_cache_bytes`, docs/calibration.md): a plane of the
/// region takes host pages while it holds fewer blocks than its share of the size.
#[derive(Clone, Copy, Debug)]
pub(super) struct CacheRule {
    pub(super) region: u8,
    pub(super) size: CacheSize,
    /// The data region's bits per cell over the cache's (3: SLC on TLC).
    pub(super) density: u64,
    pub(super) planes: u64,
    /// Host bytes a block of the cache region holds.
    pub(super) block_bytes: u64,
}

impl Placer {
    /// Every stripe keeps its fixed order ([`Ftl::fixed_stripe_order`]).
    pub(super) fn fix_order(&mut self) {
        let own = self.region_stripes.iter_mut().flatten();
        for s in std::iter::once(&mut self.stripe).chain(own) {
            s.shuffle = None;
            for c in &mut s.cursors {
                c.wrapped = false;
            }
        }
    }

    /// Whether host pages may take the plain or single-group search ([`Placer::plain`],
    /// [`Placer::single`]) on a device whose regions allow `partial` (partial-page programs
    /// in some region).
    pub(super) fn set_single(&mut self, partial: bool) {
        let own = self.region_stripes.iter().flatten();
        let one_group = std::iter::once(&self.stripe)
            .chain(own)
            .all(|s| s.groups() == 1);
        self.plain = self.cache_rule.is_none() && !partial;
        self.single = self.plain && one_group;
    }

    /// Host pages of lane 0 go to `data_region`'s host stream whatever they hold (the
    /// `direct` policy; [`Placer::direct`]).
    pub(super) fn set_direct(&mut self, data_region: u8) {
        self.direct = matches!(self.policy, Placement::Direct(_)).then_some(data_region);
    }

    /// The stripe region `r`'s host pages take.
    #[inline(always)]
    fn stripe_mut(&mut self, r: u8) -> &mut Stripe {
        match &mut self.region_stripes[r as usize] {
            Some(own) => own,
            None => &mut self.stripe,
        }
    }
}

impl Stripe {
    /// The stripe over `order`; `group_dies`: dies per group (0: one group), the dies
    /// (`die_of` a plane) taken in the order `order` first names them; `shuffle`: its
    /// rounds' orders drawn from this stream.
    pub(super) fn new(
        order: Vec<u32>,
        group_dies: u32,
        die_of: impl Fn(u32) -> u32,
        shuffle: Option<SimRng>,
    ) -> Stripe {
        // Each die's group, by die id (dies in the order `order` first names them).
        let top = order
            .iter()
            .map(|&p| die_of(p) as usize + 1)
            .max()
            .unwrap_or(0);
        let (mut group, mut dies) = (vec![u32::MAX; top], 0u32);
        let k = group_dies.max(1);
        for &p in &order {
            let d = &mut group[die_of(p) as usize];
            if *d == u32::MAX {
                *d = dies / k;
                dies += 1;
            }
        }
        let groups = if group_dies == 0 {
            1
        } else {
            dies.div_ceil(k).max(1)
        };
        let group_of = |p: u32| {
            if group_dies == 0 {
                0
            } else {
                group[die_of(p) as usize]
            }
        };
        let (mut grouped, mut bounds) = (Vec::with_capacity(order.len()), vec![0u32]);
        let mut by_group: Vec<Vec<u32>> = vec![Vec::new(); groups as usize];
        for &p in &order {
            by_group[group_of(p) as usize].push(p);
        }
        for planes in by_group {
            grouped.extend(planes);
            bounds.push(grouped.len() as u32);
        }
        let wrapped = shuffle.is_some();
        Stripe {
            cursors: bounds
                .windows(2)
                .map(|b| Cursor {
                    next: b[0],
                    lo: b[0],
                    hi: b[1],
                    wrapped,
                })
                .collect(),
            order: grouped,
            turn: 0,
            shuffle,
        }
    }

    /// The number of die groups.
    #[inline(always)]
    fn groups(&self) -> u32 {
        self.cursors.len() as u32
    }

    /// Planes of group `g`.
    #[inline(always)]
    fn group_len(&self, g: u32) -> u32 {
        let c = &self.cursors[g as usize];
        c.hi - c.lo
    }

    /// The next host page goes to the next group.
    #[inline(always)]
    fn pass_turn(&mut self) {
        self.turn += 1;
        if self.turn == self.groups() {
            self.turn = 0;
        }
    }

    /// Before a search in group `g` for a host page's plane: with `shuffle`, a new
    /// round's order when its cursor has gone round (Fisher–Yates, in place).
    #[inline(always)]
    fn begin(&mut self, g: u32) {
        let c = &mut self.cursors[g as usize];
        if !c.wrapped {
            return;
        }
        c.wrapped = false;
        if self.shuffle.is_some() {
            c.next = c.lo;
            // A group of one plane has one order (and its draw takes no number).
            if c.hi - c.lo > 1 {
                self.reshuffle(g);
            }
        }
    }

    /// [`Stripe::begin`] on a stripe of one group (its planes all of `order`).
    #[inline(always)]
    fn begin_single(&mut self) {
        let c = &mut self.cursors[0];
        if !c.wrapped {
            return;
        }
        c.wrapped = false;
        if self.shuffle.is_some() {
            c.next = 0;
            if self.order.len() > 1 {
                self.reshuffle(0);
            }
        }
    }

    /// [`Stripe::next_plane`] on a stripe of one group.
    #[inline(always)]
    fn next_plane_single(&mut self) -> u32 {
        let c = &mut self.cursors[0];
        let p = self.order[c.next as usize];
        c.next += 1;
        if c.next as usize == self.order.len() {
            c.next = 0;
            c.wrapped = true;
        }
        p
    }

    /// Group `g`'s next round's order ([`Stripe::begin`]).
    #[inline(never)]
    fn reshuffle(&mut self, g: u32) {
        if let Some(rng) = &mut self.shuffle {
            let c = self.cursors[g as usize];
            let part = &mut self.order[c.lo as usize..c.hi as usize];
            for i in (1..part.len()).rev() {
                let j = rng.gen_range(0..=i);
                part.swap(i, j);
            }
        }
    }

    /// Group `g`'s next plane.
    #[inline(always)]
    fn next_plane(&mut self, g: u32) -> u32 {
        let c = &mut self.cursors[g as usize];
        let p = self.order[c.next as usize];
        c.next += 1;
        if c.next == c.hi {
            c.next = c.lo;
            c.wrapped = true;
        }
        p
    }
}

impl Ftl {
    /// Program one host page holding `lpns` (at most a page's worth; fewer = padded) with
    /// their integrity `versions` (empty when off), owned by write-buffer page `token`.
    /// The placement policy names the regions to try; within a region the page goes to
    /// the next plane in stripe order that `accept`s it (the timed mode's per-die limit of
    /// queued host programs) and can open a block outside its GC reserve, preferring
    /// planes within their share of valid data. Returns the plane, or `None` when no plane
    /// can take it now (the caller waits for GC). The page is of write lane `lane` (the
    /// placement policy's, [`Ftl::write_lane`]; 0 without lanes).
    #[inline(always)]
    pub fn write_host_page<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        lane: u8,
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
        accept: A,
    ) -> Result<Option<u32>> {
        debug_assert!(!lpns.is_empty() && lpns.len() <= self.media.geo.slots_per_page as usize);
        self.host_turn(sink);
        // A failed device takes no new host pages (its drivers stop submitting), but a
        // power-loss-protected one still programs what its buffer acknowledged as durable
        // (with its capacitors at a cut: the buffer is durable by its promise), while
        // pages are left outside the GC reserve (GC has stopped).
        if self.worn_out() && !self.protected_buffer {
            return Ok(None);
        }
        if self.lanes.is_zoned() {
            return self.write_zone_page(lpns, versions, token, sink, accept);
        }
        // Lane 0 (every device without lanes) a constant.
        if self.placer.single {
            if let (0, Some(region)) = (lane, self.placer.direct) {
                let t = (region, Stream::HOST);
                return self.place_on_single_target(t, lpns, versions, token, sink, &accept);
            }
            return match lane {
                0 => self.place_on_single_stripe(0, lpns, versions, token, sink, accept),
                l => self.place_on_single_stripe(l, lpns, versions, token, sink, accept),
            };
        }
        if self.placer.plain {
            return self.place_on_groups(lane, lpns, versions, token, sink, accept);
        }
        self.place_on_stripe(lane, lpns, versions, token, sink, accept)
    }

    /// [`Ftl::place_on_stripe`] when [`Placer::plain`] holds (no cache rule turns a plane
    /// away, no page is partly programmed): the die groups from the stripe's turn, in two
    /// passes, as there.
    #[inline(always)]
    fn place_on_groups<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        lane: u8,
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
        accept: A,
    ) -> Result<Option<u32>> {
        let targets = self.placer.policy.host_targets(lane, lpns);
        'target: for t in targets.as_slice() {
            let groups = self.placer.stripe_mut(t.region).groups();
            for pass in 0..2 {
                let mut over_share = false;
                for _ in 0..groups {
                    let stripe = self.placer.stripe_mut(t.region);
                    let g = stripe.turn;
                    if pass == 0 {
                        stripe.begin(g);
                    }
                    let mut busy = false;
                    for _ in 0..stripe.group_len(g) {
                        let plane = PlaneId(self.placer.stripe_mut(t.region).next_plane(g));
                        if !accept(plane.0) {
                            busy = true;
                            continue;
                        }
                        let ps = &self.media.ps[self.media.rp(t.region, plane)];
                        if pass == 0 && ps.valid_units + lpns.len() as u64 > ps.valid_cap_units {
                            over_share = true;
                            continue;
                        }
                        let at = (t.region, plane, t.stream);
                        if self.place_host_page(at, lpns, versions, token, sink)? {
                            self.placer.stripe_mut(t.region).pass_turn();
                            self.after_host_page(t.region, plane);
                            self.run_background(sink)?;
                            return Ok(Some(plane.0));
                        }
                    }
                    if busy && groups > 1 {
                        continue 'target;
                    }
                    self.placer.stripe_mut(t.region).pass_turn();
                }
                if !over_share {
                    break;
                }
            }
        }
        Ok(None)
    }

    /// [`Ftl::place_on_stripe`] when [`Placer::single`] holds: each target's stripe is one
    /// group (its turn never moves, `accept` refusing a plane never keeps the page
    /// waiting), no cache rule turns a plane away and no page is partly programmed, so
    /// the search is the stripe's planes from its cursor, in two passes as there.
    #[inline(always)]
    fn place_on_single_stripe<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        lane: u8,
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
        accept: A,
    ) -> Result<Option<u32>> {
        let targets = self.placer.policy.host_targets(lane, lpns);
        for t in targets.as_slice() {
            let at = (t.region, t.stream);
            if let Some(plane) =
                self.place_on_single_target(at, lpns, versions, token, sink, &accept)?
            {
                return Ok(Some(plane));
            }
        }
        Ok(None)
    }

    /// One target (region, stream) of [`Ftl::place_on_single_stripe`]: its stripe's planes
    /// from the cursor, in two passes (the first skips planes over their share of valid
    /// data). The page's plane, or `None` when no plane of the region can take it.
    #[inline(always)]
    fn place_on_single_target<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        (region, stream): (u8, Stream),
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
        accept: &A,
    ) -> Result<Option<u32>> {
        let stripe = self.placer.stripe_mut(region);
        stripe.begin_single();
        let planes = stripe.order.len();
        for pass in 0..2 {
            let mut over_share = false;
            for _ in 0..planes {
                let plane = PlaneId(self.placer.stripe_mut(region).next_plane_single());
                if !accept(plane.0) {
                    continue;
                }
                let ps = &self.media.ps[self.media.rp(region, plane)];
                if pass == 0 && ps.valid_units + lpns.len() as u64 > ps.valid_cap_units {
                    over_share = true;
                    continue;
                }
                if self.place_host_page((region, plane, stream), lpns, versions, token, sink)? {
                    self.after_host_page(region, plane);
                    self.run_background(sink)?;
                    return Ok(Some(plane.0));
                }
            }
            if !over_share {
                break;
            }
        }
        Ok(None)
    }

    /// [`Ftl::write_host_page`] in write lane `lane`: the (region, stream) targets the
    /// placement policy names, the planes in stripe order (with a cache rule or partial-page
    /// programs; else [`Ftl::place_on_groups`] or [`Ftl::place_on_single_stripe`]).
    #[inline(never)]
    fn place_on_stripe<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        lane: u8,
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
        accept: A,
    ) -> Result<Option<u32>> {
        let targets = self.placer.policy.host_targets(lane, lpns);
        // The cache's size in blocks per plane (`u32::MAX`: unbounded), and whether it
        // turned a plane away.
        let mut bypassed = false;
        'target: for t in targets.as_slice() {
            // Computed when a plane of the cache would open a block (`u32::MAX - 1`: not yet).
            let rule = self.placer.cache_rule.filter(|c| c.region == t.region);
            let mut cap = if rule.is_some() {
                u32::MAX - 1
            } else {
                u32::MAX
            };
            // A partial page (a flush's tail) goes first to a page of its stream left
            // partly programmed that it fits (partial-page programs): the tails of
            // successive commits share a page instead of each padding one.
            if lpns.len() < self.media.geo.slots_per_page as usize
                && self.media.regions[t.region as usize].partial_programs_per_page > 1
            {
                if let Some(plane) =
                    self.partial_page_for(t.region, t.stream, lpns.len() as u32, &accept)
                {
                    let at = (t.region, plane, t.stream);
                    if self.place_host_page(at, lpns, versions, token, sink)? {
                        self.after_host_page(t.region, plane);
                        self.run_background(sink)?;
                        return Ok(Some(plane.0));
                    }
                }
            }
            let groups = self.placer.stripe_mut(t.region).groups();
            // First pass: planes within their share of valid data; second: any with room.
            // A plane the first pass tried (or `accept` refused) fails the second as well
            // (a failed try changes nothing it depends on, and a full pass brings the
            // cursor back), so the second runs only when the first skipped a plane over
            // its share. Each pass visits the die groups from the stripe's turn (one group
            // without die affinity): a group whose planes cannot take the page for want of
            // space (or, in the first pass, share) is passed over; with die groups, one
            // with a plane its die cannot take now (`accept`) keeps the page waiting.
            for pass in 0..2 {
                let mut over_share = false;
                for _ in 0..groups {
                    let stripe = self.placer.stripe_mut(t.region);
                    let g = stripe.turn;
                    if pass == 0 {
                        stripe.begin(g);
                    }
                    let mut busy = false;
                    for _ in 0..stripe.group_len(g) {
                        let plane = PlaneId(self.placer.stripe_mut(t.region).next_plane(g));
                        if !accept(plane.0) {
                            busy = true;
                            continue;
                        }
                        let ps = &self.media.ps[self.media.rp(t.region, plane)];
                        if pass == 0 && ps.valid_units + lpns.len() as u64 > ps.valid_cap_units {
                            over_share = true;
                            continue;
                        }
                        if let Some(c) = rule {
                            // A plane filling its open block goes on (a shrunk size takes
                            // effect at the next block); one opening a block needs its
                            // share of the size not taken.
                            if ps.open.get(t.stream) == BlockId::NONE {
                                let used = ps.usable_blocks - ps.free.len();
                                if cap == u32::MAX - 1 {
                                    cap = self.cache_blocks_per_plane(&c);
                                }
                                if used >= cap {
                                    bypassed = true;
                                    continue;
                                }
                            }
                        }
                        let at = (t.region, plane, t.stream);
                        if self.place_host_page(at, lpns, versions, token, sink)? {
                            if bypassed && rule.is_none() {
                                self.counters.journal.cache_bypassed_pages += 1;
                            }
                            self.placer.stripe_mut(t.region).pass_turn();
                            self.after_host_page(t.region, plane);
                            self.run_background(sink)?;
                            return Ok(Some(plane.0));
                        }
                    }
                    if busy && groups > 1 {
                        continue 'target;
                    }
                    self.placer.stripe_mut(t.region).pass_turn();
                }
                if !over_share {
                    break;
                }
            }
        }
        Ok(None)
    }

    /// The cache region's current size ([`CacheRule`]) in blocks per plane: its static
    /// part plus the dynamic part the unmapped logical space allows.
    #[inline]
    fn cache_blocks_per_plane(&self, c: &CacheRule) -> u32 {
        let free = self.unmapped_bytes(c);
        let blocks = c
            .size
            .blocks_per_plane(free, c.density, c.planes, c.block_bytes);
        blocks.min(u32::MAX as u64 - 1) as u32
    }

    /// Logical bytes not mapped: the logical capacity less the valid units of the data and
    /// cache regions (a mapped unit is one valid slot; summed over the planes, O(planes),
    /// where the mapping table's own count is a scan).
    #[inline]
    fn unmapped_bytes(&self, c: &CacheRule) -> u64 {
        let held: u64 = (0..self.media.geo.planes)
            .map(|p| {
                let p = PlaneId(p);
                self.media.ps[self.media.rp(self.media.data_region, p)].valid_units
                    + self.media.ps[self.media.rp(c.region, p)].valid_units
            })
            .sum();
        (self.media.logical_units as u64).saturating_sub(held) * self.media.geo.unit_bytes as u64
    }

    /// The cache region's current size in bytes, and in blocks per plane (`slc-buffer`'s
    /// TurboWrite sizes; `None` without them).
    pub fn cache_size_now(&self) -> Option<(u64, u32)> {
        let c = self.placer.cache_rule?;
        let free = self.unmapped_bytes(&c);
        Some((
            c.size.bytes(free, c.density),
            self.cache_blocks_per_plane(&c),
        ))
    }

    /// Place the page on `plane` of region `r`; false when the plane has no free page
    /// outside its reserve. A failed program attempt (injected) takes the next page.
    #[inline(always)]
    fn place_host_page<S: NandSink>(
        &mut self,
        (r, plane, stream): (u8, PlaneId, Stream),
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
    ) -> Result<bool> {
        if S::IMMEDIATE && self.bulk {
            debug_assert!(versions.is_empty(), "bulk paths run without integrity");
            return Ok(self.place_host_page_plain((r, plane, stream), lpns, token, sink));
        }
        if self.media.ps[self.media.rp(r, plane)].partial_programs_per_page > 1 {
            return self.place_partial((r, plane, stream), lpns, versions, token, sink);
        }
        let placed =
            self.place_host_page_general((r, plane, stream), lpns, versions, token, sink)?;
        Ok(placed.is_some())
    }

    /// [`Ftl::place_host_page`] in a region whose pages take partial programs
    /// (`partial_programs_per_page` > 1): the units go after those of the plane's partly
    /// programmed page of `stream` when they fit, it has programs left and it is still
    /// the block's last page taken (pages of a block are programmed in order), as a
    /// program of their own; else the partial page is given up (its empty slots padding)
    /// and the units take a new page, which stays open for appends when they do not fill
    /// it (not a block's last page: the block closes when that page's program completes).
    #[inline(never)]
    fn place_partial<S: NandSink>(
        &mut self,
        (r, plane, stream): (u8, PlaneId, Stream),
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
    ) -> Result<bool> {
        let spp = self.media.geo.slots_per_page;
        let n = lpns.len() as u32;
        let rp = self.media.rp(r, plane);
        let ps = &self.media.ps[rp];
        let p = ps.partial;
        if !p.block.is_none() {
            let appendable = p.stream == stream
                && ps.open.get(stream) == p.block
                && self.media.blocks.next_page[p.block.idx()] == p.page + 1
                && p.used + n <= spp
                && p.programs < ps.partial_programs_per_page;
            if appendable {
                if self.durable.trims.is_some() && !self.record_before_rewrite(lpns, sink)? {
                    return Ok(false);
                }
                let first = self.media.page_slot(p.block, p.page) + p.used;
                for (i, &lpn) in lpns.iter().enumerate() {
                    self.map_unit(lpn, first + i as u32, versions.get(i).copied());
                }
                self.media.blocks.valid_units[p.block.idx()] += n;
                let ps = &mut self.media.ps[rp];
                ps.valid_units += n as u64;
                ps.host_units += n as u64;
                ps.partial.used += n;
                ps.partial.programs += 1;
                let done =
                    ps.partial.used == spp || ps.partial.programs == ps.partial_programs_per_page;
                self.counters.host_units_programmed += n as u64;
                self.counters.partial_programs += 1;
                if done {
                    self.give_up_partial(rp);
                }
                let mut op = NandOp::new(
                    OpKind::Program,
                    Cause::Host,
                    p.block,
                    p.page,
                    n,
                    Owner::HostProgram { token },
                );
                op.flags = OP_APPEND;
                self.issue(sink, op)?;
                if self.durable.held.is_some() {
                    self.durable
                        .hold_overwritten::<S>(&mut self.media, &mut self.internal, token);
                }
                if self.trans.active() {
                    self.host_updates(lpns);
                }
                return Ok(true);
            }
            self.give_up_partial(rp);
        }
        let Some(block) =
            self.place_host_page_general((r, plane, stream), lpns, versions, token, sink)?
        else {
            return Ok(false);
        };
        let ps = &mut self.media.ps[rp];
        if n < spp && ps.open.get(stream) == block {
            // Not padded after all: the rest of the page waits for the next units.
            self.counters.padding_units -= (spp - n) as u64;
            ps.partial = PartialPage {
                block,
                page: self.media.blocks.next_page[block.idx()] - 1,
                stream,
                used: n,
                programs: 1,
            };
        }
        Ok(true)
    }

    /// A plane of region `r` whose partly programmed page of `stream` takes `n` more units
    /// (room, programs left, still its block's last page taken) and that `accept`s a page.
    fn partial_page_for<A: Fn(u32) -> bool>(
        &self,
        r: u8,
        stream: Stream,
        n: u32,
        accept: &A,
    ) -> Option<PlaneId> {
        let spp = self.media.geo.slots_per_page;
        (0..self.media.geo.planes).map(PlaneId).find(|&plane| {
            let ps = &self.media.ps[self.media.rp(r, plane)];
            let p = ps.partial;
            !p.block.is_none()
                && p.stream == stream
                && p.used + n <= spp
                && p.programs < ps.partial_programs_per_page
                && ps.open.get(stream) == p.block
                && self.media.blocks.next_page[p.block.idx()] == p.page + 1
                && accept(plane.0)
        })
    }

    /// No partly programmed page takes more units (their empty slots are padding): a
    /// phase of the run starts with none, so its counters hold the appends and padding of
    /// the pages its own programs opened.
    pub fn give_up_partial_pages(&mut self) {
        for rp in 0..self.media.ps.len() {
            self.give_up_partial(rp);
        }
    }

    /// The partly programmed page of (region, plane) `rp` takes no more units: its empty
    /// slots are padding.
    fn give_up_partial(&mut self, rp: usize) {
        let ps = &mut self.media.ps[rp];
        if !ps.partial.block.is_none() {
            self.counters.padding_units += (self.media.geo.slots_per_page - ps.partial.used) as u64;
            ps.partial = PartialPage::default();
        }
    }

    /// [`Ftl::place_host_page`] through the general issue path. Returns the block the
    /// page went to (a block opened for it when the stream had none), or `None` when the
    /// plane had no free page outside its reserve.
    #[inline(never)]
    pub(super) fn place_host_page_general<S: NandSink>(
        &mut self,
        (r, plane, stream): (u8, PlaneId, Stream),
        lpns: &[u32],
        versions: &[Version],
        token: u32,
        sink: &mut S,
    ) -> Result<Option<BlockId>> {
        if self.durable.trims.is_some() && !self.record_before_rewrite(lpns, sink)? {
            return Ok(None);
        }
        let mut failed = false;
        loop {
            let Some((block, page)) = self.take_page(r, plane, stream) else {
                if failed {
                    // A failed attempt took a page (perhaps opening a block) and the page
                    // goes elsewhere: GC hears of it as after any host page.
                    self.after_host_page(r, plane);
                }
                return Ok(None);
            };
            self.media.program_seq += 1;
            let n = lpns.len() as u32;
            if self.health.draw_program_failure() {
                failed = true;
                self.doom(block);
                let mut op = NandOp::new(OpKind::Program, Cause::Host, block, page, n, Owner::None);
                op.flags = OP_FAILS;
                self.issue(sink, op)?;
                continue;
            }
            let op = self.fill_host_page(r, plane, (block, page), lpns, versions, token);
            self.issue(sink, op)?;
            if self.durable.held.is_some() {
                self.durable
                    .hold_overwritten::<S>(&mut self.media, &mut self.internal, token);
            }
            if self.trans.active() {
                self.host_updates(lpns);
            }
            return Ok(Some(block));
        }
    }

    /// `place_host_page` for an immediate sink without integrity versions, demand-based
    /// mapping or injected failures: the same page, counts and completion, without the
    /// general issue path (functional mode's host loop).
    #[inline(always)]
    fn place_host_page_plain<S: NandSink>(
        &mut self,
        (r, plane, stream): (u8, PlaneId, Stream),
        lpns: &[u32],
        token: u32,
        sink: &mut S,
    ) -> bool {
        let Some((block, page, _)) = self.take_pages(r, plane, stream, 1) else {
            return false;
        };
        self.media.program_seq += 1;
        let op = self.fill_host_page(r, plane, (block, page), lpns, &[], token);
        self.issue_times(sink, op, 1);
        self.pages_programmed(block, 1, sink.now_ns());
        true
    }

    /// Map `lpns` (with their integrity `versions`, if any) into `page` of `block` (region
    /// `r`, `plane`), count them, and return the page's program.
    #[inline(always)]
    fn fill_host_page(
        &mut self,
        r: u8,
        plane: PlaneId,
        (block, page): (BlockId, u32),
        lpns: &[u32],
        versions: &[Version],
        token: u32,
    ) -> NandOp {
        let first = self.media.page_slot(block, page);
        for (i, &lpn) in lpns.iter().enumerate() {
            self.map_unit(lpn, first + i as u32, versions.get(i).copied());
        }
        let n = lpns.len() as u32;
        self.count_host_page(block, r, plane, n);
        NandOp::new(
            OpKind::Program,
            Cause::Host,
            block,
            page,
            n,
            Owner::HostProgram { token },
        )
    }

    /// `n` host units were placed in a page of `block` (region `r`, `plane`).
    #[inline(always)]
    fn count_host_page(&mut self, block: BlockId, r: u8, plane: PlaneId, n: u32) {
        self.media.blocks.valid_units[block.idx()] += n;
        let rp = self.media.rp(r, plane);
        self.media.ps[rp].valid_units += n as u64;
        self.media.ps[rp].host_units += n as u64;
        self.counters.padding_units += (self.media.geo.slots_per_page - n) as u64;
        self.counters.host_units_programmed += n as u64;
    }

    /// Read the units `lpns` for host request `req`: units that `buffered` finds (with
    /// their version) need no NAND access; the rest cost one NAND read per distinct
    /// physical page, after the translation work a demand-based mapping needs (staged:
    /// write-back, load, then the data). In integrity mode every unit is checked against
    /// its last version, and a mapping that bounds reads is held to it.
    pub fn read_units<S: NandSink, B: Fn(u32) -> Option<Version>>(
        &mut self,
        lpns: std::ops::Range<u32>,
        buffered: B,
        req: u32,
        sink: &mut S,
    ) -> Result<ReadOutcome> {
        let mut out = ReadOutcome::default();
        let mut stage = 0;
        let demand = self.trans.active();
        if demand {
            stage = self.translate_read(lpns.clone(), &buffered, req, sink, &mut out)?;
        }
        let (mut cur_page, mut cur_units) = (u32::MAX, 0u32);
        for lpn in lpns {
            if let Some(v) = buffered(lpn) {
                out.buffer_hits += 1;
                self.check(lpn, Found::Buffer(v))?;
                continue;
            }
            let slot = self.media.table.lookup(Lpn(lpn));
            if slot.is_none() {
                out.unmapped += 1;
                self.check(lpn, Found::Unmapped)?;
                continue;
            }
            if self.integrity.is_some() {
                let version = if self.media.oob.unit(slot.idx()) == Some(lpn) {
                    self.media.oob.version[slot.idx()]
                } else {
                    0
                };
                let slot = slot.0;
                self.check(lpn, Found::Flash { slot, version })?;
            }
            let page_id = self.media.geo.div_slots_per_page(slot.0);
            if page_id != cur_page {
                if cur_units > 0 {
                    self.issue_host_read(sink, cur_page, cur_units, req, stage, &mut out)?;
                }
                cur_page = page_id;
                cur_units = 0;
            }
            cur_units += 1;
        }
        if cur_units > 0 {
            self.issue_host_read(sink, cur_page, cur_units, req, stage, &mut out)?;
        }
        if demand {
            self.count_read_path(&out);
            self.run_background(sink)?;
        } else if self.reliability_on() {
            // A read may have made its block due for reclaim, or a refresh scan be due.
            self.host_turn(sink);
            self.run_background(sink)?;
        }
        self.check_due()?;
        Ok(out)
    }

    /// The translation part of a host read: look every unit not in the buffer up, and
    /// carry out the plan on the read's path. Returns the data reads' stage.
    fn translate_read<S: NandSink, B: Fn(u32) -> Option<Version>>(
        &mut self,
        lpns: std::ops::Range<u32>,
        buffered: &B,
        req: u32,
        sink: &mut S,
        out: &mut ReadOutcome,
    ) -> Result<u8> {
        let per = self.trans.entries_per_tpage;
        let (mut tpages, mut last) = (0u32, NONE);
        for lpn in lpns {
            if buffered(lpn).is_none() {
                let hit = self.mapping.on_read(Lpn(lpn), self.trans.plan_mut());
                let c = &mut self.counters.translation;
                c.read_lookups += 1;
                c.read_hits += hit as u64;
                tpages += (lpn / per != last) as u32;
                last = lpn / per;
            }
        }
        let done = self.run_plan(sink, req, Origin::HostRead, true)?;
        out.nand_reads += done.reads;
        out.nand_programs += done.programs;
        out.staged_ops += done.staged;
        if self.integrity.is_some()
            && self.mapping.bounded_reads()
            && (done.programs > 0 || done.reads > tpages)
        {
            return Err(SimError::Integrity(format!(
                "a host read of {tpages} translation page(s) issued {} translation reads and {} programs on its path (the mapping promises at most one read per page and no program)",
                done.reads, done.programs
            )));
        }
        Ok(done.stage)
    }

    /// Count the NAND operations on a host read's path.
    fn count_read_path(&mut self, out: &ReadOutcome) {
        let t = &mut self.counters.translation;
        t.reads_per_host_read[(out.nand_reads as usize).min(7)] += 1;
        t.programs_per_host_read[(out.nand_programs as usize).min(3)] += 1;
    }

    /// One NAND read of `units` units of global page `page_id` for host request `req`.
    #[inline]
    fn issue_host_read<S: NandSink>(
        &mut self,
        sink: &mut S,
        page_id: u32,
        units: u32,
        req: u32,
        stage: u8,
        out: &mut ReadOutcome,
    ) -> Result<()> {
        debug_assert!(units > 0);
        let (block, page) = self.media.geo.block_page_of(page_id);
        let mut op = NandOp::new(
            OpKind::Read,
            Cause::Host,
            block,
            page,
            units,
            Owner::HostRead { req },
        );
        op.stage = stage;
        out.staged_ops += (stage > 0) as u32;
        #[cfg(test)]
        let op = self.staged_read_test_hook(sink, op, req, out)?;
        self.issue(sink, op)?;
        out.nand_reads += 1;
        Ok(())
    }

    /// Test hook of the staged-plan executor: a translation read of page 0 of
    /// `staged_read_hook` first (stage 0), the data read after it (stage 1).
    #[cfg(test)]
    fn staged_read_test_hook<S: NandSink>(
        &mut self,
        sink: &mut S,
        mut op: NandOp,
        req: u32,
        out: &mut ReadOutcome,
    ) -> Result<NandOp> {
        if let Some(tblock) = self.staged_read_hook {
            let t = NandOp::new(
                OpKind::Read,
                Cause::Mapping,
                BlockId(tblock),
                0,
                1,
                Owner::Mapping { req },
            );
            self.issue(sink, t)?;
            out.nand_reads += 1;
            op.stage = 1;
            out.staged_ops += 1;
        }
        Ok(op)
    }

    #[inline]
    fn check(&mut self, lpn: u32, found: Found) -> Result<()> {
        match self.integrity.as_mut() {
            Some(i) => i.check_read(lpn, found).map_err(SimError::Integrity),
            None => Ok(()),
        }
    }

    /// Integrity mode: host read `op` of units `lpns` has completed. The data it returns
    /// is what its page holds when it runs: nothing if the page's program had not completed
    /// (or its block was erased since). Every unit of `lpns` the read was for must have got
    /// its version.
    pub fn check_read_done(&mut self, op: &NandOp, lpns: std::ops::Range<u32>) -> Result<()> {
        if self.integrity.is_none() {
            return Ok(());
        }
        let b = op.block.idx();
        let holds_data = matches!(
            self.media.blocks.state[b],
            BlockState::Open | BlockState::Full | BlockState::Victim
        );
        if holds_data && op.page < self.media.blocks.programmed[b] {
            return Ok(());
        }
        let first = self.media.page_slot(op.block, op.page);
        for slot in first.0..first.0 + self.media.geo.slots_per_page {
            if let Some(lpn) = self
                .media
                .oob
                .unit(slot as usize)
                .filter(|l| lpns.contains(l))
            {
                self.check(lpn, Found::Unprogrammed { slot })?;
            }
        }
        Ok(())
    }

    /// A new version of `lpn` from the host (0 when integrity mode is off).
    #[inline]
    pub fn new_version(&mut self, lpn: u32) -> Version {
        match self.integrity.as_mut() {
            Some(i) => i.on_write(lpn),
            None => 0,
        }
    }

    /// A host write tagged `tag` (its request's [`ssdlab_workload::HostRequest::tag`])
    /// puts `lpn` in a buffer: its new version, and with [`Ftl::store_data`] its bytes
    /// staged from the request's payload.
    #[inline]
    pub fn new_version_for(&mut self, lpn: u32, tag: u32) -> Version {
        let v = self.new_version(lpn);
        if let Some(d) = self.durable.data.as_mut() {
            d.stage(lpn, v, tag, self.media.table.lookup(Lpn(lpn)).0);
        }
        v
    }

    /// Keep the bytes the host writes, with the slots that hold them (`ssdlab serve`).
    /// Needs integrity versions (`integrity = true`): they say which bytes a slot holds.
    pub fn store_data(&mut self) -> Result<()> {
        if self.integrity.is_none() {
            return Err(SimError::config(
                "integrity",
                "storing the host's data needs integrity versions (integrity = true)",
            ));
        }
        if self.durable.data.is_none() {
            let g = &self.media.geo;
            self.durable.data = Some(Box::new(crate::flash::SlotData::new(
                g.blocks,
                g.pages_per_block * g.slots_per_page,
                g.unit_bytes,
            )));
        }
        Ok(())
    }

    /// The stored bytes, when [`Ftl::store_data`] is on.
    pub fn data(&self) -> Option<&crate::flash::SlotData> {
        self.durable.data.as_deref()
    }

    /// The stored bytes, mutably (a server puts a write's payload here before submitting it).
    pub fn data_mut(&mut self) -> Option<&mut crate::flash::SlotData> {
        self.durable.data.as_deref_mut()
    }

    /// The bytes a read of `lpn` returns ([`Ftl::store_data`]): from the buffer when it
    /// holds the unit at `buffered` (waiting, or in flight to its slot), else from the
    /// slot the mapping names; `None` reads as zeros (never written, trimmed, unmapped).
    pub fn read_data(&self, lpn: u32, buffered: Option<Version>) -> Option<&[u8]> {
        let d = self.durable.data.as_deref()?;
        if let Some(v) = buffered {
            if let Some(b) = d.staged_bytes(lpn, v) {
                return Some(b);
            }
        }
        let slot = self.media.table.lookup(Lpn(lpn));
        if slot.is_none() {
            return None;
        }
        d.slot_bytes(slot.0)
    }

    /// Deallocate `lpn` (a demand-based mapping records the change like a write).
    pub fn trim<S: NandSink>(&mut self, lpn: u32, sink: &mut S) -> Result<()> {
        if let Some(i) = self.integrity.as_mut() {
            i.on_trim(lpn);
        }
        if let Some(d) = self.durable.data.as_mut() {
            d.unstage(lpn);
        }
        let old = self.media.table.update(Lpn(lpn), SlotId::NONE);
        if !old.is_none() {
            self.media.invalidate(&mut self.jobs, old);
            self.counters.trimmed_units += 1;
        }
        // Durable trims pin the old copy's block before any background work runs: its last
        // valid unit gone, GC could otherwise erase it first.
        let recorded = self.durable.trims.is_some();
        if recorded {
            self.record_trim(lpn, old, sink)?;
        }
        let updated = !old.is_none() && self.trans.active();
        if updated {
            self.host_updates(&[lpn]);
        }
        // A record page may have opened a block: GC due there starts now.
        if updated || recorded {
            self.run_background(sink)?;
        }
        Ok(())
    }

    /// Version stored on flash for `lpn` (integrity mode), `None` when unmapped.
    pub fn flash_version(&self, lpn: u32) -> Option<Version> {
        let slot = self.media.table.lookup(Lpn(lpn));
        (!slot.is_none()).then(|| self.media.oob.version.get(slot.idx()).copied().unwrap_or(0))
    }
}
