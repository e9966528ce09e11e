//! Over-provisioning advisor: scan OP over a grid, evaluate the WAF model and the
//! derived serial-resource cost/performance, and pick the smallest (hence cheapest)
//! OP meeting a requirement.
//!
//! Grid points are *nominal* OP ratios `op = (physical − logical)/logical`, which
//! set the flash bought: `physical_gb = logical_gb·(1 + op)`, `flash_cost =
//! physical_gb·cost_per_gb`. The WAF model is evaluated at the *effective* OP
//! `op − reserve_op`, where `reserve_op = non_data_pages / logical_pages` accounts
//! for the free blocks the FTL keeps for GC and the open block(s) (see
//! [`crate::effective_op_ratio`]). Points whose effective OP is `≤ 0` are reported
//! with `waf = None` and never meet a requirement.
//!
//! Throughput uses one serial resource:
//! `page_bytes / (t_P·WAF + t_R·(WAF−1) + t_E·WAF/b)`, or with a [`DieModel`] the die's
//! busy time per host unit ([`die_ns_per_host_unit`]); MB means 10^6 bytes.

use serde::{Deserialize, Serialize};

use crate::{
    check_b, cost::die_ns_per_host_unit, cost::predict_costs, cost::sustained_write_bytes_per_sec,
    waf, DieModel, GcPolicyModel, ModelError, Traffic,
};

/// NAND timing and geometry of the single serial resource.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NandTiming {
    /// Page read time (ns).
    pub t_read_ns: f64,
    /// Page program time (ns).
    pub t_prog_ns: f64,
    /// Block erase time (ns).
    pub t_erase_ns: f64,
    /// Page size in bytes.
    pub page_bytes: u32,
}

/// What the user needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Requirement {
    /// Steady-state WAF at most this.
    MaxWaf(f64),
    /// Sustained write throughput at least this many MB/s (10^6 bytes/s).
    MinWriteMBps(f64),
    /// Writing `host_writes` pages (steady state) takes at most `max_time_ns`.
    MaxTotalTime {
        /// Host page writes in the volume.
        host_writes: u64,
        /// Time budget (ns).
        max_time_ns: f64,
    },
}

/// OP grid `min, min+step, …, ≤ max` (nominal OP ratios).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OpGrid {
    /// First OP ratio (≥ 0).
    pub min: f64,
    /// Last OP ratio (inclusive, up to rounding).
    pub max: f64,
    /// Step (> 0).
    pub step: f64,
}

impl Default for OpGrid {
    /// `0.0..=2.0` in steps of `0.05`.
    fn default() -> Self {
        OpGrid {
            min: 0.0,
            max: 2.0,
            step: 0.05,
        }
    }
}

impl OpGrid {
    /// The grid points. Errors name `op_grid.min/max/step`; at most 100 000 points.
    pub fn points(&self) -> Result<Vec<f64>, ModelError> {
        if !(self.min >= 0.0 && self.min.is_finite()) {
            return Err(ModelError::invalid(
                "op_grid.min",
                self.min,
                "must be finite and >= 0",
            ));
        }
        if !(self.max >= self.min && self.max.is_finite()) {
            return Err(ModelError::invalid(
                "op_grid.max",
                self.max,
                "must be finite and >= op_grid.min",
            ));
        }
        if !(self.step > 0.0 && self.step.is_finite()) {
            return Err(ModelError::invalid(
                "op_grid.step",
                self.step,
                "must be finite and > 0",
            ));
        }
        let n = ((self.max - self.min) / self.step + 1e-9).floor();
        if n > 100_000.0 {
            return Err(ModelError::invalid(
                "op_grid.step",
                self.step,
                "grid would exceed 100000 points",
            ));
        }
        Ok((0..=n as usize)
            .map(|i| self.min + i as f64 * self.step)
            .collect())
    }
}

