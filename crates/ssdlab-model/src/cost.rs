//! NAND operation counts and time derived from a WAF.
//!
//! Functional mode, one serial resource: per host page write the FTL performs on
//! average `WAF` programs (the host page plus `WAF − 1` GC copies), `WAF − 1` reads
//! (each copy reads its source page) and `WAF / b` erases (each erased block is
//! re-filled with `b` programs). Operations never overlap, so the time per host
//! write is
//!
//! ```text
//! t_host = t_P·WAF + t_R·(WAF − 1) + t_E·WAF/b
//! ```
//!
//! and the sustained write throughput is `page_bytes / t_host`. All counts are
//! steady-state **expectations** (real runs add the initial fill and fluctuate).

use serde::{Deserialize, Serialize};

use crate::ModelError;

/// Expected NAND work for a volume of host page writes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostPrediction {
    /// GC page reads (copies), `(WAF − 1)·host_writes`.
    pub nand_reads: f64,
    /// Page programs including the host pages, `WAF·host_writes`.
    pub nand_programs: f64,
    /// Block erases, `WAF·host_writes / b`.
    pub nand_erases: f64,
    /// Serial time, `reads·t_R + programs·t_P + erases·t_E`, in nanoseconds.
    pub time_ns: f64,
}

fn check_waf(waf: f64) -> Result<(), ModelError> {
    if !(waf >= 1.0 && waf.is_finite()) {
        return Err(ModelError::invalid("waf", waf, "must be finite and >= 1"));
    }
    Ok(())
}

fn check_time(name: &'static str, t: f64) -> Result<(), ModelError> {
    if !(t >= 0.0 && t.is_finite()) {
        return Err(ModelError::invalid(name, t, "must be finite and >= 0"));
    }
    Ok(())
}

fn check_ppb(pages_per_block: u32) -> Result<(), ModelError> {
    if pages_per_block == 0 {
        return Err(ModelError::invalid("pages_per_block", 0.0, "must be > 0"));
    }
    Ok(())
}

/// Expected steady-state NAND counts and serial time for `host_writes` page writes
/// at write amplification `waf` (see module docs for the formulas).
///
/// # Errors
/// `waf` not finite or `< 1`, `pages_per_block == 0`, or a negative / non-finite
/// time.
pub fn predict_costs(
    waf: f64,
    host_writes: u64,
    pages_per_block: u32,
    t_read_ns: f64,
    t_prog_ns: f64,
    t_erase_ns: f64,
) -> Result<CostPrediction, ModelError> {
    check_waf(waf)?;
    check_ppb(pages_per_block)?;
    check_time("t_read_ns", t_read_ns)?;
    check_time("t_prog_ns", t_prog_ns)?;
    check_time("t_erase_ns", t_erase_ns)?;
    let n = host_writes as f64;
    let nand_programs = waf * n;
    let nand_reads = (waf - 1.0) * n;
    let nand_erases = nand_programs / pages_per_block as f64;
    Ok(CostPrediction {
        nand_reads,
        nand_programs,
        nand_erases,
        time_ns: nand_reads * t_read_ns + nand_programs * t_prog_ns + nand_erases * t_erase_ns,
    })
}

/// Sustained host write throughput in bytes per second on one serial resource:
/// `page_bytes / (t_P·WAF + t_R·(WAF−1) + t_E·WAF/b)` (times in ns).
///
/// # Errors
/// As [`predict_costs`], plus `page_bytes == 0`, or all three times zero.
pub fn sustained_write_bytes_per_sec(
    waf: f64,
    pages_per_block: u32,
    page_bytes: u32,
    t_read_ns: f64,
    t_prog_ns: f64,
    t_erase_ns: f64,
) -> Result<f64, ModelError> {
    if page_bytes == 0 {
        return Err(ModelError::invalid("page_bytes", 0.0, "must be > 0"));
    }
    let per = predict_costs(waf, 1, pages_per_block, t_read_ns, t_prog_ns, t_erase_ns)?;
    if per.time_ns <= 0.0 {
        return Err(ModelError::invalid(
            "t_prog_ns",
            t_prog_ns,
            "operation times must not all be zero",
        ));
    }
    Ok(page_bytes as f64 * 1e9 / per.time_ns)
}

