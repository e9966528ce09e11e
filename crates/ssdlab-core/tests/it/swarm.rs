//! Swarm test (issue 34, item 7): seeded random whole configurations — every registered
//! policy of every family, both modes, SLC buffer / journal / translation regions,
//! injected failures and factory bad blocks, open and closed loop, small random
//! geometries — each runs a short synthetic workload with the integrity oracle on (every
//! read checked), the invariant checker every few operations (debug builds) and once at the
//! end (all builds), the results audit on every case (`sim::audit`: conservation and
//! physical bounds of the figures), and, in timed mode, the liveness check (every
//! submitted request completed). Two thirds of the cases that support power cuts (`page-map`, no
//! zones or FDP) instead serve random requests as `ssdlab serve` does and cut the power
//! three times at random events: after each recovery the checker runs and every unit must
//! be as the last completed flush left it or as a later write or trim made it
//! ([`Told::check`]), and no request may wait with no event left. A failing case is
//! reported with its seed, a one-line reproduction and its case as a regression file; the
//! regressions (`tests/regressions/*.toml`: what each found, its configuration, the rest of
//! the case in a `[swarm]` table) are replayed by [`swarm_regressions`].
//!
//! `SSDLAB_SWARM_CASES=N` runs N cases (default [`DEFAULT_CASES`]), `SSDLAB_SWARM_START=S`
//! starts at seed S (default 0), `SSDLAB_SWARM_SEED=S` runs the one case S.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use ssdlab_core::config::{
    AllocConfig, GcConfig, MappingConfig, PlacementConfig, ReclaimConfig, RefreshConfig,
    SuspendConfig, WearConfig,
};
use ssdlab_core::policy::arbitration::ArbitrationConfig;
use ssdlab_core::policy::placement::RegionNeed;
use ssdlab_core::policy::SwarmCtx;
use ssdlab_core::{Config, NoProgress, RunStatus, SimError, Simulation};
use ssdlab_workload::{HostOp, HostRequest, WorkloadConfig};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Cases of a plain `cargo test` run (debug build: about 6 s).
const DEFAULT_CASES: u64 = 500;

/// A policy's config table as inline TOML (`{ policy = "…", … }`, its name first).
fn inline<T: serde::Serialize>(policy: &T) -> String {
    let toml::Value::Table(mut t) =
        toml::Value::try_from(policy).expect("a policy config serialises to TOML")
    else {
        panic!("a policy config is a table")
    };
    let name = t
        .remove("policy")
        .expect("a policy config names its policy");
    let rest: String = t.iter().map(|(k, v)| format!(", {k} = {v}")).collect();
    format!("{{ policy = {name}{rest} }}")
}

/// The cache region's GC policy: drawn as the data region's, from a case seed of its own.
const SLC_GC: u64 = 0x736c_635f_6763;

/// A `[device.host_interface]` for a third of the timed cases, drawn from a stream of its
/// own: few command slots, small transfer limits, any registered arbitration policy (with
/// random priority classes when it takes them), so commands queue, split and cross the
/// arbiter.
fn host_interface_toml(seed: u64, text: &str, ctx: SwarmCtx) -> String {
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x4e56_6d65);
    if !text.contains("mode = \"timed\"") || !rng.gen_bool(1.0 / 3.0) {
        return String::new();
    }
    let flows: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("flows = "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let arbitration = ArbitrationConfig::swarm_any(seed, &ctx);
    let mut arbitration_t = inline(&arbitration);
    if arbitration.priority_classes() {
        let classes: Vec<String> = (0..rng.gen_range(0..=flows))
            .map(|_| {
                format!(
                    "\"{}\"",
                    ["urgent", "high", "medium", "low"].choose(rng).unwrap()
                )
            })
            .collect();
        let _ = write!(arbitration_t, "\nflow_priority = [{}]", classes.join(", "));
    }
    let arbitration = arbitration_t;
    format!(
        "[device.host_interface]\npcie_generation = {}\nlanes = {}\ncommand_ns = {}\nmax_commands_in_flight = {}\nmax_data_transfer_bytes = {}\narbitration = {arbitration}\n",
        rng.gen_range(3..=5u32),
        [1, 4, 16].choose(rng).unwrap(),
        [0u64, 1000, 20_000].choose(rng).unwrap(),
        [1u32, 2, 7, 1024].choose(rng).unwrap(),
        [0u64, 4096, 8192, 65536].choose(rng).unwrap(),
    )
}

/// The whole configuration of case `seed`, as TOML text (printed when the case fails).
pub(crate) fn draw(seed: u64) -> String {
    let (t, ctx) = draw_device_and_work(seed);
    let t = die_affine(seed, fdp(seed, hold_overwrites(seed, t)));
    let t = reliability_jobs(seed, t, ctx);
    let hi = host_interface_toml(seed, &t, ctx);
    let rel = reliability_toml(seed);
    t + &hi + &rel
}