/// Advisor inputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdvisorInput {
    /// GC policy to model.
    pub policy: GcPolicyModel,
    /// Host traffic.
    pub traffic: Traffic,
    /// Pages per block `b`.
    pub pages_per_block: u32,
    /// Timing of the serial resource.
    pub timing: NandTiming,
    /// User-visible capacity in GB (the unit `cost_per_gb` refers to).
    pub logical_gb: f64,
    /// Flash price per physical GB.
    pub cost_per_gb: f64,
    /// Non-data-holding spare as a fraction of logical capacity (GC free-block
    /// reserve + open blocks), subtracted from each grid OP before the model.
    pub reserve_op: f64,
    /// The requirement.
    pub requirement: Requirement,
    /// Grid of nominal OP ratios.
    pub op_grid: OpGrid,
    /// Independent serial resources working at once (the device's dies; 1 = one serial
    /// resource). Throughput scales by it and time divides by it.
    pub parallel_units: u32,
    /// Each resource is such a die (planes, command overheads, transfers); `None`: a
    /// serial resource of `timing` alone.
    pub die: Option<DieModel>,
}

/// One grid point of the cost/performance table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdvisorRow {
    /// Nominal OP ratio.
    pub op_ratio: f64,
    /// OP ratio given to the model (`op_ratio − reserve_op`).
    pub effective_op_ratio: f64,
    /// Physical capacity bought (GB).
    pub physical_gb: f64,
    /// `physical_gb · cost_per_gb`.
    pub flash_cost: f64,
    /// Model WAF; `None` when the effective OP is `≤ 0` (unbounded).
    pub waf: Option<f64>,
    /// Sustained write MB/s (10^6 B/s); `0` when `waf` is `None`.
    pub write_mb_per_s: f64,
    /// Time (ns, over `parallel_units` resources) for the requirement's volume when it is
    /// [`Requirement::MaxTotalTime`], else for one host page write.
    pub time_ns: Option<f64>,
    /// Whether this point meets the requirement.
    pub meets: bool,
}

/// Advisor output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// One row per grid point, in increasing OP.
    pub rows: Vec<AdvisorRow>,
    /// Index into `rows` of the smallest OP meeting the requirement (the cheapest,
    /// since cost grows with OP); `None` when no grid point does.
    pub best: Option<usize>,
}

impl Advice {
    /// The recommended row, if any.
    pub fn best_row(&self) -> Option<&AdvisorRow> {
        self.best.map(|i| &self.rows[i])
    }
}

