//! Spec 02 / issue 4: the OP experiment and advisor on small devices (32-page blocks,
//! ~100 user blocks), so the whole file runs in a few seconds at the test profile.
//!
//! Tolerances (model WAF vs simulated WAF after a warm-up): |error| < 3 % for uniform
//! traffic (measured ≤ 0.3 %; warm-up 4, measured 16 capacities); −2 % … +10 % for greedy
//! hot/cold 80/20 (measured +2.2 … +7.3 %; warm-up and measured 30 capacities each): the
//! mixed-placement model does not see the partial hot/cold separation of this FTL's
//! separate GC write stream, so it over-predicts (conservative).

use ssdlab_core::Config;
use ssdlab_experiments::op::{
    self, advise, confirm, device_with_blocks, model_point, run_overwrites, sweep, AdviseParams,
    OpSweepParams,
};
use ssdlab_experiments::ExperimentError;
use ssdlab_model::{OpGrid, Requirement, Traffic};

const PAGES: u32 = 32;
const USER_BLOCKS: u32 = 96;
const UNITS: u32 = USER_BLOCKS * PAGES;

fn small_base() -> Config {
    let mut c = op::paper_base_config().unwrap();
    c.device.geometry.pages_per_block = PAGES;
    c.device.geometry.blocks_per_plane = USER_BLOCKS + USER_BLOCKS / 10;
    c
}

fn small_sweep(ops: &[f64]) -> OpSweepParams {
    OpSweepParams {
        base: small_base(),
        user_blocks_per_plane: USER_BLOCKS,
        op_ratios: ops.to_vec(),
        min_spare_blocks_per_plane: 6,
        warmup_writes: 4 * UNITS as u64,
        host_writes: 16 * UNITS as u64,
        traffic: Traffic::Uniform,
    }
}

#[test]
fn device_keeps_logical_capacity_exactly() {
    // The paper's 11 points: 800 user blocks x 128 pages = 102400 units at every OP.
    let p = OpSweepParams::paper(1.0).unwrap();
    assert_eq!(p.host_writes, 100 * 1024 * 1024);
    for &op in &p.op_ratios {
        let (cfg, d, spare) = op::sweep_point_config(&p, op).unwrap();
        assert_eq!(d.logical_units, 102_400, "op {op}");
        let expect = if op == 0.0 {
            op::PAPER_ZERO_OP_SPARE_BLOCKS
        } else {
            (800.0 * op).round() as u32
        };
        assert_eq!(spare, expect);
        assert_eq!(cfg.device.geometry.blocks_per_plane, 800 + expect);
    }
}

#[test]
fn too_little_spare_is_refused_with_the_key() {
    // 800 + 3 blocks: exactly the reserve (2 open + gc_hard_free_blocks), no spare left.
    let base = op::paper_base_config().unwrap();
    let e = device_with_blocks(&base, 803, 102_400).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("device.over_provisioning_ratio"), "{msg}");
    assert!(msg.contains("minimum"), "{msg}");
    // Fewer blocks than the logical space.
    let e = device_with_blocks(&base, 700, 102_400).unwrap_err();
    assert!(e.to_string().contains("blocks_per_plane"), "{e}");
    // The smallest accepted: one block of spare beyond the reserve.
    assert!(device_with_blocks(&base, 804, 102_400).is_ok());
    // Bad parameters name themselves.
    assert!(OpSweepParams::paper(0.0)
        .unwrap_err()
        .to_string()
        .contains("--scale"));
    let mut p = small_sweep(&[0.1]);
    p.host_writes = 0;
    assert!(sweep(&p, &|_| {})
        .unwrap_err()
        .to_string()
        .contains("host_writes"));
}