/// A `[device.reliability]` for half of the cases, from a stream of its own: every key
/// drawn, wear and age from fresh to past the rated endurance (retries, soft decodes and
/// uncorrectable reads: failed host reads), any retry policy, the device's RBER
/// parameters scaled.
fn reliability_toml(seed: u64) -> String {
    use ssdlab_core::policy::retry::RetryConfig;
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x7262_6572);
    if !rng.gen_bool(0.5) {
        return String::new();
    }
    let t = *[8u32, 40, 72].choose(rng).unwrap();
    let soft = if rng.gen_bool(0.7) {
        t + rng.gen_range(1..=60)
    } else {
        0
    };
    let retry = RetryConfig::swarm_any(seed, &SwarmCtx { page_bytes: 4096 });
    let scale = *[0.5f64, 1.0, 4.0].choose(rng).unwrap();
    let mode = *["slc", "mlc", "tlc", "qlc"].choose(rng).unwrap();
    let d = ssdlab_core::config::reliability::RberTable::default();
    let p = match mode {
        "slc" => d.slc,
        "mlc" => d.mlc,
        "tlc" => d.tlc,
        _ => d.qlc,
    };
    format!(
        "[device.reliability]\nenabled = {}\ninitial_pe_cycles = {}\nretention_age_days = {}\ncodeword_bytes = {}\ncorrectable_bits_per_codeword = {t}\nsoft_correctable_bits_per_codeword = {soft}\nhard_decode_ns = {}\nsoft_decode_reads = {}\nsoft_decode_ns = {}\nretry_steps = {}\nretry_rber_factor = {}\nretry = {}\n[device.reliability.rber.{mode}]\nbase_rber = {:e}\nwear_coefficient = {:e}\nwear_exponent = {}\nretention_coefficient = {:e}\nretention_pe_exponent = {}\nretention_days_exponent = {}\ndisturb_coefficient = {:e}\ndisturb_pe_exponent = {}\ndisturb_reads_exponent = {}\n",
        rng.gen_bool(0.9),
        [0u32, 1000, 3000, 8000].choose(rng).unwrap(),
        [0.0f64, 30.0, 365.0].choose(rng).unwrap(),
        [512u32, 1024, 4096].choose(rng).unwrap(),
        [0u64, 4000, 30_000].choose(rng).unwrap(),
        rng.gen_range(0..=4u32),
        [0u64, 20_000].choose(rng).unwrap(),
        rng.gen_range(0..=8u32),
        [0.5f64, 0.75, 0.9].choose(rng).unwrap(),
        inline(&retry),
        p.base_rber * scale,
        p.wear_coefficient * scale,
        p.wear_exponent,
        p.retention_coefficient * scale,
        p.retention_pe_exponent,
        p.retention_days_exponent,
        p.disturb_coefficient * scale,
        p.disturb_pe_exponent,
        p.disturb_reads_exponent,
    )
}

/// `ftl.read_reclaim` and `ftl.refresh`, each policy drawn by the registry from its
/// family's stream (so about two thirds of the cases reclaim, two thirds refresh; small
/// read counts, ages from 50 ms and RBER margins from 0.002 of the hard-decode limit, so
/// the short runs move data; `urgent_read_count` and `urgent_margin` never, at once or
/// later); none on a zoned device.
fn reliability_jobs(seed: u64, text: String, ctx: SwarmCtx) -> String {
    if text.contains("[device.zns]") || !text.contains("[ftl]\n") {
        return text;
    }
    let reclaim = ReclaimConfig::swarm_any(seed, &ctx);
    let refresh = RefreshConfig::swarm_any(seed, &ctx);
    let mut lines = String::new();
    if reclaim.relocates() {
        let _ = writeln!(lines, "read_reclaim = {}", inline(&reclaim));
    }
    if refresh.relocates() {
        let _ = writeln!(lines, "refresh = {}", inline(&refresh));
    }
    text.replacen("[ftl]\n", &format!("[ftl]\n{lines}"), 1)
}

/// `ftl.die_affine_group_dies` in half of the cases (a group per die, or two dies a group
/// when the device has an even number), from a stream of its own.
fn die_affine(seed: u64, text: String) -> String {
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x6166_6669);
    let count = |key: &str| -> u32 {
        let line = text.lines().find_map(|l| l.strip_prefix(key));
        line.and_then(|v| v.trim().parse().ok()).unwrap_or(1)
    };
    let dies = count("channels = ") * count("chips_per_channel = ") * count("dies_per_chip = ");
    if text.contains("[device.zns]") || !text.contains("[ftl]\n") || !rng.gen_bool(0.5) {
        return text;
    }
    let k = if dies % 2 == 0 && rng.gen_bool(0.5) {
        2
    } else {
        1
    };
    text.replacen(
        "[ftl]\n",
        &format!("[ftl]\ndie_affine_group_dies = {k}\n"),
        1,
    )
}

/// `ftl.hold_overwritten_until_durable` (what `ssdlab serve` runs with) in a third of the
/// timed cases, from a stream of its own (the other draws stay as they were).
fn hold_overwrites(seed: u64, text: String) -> String {
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x686f_6c64);
    if text.contains("mode = \"timed\"") && text.contains("[ftl]\n") && rng.gen_bool(1.0 / 3.0) {
        text.replacen(
            "[ftl]\n",
            "[ftl]\nhold_overwritten_until_durable = true\n",
            1,
        )
    } else {
        text
    }
}

/// FDP (`[device.fdp]`, 2 to 4 handles) in half of the hot/cold cases, hot writes on
/// placement identifier 1, from a stream of its own; always with a placement policy that
/// follows placement identifiers (`fdp`: it needs the table).
fn fdp(seed: u64, text: String) -> String {
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x0066_6470);
    let hot_cold = "pattern = \"hot-cold\"\n";
    let fdp_placement = text
        .lines()
        .find_map(|l| l.strip_prefix("placement = "))
        .and_then(|v| toml::from_str::<toml::Table>(&format!("p = {v}")).ok())
        .and_then(|t| t.get("p").cloned()?.try_into::<PlacementConfig>().ok())
        .is_some_and(|p| p.params().reads_placement_ids());
    if !fdp_placement && (!text.contains(hot_cold) || !rng.gen_bool(0.5)) {
        return text;
    }
    let handles = rng.gen_range(2..=4u32);
    text.replacen(
        hot_cold,
        &format!("{hot_cold}placement_by_temperature = true\n"),
        1,
    ) + &format!("\n[device.fdp]\nhandles = {handles}\n")
}