fn validate(input: &AdvisorInput) -> Result<(), ModelError> {
    check_b(input.pages_per_block)?;
    let t = &input.timing;
    // Reuse the cost checks for the timing fields.
    sustained_write_bytes_per_sec(
        1.0,
        input.pages_per_block,
        t.page_bytes,
        t.t_read_ns,
        t.t_prog_ns,
        t.t_erase_ns,
    )?;
    if let Some(die) = &input.die {
        die_ns_per_host_unit(
            1.0,
            input.pages_per_block,
            t.t_read_ns,
            t.t_prog_ns,
            t.t_erase_ns,
            die,
        )?;
    }
    if !(input.logical_gb > 0.0 && input.logical_gb.is_finite()) {
        return Err(ModelError::invalid(
            "logical_gb",
            input.logical_gb,
            "must be finite and > 0",
        ));
    }
    if !(input.cost_per_gb >= 0.0 && input.cost_per_gb.is_finite()) {
        return Err(ModelError::invalid(
            "cost_per_gb",
            input.cost_per_gb,
            "must be finite and >= 0",
        ));
    }
    if !(input.reserve_op >= 0.0 && input.reserve_op.is_finite()) {
        return Err(ModelError::invalid(
            "reserve_op",
            input.reserve_op,
            "must be finite and >= 0",
        ));
    }
    match input.requirement {
        Requirement::MaxWaf(w) if !(w >= 1.0 && w.is_finite()) => Err(ModelError::invalid(
            "requirement.max_waf",
            w,
            "must be finite and >= 1",
        )),
        Requirement::MinWriteMBps(m) if !(m > 0.0 && m.is_finite()) => Err(ModelError::invalid(
            "requirement.min_write_mbps",
            m,
            "must be finite and > 0",
        )),
        Requirement::MaxTotalTime {
            host_writes,
            max_time_ns,
        } => {
            if host_writes == 0 {
                return Err(ModelError::invalid(
                    "requirement.host_writes",
                    0.0,
                    "must be > 0",
                ));
            }
            if !(max_time_ns > 0.0 && max_time_ns.is_finite()) {
                return Err(ModelError::invalid(
                    "requirement.max_time_ns",
                    max_time_ns,
                    "must be finite and > 0",
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Scans the OP grid and returns the cost/performance table and the smallest OP
/// meeting the requirement.
///
/// # Errors
/// Any invalid field, named (`pages_per_block`, `page_bytes`, `t_*_ns`,
/// `logical_gb`, `cost_per_gb`, `reserve_op`, `requirement.*`, `op_grid.*`,
/// `hot_*_fraction`).
pub fn advise(input: &AdvisorInput) -> Result<Advice, ModelError> {
    validate(input)?;
    let t = input.timing;
    let b = input.pages_per_block;
    let mut rows = Vec::new();
    for op in input.op_grid.points()? {
        let eff = op - input.reserve_op;
        let physical_gb = input.logical_gb * (1.0 + op);
        let w = if eff > 1e-9 {
            Some(waf(input.policy, input.traffic, eff, b)?)
        } else {
            // Still validate traffic so a bad hot/cold spec is reported.
            waf(input.policy, input.traffic, 1.0, b)?;
            None
        };
        let (mbps, time_ns, meets) = match w {
            None => (0.0, None, false),
            Some(w) => {
                let par = input.parallel_units.max(1) as f64;
                let volume = match input.requirement {
                    Requirement::MaxTotalTime { host_writes, .. } => host_writes,
                    _ => 1,
                };
                let mut c = predict_costs(w, volume, b, t.t_read_ns, t.t_prog_ns, t.t_erase_ns)?;
                let mbps = match &input.die {
                    Some(die) => {
                        let per = die_ns_per_host_unit(
                            w,
                            b,
                            t.t_read_ns,
                            t.t_prog_ns,
                            t.t_erase_ns,
                            die,
                        )?;
                        c.time_ns = per * volume as f64;
                        t.page_bytes as f64 * 1e9 / per / 1e6 * par
                    }
                    None => {
                        sustained_write_bytes_per_sec(
                            w,
                            b,
                            t.page_bytes,
                            t.t_read_ns,
                            t.t_prog_ns,
                            t.t_erase_ns,
                        )? / 1e6
                            * par
                    }
                };
                c.time_ns /= par;
                let meets = match input.requirement {
                    Requirement::MaxWaf(m) => w <= m,
                    Requirement::MinWriteMBps(m) => mbps >= m,
                    Requirement::MaxTotalTime { max_time_ns, .. } => c.time_ns <= max_time_ns,
                };
                (mbps, Some(c.time_ns), meets)
            }
        };
        rows.push(AdvisorRow {
            op_ratio: op,
            effective_op_ratio: eff,
            physical_gb,
            flash_cost: physical_gb * input.cost_per_gb,
            waf: w,
            write_mb_per_s: mbps,
            time_ns,
            meets,
        });
    }
    let best = rows.iter().position(|r| r.meets);
    Ok(Advice { rows, best })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_input(req: Requirement) -> AdvisorInput {
        AdvisorInput {
            parallel_units: 1,
            die: None,
            policy: GcPolicyModel::Greedy,
            traffic: Traffic::Uniform,
            pages_per_block: 128,
            timing: NandTiming {
                t_read_ns: 10_000.0,
                t_prog_ns: 100_000.0,
                t_erase_ns: 1_000_000.0,
                page_bytes: 1024,
            },
            logical_gb: 0.1,
            cost_per_gb: 0.08,
            reserve_op: 2.5 / 800.0,
            requirement: req,
            op_grid: OpGrid {
                min: 0.0,
                max: 1.0,
                step: 0.1,
            },
        }
    }

    /// Dies work in parallel: four give four times the throughput and a quarter of the
    /// time, with the same WAF; a throughput four dies reach needs less OP.
    /// With a die model the throughput and time are the die's busy time per host unit,
    /// over the dies; a bad die parameter is named before any row.
    #[test]
    fn die_model_sets_throughput_and_time() {
        let die = DieModel {
            planes: 2,
            gc_planes: 1.0,
            units_per_page: 4,
            command_ns: 1_000.0,
            unit_transfer_ns: 5_000.0,
        };
        let mut input = paper_input(Requirement::MaxTotalTime {
            host_writes: 1000,
            max_time_ns: 1e12,
        });
        input.parallel_units = 4;
        input.die = Some(die);
        let a = advise(&input).unwrap();
        let r = a.rows.iter().find(|r| r.waf.is_some()).unwrap();
        let t = input.timing;
        let per = die_ns_per_host_unit(
            r.waf.unwrap(),
            128,
            t.t_read_ns,
            t.t_prog_ns,
            t.t_erase_ns,
            &die,
        )
        .unwrap();
        assert!((r.write_mb_per_s - 1024.0 * 1e3 / per * 4.0).abs() < 1e-9);
        assert!((r.time_ns.unwrap() - per * 1000.0 / 4.0).abs() < 1e-6);
        input.die = Some(DieModel {
            unit_transfer_ns: -1.0,
            ..die
        });
        assert!(advise(&input)
            .unwrap_err()
            .to_string()
            .contains("die.unit_transfer_ns"));
    }

    #[test]
    fn parallel_units_scale_throughput_and_time() {
        let one = advise(&paper_input(Requirement::MaxWaf(2.0))).unwrap();
        let mut four_in = paper_input(Requirement::MaxWaf(2.0));
        four_in.parallel_units = 4;
        let four = advise(&four_in).unwrap();
        for (a, b) in one.rows.iter().zip(&four.rows) {
            assert_eq!(a.waf, b.waf);
            assert!((b.write_mb_per_s - 4.0 * a.write_mb_per_s).abs() < 1e-9);
            if let (Some(x), Some(y)) = (a.time_ns, b.time_ns) {
                assert!((y - x / 4.0).abs() < 1e-6);
            }
        }
        let need = one.rows.last().unwrap().write_mb_per_s * 1.5;
        let mut req = paper_input(Requirement::MinWriteMBps(need));
        assert!(advise(&req).unwrap().best.is_none(), "one resource cannot");
        req.parallel_units = 4;
        assert!(advise(&req).unwrap().best.is_some(), "four dies can");
    }

    #[test]
    fn picks_smallest_meeting_op() {
        let a = advise(&paper_input(Requirement::MaxWaf(2.0))).unwrap();
        assert_eq!(a.rows.len(), 11);
        assert!(a.rows[0].waf.is_none() && !a.rows[0].meets);
        let best = a.best_row().unwrap();
        assert!(best.waf.unwrap() <= 2.0);
        let i = a.best.unwrap();
        assert!(a.rows[..i].iter().all(|r| !r.meets));
        assert!(a.rows[i - 1].waf.unwrap() > 2.0);
        // Cost increases, throughput increases along the grid.
        for w in a.rows.windows(2) {
            assert!(w[1].flash_cost > w[0].flash_cost);
            assert!(w[1].write_mb_per_s >= w[0].write_mb_per_s);
        }
        // Unreachable requirement → None.
        let a = advise(&paper_input(Requirement::MinWriteMBps(100.0))).unwrap();
        assert!(a.best.is_none());
        // Throughput and time requirements agree with each other.
        let a = advise(&paper_input(Requirement::MinWriteMBps(5.0))).unwrap();
        let r = a.best_row().unwrap();
        assert!(r.write_mb_per_s >= 5.0);
        let n = 1_000_000u64;
        let budget = n as f64 * 1024.0 / 5.0e6 * 1e9;
        let b = advise(&paper_input(Requirement::MaxTotalTime {
            host_writes: n,
            max_time_ns: budget,
        }))
        .unwrap();
        assert_eq!(a.best, b.best);
    }

    #[test]
    fn bad_inputs_are_named() {
        let mut i = paper_input(Requirement::MaxWaf(0.5));
        assert!(advise(&i).unwrap_err().to_string().contains("max_waf"));
        i.requirement = Requirement::MaxWaf(2.0);
        i.op_grid.step = 0.0;
        assert!(advise(&i).unwrap_err().to_string().contains("op_grid.step"));
        i.op_grid.step = 0.1;
        i.logical_gb = -1.0;
        assert!(advise(&i).unwrap_err().to_string().contains("logical_gb"));
        i.logical_gb = 1.0;
        i.timing.page_bytes = 0;
        assert!(advise(&i).unwrap_err().to_string().contains("page_bytes"));
        i.timing.page_bytes = 4096;
        i.traffic = Traffic::HotCold {
            hot_io_fraction: 0.8,
            hot_space_fraction: 2.0,
        };
        assert!(advise(&i)
            .unwrap_err()
            .to_string()
            .contains("hot_space_fraction"));
    }
}