#[test]
fn model_matches_simulation_uniform() {
    let base = small_base();
    for op in [0.1, 0.25, 0.5] {
        let bpp = USER_BLOCKS + (USER_BLOCKS as f64 * op).round() as u32;
        let (cfg, d) = device_with_blocks(&base, bpp, UNITS).unwrap();
        let sim =
            run_overwrites(&cfg, Traffic::Uniform, 4 * UNITS as u64, 16 * UNITS as u64).unwrap();
        let m = model_point(&cfg, &d, Traffic::Uniform, sim.host_writes).unwrap();
        let err = (m.waf - sim.waf) / sim.waf;
        eprintln!(
            "uniform op {op}: sim {:.4} model {:.4} err {:+.2} %",
            sim.waf,
            m.waf,
            err * 100.0
        );
        assert!(err.abs() < 0.03, "op {op}: sim {} model {}", sim.waf, m.waf);
        // Counts follow from the WAF: reads = programs - host writes, erases = programs / b.
        assert_eq!(sim.nand_reads + sim.host_writes, sim.nand_programs);
        let erases_from_waf = sim.nand_programs as f64 / PAGES as f64;
        assert!((sim.nand_erases as f64 - erases_from_waf).abs() / erases_from_waf < 0.02);
        let t = cfg.device.timing.get(cfg.device.cell_mode);
        let time = sim.nand_reads * t.read_ns
            + sim.nand_programs * t.program_ns
            + sim.nand_erases * t.erase_loop_ns;
        assert_eq!(time, sim.time_ns);
    }
}

#[test]
fn model_matches_simulation_hot_cold() {
    let mut base = small_base();
    base.ftl.gc = ssdlab_core::config::GcConfig::Greedy(Default::default());
    let traffic = Traffic::HotCold {
        hot_io_fraction: 0.8,
        hot_space_fraction: 0.2,
    };
    for op in [0.1, 0.25, 0.4, 0.7] {
        let bpp = USER_BLOCKS + (USER_BLOCKS as f64 * op).round() as u32;
        let (cfg, d) = device_with_blocks(&base, bpp, UNITS).unwrap();
        let sim = run_overwrites(&cfg, traffic, 30 * UNITS as u64, 30 * UNITS as u64).unwrap();
        let m = model_point(&cfg, &d, traffic, sim.host_writes).unwrap();
        let err = (m.waf - sim.waf) / sim.waf;
        eprintln!(
            "hot/cold op {op}: sim {:.4} model {:.4} err {:+.2} %",
            sim.waf,
            m.waf,
            err * 100.0
        );
        // The model places hot and cold pages in the same blocks; this FTL's separate GC
        // stream gathers (mostly cold) survivors, a partial hot/cold separation, so the
        // model is conservative here: measured +2 % (op 0.1) to +7.3 % (op 0.7).
        assert!(
            (-0.02..0.10).contains(&err),
            "op {op}: sim {} model {}",
            sim.waf,
            m.waf
        );
    }
}

#[test]
fn improvement_is_monotone_in_op_and_deterministic() {
    let p = small_sweep(&[0.0, 0.1, 0.2, 0.4, 0.7, 1.0]);
    let s = sweep(&p, &|_| {}).unwrap();
    assert_eq!(s.points.len(), 6);
    assert_eq!(s.points[0].spare_blocks_per_plane, 6);
    assert_eq!(s.points[0].improvement_pct, 0.0);
    for w in s.points.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert!(
            b.sim.waf < a.sim.waf,
            "WAF not decreasing at op {}",
            b.op_ratio
        );
        assert!(b.sim.time_ns < a.sim.time_ns);
        assert!(b.sim.nand_programs < a.sim.nand_programs);
        assert!(b.sim.nand_reads < a.sim.nand_reads);
        assert!(b.sim.nand_erases < a.sim.nand_erases);
        assert!(b.improvement_pct > a.improvement_pct);
        assert!(b.model.waf < a.model.waf);
        assert!(b.model_improvement_pct > a.model_improvement_pct);
    }
    // The expected shape holds on this sweep, and each check fails on the rows changed
    // against it.
    let holds = |s: &op::OpSweep, start: &str| {
        s.checks()
            .into_iter()
            .find(|c| c.claim.starts_with(start))
            .unwrap_or_else(|| panic!("{start}"))
            .holds
    };
    type Change = Box<dyn Fn(&mut op::OpSweep)>;
    let cases: Vec<(&str, Change)> = vec![
        (
            "WAF falls",
            Box::new(|s| s.points[3].sim.waf = s.points[2].sim.waf),
        ),
        (
            "improvement grows with OP",
            Box::new(|s| s.points[5].improvement_pct = s.points[4].improvement_pct + 20.0),
        ),
        (
            "model WAF within",
            Box::new(|s| s.points[2].waf_rel_err = -0.04),
        ),
    ];
    assert_eq!(cases.len(), s.checks().len(), "every check has its case");
    for (check, bad) in &cases {
        assert_eq!(holds(&s, check), Some(true), "{check}: {:?}", s.checks());
        let mut x = s.clone();
        bad(&mut x);
        assert_eq!(holds(&x, check), Some(false), "{check}");
    }
    // Same seed, one thread instead of the default pool: identical numbers.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let s1 = pool.install(|| sweep(&p, &|_| {})).unwrap();
    for (a, b) in s.points.iter().zip(&s1.points) {
        assert_eq!(a.sim.nand_programs, b.sim.nand_programs);
        assert_eq!(a.sim.nand_reads, b.sim.nand_reads);
        assert_eq!(a.sim.nand_erases, b.sim.nand_erases);
        assert_eq!(a.sim.time_ns, b.sim.time_ns);
    }
}