/// The device and the workload of case `seed`; the policies (and their parameters) are
/// drawn by the registry, each from a stream of its own
/// ([`ssdlab_core::policy::PolicyParams::swarm`]).
fn draw_device_and_work(seed: u64) -> (String, SwarmCtx) {
    let rng = &mut Pcg64::seed_from_u64(seed);
    let mode = if rng.gen_bool(0.5) {
        "timed"
    } else {
        "functional"
    };
    // Geometry: pages per block divisible by 2, 3 and 4, so an SLC region's pages are whole
    // on MLC, TLC and QLC devices.
    let cell = *["mlc", "tlc", "qlc"].choose(rng).unwrap();
    let planes = rng.gen_range(1..=2u32);
    let dies = rng.gen_range(1..=2u32);
    let channels = rng.gen_range(1..=2u32);
    let pages = *[12u32, 24].choose(rng).unwrap();
    let spp = *[1u32, 2, 4].choose(rng).unwrap();
    let page_bytes = 4096 * spp;
    let ctx = SwarmCtx { page_bytes };
    let placement = PlacementConfig::swarm_any(seed, &ctx);
    let mapping = MappingConfig::swarm_any(seed, &ctx);
    let demand = mapping.is_demand();
    let gc_soft = rng.gen_range(2..=4u32);
    let gc_hard = rng.gen_range(1..gc_soft);

    // Regions: a cache for the placements that write one, a journal for slc-journal, a
    // translation region for demand-based mappings; the data region takes the rest.
    // The keys of issue 48 item 4 come from a stream of their own (the other draws stay
    // as they were): a journal region on some planes with the buffer on the others, and
    // partial-page programs (NOP) in SLC and in the device's own mode.
    let more = &mut Pcg64::seed_from_u64(seed ^ 0x6e6f_7073);
    let all_planes = planes * dies * channels;
    let split = all_planes > 1 && more.gen_bool(0.35);
    let subset: Vec<u32> = (0..all_planes).filter(|_| more.gen_bool(0.5)).collect();
    let split = split && !subset.is_empty() && subset.len() < all_planes as usize;
    let rest: Vec<u32> = (0..all_planes).filter(|p| !subset.contains(p)).collect();
    let nop = |more: &mut Pcg64| {
        if spp > 1 && more.gen_bool(0.12) {
            more.gen_range(2..=spp)
        } else {
            1
        }
    };
    let (slc_nop, native_nop) = (nop(more), nop(more));
    let mut regions = vec![r#"{ name = "data", content = "data" }"#.to_string()];
    let mut region_blocks = 0;
    let journal = placement.params().journal_regions() != RegionNeed::Never;
    let cache = placement.params().cache_regions() != RegionNeed::Never;
    let split = split && journal && cache;
    // (Drawn in the order they were before the split existed.)
    let cache_draw = cache.then(|| (rng.gen_range(4..=7u32), rng.gen_bool(0.5)));
    let journal_blocks = if journal { rng.gen_range(4..=6u32) } else { 0 };
    if let Some((blocks, drain)) = cache_draw {
        // Split: the buffer on the planes the journal region leaves, as many blocks each.
        let (blocks, on) = if split {
            (journal_blocks, format!(", planes = {rest:?}"))
        } else {
            region_blocks += blocks;
            (blocks, String::new())
        };
        regions.push(format!(
            r#"{{ name = "slc", content = "cache", cell_mode = "slc", blocks_per_plane = {blocks}, drain_when_idle = {drain}, gc_soft_free_blocks = 1, gc_hard_free_blocks = 1, gc = {}{on} }}"#,
            inline(&GcConfig::swarm_any(seed ^ SLC_GC, &ctx))
        ));
    }
    if journal {
        region_blocks += journal_blocks;
        let on = if split {
            format!(", planes = {subset:?}")
        } else {
            String::new()
        };
        regions.push(format!(
            r#"{{ name = "journal", content = "journal", cell_mode = "slc", blocks_per_plane = {journal_blocks}, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1{on} }}"#
        ));
    }
    if demand {
        let blocks = rng.gen_range(8..=12u32);
        region_blocks += blocks;
        regions.push(format!(
            r#"{{ name = "map", content = "translation", blocks_per_plane = {blocks}, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1 }}"#
        ));
    }
    let blocks = region_blocks + rng.gen_range(12..=28u32);
    let regions = if regions.len() > 1 || rng.gen_bool(0.5) {
        format!("regions = [{}]", regions.join(", "))
    } else {
        String::new()
    };

    let failures = rng.gen_bool(0.3);
    let rate = |rng: &mut Pcg64| {
        if failures && rng.gen_bool(0.7) {
            [0.002, 0.01, 0.03].choose(rng).copied().unwrap()
        } else {
            0.0
        }
    };
    let (bad, program_fail, erase_fail) = (rate(rng), rate(rng), rate(rng));
    let endurance = if rng.gen_bool(0.15) {
        rng.gen_range(8..=40)
    } else {
        3000
    };

    let buffer_pages = planes * dies * channels * rng.gen_range(1..=4u32);
    let idle_gc_after_ns = *[0u64, 200_000, 2_000_000].choose(rng).unwrap();
    let requests = rng.gen_range(100..=700u32);
    let flows = rng.gen_range(1..=2u32);
    let open_loop_iops = if rng.gen_bool(0.35) {
        *[2_000.0, 20_000.0, 200_000.0].choose(rng).unwrap()
    } else {
        0.0
    };
    let pattern = *["uniform", "sequential", "zipf", "hot-cold", "normal"]
        .choose(rng)
        .unwrap();
    let block_size = *[4096u32, 8192, 16384, 2048].choose(rng).unwrap();
    let read = rng.gen_range(0..=70u32);
    let trim = if rng.gen_bool(0.3) {
        rng.gen_range(1..=15u32)
    } else {
        0
    };
    let precondition = rng.gen_bool(0.2);

    let slc_timing = if slc_nop > 1 {
        format!("[device.timing.slc]\nread_ns = 25000\nprogram_ns = 200000\nerase_loop_ns = 1000000\nerase_loops = [[0, 2]]\nerase_suspend_penalty_ns = 100000\nprogram_suspend_penalty_ns = 100000\nendurance_pe_cycles = 50000\npartial_programs_per_page = {slc_nop}\n")
    } else {
        String::new()
    };
    let mut t = String::new();
    let _ = write!(
        t,
        r#"seed = {seed}
mode = "{mode}"
integrity = true
[device]
cell_mode = "{cell}"
over_provisioning_ratio = 3.0
channel_rate_mb_per_s = 800
command_overhead_ns = 1000
bad_block_ratio = {bad}
program_fail_rate = {program_fail}
erase_fail_rate = {erase_fail}
[device.geometry]
channels = {channels}
chips_per_channel = 1
dies_per_chip = {dies}
planes_per_die = {planes}
blocks_per_plane = {blocks}
pages_per_block = {pages}
page_size_bytes = {page_bytes}
mapping_unit_bytes = 4096
[device.timing.{cell}]
read_ns = {read_ns}
program_ns = {program_ns}
program_loops = {program_loops}
erase_loop_ns = {erase_loop_ns}
erase_loops = [[0, {erase_loops}]]
erase_suspend_penalty_ns = {suspend_penalty_ns}
program_suspend_penalty_ns = {suspend_penalty_ns}
resume_penalty_ns = {resume_penalty_ns}
endurance_pe_cycles = {endurance}
partial_programs_per_page = {native_nop}
{slc_timing}[ftl]
mapping = {mapping}
gc = {gc}
allocation = {alloc}
wear_leveling = {wear}
placement = {placement}
gc_soft_free_blocks = {gc_soft}
gc_hard_free_blocks = {gc_hard}
write_buffer_bytes = {buffer}
power_loss_protection = {plp}
gc_window_pages = {window}
idle_gc_after_ns = {idle_gc_after_ns}
idle_gc_free_blocks = {idle_free}
{regions}
[scheduler]
read_priority = {read_priority}
program_suspend = {program_suspend}
multi_plane_gc = {multi_plane_gc}
erase_suspend = {suspend}
[precondition]
enabled = {precondition}
random_overwrite_capacity_multiple = 0.5
[workload]
kind = "synthetic"
read_percent = {read}
trim_percent = {trim}
block_size_bytes = {block_size}
queue_depth = {qd}
flows = {flows}
pattern = "{pattern}"
requests = {requests}
open_loop_iops = {open_loop_iops}
[output]
timeseries_interval_ns = 0
"#,
        read_ns = rng.gen_range(20..=100u64) * 1000,
        program_ns = rng.gen_range(100..=1500u64) * 1000,
        program_loops = rng.gen_range(1..=10u32),
        erase_loop_ns = rng.gen_range(200..=3000u64) * 1000,
        erase_loops = rng.gen_range(1..=6u32),
        suspend_penalty_ns = *[0u64, 20_000, 100_000].choose(rng).unwrap(),
        resume_penalty_ns = *[0u64, 10_000].choose(rng).unwrap(),
        mapping = inline(&mapping),
        gc = inline(&GcConfig::swarm_any(seed, &ctx)),
        alloc = inline(&AllocConfig::swarm_any(seed, &ctx)),
        wear = inline(&WearConfig::swarm_any(seed, &ctx)),
        placement = inline(&placement),
        buffer = buffer_pages as u64 * page_bytes as u64,
        plp = rng.gen_bool(0.2),
        window = *[0u32, 0, 1, 3].choose(rng).unwrap(),
        idle_free = if idle_gc_after_ns > 0 {
            rng.gen_range(0..=gc_soft + 2)
        } else {
            0
        },
        read_priority = rng.gen_bool(0.8),
        program_suspend = rng.gen_bool(0.3),
        suspend = inline(&SuspendConfig::swarm_any(seed, &ctx)),
        qd = rng.gen_range(1..=16u32),
        multi_plane_gc = rng.gen_bool(0.7),
    );
    (t, ctx)
}

thread_local! {
    /// Totals over the cases run: host requests, GC victims, checked reads, worn-out runs,
    /// power-cut cases, recoveries checked, blocks reclaimed and refreshed.
    static STATS: std::cell::RefCell<[u64; 10]> = const { std::cell::RefCell::new([0; 10]) };
}

/// How a case ended.
pub(crate) enum Outcome {
    Passed,
    /// The drawn configuration is invalid (not a failure; counted apart).
    Rejected(String),
    /// Anything else, `DeviceFull` included: validation accepted the config, so the
    /// device must not fill up.
    Failed(String),
}

/// A case ready to run: the configuration (its over-provisioning and request count drawn,
/// the overwrite hold set for a power-cut case), as TOML text too, and whether it cuts
/// power (then `seed` drives the cut case's requests and cut points).
pub(crate) struct Case {
    pub seed: u64,
    pub cfg: Config,
    /// The whole configuration as TOML (parses to `cfg`).
    pub text: String,
    pub power_cuts: bool,
    /// A regression whose drawn configuration validation now refuses (the fix was a
    /// validation rule): the error it must give.
    pub rejected: Option<String>,
}

impl Case {
    /// The case as a regression file (`tests/regressions/*.toml`): a comment line on what
    /// it found, the configuration, and a `[swarm]` table with the rest of the case.
    pub fn file(&self, found: &str) -> String {
        let rejected = self.rejected.as_ref().map_or(String::new(), |why| {
            format!("rejected = {}\n", toml::Value::String(why.clone()))
        });
        format!(
            "# {found}\n{}\n[swarm]\nseed = {}\npower_cuts = {}\n{rejected}",
            self.text.trim_end(),
            self.seed,
            self.power_cuts
        )
    }

    /// A case read back from a regression file's text ([`Case::file`]).
    pub fn parse(file: &str, name: &str) -> Result<Case, String> {
        let (text, swarm) = file
            .split_once("\n[swarm]\n")
            .ok_or_else(|| format!("{name}: no [swarm] table at the end"))?;
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Swarm {
            seed: u64,
            power_cuts: bool,
            rejected: Option<String>,
        }
        let sw: Swarm = toml::from_str(swarm).map_err(|e| format!("{name}: [swarm]: {e}"))?;
        let cfg = Config::from_toml_str(text, name).map_err(|e| e.to_string())?;
        Ok(Case {
            seed: sw.seed,
            cfg,
            text: text.to_string(),
            power_cuts: sw.power_cuts,
            rejected: sw.rejected,
        })
    }
}

/// Replace the line starting with `key = ` (the first one) by `key = value`.
fn set_value(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    let mut done = false;
    text.lines()
        .map(|l| {
            if !done && l.starts_with(&prefix) {
                done = true;
                format!("{prefix}{value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Case `seed`: its drawn configuration with the over-provisioning (1.1 – 2 × the minimum it
/// needs) and the workload's length (0.3 – 3 × the logical capacity written) set, and the
/// power-cut draw; an invalid drawn configuration is `Err` (rejected or failed).
pub(crate) fn prepare(seed: u64) -> Result<Case, Outcome> {
    let mut text = draw(seed);
    let mut cfg = match Config::from_toml_str(&text, "swarm") {
        Ok(c) => c,
        Err(e) => {
            return Err(Outcome::Failed(format!(
                "the drawn TOML does not parse: {e}"
            )))
        }
    };
    // OP: 1.1 – 2 × the minimum this configuration needs.
    let min = match cfg.validate() {
        Ok(d) => d.min_over_provisioning_ratio,
        Err(e) => return Err(Outcome::Rejected(e.to_string())),
    };
    let mut rng = Pcg64::seed_from_u64(seed ^ 0x5eed);
    cfg.device.over_provisioning_ratio = min * rng.gen_range(1.1..2.0);
    text = set_value(
        &text,
        "over_provisioning_ratio",
        &format!("{:?}", cfg.device.over_provisioning_ratio),
    );
    // The workload writes a random multiple (0.3 – 3) of the logical capacity.
    let units = match cfg.validate() {
        Ok(d) => d.logical_units,
        Err(e) => return Err(Outcome::Rejected(e.to_string())),
    };
    if let WorkloadConfig::Synthetic(w) = &mut cfg.workload {
        let per_request = (w.block_size_bytes / 4096).max(1);
        let write_share = (100.0 - w.read_percent) / 100.0;
        w.requests = ((units as f64 * rng.gen_range(0.3..3.0)
            / per_request as f64
            / w.flows as f64
            / write_share.max(0.3)) as u64)
            .clamp(50, 4000);
        text = set_value(&text, "requests", &w.requests.to_string());
    }
    let power_cuts = match power_cuts(seed, &cfg) {
        Some(c) => {
            cfg = c;
            if !text.contains("hold_overwritten_until_durable = true") {
                text = text.replacen(
                    "[ftl]\n",
                    "[ftl]\nhold_overwritten_until_durable = true\n",
                    1,
                );
            }
            true
        }
        None => false,
    };
    Ok(Case {
        seed,
        cfg,
        text,
        power_cuts,
        rejected: None,
    })
}

fn run_case(seed: u64) -> Outcome {
    match prepare(seed) {
        Ok(case) => run_prepared(case),
        Err(o) => o,
    }
}

/// Run a prepared case (drawn, or read from a regression file).
pub(crate) fn run_prepared(case: Case) -> Outcome {
    let Case {
        seed,
        cfg,
        power_cuts,
        ..
    } = case;
    let timed = cfg.mode == ssdlab_core::config::Mode::Timed;
    if power_cuts {
        return match outcome(catch_unwind(AssertUnwindSafe(|| run_cut_case(seed, cfg)))) {
            Outcome::Failed(why) => Outcome::Failed(format!("power cuts: {why}")),
            o => o,
        };
    }
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<Option<String>, SimError> {
        let mut sim = Simulation::new(cfg)?;
        sim.ftl.set_check_every_ops(64);
        sim.precondition(&mut NoProgress)?;
        let r = sim.run_workload(&mut NoProgress)?;
        // The results audit (strict by default: a broken conservation or bound is already
        // an internal error above); said here too, so no case passes with one.
        if let Some(e) = r.audit.internal_error() {
            return Ok(Some(format!("results audit: {e}")));
        }
        if let Err(e) = sim.ftl.check_invariants() {
            return Ok(Some(format!("invariant broken at the end: {e}")));
        }
        if r.integrity.is_none() {
            return Ok(Some("integrity mode was off".into()));
        }
        if timed && r.status != RunStatus::WornOut {
            let c = &r.host.counters;
            let l = r.latency_ns.as_ref().expect("a timed run has latencies");
            let done = (l.read.count, l.write.count, l.flush.count);
            if done != (c.reads, c.writes, c.flushes) {
                return Ok(Some(format!(
                    "liveness: completed (read, write, flush) {done:?} of submitted {:?}",
                    (c.reads, c.writes, c.flushes)
                )));
            }
        }
        STATS.with(|t| {
            let mut t = t.borrow_mut();
            t[0] += r.host.requests;
            t[1] += r.gc.invocations;
            t[2] += r.integrity.map_or(0, |i| i.checked_reads);
            t[3] += (r.status == RunStatus::WornOut) as u64;
            t[6] += r.gc.reclaimed_blocks;
            t[7] += r.gc.refreshed_blocks;
            t[8] += r.gc.reclaimed_blocks_by_rber + r.gc.refreshed_blocks_by_rber;
            t[9] += r.gc.urgent_relocations;
        });
        Ok(None)
    }));
    outcome(result)
}

/// How a case's run (or its panic) ended.
fn outcome(result: std::thread::Result<Result<Option<String>, SimError>>) -> Outcome {
    match result {
        Ok(Ok(None)) => Outcome::Passed,
        Ok(Ok(Some(why))) => Outcome::Failed(why),
        Ok(Err(e @ (SimError::Config { .. } | SimError::Workload(_)))) => {
            Outcome::Rejected(e.to_string())
        }
        Ok(Err(e)) => Outcome::Failed(format!("error: {e}")),
        Err(panic) => Outcome::Failed(format!(
            "panic: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

/// Power cuts for two thirds of the cases that support them (`page-map`, integrity, no
/// zones or FDP handles: the `fdp` placement drawn by the registry is an FDP device too), drawn from a stream of their own (the other draws stay as they were): the
/// configuration as `ssdlab serve` runs it (overwrites held, so trims are durable too).
fn power_cuts(seed: u64, cfg: &Config) -> Option<Config> {
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x6375_7473);
    if ssdlab_core::ftl::power_cut_supported(cfg).is_err() || !rng.gen_bool(2.0 / 3.0) {
        return None;
    }
    let mut cfg = cfg.clone();
    cfg.ftl.hold_overwritten_until_durable = true;
    Some(cfg)
}

/// What the host was told, per unit: the versions written (polled when a write completes,
/// and at a cut for the writes in flight), what the newest completed flush covered (the
/// unit's version when the flush was submitted, 0 for none, the next version then, and the
/// flush's submission number), and the requests submitted when its last trim completed.
struct Told {
    written: Vec<Vec<u64>>,
    floor: Vec<(u64, u64, u64)>,
    trimmed: Vec<Option<u64>>,
}

impl Told {
    /// After a recovery every unit holds a version written to it, and is as the newest
    /// completed flush left it or as a later write or trim made it: never older, never
    /// lost.
    fn check(&self, ftl: &ssdlab_core::ftl::Ftl) -> Result<(), String> {
        for u in 0..ftl.logical_units() {
            let v = ftl.flash_version(u).unwrap_or(0);
            let w = &self.written[u as usize];
            if v != 0 && !w.contains(&v) {
                return Err(format!("unit {u} recovered at v{v}, never written to it"));
            }
            let (floor, next, at) = self.floor[u as usize];
            let trimmed_since = self.trimmed[u as usize].is_some_and(|t| t > at);
            let ok = match v {
                0 => floor == 0 || trimmed_since,
                v => v == floor || v >= next,
            };
            if !ok {
                return Err(format!(
                    "unit {u} recovered at v{v}, but a flush acknowledged v{floor} (0: unmapped)"
                ));
            }
        }
        Ok(())
    }
}

/// A power-cut case: three power cycles of random whole-unit writes, reads, trims and
/// flushes (at most the drawn queue depth in flight, on disjoint units) through the served
/// phase `ssdlab serve` uses, each cut at a random event (with a power-loss-protected
/// buffer: drained first, as serve does); after each recovery the invariant checker and
/// [`Told::check`]; every request submitted completes unless the power went first or the
/// device failed (an empty event queue with requests in flight is a liveness failure; a
/// power-loss-protected device that failed takes no new request, and keeps what it
/// acknowledged); a last cycle runs to
/// its end.
fn run_cut_case(seed: u64, cfg: Config) -> Result<Option<String>, SimError> {
    let rng = &mut Pcg64::seed_from_u64(seed ^ 0x6375_7431);
    let (qd, per_cycle) = match &cfg.workload {
        WorkloadConfig::Synthetic(w) => {
            (w.queue_depth.clamp(1, 8), (w.requests / 4).clamp(20, 400))
        }
        _ => (4, 100),
    };
    let plp = cfg.ftl.power_loss_protection;
    STATS.with(|t| t.borrow_mut()[4] += 1);
    let mut sim = Simulation::new(cfg)?;
    sim.ftl.set_check_every_ops(64);
    sim.precondition(&mut NoProgress)?;
    let units = sim.ftl.logical_units();
    let mut told = Told {
        written: vec![Vec::new(); units as usize],
        floor: vec![(0, 0, 0); units as usize],
        trimmed: vec![None; units as usize],
    };
    let next = sim.ftl.integrity().map_or(0, |i| i.next_version());
    for u in 0..units {
        if let Some(v) = sim.ftl.flash_version(u) {
            told.written[u as usize].push(v);
            told.floor[u as usize] = (v, next, 0); // preconditioned: durable
        }
    }
    let mut submitted = 0u64;
    for cycle in 0..4 {
        let last = cycle == 3;
        let cut_at = rng.gen_range(0..per_cycle * 30);
        let mut served = sim.serve()?;
        // In flight: tag → (op, first unit, units, submission number); flush snapshots.
        let mut flight: Vec<Option<(HostOp, u32, u32, u64)>> = vec![None; qd as usize];
        let mut snapshots: Vec<Option<Vec<(u64, u64, u64)>>> = vec![None; qd as usize];
        let mut done = Vec::new();
        let (mut issued, mut events) = (0u64, 0u64);
        loop {
            // A device that failed takes nothing new (`ssdlab serve` refuses a write, trim
            // or flush once it has failed: checked before every submission, as a request
            // can fail it); what a power-loss-protected one acknowledged is checked after
            // the cut (a device without it acknowledges a flush whose units it dropped on
            // failing during that flush: not checked yet).
            let failed = served.worn_out();
            if failed && !plp {
                return Ok(None);
            }
            while issued < per_cycle && !served.worn_out() {
                let Some(tag) = flight.iter().position(|f| f.is_none()) else {
                    break;
                };
                let n = rng.gen_range(1..=4u32).min(units);
                let lo = rng.gen_range(0..=units - n);
                let op = match rng.gen_range(0..20) {
                    0..=10 => HostOp::Write,
                    11..=14 => HostOp::Read,
                    15..=17 => HostOp::Trim,
                    _ => HostOp::Flush,
                };
                let clash = flight.iter().flatten().any(|&(o, l, k, _)| {
                    o != HostOp::Flush && op != HostOp::Flush && lo < l + k && l < lo + n
                });
                if clash {
                    break;
                }
                let (off, size) = match op {
                    HostOp::Flush => (0, 0),
                    _ => (lo as u64 * 4096, n as u64 * 4096),
                };
                let r = HostRequest {
                    tag: tag as u32,
                    placement_id: 0,
                    arrival_ns: 0,
                    op,
                    offset_bytes: off,
                    size_bytes: size,
                    journal: None,
                };
                if op == HostOp::Flush {
                    let next = served.next_version();
                    snapshots[tag] = Some(
                        (0..units)
                            .map(|u| (served.version_of(u).unwrap_or(0), next, submitted))
                            .collect(),
                    );
                }
                let payload = (op == HostOp::Write).then(|| {
                    ssdlab_core::sim::serve::WriteData::Bytes(vec![tag as u8; size as usize])
                });
                flight[tag] = Some((op, lo, n, submitted));
                served.submit(r, payload)?;
                issued += 1;
                submitted += 1;
            }
            served.drain_completions(&mut done);
            for c in done.drain(..) {
                let (op, lo, n, _) = flight[c.tag as usize].take().expect("a request in flight");
                match &c.error {
                    // Flash that errs: a reported read error (the oracle checks no data).
                    Some(ssdlab_core::ftl::zones::ZoneError::UnrecoveredRead)
                        if op == HostOp::Read =>
                    {
                        continue
                    }
                    Some(e) => return Ok(Some(format!("request {op:?} failed: {e:?}"))),
                    None => {}
                }
                if op == HostOp::Write {
                    for u in lo..lo + n {
                        told.written[u as usize].extend(served.version_of(u));
                    }
                }
                if op == HostOp::Trim {
                    // A flush submitted before this completed may or may not cover it.
                    for u in lo..lo + n {
                        told.trimmed[u as usize] = Some(submitted);
                    }
                }
                if let Some(snap) = snapshots[c.tag as usize].take() {
                    if served.worn_out() && !plp {
                        return Ok(None); // the flush may have dropped units (above)
                    }
                    for (f, s) in told.floor.iter_mut().zip(snap) {
                        if s.2 >= f.2 {
                            *f = s;
                        }
                    }
                }
            }
            let idle = flight.iter().all(|f| f.is_none());
            if (!last && events >= cut_at) || ((issued == per_cycle || failed) && idle) {
                break;
            }
            if !served.step()? {
                if !idle {
                    if served.worn_out() {
                        if !plp {
                            return Ok(None);
                        }
                        break; // the device failed: nothing completes any more
                    }
                    return Ok(Some(format!(
                        "liveness: cycle {cycle}: no event left with {} requests in flight",
                        flight.iter().flatten().count()
                    )));
                }
                if issued == per_cycle {
                    break;
                }
            }
            events += 1;
        }
        if last {
            served.finish()?;
            return Ok(None);
        }
        // The writes and trims in flight may be durable at the cut.
        for &(op, lo, n, _) in flight.iter().flatten() {
            for u in lo..lo + n {
                match op {
                    HostOp::Write => told.written[u as usize].extend(served.version_of(u)),
                    HostOp::Trim => told.trimmed[u as usize] = Some(submitted),
                    _ => {}
                }
            }
        }
        if plp {
            // Serve drains a power-loss-protected buffer on the capacitors: the requests in
            // flight complete first.
            while served.in_flight() > 0 {
                if !served.step()? {
                    if served.worn_out() {
                        break; // what the failed device took is checked
                    }
                    return Ok(Some("liveness: draining at a cut".into()));
                }
            }
            served.drain_completions(&mut done);
            for c in done.drain(..) {
                let (op, lo, n, _) = flight[c.tag as usize].take().expect("a request in flight");
                if op == HostOp::Write {
                    for u in lo..lo + n {
                        told.written[u as usize].extend(served.version_of(u));
                    }
                }
            }
            served.finish()?;
        } else {
            let _ = served.cut();
        }
        sim.power_on()?;
        STATS.with(|t| t.borrow_mut()[5] += 1);
        if let Err(e) = sim.ftl.check_invariants() {
            return Ok(Some(format!(
                "invariant broken after recovery {cycle}: {e}"
            )));
        }
        if let Err(e) = told.check(&sim.ftl) {
            return Ok(Some(format!("after recovery {cycle}: {e}")));
        }
    }
    Ok(None)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    })
}

fn reproduction(seed: u64) -> String {
    format!("SSDLAB_SWARM_SEED={seed} cargo test -p ssdlab-core --test it swarm")
}

#[test]
fn swarm() {
    let seeds: Vec<u64> = match env_u64("SSDLAB_SWARM_SEED") {
        Some(s) => vec![s],
        None => {
            let start = env_u64("SSDLAB_SWARM_START").unwrap_or(0);
            let n = env_u64("SSDLAB_SWARM_CASES").unwrap_or(DEFAULT_CASES);
            (start..start + n).collect()
        }
    };
    let (mut passed, mut rejected, mut failed) = (0u64, Vec::new(), Vec::new());
    for &seed in &seeds {
        match run_case(seed) {
            Outcome::Passed => passed += 1,
            Outcome::Rejected(why) => {
                if std::env::var_os("SSDLAB_SWARM_VERBOSE").is_some() {
                    eprintln!("swarm case {seed} rejected: {why}");
                }
                rejected.push((seed, why))
            }
            Outcome::Failed(why) => {
                let file = prepare(seed).map_or_else(|_| draw(seed), |c| c.file(&why));
                eprintln!(
                    "swarm case {seed} FAILED: {why}\n  reproduce: {}\n--- as a regression file (tests/regressions/{seed}-….toml; say what it found in its first line) ---\n{file}",
                    reproduction(seed),
                );
                failed.push((seed, why));
            }
        }
    }
    eprintln!(
        "swarm: {} cases: {passed} passed, {} rejected configs, {} failed",
        seeds.len(),
        rejected.len(),
        failed.len()
    );
    STATS.with(|t| {
        let t = t.borrow();
        eprintln!(
            "swarm totals: {} host requests, {} GC victims, {} reads checked, {} runs worn out; {} cases cut power, {} recoveries checked; {} blocks reclaimed, {} refreshed ({} by RBER), {} jobs urgent",
            t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9]
        )
    });
    let list = |v: &[(u64, String)]| {
        v.iter()
            .take(10)
            .map(|(s, w)| format!("  seed {s}: {w}\n    {}\n", reproduction(*s)))
            .collect::<String>()
    };
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        list(&failed)
    );
    // Read reclaim and retention refresh are drawn (about half the cases each) and move
    // blocks.
    let [reclaimed, refreshed, by_rber, urgent] =
        STATS.with(|t| [6, 7, 8, 9].map(|i| t.borrow()[i]));
    assert!(
        seeds.len() < 100 || reclaimed > 0 && refreshed > 0 && by_rber > 0 && urgent > 0,
        "{reclaimed} blocks reclaimed, {refreshed} refreshed, {by_rber} by RBER, {urgent} jobs urgent in {} cases",
        seeds.len()
    );
    // The host interface is drawn (about a sixth of all cases): its paths are exercised.
    let with_link = seeds
        .iter()
        .filter(|&&s| draw(s).contains("[device.host_interface]"))
        .count();
    assert!(
        seeds.len() < 100 || with_link * 10 >= seeds.len(),
        "{with_link} of {} cases drew a host interface",
        seeds.len()
    );
    // So is the overwrite hold (about a sixth too).
    let with_hold = seeds
        .iter()
        .filter(|&&s| draw(s).contains("hold_overwritten_until_durable = true"))
        .count();
    assert!(
        seeds.len() < 100 || with_hold * 10 >= seeds.len(),
        "{with_hold} of {} cases drew the overwrite hold",
        seeds.len()
    );
    // So are the keys of issue 48 item 4: regions on plane subsets, partial-page programs.
    let texts: Vec<String> = seeds.iter().map(|&s| draw(s)).collect();
    let split = texts.iter().filter(|t| t.contains(", planes = [")).count();
    let nop = texts
        .iter()
        .filter(|t| {
            t.lines().any(|l| {
                l.starts_with("partial_programs_per_page = ")
                    && l != "partial_programs_per_page = 1"
            })
        })
        .count();
    assert!(
        seeds.len() < 100 || (split * 50 >= seeds.len() && nop * 20 >= seeds.len()),
        "{split} and {nop} of {} cases drew a split journal region and partial-page programs",
        seeds.len()
    );
    // So are power cuts (about a quarter of the cases support them; two thirds of those cut).
    let cut = STATS.with(|t| t.borrow()[4]) as usize;
    assert!(
        seeds.len() < 100 || cut * 10 >= seeds.len(),
        "{cut} of {} cases cut power",
        seeds.len()
    );
    // A config error is not a failure, but rejections must not hide the cases.
    assert!(
        seeds.len() < 10 || rejected.len() as u64 * 10 <= seeds.len() as u64,
        "{} of {} drawn configs rejected:\n{}",
        rejected.len(),
        seeds.len(),
        list(&rejected)
    );
}

/// The cases earlier swarm runs found failing (each fixed at its root), one file each in
/// `tests/regressions/` ([`Case::file`]): what it found on its first line, the whole
/// configuration, a `[swarm]` table with the rest of the case. Each must pass, or, for a
/// regression whose fix was a validation rule, be refused with exactly its recorded error.
#[test]
fn swarm_regressions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/regressions/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "{} regression files", files.len());
    let mut failed = Vec::new();
    for path in &files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).expect("a readable file");
        assert!(
            text.starts_with("# "),
            "{name}: the first line says what the case found"
        );
        let case = Case::parse(&text, &name).unwrap_or_else(|e| panic!("{e}"));
        if let Some(why) = &case.rejected {
            let got = case.cfg.validate().err().map(|e| e.to_string());
            if got.as_ref() != Some(why) {
                failed.push(format!("{name}: expected refused ({why}), got {got:?}"));
            }
            continue;
        }
        match run_prepared(case) {
            Outcome::Passed => {}
            Outcome::Rejected(why) => failed.push(format!("{name}: refused: {why}")),
            Outcome::Failed(why) => failed.push(format!("{name}: FAILED: {why}")),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Bugs are loud (issue 34, item 8): an illegal block-state change — here forced on a free
/// block, as a bug would make it — is recorded in every build and the run ends with an
/// `Internal` error asking for a report, not a panic and not an integrity finding; in both
/// modes.
#[test]
fn a_forced_illegal_block_transition_is_an_internal_error() {
    use ssdlab_core::config::Mode;
    use ssdlab_core::flash::BlockState;
    use ssdlab_workload::HostOp;
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = crate::common::tiny(1, 8, 4, 1, 1.0);
        c.mode = mode;
        c.integrity = true;
        let mut sim = Simulation::new(c).unwrap();
        // Block 7 is free (every block is, on a fresh device); Free → Full skips Open.
        sim.ftl.force_block_state(
            ssdlab_core::flash::ids::BlockId(7),
            BlockState::Free,
            BlockState::Full,
        );
        let reqs = vec![crate::common::req(HostOp::Write, 0, 1)];
        let e = sim
            .run_workload_with(crate::common::closed(reqs, 1), &mut NoProgress)
            .unwrap_err();
        let SimError::Internal { what } = &e else {
            panic!("{mode:?}: expected an internal error, got {e}")
        };
        assert_eq!(
            what, "block 7: illegal state change Free -> Full",
            "{mode:?}"
        );
        assert_eq!(
            e.to_string(),
            "internal error (please report it with your config and seed): block 7: illegal state change Free -> Full"
        );
    }
}