/// A die of the timed simulator for [`die_ns_per_host_unit`]: several planes, operations
/// with a command overhead and the channel transfer of their data.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DieModel {
    /// Planes per die: host programs run on all of them at once (one multi-plane
    /// program).
    pub planes: u32,
    /// Planes GC's reads and copies may run on at once (1 = single-plane GC, else
    /// `planes`; absent in a serialised model = 1). The batches they form are smaller:
    /// see [`die_ns_per_host_unit`].
    #[serde(default = "one_plane")]
    pub gc_planes: f64,
    /// Mapping units per NAND page (`b` and the unit times are per unit).
    pub units_per_page: u32,
    /// Command overhead of each operation (ns).
    pub command_ns: f64,
    /// Channel transfer of one unit (ns); the die waits for it.
    pub unit_transfer_ns: f64,
}

fn one_plane() -> f64 {
    1.0
}

/// Busy time of one die per host unit written (ns), writes keeping it busy, in the terms
/// of [`predict_costs`] (`t_*` per unit as there, `b` in units):
///
/// * host programs: `planes` pages per program, `(c + planes·s·x + s·t_P) / (planes·s)`;
/// * GC copies: `(WAF−1)/s` programs in batches of `q` pages, `(c + q·s·x + s·t_P)/q`
///   each, where `q = 1 + (gc_planes − 1)·(ρ² + π²)`: a batch takes another plane's first
///   GC operation when it is of the head's kind, which for independent planes happens with
///   the chance that two operations drawn from GC's mix (`ρ` reads, `π` programs) agree
///   (timed, `default.toml` writing flat out: 1.69 planes per program batch, the mix
///   gives 1.52);
/// * GC reads: one per victim page with a valid unit, `n = s·v / (1 − (1−v)^s)` units each
///   (`v = (WAF−1)/WAF`, the victim's valid fraction): `(WAF−1)/n` reads in batches of
///   `q`, `(c + s·t_R)/q + n·x` each;
/// * erases: `WAF/b` of `c + t_E` (two planes' victims seldom end together: 1.04 planes
///   per erase batch in the same run);
///
/// with `s` units per page, `c` the command and `x` one unit's transfer.
///
/// # Errors
/// As [`predict_costs`], plus `planes` or `units_per_page` zero, `gc_planes` outside
/// `1 ..= planes`, and a negative or
/// non-finite `command_ns` or `unit_transfer_ns` (named).
pub fn die_ns_per_host_unit(
    waf: f64,
    pages_per_block: u32,
    t_read_ns: f64,
    t_prog_ns: f64,
    t_erase_ns: f64,
    die: &DieModel,
) -> Result<f64, ModelError> {
    predict_costs(waf, 1, pages_per_block, t_read_ns, t_prog_ns, t_erase_ns)?;
    if die.planes == 0 {
        return Err(ModelError::invalid("die.planes", 0.0, "must be > 0"));
    }
    if die.units_per_page == 0 {
        return Err(ModelError::invalid(
            "die.units_per_page",
            0.0,
            "must be > 0",
        ));
    }
    if !(die.gc_planes >= 1.0 && die.gc_planes <= die.planes as f64) {
        return Err(ModelError::invalid(
            "die.gc_planes",
            die.gc_planes,
            "must be between 1 and die.planes",
        ));
    }
    for (name, v) in [
        ("die.command_ns", die.command_ns),
        ("die.unit_transfer_ns", die.unit_transfer_ns),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(ModelError::invalid(name, v, "must be finite and >= 0"));
        }
    }
    let s = die.units_per_page as f64;
    let p = die.planes as f64;
    let (c, x) = (die.command_ns, die.unit_transfer_ns);
    let copies = waf - 1.0;
    let host = (c + p * s * x + s * t_prog_ns) / (p * s);
    let per_read = if copies > 0.0 {
        let v = copies / waf;
        s * v / (1.0 - (1.0 - v).powf(s))
    } else {
        1.0
    };
    let (reads, programs) = (copies / per_read, copies / s);
    let q = if copies > 0.0 {
        let (rho, pi) = (reads / (reads + programs), programs / (reads + programs));
        1.0 + (die.gc_planes - 1.0) * (rho * rho + pi * pi)
    } else {
        1.0
    };
    let gc_programs = programs * (c + q * s * x + s * t_prog_ns) / q;
    let gc_reads = reads * ((c + s * t_read_ns) / q + per_read * x);
    let erases = waf / pages_per_block as f64 * (c + t_erase_ns);
    Ok(host + gc_programs + gc_reads + erases)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The die model by hand: WAF 2, 4 units per page (v = 1/2, 4·0.5/(1 − 0.5^4) = 32/15
    /// units per read), 2 planes, command 1 µs, unit transfer 5 µs.
    #[test]
    fn die_model_by_hand() {
        let die = DieModel {
            planes: 2,
            gc_planes: 1.0,
            units_per_page: 4,
            command_ns: 1_000.0,
            unit_transfer_ns: 5_000.0,
        };
        let (r, p, e) = (10_000.0, 100_000.0, 1_000_000.0);
        let got = die_ns_per_host_unit(2.0, 128, r, p, e, &die).unwrap();
        let host = (1_000.0 + 8.0 * 5_000.0 + 400_000.0) / 8.0;
        let gc_programs = (1_000.0 + 20_000.0 + 400_000.0) / 4.0;
        let n = 32.0 / 15.0;
        let gc_reads = (1_000.0 + 40_000.0 + n * 5_000.0) / n;
        let erases = 2.0 / 128.0 * 1_001_000.0;
        assert!((got - (host + gc_programs + gc_reads + erases)).abs() < 1e-6);
        // One plane, no overheads, WAF 1: a program per unit and the erases.
        let bare = DieModel {
            planes: 1,
            command_ns: 0.0,
            unit_transfer_ns: 0.0,
            ..die
        };
        let got = die_ns_per_host_unit(1.0, 128, r, p, e, &bare).unwrap();
        assert!((got - (p + e / 128.0)).abs() < 1e-6);
        // Multi-plane GC: 1/n reads and 1/4 programs per copied unit, shares ρ = 15/23 and
        // π = 8/23, batches of q = 1 + (225 + 64)/529 = 818/529 (commands and array times
        // shared, transfers not; erases single).
        let multi = DieModel {
            gc_planes: 2.0,
            ..die
        };
        let got = die_ns_per_host_unit(2.0, 128, r, p, e, &multi).unwrap();
        let q = 818.0 / 529.0;
        let gc_programs = (1_000.0 + q * 20_000.0 + 400_000.0) / q / 4.0;
        let gc_reads = ((1_000.0 + 40_000.0) / q + n * 5_000.0) / n;
        assert!((got - (host + gc_programs + gc_reads + erases)).abs() < 1e-6);
        let over = DieModel {
            gc_planes: 3.0,
            ..die
        };
        assert!(die_ns_per_host_unit(2.0, 128, r, p, e, &over)
            .unwrap_err()
            .to_string()
            .contains("die.gc_planes"));
        let bad = DieModel { planes: 0, ..die };
        assert!(die_ns_per_host_unit(2.0, 128, r, p, e, &bad)
            .unwrap_err()
            .to_string()
            .contains("die.planes"));
    }

    #[test]
    fn paper_settings() {
        // read 10 µs, program 100 µs, erase 1 ms; b = 128.
        let c = predict_costs(2.0, 1000, 128, 10_000.0, 100_000.0, 1_000_000.0).unwrap();
        assert_eq!(c.nand_programs, 2000.0);
        assert_eq!(c.nand_reads, 1000.0);
        assert_eq!(c.nand_erases, 2000.0 / 128.0);
        let t = 1000.0 * 10_000.0 + 2000.0 * 100_000.0 + 2000.0 / 128.0 * 1_000_000.0;
        assert!((c.time_ns - t).abs() < 1e-6);
        let bps = sustained_write_bytes_per_sec(2.0, 128, 1024, 10_000.0, 100_000.0, 1e6).unwrap();
        assert!((bps - 1024.0 * 1e9 / (t / 1000.0)).abs() < 1e-6);
        // WAF = 1: no reads.
        let c = predict_costs(1.0, 10, 64, 1.0, 1.0, 1.0).unwrap();
        assert_eq!(c.nand_reads, 0.0);
    }

    #[test]
    fn bad_arguments() {
        assert!(predict_costs(0.5, 1, 128, 1.0, 1.0, 1.0)
            .unwrap_err()
            .to_string()
            .contains("waf"));
        assert!(predict_costs(f64::INFINITY, 1, 128, 1.0, 1.0, 1.0).is_err());
        assert!(predict_costs(2.0, 1, 0, 1.0, 1.0, 1.0)
            .unwrap_err()
            .to_string()
            .contains("pages_per_block"));
        assert!(predict_costs(2.0, 1, 8, -1.0, 1.0, 1.0)
            .unwrap_err()
            .to_string()
            .contains("t_read_ns"));
        assert!(predict_costs(2.0, 1, 8, 1.0, f64::NAN, 1.0)
            .unwrap_err()
            .to_string()
            .contains("t_prog_ns"));
        assert!(sustained_write_bytes_per_sec(2.0, 8, 0, 1.0, 1.0, 1.0).is_err());
        assert!(sustained_write_bytes_per_sec(2.0, 8, 512, 0.0, 0.0, 0.0).is_err());
    }
}