fn advisor_config() -> Config {
    // 100 user blocks x 32 pages at OP 10 % (110 blocks).
    let mut c = small_base();
    c.device.geometry.blocks_per_plane = 110;
    c.device.over_provisioning_ratio = 0.1;
    c
}

fn grid() -> OpGrid {
    OpGrid {
        min: 0.0,
        max: 1.0,
        step: 0.05,
    }
}

#[test]
fn advisor_picks_the_smallest_op_meeting_the_requirement() {
    let cfg = advisor_config();
    assert_eq!(cfg.validate().unwrap().logical_units, 3200);
    for req in [
        Requirement::MaxWaf(2.0),
        Requirement::MinWriteMBps(4.0),
        Requirement::MaxTotalTime {
            host_writes: 1_000_000,
            max_time_ns: 3.0e11,
        },
    ] {
        let a = advise(
            &cfg,
            &AdviseParams {
                requirement: req,
                cost_per_gb: 0.1,
                op_grid: grid(),
            },
        )
        .unwrap();
        let i = a.best.expect("requirement reachable");
        assert!(a.rows[i].meets);
        assert!(a.rows[..i].iter().all(|r| !r.meets), "{req:?}");
        assert!(i > 0 && a.rows[i - 1].waf.is_none_or(|w| w > a.rows[i].waf.unwrap()));
        // Cost grows with OP, so the smallest meeting OP is the cheapest.
        assert!(a.rows.windows(2).all(|w| w[1].flash_cost > w[0].flash_cost));
        assert_eq!(a.pick("req", &grid()).unwrap().op_ratio, a.rows[i].op_ratio);
    }
    // Confirm the WAF pick and its neighbours by simulation.
    let req = Requirement::MaxWaf(2.0);
    let a = advise(
        &cfg,
        &AdviseParams {
            requirement: req,
            cost_per_gb: 0.1,
            op_grid: grid(),
        },
    )
    .unwrap();
    let i = a.best.unwrap();
    let ops = [
        a.rows[i - 1].op_ratio,
        a.rows[i].op_ratio,
        a.rows[i + 1].op_ratio,
    ];
    let rows = confirm(&cfg, &ops, req, 4.0, 16.0).unwrap();
    let sim_waf: Vec<f64> = rows.iter().map(|r| r.sim.unwrap().waf).collect();
    assert!(
        sim_waf[0] > sim_waf[1] && sim_waf[1] > sim_waf[2],
        "{sim_waf:?}"
    );
    for r in &rows {
        let e = r.waf_rel_err.unwrap();
        assert!(e.abs() < 0.03, "op {}: err {e}", r.op_ratio);
    }
    // The model's pick (WAF <= 2) holds in simulation too, within the tolerance.
    assert!(sim_waf[1] <= 2.0 * 1.03);
}

