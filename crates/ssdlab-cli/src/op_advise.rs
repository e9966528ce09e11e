//! `ssdlab op-advise`: the smallest over-provisioning that meets a requirement, from the
//! analytic model, confirmed by functional simulation (see `docs/reproduce-op.md`).

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args as ClapArgs};
use ssdlab_core::Config;
use ssdlab_experiments::op::{self as exp, AdviseParams};
use ssdlab_model::{OpGrid, Requirement};
use std::path::PathBuf;

#[derive(ClapArgs)]
#[command(group(ArgGroup::new("requirement").required(true).args(["max_waf", "min_write_mbps", "max_time"])))]
pub struct Args {
    /// Device + workload configuration (TOML). Its logical capacity is kept; OP adds blocks.
    config: PathBuf,
    /// Requirement: steady-state write amplification at most this.
    #[arg(long)]
    max_waf: Option<f64>,
    /// Requirement: sustained random-write throughput at least this many MB/s (10^6 B/s).
    #[arg(long)]
    min_write_mbps: Option<f64>,
    /// Requirement: writing --volume-bytes (steady state) takes at most this many seconds.
    #[arg(long, requires = "volume_bytes")]
    max_time: Option<f64>,
    /// Host write volume for --max-time, in bytes.
    #[arg(long)]
    volume_bytes: Option<u64>,
    /// Flash price per GB (10^9 bytes) of physical capacity, e.g. 0.08.
    #[arg(long)]
    cost_per_gb: f64,
    /// Smallest OP ratio of the grid.
    #[arg(long, default_value_t = 0.0)]
    op_min: f64,
    /// Largest OP ratio of the grid.
    #[arg(long, default_value_t = 2.0)]
    op_max: f64,
    /// OP grid step.
    #[arg(long, default_value_t = 0.05)]
    op_step: f64,
    /// Measured host unit writes per confirmation run (default: 4 x the logical capacity).
    #[arg(long)]
    confirm_requests: Option<u64>,
    /// Unmeasured warm-up unit writes after the fill (default: 2 x the logical capacity).
    #[arg(long)]
    warmup_requests: Option<u64>,
    /// Skip the confirmation by simulation.
    #[arg(long)]
    no_confirm: bool,
}

fn requirement(a: &Args, unit_bytes: u64) -> Result<(Requirement, String)> {
    if let Some(w) = a.max_waf {
        return Ok((Requirement::MaxWaf(w), format!("--max-waf {w}")));
    }
    if let Some(m) = a.min_write_mbps {
        return Ok((
            Requirement::MinWriteMBps(m),
            format!("--min-write-mbps {m}"),
        ));
    }
    let (Some(t), Some(v)) = (a.max_time, a.volume_bytes) else {
        bail!("one of --max-waf, --min-write-mbps or --max-time with --volume-bytes is required");
    };
    if !(t > 0.0 && t.is_finite()) {
        bail!("--max-time: {t} must be a finite number of seconds > 0");
    }
    if v == 0 {
        bail!("--volume-bytes: must be > 0");
    }
    Ok((
        Requirement::MaxTotalTime {
            host_writes: v.div_ceil(unit_bytes),
            max_time_ns: t * 1e9,
        },
        format!("--max-time {t} --volume-bytes {v}"),
    ))
}