#[test]
fn unmet_requirement_is_an_error() {
    let cfg = advisor_config();
    let a = advise(
        &cfg,
        &AdviseParams {
            requirement: Requirement::MaxWaf(1.001),
            cost_per_gb: 0.1,
            op_grid: OpGrid {
                min: 0.0,
                max: 0.5,
                step: 0.05,
            },
        },
    )
    .unwrap();
    assert!(a.best.is_none());
    let e = a.pick("--max-waf 1.001", &grid()).unwrap_err();
    assert!(matches!(e, ExperimentError::RequirementUnmet { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("--max-waf 1.001") && msg.contains("largest OP"),
        "{msg}"
    );
    // Invalid requirement values are named.
    let e = advise(
        &cfg,
        &AdviseParams {
            requirement: Requirement::MaxWaf(0.5),
            cost_per_gb: 0.1,
            op_grid: grid(),
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("max_waf"), "{e}");
    // A policy without a model is refused by key.
    let mut c = advisor_config();
    c.ftl.gc = ssdlab_core::config::GcConfig::CostBenefit(Default::default());
    let e = advise(
        &c,
        &AdviseParams {
            requirement: Requirement::MaxWaf(2.0),
            cost_per_gb: 0.1,
            op_grid: grid(),
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("ftl.gc.policy"), "{e}");
}

#[test]
fn single_plane_model_is_waf_for_device_with_shared_layout() {
    let base = op::paper_base_config().unwrap();
    for bpp in [816, 880, 1200, 1600] {
        let (cfg, d) = device_with_blocks(&base, bpp, 102_400).unwrap();
        let (w, eff) = op::model_waf(&cfg, &d, Traffic::Uniform).unwrap();
        let (w2, eff2) = ssdlab_model::waf_for_device(
            ssdlab_model::GcPolicyModel::Greedy,
            Traffic::Uniform,
            102_400,
            bpp as u64 * 128,
            128,
            cfg.ftl.gc_soft_free_blocks as f64 + 0.5,
            ssdlab_model::FrontierLayout::Shared,
        )
        .unwrap();
        assert!(
            (w - w2).abs() < 1e-9 * w && (eff - eff2).abs() < 1e-12,
            "{bpp}"
        );
    }
}

/// The advisor's throughput (the die model: planes, command overheads, transfers; the dies
/// in parallel) against timed runs of uniform random 4 KiB writes at queue depth 64 on
/// 8-die devices of one and two planes per die: within 10 % (docs/op-model.md).
#[test]
fn advisor_throughput_follows_die_parallelism_of_timed_runs() {
    use ssdlab_core::{NoProgress, Simulation};
    let default = include_str!("../../../../configs/default.toml")
        .replace("read_percent = 70.0", "read_percent = 0.0")
        .replace("queue_depth = 16", "queue_depth = 64");
    // One plane per die, and the preset's two (issue 36: the die model counts host
    // programs on both planes at once; a serial die was 11 % below the timed run there).
    let one_plane = default
        .replace("planes_per_die = 2", "planes_per_die = 1")
        .replace("blocks_per_plane = 256", "blocks_per_plane = 128")
        .replace("requests = 200000", "requests = 150000");
    // Single-plane GC on the preset's two planes (issue 48: GC was single-plane before).
    let single = default.replace("[scheduler]", "[scheduler]\nmulti_plane_gc = false");
    let mut timed_of = Vec::new();
    for (name, text, planes) in [
        ("1 plane", one_plane, 8),
        ("2 planes", default, 16),
        ("2 planes, single-plane GC", single, 16),
    ] {
        let cfg = Config::from_toml_str(&text, name).unwrap();
        let d = cfg.validate().unwrap();
        assert_eq!((d.geometry.dies, d.geometry.planes), (8, planes));
        let model = model_point(&cfg, &d, Traffic::Uniform, 1).unwrap();
        let mut sim = Simulation::new(cfg).unwrap();
        sim.precondition(&mut NoProgress).unwrap();
        let r = sim.run_workload(&mut NoProgress).unwrap();
        let timed = r.host.write_mb_per_s;
        let err = model.write_mb_per_s / timed - 1.0;
        eprintln!(
            "{name}: model {:.2} MB/s, timed {timed:.2} MB/s",
            model.write_mb_per_s
        );
        timed_of.push(timed);
        assert!(
            err.abs() < 0.1,
            "{name}: model {:.1} MB/s, timed {timed:.1} MB/s ({:+.1} %)",
            model.write_mb_per_s,
            100.0 * err
        );
        // One serial resource for the whole device would be 8 times off.
        assert!(model.write_mb_per_s / 8.0 < timed * 0.5);
    }
    // Multi-plane GC: timed 73.0 against 57.9 MB/s single-plane.
    assert!(timed_of[1] > 1.2 * timed_of[2], "{timed_of:?}");
}