pub fn run(a: &Args) -> Result<()> {
    let cfg = Config::from_file(&a.config)?;
    let d = cfg
        .validate()
        .with_context(|| format!("{}", a.config.display()))?;
    let unit_bytes = d.geometry.unit_bytes as u64;
    let (req, req_text) = requirement(a, unit_bytes)?;
    let grid = OpGrid {
        min: a.op_min,
        max: a.op_max,
        step: a.op_step,
    };
    let adv = exp::advise(
        &cfg,
        &AdviseParams {
            requirement: req,
            cost_per_gb: a.cost_per_gb,
            op_grid: grid,
        },
    )
    .with_context(|| format!("{}", a.config.display()))?;

    let g = &d.geometry;
    println!("# OP advisor: {}\n", a.config.display());
    println!(
        "* Device: {} planes x {} pages/block x {} B pages, {} B mapping unit; logical capacity {} units = {:.6} GB kept fixed (OP adds blocks per plane).",
        g.planes, g.pages_per_block, g.page_bytes, g.unit_bytes, adv.logical_units, adv.logical_gb
    );
    println!(
        "* Model: {:?} cleaning, {} traffic, b = {} units/block, per-unit times read {:.1} / program {:.1} / erase {:.1} us (cell mode {}), non-data reserve {:.5} of logical ({} GC free blocks + 1 open block per plane; conservative, the confirmation uses the exact fixed point).",
        adv.policy,
        exp::traffic_name(adv.traffic),
        adv.units_per_block,
        adv.timing.t_read_ns / 1e3,
        adv.timing.t_prog_ns / 1e3,
        adv.timing.t_erase_ns / 1e3,
        cfg.device.cell_mode.name(),
        adv.reserve_op,
        cfg.ftl.gc_soft_free_blocks,
    );
    println!(
        "* Throughput and time: the {} dies work in parallel, each running host programs on its {} planes at once and GC's reads and copies multi-plane where two planes' GC work of one kind meets (`[scheduler] multi_plane_gc`; erases one plane at a time), with command overheads and transfers (against timed runs of 100 % random writes on three devices this is within 10 %: docs/op-model.md).",
        g.dies, g.planes_per_die
    );
    if let Some(n) = &adv.traffic_note {
        println!("* Note: {n}.");
    }
    println!(
        "* Requirement: {req_text}; flash cost {} per GB.\n",
        a.cost_per_gb
    );
    let volume = matches!(req, Requirement::MaxTotalTime { .. });
    println!(
        "| OP | effective OP | physical GB | flash cost | model WAF | write MB/s | {} | meets |",
        if volume {
            "time for volume (s)"
        } else {
            "time per write (us)"
        }
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|:---:|");
    for (i, r) in adv.rows.iter().enumerate() {
        let time = match (r.time_ns, volume) {
            (Some(t), true) => format!("{:.3}", t / 1e9),
            (Some(t), false) => format!("{:.2}", t / 1e3),
            (None, _) => "-".into(),
        };
        println!(
            "| {:.2} | {:.4} | {:.6} | {:.6} | {} | {:.4} | {} | {}{} |",
            r.op_ratio,
            r.effective_op_ratio,
            r.physical_gb,
            r.flash_cost,
            r.waf.map_or("unbounded".into(), |w| format!("{w:.4}")),
            r.write_mb_per_s,
            time,
            if r.meets { "yes" } else { "no" },
            if adv.best == Some(i) { " <- pick" } else { "" }
        );
    }
    let best = adv.pick(&req_text, &grid)?;
    let bi = adv.best.unwrap_or(0);
    println!(
        "\nPick: OP {:.2} (physical {:.6} GB, flash cost {:.6}), model WAF {:.4}, {:.4} MB/s sustained.",
        best.op_ratio,
        best.physical_gb,
        best.flash_cost,
        best.waf.unwrap_or(f64::NAN),
        best.write_mb_per_s
    );
    if a.no_confirm {
        return Ok(());
    }
    let mut ops = Vec::new();
    if bi > 0 {
        ops.push(adv.rows[bi - 1].op_ratio);
    }
    ops.push(best.op_ratio);
    if bi + 1 < adv.rows.len() {
        ops.push(adv.rows[bi + 1].op_ratio);
    }
    let units = adv.logical_units as u64;
    let measured = a.confirm_requests.unwrap_or(4 * units);
    let warmup = a.warmup_requests.unwrap_or(2 * units);
    if measured == 0 {
        bail!("--confirm-requests: must be > 0");
    }
    println!(
        "\n## Confirmation by functional simulation\n\nFill, {warmup} warm-up and {measured} measured unit writes ({} traffic) per point, in parallel; whole blocks per plane, so the device OP differs slightly from the grid OP.\n",
        exp::traffic_name(adv.traffic)
    );
    let t0 = std::time::Instant::now();
    let rows = exp::confirm(
        &cfg,
        &ops,
        req,
        warmup as f64 / units as f64,
        measured as f64 / units as f64,
    )?;
    println!("| OP | blocks/plane | device OP | model WAF | simulated WAF | WAF err | simulated MB/s | simulation meets |");
    println!("|---:|---:|---:|---:|---:|---:|---:|:---:|");
    let mut pick_fails = false;
    for r in &rows {
        let mark = if r.op_ratio == best.op_ratio {
            " (pick)"
        } else {
            ""
        };
        match (&r.sim, &r.model, &r.error) {
            (Some(s), Some(m), _) => {
                let meets = r.sim_meets.unwrap_or(false);
                if r.op_ratio == best.op_ratio && !meets {
                    pick_fails = true;
                }
                println!(
                    "| {:.2}{mark} | {} | {:.4} | {:.4} | {:.4} | {:+.2} % | {:.4} | {} |",
                    r.op_ratio,
                    r.blocks_per_plane,
                    r.device_op_ratio,
                    m.waf,
                    s.waf,
                    r.waf_rel_err.unwrap_or(f64::NAN) * 100.0,
                    r.sim_write_mb_per_s.unwrap_or(f64::NAN),
                    if meets { "yes" } else { "no" }
                );
            }
            (_, _, Some(e)) => println!(
                "| {:.2}{mark} | {} | - | - | - | - | - | not simulable: {e} |",
                r.op_ratio, r.blocks_per_plane
            ),
            _ => {}
        }
    }
    println!(
        "\nConfirmation wall time {:.1} s.",
        t0.elapsed().as_secs_f64()
    );
    if pick_fails {
        println!("Warning: the simulated pick misses the requirement (model error or too short a run; see the WAF error); consider the next OP.");
    }
    Ok(())
}
