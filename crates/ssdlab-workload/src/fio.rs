//! fio job files: `[workload] kind = "fio"`, `path = "job.fio"`.
//!
//! The job file uses fio's INI layout: `[global]` sections set defaults for the job
//! sections that follow them, every other section is a job, `key=value` or a bare `key`
//! (boolean true), comment lines start with `#` or `;`. Each job becomes one flow per
//! `numjobs` clone, named after the section (`name.N` for clones).
//!
//! # Supported options
//!
//! | option (aliases) | meaning in ssdlab |
//! |---|---|
//! | `rw` (`readwrite`) | `read`, `write`, `trim`, `randread`, `randwrite`, `randtrim`, `rw`/`readwrite`, `randrw`; default `read`. `:N` offset modifiers are rejected |
//! | `rwmixread`, `rwmixwrite` | read share (percent) of `rw`/`randrw`, default 50; each request is drawn independently |
//! | `bs` (`blocksize`) | block size, `read,write,trim` comma form as in fio; default 4k |
//! | `bssplit` | `size/pct:size/pct…`, comma form per direction; blank percentages share the rest |
//! | `bsrange` (`blocksize_range`) | `min-max`: uniform over the multiples of `min` up to `max` |
//! | `ba` (`blockalign`) | alignment of random offsets; default the smallest block size |
//! | `iodepth` | queue depth of the (closed-loop) flow, default 1 |
//! | `size` | region size in bytes or percent of the device; default: from `offset` to the end of the device |
//! | `offset` | region start in bytes or percent of the device (percent rounded down to the alignment) |
//! | `io_size` (`io_limit`) | bytes to transfer (default `size`) |
//! | `number_ios` | stop after this many I/Os (flushes not counted) |
//! | `runtime` (`timeout`), `time_based` | run duration (default unit s); `time_based` ignores the byte limit. All jobs with a runtime must use the same one: it becomes the run's `duration_ns` |
//! | `numjobs` | clones of the job, each its own flow and random stream |
//! | `fsync`, `fdatasync` | a flush after every N writes |
//! | `random_distribution` | `random`, `zipf:θ[:c]`, `pareto:h[:c]`, `normal:σ[:c]` (alias `gauss`), `zoned:io/space:…` |
//! | `norandommap` | plain uniform draws instead of visiting every block once per pass |
//! | `randseed` | replaces the run's seed for this job |
//! | `thinktime`, `thinktime_blocks` | open loop: `thinktime_blocks` requests every `thinktime` (default unit µs) |
//! | `rate_iops` | open loop with a fixed inter-arrival time of 1e9 / rate ns |
//! | `kb_base` | 1024 (default) or 1000, as in fio |
//! | `name`, `description` | job name / ignored |
//! | `zonemode=zbd`, `zonesize`, `zonerange`, `zonecapacity`, `zoneskip`, `max_open_zones`, `job_max_open_zones`, `zone_reset_threshold`, `zone_reset_frequency`, `read_beyond_wp` | zoned device: writes at the write pointers, reads below them, resets as fio's `zbd.c` (the `zbd` module; docs/zns.md). All zones start empty |
//! | `fdp` (`dataplacement=fdp`), `plids` (`fdp_pli`), `plid_select` (`fdp_pli_select`) | FDP: writes carry placement identifiers, round robin or random over the list |
//!
//! Options that do not change what the device sees are accepted and ignored (see
//! [`IGNORED_OPTIONS`]). Any other option is an error naming the option, file and line.
//!
//! # Semantics
//!
//! * The job's region is `[offset, offset + size)` of the device's logical space; it must
//!   fit in `ctx.logical_bytes`.
//! * Sequential jobs keep one position per direction, starting at `offset` and wrapping at
//!   the end of the region. Random jobs pick aligned offsets so that the largest request
//!   fits. `random` without `norandommap` visits every aligned block once per pass in a
//!   seeded pseudo-random order (fio's random map); the other distributions draw
//!   independently. zipf and pareto ranks are scattered over the region (as fio hashes
//!   them); `:c` (0..1) shifts them. `normal:σ[:c]` has standard deviation σ percent of the
//!   region around `c` (default 0.5) and is not scattered: the hot area is contiguous.
//!   `zoned:60/10:30/20:10/70` sends 60 % of the I/O to the first 10 % of the region, etc.;
//!   both columns must add up to 100.
//! * A job stops when it has transferred `io_size` (default `size`) bytes, or after
//!   `number_ios` I/Os, whichever first; `time_based` drops the byte limit (the run then
//!   ends at `runtime`).
//! * Flushes from `fsync`/`fdatasync` follow the N-th write at once and carry its arrival
//!   time.
//! * `rate_iops` and `thinktime` turn the flow open-loop (arrivals do not wait for
//!   completions; `iodepth` is then ignored); both in one job are rejected.
//! * Seeds: flow `n` of job `j` draws from `rng::stream(seed, 0xF10 << 32 | j << 16 | n)`
//!   where `seed` is the job's `randseed` or the run's seed.
//! * Size suffixes follow fio's parser: with `kb_base=1024` `k`, `kb`, `m`, `mb`, … are
//!   powers of 1024 and `kib`, `mib`, … powers of 1000 (fio's compatibility mode); with
//!   `kb_base=1000` the other way round. Case is ignored; `b` means bytes. Times take
//!   `us`, `ms`, `s`, `m`, `h`, `d`.

use crate::address::{AddressKind, AddressSampler};
use crate::rng::{stream, tag, SimRng};
use crate::stats::WorkloadStats;
use crate::{
    Arrival, Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadContext, WorkloadError,
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use zbd::{SharedZones, ZoneTable};

/// `[workload] kind = "fio"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct FioWorkloadConfig {
    /// fio job file; a relative path resolves against the configuration file's directory.
    pub path: PathBuf,
}

/// Options accepted and ignored: they do not change the requests the device sees.
pub const IGNORED_OPTIONS: &[&str] = &[
    "ioengine",
    "direct",
    "buffered",
    "filename",
    "directory",
    "group_reporting",
    "thread",
    "invalidate",
    "randrepeat",
    "allrandrepeat",
    "fallocate",
    "cpus_allowed",
    "cpumask",
    "nice",
    "prio",
    "unified_rw_reporting",
    "stats",
    "eta",
    "output",
    "output-format",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_max_value",
    "log_offset",
    "log_compression",
    "log_unix_epoch",
    "per_job_logs",
    "lat_percentiles",
    "clat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "description",
];

/// Options ssdlab interprets (canonical names; aliases are mapped first).
const SUPPORTED_OPTIONS: &[&str] = &[
    "rw",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "bssplit",
    "bsrange",
    "ba",
    "iodepth",
    "size",
    "offset",
    "io_size",
    "number_ios",
    "runtime",
    "time_based",
    "numjobs",
    "fsync",
    "fdatasync",
    "random_distribution",
    "norandommap",
    "randseed",
    "thinktime",
    "thinktime_blocks",
    "rate_iops",
    "kb_base",
    "name",
    "zonemode",
    "zonesize",
    "zonerange",
    "zonecapacity",
    "zoneskip",
    "max_open_zones",
    "job_max_open_zones",
    "zone_reset_threshold",
    "zone_reset_frequency",
    "read_beyond_wp",
    "fdp",
    "dataplacement",
    "plids",
    "plid_select",
];

fn canonical(key: &str) -> &str {
    match key {
        "readwrite" => "rw",
        "blocksize" => "bs",
        "blocksize_range" => "bsrange",
        "blockalign" => "ba",
        "io_limit" => "io_size",
        "timeout" => "runtime",
        "fdp_pli" => "plids",
        "fdp_pli_select" => "plid_select",
        "data_placement" => "dataplacement",
        k => k,
    }
}

/// One `key[=value]` line.
#[derive(Clone, Debug)]
struct Setting {
    key: String,
    value: String,
    line: u64,
    text: String,
}

/// One job section with the global settings in force before it.
#[derive(Clone, Debug)]
struct JobSection {
    name: String,
    line: u64,
    text: String,
    settings: Vec<Setting>,
}

fn cut(text: &str) -> String {
    if text.chars().count() <= 120 {
        text.to_string()
    } else {
        let mut t: String = text.chars().take(120).collect();
        t.push('…');
        t
    }
}

fn parse_sections(text: &str, file: &str) -> Result<Vec<JobSection>, WorkloadError> {
    let err = |line: usize, raw: &str, reason: String| WorkloadError::Parse {
        file: file.to_string(),
        line: line as u64 + 1,
        text: cut(raw),
        reason,
    };
    let mut globals: Vec<Setting> = Vec::new();
    let mut jobs: Vec<JobSection> = Vec::new();
    enum Current {
        None,
        Global,
        Job,
    }
    let mut current = Current::None;
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if let Some(rest) = t.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(i, raw, "expected a section header `[name]`".into()));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(err(i, raw, "empty section name".into()));
            }
            if name == "global" {
                current = Current::Global;
            } else {
                jobs.push(JobSection {
                    name: name.to_string(),
                    line: i as u64 + 1,
                    text: cut(raw),
                    settings: globals.clone(),
                });
                current = Current::Job;
            }
            continue;
        }
        let (key, value) = match t.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (t, "1"),
        };
        let key = key.to_ascii_lowercase();
        let canon = canonical(&key);
        if !SUPPORTED_OPTIONS.contains(&canon) && !IGNORED_OPTIONS.contains(&canon) {
            return Err(err(
                i,
                raw,
                format!(
                    "unsupported fio option `{key}` (see the supported set in docs/workloads.md)"
                ),
            ));
        }
        if value.contains("${") || value.contains("$(") {
            return Err(err(
                i,
                raw,
                format!("`{key}`: environment variables and expressions are not supported"),
            ));
        }
        let setting = Setting {
            key: canon.to_string(),
            value: value.to_string(),
            line: i as u64 + 1,
            text: cut(raw),
        };
        match current {
            Current::None => {
                return Err(err(
                    i,
                    raw,
                    "option outside a section; expected `[global]` or `[job]` first".into(),
                ))
            }
            Current::Global => globals.push(setting),
            Current::Job => {
                if let Some(job) = jobs.last_mut() {
                    job.settings.push(setting);
                }
            }
        }
    }
    if jobs.is_empty() {
        return Err(WorkloadError::Parse {
            file: file.to_string(),
            line: text.lines().count() as u64,
            text: String::new(),
            reason: "the job file defines no job section".into(),
        });
    }
    Ok(jobs)
}

/// A size value: bytes or a share of the device.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SizeValue {
    Bytes(u64),
    Percent(f64),
}

/// fio's integer-with-suffix parser (see the module docs for the suffix rules).
fn parse_size(s: &str, kb_base: u64) -> Result<SizeValue, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = (&s[..split], s[split..].trim().to_ascii_lowercase());
    if num.is_empty() || num.starts_with('.') {
        return Err(format!(
            "`{s}`: expected a number with an optional k/m/g/t/p suffix"
        ));
    }
    if suffix == "%" {
        let v: f64 = num.parse().map_err(|_| format!("`{s}`: bad percentage"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("`{s}`: percentage beyond 100"));
        }
        return Ok(SizeValue::Percent(v));
    }
    let iec_flip = suffix.len() == 3 && suffix.ends_with("ib");
    let mult_base = if iec_flip {
        if kb_base == 1000 {
            1024
        } else {
            1000
        }
    } else {
        kb_base
    };
    // As fio's parser: `ki` (without b) is taken like `k`.
    let pow = match suffix.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "ki" | "kib" => 1,
        "m" | "mb" | "mi" | "mib" => 2,
        "g" | "gb" | "gi" | "gib" => 3,
        "t" | "tb" | "ti" | "tib" => 4,
        "p" | "pb" | "pi" | "pib" => 5,
        _ => {
            return Err(format!(
                "`{s}`: unknown suffix `{suffix}` (expected k, m, g, t, p, optionally with b or ib)"
            ))
        }
    };
    let mult = (mult_base as u128).pow(pow);
    let bytes: u128 = if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| format!("`{s}`: bad number"))?;
        (v * mult as f64).round() as u128
    } else {
        num.parse::<u128>()
            .map_err(|_| format!("`{s}`: bad number"))?
            * mult
    };
    u64::try_from(bytes)
        .map(SizeValue::Bytes)
        .map_err(|_| format!("`{s}`: too large"))
}

fn parse_bytes(s: &str, kb_base: u64) -> Result<u64, String> {
    match parse_size(s, kb_base)? {
        SizeValue::Bytes(b) => Ok(b),
        SizeValue::Percent(_) => Err(format!("`{s}`: a percentage is not allowed here")),
    }
}

/// Time with an optional suffix (us, ms, s, m, h, d); `default_ns` is the unit of a bare number.
fn parse_time_ns(s: &str, default_ns: u64) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = (&s[..split], s[split..].trim().to_ascii_lowercase());
    let v: u64 = num.parse().map_err(|_| {
        format!("`{s}`: expected an integer time with an optional unit (us, ms, s, m, h, d)")
    })?;
    let unit = match suffix.as_str() {
        "" => default_ns,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => {
            return Err(format!(
                "`{s}`: unknown time unit `{suffix}` (expected us, ms, s, m, h, d)"
            ))
        }
    };
    v.checked_mul(unit)
        .ok_or_else(|| format!("`{s}`: too large"))
}

fn parse_uint(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}`: expected an unsigned integer"))
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{s}`: expected 0 or 1")),
    }
}

/// fio's per-direction comma form: `a` → a,a,a; `a,b` → a,b,b; `a,b,` → a,b,-; `,b` → -,b,b.
fn per_direction(value: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "`{value}`: at most three comma-separated values (read,write,trim)"
        ));
    }
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let p = parts.get(i).copied().unwrap_or(parts[parts.len() - 1]);
        *slot = (!p.is_empty()).then_some(p);
    }
    Ok(out)
}

/// How request sizes are drawn for one direction.
#[derive(Clone, Debug, PartialEq)]
enum BlockSizes {
    Fixed(u64),
    /// Multiples of `min` in `[min, max]`, uniformly.
    Range(u64, u64),
    /// (size, cumulative probability).
    Split(Vec<(u64, f64)>),
}

impl BlockSizes {
    fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(s) | BlockSizes::Range(s, _) => *s,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(1),
        }
    }

    fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(s) | BlockSizes::Range(_, s) => *s,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(1),
        }
    }

    /// A size this can draw that is not a multiple of `unit` (a range draws multiples of
    /// its low end).
    fn not_multiple_of(&self, unit: u64) -> Option<u64> {
        let off = |s: &u64| unit > 0 && !s.is_multiple_of(unit);
        match self {
            BlockSizes::Fixed(s) | BlockSizes::Range(s, _) => Some(*s).filter(off),
            BlockSizes::Split(v) => v.iter().map(|e| e.0).find(off),
        }
    }

    fn sample(&self, rng: &mut SimRng) -> u64 {
        match self {
            BlockSizes::Fixed(s) => *s,
            BlockSizes::Range(min, max) => rng.gen_range(1..=max / min) * min,
            BlockSizes::Split(v) => {
                let u: f64 = rng.gen();
                v.iter().find(|e| u < e.1).unwrap_or(&v[v.len() - 1]).0
            }
        }
    }
}

fn parse_bssplit(s: &str, kb_base: u64) -> Result<BlockSizes, String> {
    let mut entries: Vec<(u64, Option<f64>)> = Vec::new();
    for e in s.split(':') {
        let (size, pct) = match e.split_once('/') {
            Some((a, b)) => (a, b.trim()),
            None => (e, ""),
        };
        let size = parse_bytes(size, kb_base)?;
        if size == 0 {
            return Err(format!("bssplit entry `{e}`: size must be > 0"));
        }
        let pct = if pct.is_empty() {
            None
        } else {
            let p: f64 = pct
                .parse()
                .map_err(|_| format!("bssplit entry `{e}`: bad percentage"))?;
            Some(p)
        };
        entries.push((size, pct));
    }
    let given: f64 = entries.iter().filter_map(|e| e.1).sum();
    let blanks = entries.iter().filter(|e| e.1.is_none()).count();
    if given > 100.0 + 1e-9 || entries.iter().any(|e| e.1.is_some_and(|p| p < 0.0)) {
        return Err(format!(
            "bssplit `{s}`: percentages add up to {given}, more than 100"
        ));
    }
    if blanks == 0 && (given - 100.0).abs() > 1e-6 {
        return Err(format!(
            "bssplit `{s}`: percentages add up to {given}, not 100"
        ));
    }
    let share = if blanks > 0 {
        (100.0 - given) / blanks as f64
    } else {
        0.0
    };
    let mut acc = 0.0;
    let mut out = Vec::with_capacity(entries.len());
    for (size, pct) in entries {
        acc += pct.unwrap_or(share) / 100.0;
        out.push((size, acc));
    }
    if let Some(last) = out.last_mut() {
        last.1 = 1.0;
    }
    Ok(BlockSizes::Split(out))
}

fn parse_bsrange(s: &str, kb_base: u64) -> Result<BlockSizes, String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("`{s}`: expected min-max"))?;
    let (min, max) = (parse_bytes(a, kb_base)?, parse_bytes(b, kb_base)?);
    if min == 0 || max < min {
        return Err(format!("`{s}`: expected 0 < min <= max"));
    }
    Ok(BlockSizes::Range(min, max))
}

/// Address distribution of a random job before it is sized to a region.
#[derive(Clone, Debug, PartialEq)]
enum Distribution {
    Random,
    Zipf(f64, f64),
    Pareto(f64, f64),
    /// sigma percent, centre fraction
    Normal(f64, f64),
    /// (io percent, space percent)
    Zoned(Vec<(f64, f64)>),
}

fn parse_distribution(s: &str) -> Result<Distribution, String> {
    let s = s.trim();
    let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
    let params = |n_req: usize| -> Result<(f64, f64), String> {
        let ps: Vec<&str> = if rest.is_empty() {
            vec![]
        } else {
            rest.split(':').collect()
        };
        if ps.len() < n_req || ps.len() > 2 {
            return Err(format!("`{s}`: expected {kind}:value[:centre]"));
        }
        let v: f64 = ps[0]
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: bad number `{}`", ps[0]))?;
        let c: f64 = match ps.get(1) {
            Some(c) => c
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: bad centre `{c}`"))?,
            None => f64::NAN,
        };
        if !c.is_nan() && !(0.0..=1.0).contains(&c) {
            return Err(format!("`{s}`: centre must be in 0..1"));
        }
        Ok((v, c))
    };
    match kind {
        "random" if rest.is_empty() => Ok(Distribution::Random),
        "zipf" => {
            let (v, c) = params(1)?;
            if v <= 0.0 || v.is_nan() {
                return Err(format!("`{s}`: zipf theta must be > 0"));
            }
            Ok(Distribution::Zipf(v, if c.is_nan() { 0.0 } else { c }))
        }
        "pareto" => {
            let (v, c) = params(1)?;
            if !(v > 0.0 && v < 1.0) {
                return Err(format!("`{s}`: pareto power must be in (0, 1)"));
            }
            Ok(Distribution::Pareto(v, if c.is_nan() { 0.0 } else { c }))
        }
        "normal" | "gauss" => {
            let (v, c) = params(1)?;
            if !(v > 0.0 && v <= 100.0) {
                return Err(format!("`{s}`: normal deviation must be a percentage in (0, 100]"));
            }
            Ok(Distribution::Normal(v, if c.is_nan() { 0.5 } else { c }))
        }
        "zoned" => {
            if rest.contains(',') {
                return Err(format!("`{s}`: per-direction zone lists are not supported; give one list"));
            }
            let mut zones = Vec::new();
            for z in rest.split(':') {
                let (io, space) = z.split_once('/').ok_or_else(|| format!("`{s}`: zone `{z}`: expected io%/space%"))?;
                let io: f64 = io.trim().parse().map_err(|_| format!("`{s}`: zone `{z}`: bad io percentage"))?;
                let space: f64 =
                    space.trim().parse().map_err(|_| format!("`{s}`: zone `{z}`: bad space percentage"))?;
                if io < 0.0 || space < 0.0 || (io > 0.0 && space == 0.0) {
                    return Err(format!("`{s}`: zone `{z}`: percentages must be >= 0, and a zone with I/O needs space"));
                }
                zones.push((io, space));
            }
            let (io, space): (f64, f64) = zones.iter().fold((0.0, 0.0), |a, z| (a.0 + z.0, a.1 + z.1));
            if (io - 100.0).abs() > 1e-6 || (space - 100.0).abs() > 1e-6 {
                return Err(format!("`{s}`: zones add up to {io}% of I/O and {space}% of space, both must be 100"));
            }
            Ok(Distribution::Zoned(zones))
        }
        _ => Err(format!(
            "`{s}`: expected random, zipf:θ, pareto:h, normal:σ or zoned:io/space:… (zoned_abs is not supported)"
        )),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ops {
    Only(HostOp),
    /// Read with this probability, else write.
    Mix(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Timing {
    Closed(u32),
    /// One request every `1e9 / iops` ns.
    Rate(u64),
    /// `blocks` requests every `think_ns`.
    Think {
        think_ns: u64,
        blocks: u64,
    },
}

/// A validated job: everything needed to build its flows.
#[derive(Clone, Debug)]
struct JobPlan {
    name: String,
    sequential: bool,
    ops: Ops,
    sizes: [BlockSizes; 3],
    align: u64,
    max_bs: u64,
    region_offset: u64,
    region_bytes: u64,
    distribution: Distribution,
    norandommap: bool,
    io_limit: Option<u64>,
    ios_limit: Option<u64>,
    fsync_every: [u64; 2],
    timing: Timing,
    numjobs: u32,
    seed: u64,
    runtime_ns: Option<(u64, Setting)>,
    /// `zonemode=zbd`, with the job's `max_open_zones` setting (validated).
    zbd: Option<(zbd::ZbdJob, Option<(u32, Setting)>)>,
    /// `fdp=1`: the placement identifiers of the job's writes.
    fdp: Option<FdpPlan>,
}

/// `fdp=1`: fio's placement-ID list (`plids`, sorted as fio sorts it) and how the next one
/// is chosen.
#[derive(Clone, Debug, PartialEq)]
struct FdpPlan {
    ids: Vec<u16>,
    random: bool,
}

fn dir_index(op: HostOp) -> usize {
    match op {
        HostOp::Read => 0,
        HostOp::Write => 1,
        _ => 2,
    }
}

/// A job's settings by key, for the option groups of [`plan_job`]: an error names the
/// setting (file, line, option) or, for what no one setting says, the job.
struct JobOptions<'a> {
    job: &'a JobSection,
    file: &'a str,
    map: HashMap<&'a str, &'a Setting>,
}

impl<'a> JobOptions<'a> {
    fn new(job: &'a JobSection, file: &'a str) -> Self {
        let mut map: HashMap<&str, &Setting> = HashMap::new();
        for s in &job.settings {
            map.insert(s.key.as_str(), s);
        }
        JobOptions { job, file, map }
    }

    fn get(&self, key: &str) -> Option<&'a Setting> {
        self.map.get(key).copied()
    }

    fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// An error at setting `s`.
    fn at(&self, s: &Setting, reason: String) -> WorkloadError {
        WorkloadError::Parse {
            file: self.file.to_string(),
            line: s.line,
            text: s.text.clone(),
            reason: format!("{}: {reason}", s.key),
        }
    }

    /// An error at the job's section header.
    fn at_job(&self, reason: String) -> WorkloadError {
        WorkloadError::Parse {
            file: self.file.to_string(),
            line: self.job.line,
            text: self.job.text.clone(),
            reason: format!("job `{}`: {reason}", self.job.name),
        }
    }

    /// An error at `s` if given, else at the job.
    fn at_or_job(&self, s: Option<&Setting>, reason: String) -> WorkloadError {
        match s {
            Some(s) => self.at(s, reason),
            None => self.at_job(reason),
        }
    }

    /// Option `key` parsed with `f`, or `None` when absent.
    fn parse<T>(
        &self,
        key: &str,
        f: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<T>, WorkloadError> {
        match self.get(key) {
            Some(s) => f(s.value.as_str()).map(Some).map_err(|e| self.at(s, e)),
            None => Ok(None),
        }
    }
}

/// `p` percent of the device's `logical` bytes.
fn of_device(logical: u64, p: f64) -> u64 {
    ((logical as f64) * p / 100.0) as u64
}

/// A job's block sizes (`bs`, `bsrange`, `bssplit` per direction), the largest the job
/// uses and the offset alignment (`ba`).
struct BlockPlan {
    sizes: [BlockSizes; 3],
    max_bs: u64,
    align: u64,
}

/// A job's region of the device: `offset..offset + bytes`.
#[derive(Clone, Copy)]
struct Region {
    offset: u64,
    bytes: u64,
}

/// A job's end: its runtime, the bytes and requests it issues, its syncs.
struct LimitPlan {
    runtime_ns: Option<(u64, Setting)>,
    io_limit: Option<u64>,
    ios_limit: Option<u64>,
    fsync_every: [u64; 2],
}

/// A job, option group by group (an error names the file, line and option, or the job).
fn plan_job(job: &JobSection, file: &str, ctx: &WorkloadContext) -> Result<JobPlan, WorkloadError> {
    let o = JobOptions::new(job, file);
    let kb_base = o
        .parse("kb_base", |v: &str| match v.trim() {
            "1024" => Ok(1024u64),
            "1000" => Ok(1000u64),
            _ => Err(format!("`{v}`: expected 1024 or 1000")),
        })?
        .unwrap_or(1024);
    let name = o
        .get("name")
        .map(|s| s.value.clone())
        .unwrap_or_else(|| job.name.clone());
    let (sequential, ops) = plan_ops(&o)?;
    let bs = plan_block_sizes(&o, kb_base, ops)?;
    let region = plan_region(&o, kb_base, ctx.logical_bytes, &bs)?;
    let (region, zbd) = plan_zones(&o, kb_base, ctx, ops, &bs.sizes, region)?;
    let fdp = plan_fdp(&o, ctx)?;
    let limits = plan_limits(&o, kb_base, ctx.logical_bytes, region.bytes)?;
    let distribution = o
        .parse("random_distribution", parse_distribution)?
        .unwrap_or(Distribution::Random);
    let norandommap = o.parse("norandommap", parse_bool)?.unwrap_or(false);
    let timing = plan_timing(&o)?;
    let numjobs = o.parse("numjobs", parse_uint)?.unwrap_or(1);
    if numjobs == 0 || numjobs > 65_535 {
        return Err(o.at(o.map["numjobs"], format!("{numjobs}: expected 1..=65535")));
    }
    let seed = o.parse("randseed", parse_uint)?.unwrap_or(ctx.seed);
    Ok(JobPlan {
        name,
        sequential,
        ops,
        sizes: bs.sizes,
        align: bs.align,
        max_bs: bs.max_bs,
        region_offset: region.offset,
        region_bytes: region.bytes,
        distribution,
        norandommap,
        io_limit: limits.io_limit,
        ios_limit: limits.ios_limit,
        fsync_every: limits.fsync_every,
        timing,
        numjobs: numjobs as u32,
        seed,
        runtime_ns: limits.runtime_ns,
        zbd,
        fdp,
    })
}

/// `rw`, `rwmixread`, `rwmixwrite`: whether the job is sequential, and its operations.
fn plan_ops(o: &JobOptions) -> Result<(bool, Ops), WorkloadError> {
    let (sequential, ops) = o
        .parse("rw", |v: &str| {
            if v.contains(':') {
                return Err(format!("`{v}`: offset modifiers (`:N`) are not supported"));
            }
            Ok(match v.trim() {
                "read" => (true, Ops::Only(HostOp::Read)),
                "write" => (true, Ops::Only(HostOp::Write)),
                "trim" => (true, Ops::Only(HostOp::Trim)),
                "randread" => (false, Ops::Only(HostOp::Read)),
                "randwrite" => (false, Ops::Only(HostOp::Write)),
                "randtrim" => (false, Ops::Only(HostOp::Trim)),
                "rw" | "readwrite" => (true, Ops::Mix(0.5)),
                "randrw" => (false, Ops::Mix(0.5)),
                other => {
                    return Err(format!(
                        "`{other}`: expected read, write, trim, randread, randwrite, randtrim, rw, readwrite or randrw"
                    ))
                }
            })
        })?
        .unwrap_or((true, Ops::Only(HostOp::Read)));
    let pct = |v: &str| -> Result<f64, String> {
        let p: f64 = v
            .trim()
            .parse()
            .map_err(|_| format!("`{v}`: expected a percentage"))?;
        if (0.0..=100.0).contains(&p) {
            Ok(p)
        } else {
            Err(format!("`{v}`: expected a percentage in 0..=100"))
        }
    };
    let mixread = o.parse("rwmixread", pct)?;
    let mixwrite = o.parse("rwmixwrite", pct)?;
    let read_share = match (mixread, mixwrite) {
        (Some(r), Some(w)) if (r + w - 100.0).abs() > 1e-9 => {
            return Err(o.at(
                o.map["rwmixwrite"],
                format!("rwmixread ({r}) + rwmixwrite ({w}) must be 100"),
            ))
        }
        (Some(r), _) => r / 100.0,
        (None, Some(w)) => 1.0 - w / 100.0,
        (None, None) => 0.5,
    };
    let ops = match ops {
        Ops::Mix(_) => Ops::Mix(read_share),
        o => o,
    };
    Ok((sequential, ops))
}

/// `bs`, `bsrange`, `bssplit` (bssplit > bsrange > bs, per direction) and `ba`.
fn plan_block_sizes(o: &JobOptions, kb_base: u64, ops: Ops) -> Result<BlockPlan, WorkloadError> {
    let mut sizes = [
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(4096),
    ];
    let per_dir = |key: &'static str,
                   parse: &dyn Fn(&str) -> Result<BlockSizes, String>,
                   sizes: &mut [BlockSizes; 3]| {
        if let Some(s) = o.get(key) {
            let dirs = per_direction(&s.value).map_err(|e| o.at(s, e))?;
            for (i, d) in dirs.iter().enumerate() {
                if let Some(v) = d {
                    sizes[i] = parse(v).map_err(|e| o.at(s, e))?;
                }
            }
        }
        Ok::<(), WorkloadError>(())
    };
    per_dir(
        "bs",
        &|v| match parse_bytes(v, kb_base)? {
            0 => Err(format!("`{v}`: block size must be > 0")),
            b => Ok(BlockSizes::Fixed(b)),
        },
        &mut sizes,
    )?;
    per_dir("bsrange", &|v| parse_bsrange(v, kb_base), &mut sizes)?;
    per_dir("bssplit", &|v| parse_bssplit(v, kb_base), &mut sizes)?;
    let used: Vec<usize> = match ops {
        Ops::Only(op) => vec![dir_index(op)],
        Ops::Mix(r) if r >= 1.0 => vec![0],
        Ops::Mix(r) if r <= 0.0 => vec![1],
        Ops::Mix(_) => vec![0, 1],
    };
    let min_bs = used.iter().map(|&d| sizes[d].min()).min().unwrap_or(4096);
    let max_bs = used.iter().map(|&d| sizes[d].max()).max().unwrap_or(4096);
    let align = o
        .parse("ba", |v: &str| {
            if v.contains(',') {
                return Err(format!("`{v}`: give one alignment for all directions"));
            }
            match parse_bytes(v, kb_base)? {
                0 => Err(format!("`{v}`: must be > 0")),
                b => Ok(b),
            }
        })?
        .unwrap_or(min_bs);
    Ok(BlockPlan {
        sizes,
        max_bs,
        align,
    })
}

/// `offset` and `size`: the job's region of the device's `logical` bytes.
fn plan_region(
    o: &JobOptions,
    kb_base: u64,
    logical: u64,
    bs: &BlockPlan,
) -> Result<Region, WorkloadError> {
    let offset = match o.parse("offset", |v: &str| parse_size(v, kb_base))? {
        Some(SizeValue::Bytes(b)) => b,
        Some(SizeValue::Percent(p)) => of_device(logical, p) / bs.align * bs.align,
        None => 0,
    };
    if offset >= logical {
        return Err(o.at(
            o.map["offset"],
            format!("{offset} is beyond the device's {logical} bytes"),
        ));
    }
    let bytes = match o.parse("size", |v: &str| parse_size(v, kb_base))? {
        Some(SizeValue::Bytes(b)) => b,
        Some(SizeValue::Percent(p)) => of_device(logical, p),
        None => logical - offset,
    };
    if offset.saturating_add(bytes) > logical {
        let reason =
            format!("region offset {offset} + size {bytes} exceeds the device's {logical} bytes");
        return Err(o.at_or_job(o.get("size").or(o.get("offset")), reason));
    }
    if bytes < bs.max_bs {
        let reason = format!(
            "region of {bytes} bytes is smaller than the largest block ({} bytes)",
            bs.max_bs
        );
        return Err(o.at_or_job(o.get("size"), reason));
    }
    Ok(Region { offset, bytes })
}

/// The zone options, which apply with `zonemode=zbd` only.
const ZONE_KEYS: [&str; 9] = [
    "zonesize",
    "zonerange",
    "zonecapacity",
    "zoneskip",
    "max_open_zones",
    "job_max_open_zones",
    "zone_reset_threshold",
    "zone_reset_frequency",
    "read_beyond_wp",
];

/// A `zonemode=zbd` job's zone plan, with its `max_open_zones` setting (validated).
type ZbdPlan = (zbd::ZbdJob, Option<(u32, Setting)>);

/// `zonemode` and the zone options (fio's zbd.c: zbd_zone_align_file_sizes, zbd_verify_bs,
/// zbd_setup_files): the region, whole zones with `zonemode=zbd`, and the zone plan.
fn plan_zones(
    o: &JobOptions,
    kb_base: u64,
    ctx: &WorkloadContext,
    ops: Ops,
    sizes: &[BlockSizes; 3],
    region: Region,
) -> Result<(Region, Option<ZbdPlan>), WorkloadError> {
    let zonemode = o.get("zonemode");
    let s_mode = match zonemode.map(|s| (s, s.value.trim())) {
        None | Some((_, "none")) => None,
        Some((s, "zbd")) => Some(s),
        Some((s, "strided")) => {
            return Err(o.at(
                s,
                "`strided` is not supported; use `zbd` (zoned device) or `none`".into(),
            ))
        }
        Some((s, v)) => return Err(o.at(s, format!("`{v}`: expected none or zbd"))),
    };
    let Some(s_mode) = s_mode else {
        if let Some(k) = ZONE_KEYS.iter().find(|k| o.has(k)) {
            return Err(o.at(
                o.map[*k],
                "applies to zonemode=zbd only (zonemode=strided is not supported)".into(),
            ));
        }
        return Ok((region, None));
    };
    let Some(geo) = ctx.zones else {
        return Err(o.at(
            s_mode,
            "zonemode=zbd needs a zoned device ([device.zns]); the space it runs on is conventional (inside a log-structured host layer: the layer's own space, where plain writes go)"
                .into(),
        ));
    };
    zone_sizes_match(o, kb_base, &geo)?;
    let (rd, wr, tr) = match ops {
        Ops::Only(HostOp::Read) => (true, false, false),
        Ops::Only(HostOp::Write) => (false, true, false),
        Ops::Only(_) => (false, false, true),
        Ops::Mix(_) => (true, true, false),
    };
    let region = zone_region(o, geo.zone_bytes, region, !rd || wr || tr)?;
    zone_block_sizes(o, ctx, &geo, sizes, wr, tr)?;
    let max_open = zone_max_open(o, &geo)?;
    let job_max_open = o.parse("job_max_open_zones", parse_uint)?.unwrap_or(0);
    let frac = |v: &str| -> Result<f64, String> {
        match v.trim().parse::<f64>() {
            Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
            _ => Err(format!("`{v}`: expected a number between 0 and 1")),
        }
    };
    let reset_threshold = o.parse("zone_reset_threshold", frac)?.unwrap_or(0.0);
    let reset_frequency = o.parse("zone_reset_frequency", frac)?.unwrap_or(0.0);
    let read_beyond_wp = o.parse("read_beyond_wp", parse_bool)?.unwrap_or(false);
    let job = zbd::ZbdJob {
        min_zone: geo.zone_of(region.offset),
        max_zone: geo.zone_of(region.offset + region.bytes),
        region_bytes: region.bytes,
        min_bs: [sizes[0].min(), sizes[1].min()],
        job_max_open: job_max_open.min(u32::MAX as u64) as u32,
        reset_threshold,
        reset_frequency,
        read_beyond_wp,
    };
    Ok((region, Some((job, max_open))))
}

/// `zonesize`, `zonerange`, `zonecapacity` must be the device's; `zoneskip` 0.
fn zone_sizes_match(
    o: &JobOptions,
    kb_base: u64,
    geo: &crate::ZoneGeometry,
) -> Result<(), WorkloadError> {
    let must_equal = |key: &'static str, want: u64, what: &str| -> Result<(), WorkloadError> {
        if let Some(s) = o.get(key) {
            let v = parse_bytes(&s.value, kb_base).map_err(|e| o.at(s, e))?;
            if v != want {
                return Err(o.at(
                    s,
                    format!("{v} bytes, but the device's {what} is {want} bytes"),
                ));
            }
        }
        Ok(())
    };
    must_equal("zonesize", geo.zone_bytes, "zone size")?;
    must_equal("zonerange", geo.zone_bytes, "zone size")?;
    must_equal("zonecapacity", geo.zone_capacity_bytes, "zone capacity")?;
    if let Some(s) = o.get("zoneskip") {
        if parse_bytes(&s.value, kb_base).map_err(|e| o.at(s, e))? != 0 {
            return Err(o.at(s, "must be 0 with zonemode=zbd".into()));
        }
    }
    Ok(())
}

/// The region in whole zones of `zb` bytes, as fio aligns it: the start rounded up (unless
/// the job only reads, `align_start` false), the end down.
fn zone_region(
    o: &JobOptions,
    zb: u64,
    region: Region,
    align_start: bool,
) -> Result<Region, WorkloadError> {
    let mut offset = region.offset;
    if align_start {
        offset = offset.div_ceil(zb) * zb;
    }
    let end = (region.offset + region.bytes) / zb * zb;
    if end <= offset {
        let reason =
            format!("with zonemode=zbd the region must hold at least one whole zone of {zb} bytes");
        return Err(o.at_or_job(o.get("size").or(o.get("offset")), reason));
    }
    Ok(Region {
        offset,
        bytes: end - offset,
    })
}

/// With `zonemode=zbd`: a write within a zone and of whole mapping units, a trim a whole
/// zone (errors at the block size option, else the job).
fn zone_block_sizes(
    o: &JobOptions,
    ctx: &WorkloadContext,
    geo: &crate::ZoneGeometry,
    sizes: &[BlockSizes; 3],
    wr: bool,
    tr: bool,
) -> Result<(), WorkloadError> {
    let zb = geo.zone_bytes;
    let bs_line = |reason: String| {
        o.at_or_job(
            o.get("bs").or(o.get("bssplit")).or(o.get("bsrange")),
            reason,
        )
    };
    if wr && sizes[1].max() > zb {
        return Err(bs_line(format!(
            "a write of {} bytes exceeds the zone size ({zb} bytes)",
            sizes[1].max()
        )));
    }
    if let Some(s) = sizes[1].not_multiple_of(ctx.unit_bytes).filter(|_| wr) {
        // fio's zbd_verify_bs: a zone write covers whole logical blocks (here the
        // mapping unit); the device refuses any other with zone_invalid_write.
        return Err(bs_line(format!(
            "a write of {s} bytes is not a multiple of the device's mapping unit ({} bytes): with zonemode=zbd every write must cover whole units, or the device refuses it (zone_invalid_write) and the job loses every write",
            ctx.unit_bytes
        )));
    }
    if wr && sizes[1].min() > geo.zone_capacity_bytes {
        return Err(bs_line(format!(
            "the zone capacity ({} bytes) is smaller than the smallest write ({} bytes)",
            geo.zone_capacity_bytes,
            sizes[1].min()
        )));
    }
    if tr && (sizes[2].min() != zb || sizes[2].max() != zb) {
        return Err(bs_line(format!(
            "with zonemode=zbd a trim is a zone reset: its block size must be the zone size ({zb} bytes), without bsrange or bssplit"
        )));
    }
    Ok(())
}

/// `max_open_zones`: at most the device's (0: no limit of the job's own).
fn zone_max_open(
    o: &JobOptions,
    geo: &crate::ZoneGeometry,
) -> Result<Option<(u32, Setting)>, WorkloadError> {
    let dev_open = geo.max_open_zones.max(1);
    let Some(s) = o.get("max_open_zones") else {
        return Ok(None);
    };
    let v = parse_uint(&s.value).map_err(|e| o.at(s, e))?;
    if v > dev_open as u64 {
        return Err(o.at(
            s,
            format!("{v} is more than the device's max_open_zones ({dev_open})"),
        ));
    }
    Ok((v > 0).then(|| (v as u32, s.clone())))
}

/// FDP (fio's dataplacement.c): `fdp=1` or `dataplacement=fdp`, `plids`, `plid_select`.
fn plan_fdp(o: &JobOptions, ctx: &WorkloadContext) -> Result<Option<FdpPlan>, WorkloadError> {
    let mut fdp_on = o.parse("fdp", parse_bool)?.unwrap_or(false);
    let dp_key = o.get("fdp");
    let dp_key = match o.get("dataplacement") {
        Some(s) => match s.value.trim() {
            "none" => dp_key,
            "fdp" => {
                fdp_on = true;
                Some(s)
            }
            v => {
                return Err(o.at(
                    s,
                    format!("`{v}`: expected none or fdp (streams are not supported)"),
                ))
            }
        },
        None => dp_key,
    };
    let Some(s_fdp) = dp_key.filter(|_| fdp_on) else {
        for k in ["plids", "plid_select"] {
            if let Some(s) = o.get(k) {
                return Err(o.at(s, "applies with fdp=1 only".into()));
            }
        }
        return Ok(None);
    };
    if ctx.placement_ids == 0 {
        return Err(o.at(
            s_fdp,
            "fdp=1 needs a device with Flexible Data Placement ([device.fdp]); this device has none"
                .into(),
        ));
    }
    let ids = match o.get("plids") {
        Some(s) => {
            let ids = parse_plids(&s.value).map_err(|e| o.at(s, e))?;
            if let Some(&bad) = ids.iter().find(|&&i| i >= ctx.placement_ids) {
                return Err(o.at(
                    s,
                    format!(
                        "placement ID index {bad} must be smaller than {} (the device's placement identifiers)",
                        ctx.placement_ids
                    ),
                ));
            }
            if ids.is_empty() {
                return Err(o.at(s, "no placement ID index given".into()));
            }
            ids
        }
        None => (0..ctx.placement_ids.min(FIO_MAX_DP_IDS as u16)).collect(),
    };
    let random = o
        .parse("plid_select", |v: &str| match v.trim() {
            "roundrobin" => Ok(false),
            "random" => Ok(true),
            v => Err(format!(
                "`{v}`: expected roundrobin or random (scheme is not supported)"
            )),
        })?
        .unwrap_or(false);
    Ok(Some(FdpPlan { ids, random }))
}

/// `time_based`, `runtime`, `io_size`, `number_ios`, `fsync`, `fdatasync`: when the job
/// ends (`region_bytes` of I/O unless told otherwise) and how often it syncs.
fn plan_limits(
    o: &JobOptions,
    kb_base: u64,
    logical: u64,
    region_bytes: u64,
) -> Result<LimitPlan, WorkloadError> {
    let time_based = o.parse("time_based", parse_bool)?.unwrap_or(false);
    let runtime_ns = match o.get("runtime") {
        Some(s) => {
            let ns = parse_time_ns(&s.value, 1_000_000_000).map_err(|e| o.at(s, e))?;
            (ns > 0).then(|| (ns, s.clone()))
        }
        None => None,
    };
    if time_based && runtime_ns.is_none() {
        return Err(o.at(o.map["time_based"], "time_based needs a runtime > 0".into()));
    }
    let io_size = o
        .parse("io_size", |v: &str| parse_size(v, kb_base))?
        .map(|v| match v {
            SizeValue::Bytes(b) => b,
            SizeValue::Percent(p) => of_device(logical, p),
        });
    let io_limit = if time_based {
        None
    } else {
        Some(io_size.unwrap_or(region_bytes))
    };
    let ios_limit = o.parse("number_ios", parse_uint)?.filter(|&n| n > 0);
    if io_limit == Some(0) && ios_limit.is_none() {
        return Err(o.at_job("nothing to do: io_size/size is 0".into()));
    }
    let fsync_every = [
        o.parse("fsync", parse_uint)?.unwrap_or(0),
        o.parse("fdatasync", parse_uint)?.unwrap_or(0),
    ];
    Ok(LimitPlan {
        runtime_ns,
        io_limit,
        ios_limit,
        fsync_every,
    })
}

/// `iodepth`, `rate_iops`, `thinktime`, `thinktime_blocks`: when requests are issued.
fn plan_timing(o: &JobOptions) -> Result<Timing, WorkloadError> {
    let iodepth = o.parse("iodepth", parse_uint)?.unwrap_or(1);
    if iodepth == 0 || iodepth > u32::MAX as u64 {
        return Err(o.at(o.map["iodepth"], format!("{iodepth}: expected 1..=2^32-1")));
    }
    let rate = o.parse("rate_iops", |v: &str| {
        if v.contains(',') {
            return Err(format!(
                "`{v}`: per-direction rates are not supported; give one rate"
            ));
        }
        match parse_uint(v)? {
            0 => Err("must be > 0".to_string()),
            r => Ok(r),
        }
    })?;
    let think = o
        .parse("thinktime", |v: &str| parse_time_ns(v, 1_000))?
        .filter(|&t| t > 0);
    let think_blocks = o.parse("thinktime_blocks", parse_uint)?.unwrap_or(1).max(1);
    Ok(match (rate, think) {
        (Some(_), Some(_)) => {
            return Err(o.at(
                o.map["rate_iops"],
                "rate_iops and thinktime in one job are not supported; give one".into(),
            ))
        }
        (Some(r), None) => Timing::Rate(r),
        (None, Some(t)) => Timing::Think {
            think_ns: t,
            blocks: think_blocks,
        },
        (None, None) => Timing::Closed(iodepth as u32),
    })
}

/// Most placement IDs a fio job may list (fio's `FIO_MAX_DP_IDS`).
const FIO_MAX_DP_IDS: usize = 128;

/// fio's `plids` / `fdp_pli`: comma-separated indices or `a-b` ranges (decimal or `0x`
/// hexadecimal), sorted as fio sorts them; an empty entry ends the list, as in fio.
fn parse_plids(v: &str) -> Result<Vec<u16>, String> {
    let num = |t: &str| -> Result<u64, String> {
        let t = t.trim();
        let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => t.parse(),
        };
        r.map_err(|_| format!("`{t}`: expected a placement ID index"))
    };
    let mut ids = Vec::new();
    for entry in v.trim().split(',') {
        if entry.trim().is_empty() {
            break;
        }
        let (a, b) = match entry.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(entry)?, num(entry)?),
        };
        if a > b {
            return Err(format!("`{entry}`: range start above its end"));
        }
        for i in a..=b {
            if i > 0xFFFF {
                return Err(format!("`{entry}`: placement IDs cannot exceed 0xFFFF"));
            }
            if ids.len() >= FIO_MAX_DP_IDS {
                return Err(format!("only {FIO_MAX_DP_IDS} placement IDs are supported"));
            }
            ids.push(i as u16);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// One flow of a fio job.
pub struct FioSource {
    rng: SimRng,
    ops: Ops,
    sizes: [BlockSizes; 3],
    sequential: bool,
    sampler: Option<AddressSampler>,
    align: u64,
    region_offset: u64,
    region_end: u64,
    seq_pos: [u64; 3],
    io_limit: Option<u64>,
    ios_limit: Option<u64>,
    fsync_every: [u64; 2],
    timing: Timing,
    issued_ios: u64,
    issued_bytes: u64,
    writes_since_sync: [u64; 2],
    /// Requests due before the next generated one (flushes, zone resets and finishes).
    pending: VecDeque<HostRequest>,
    /// `zonemode=zbd`: the shared zone table, this job's zbd plan, this flow's index.
    zbd: Option<(SharedZones, zbd::ZbdJob, u32)>,
    /// A write has been generated (fio's `last_start[DDIR_WRITE] != -1`).
    wrote: bool,
    /// `fdp=1`: the placement IDs, their own random stream, the round-robin position.
    fdp: Option<(FdpPlan, SimRng, usize)>,
    /// No more requests (a zbd read or write found no zone).
    done: bool,
}

impl FioSource {
    fn new(
        p: &JobPlan,
        mut rng: SimRng,
        key: &str,
        zones: Option<(SharedZones, u32)>,
        fdp_rng: SimRng,
    ) -> Result<FioSource, WorkloadError> {
        let slots = (p.region_bytes - p.max_bs) / p.align + 1;
        let sampler = if p.sequential {
            None
        } else {
            let (kind, rotate) = match &p.distribution {
                Distribution::Random if p.norandommap => (AddressKind::Uniform, 0.0),
                Distribution::Random => (AddressKind::Permutation, 0.0),
                Distribution::Zipf(t, c) => (AddressKind::Zipf { theta: *t }, *c),
                Distribution::Pareto(h, c) => (AddressKind::Pareto { h: *h }, *c),
                Distribution::Normal(sigma, c) => (
                    AddressKind::Normal {
                        centre: c * slots as f64,
                        sigma: (sigma / 100.0 * slots as f64).max(1e-9),
                    },
                    0.0,
                ),
                Distribution::Zoned(z) => {
                    let mut zones = Vec::with_capacity(z.len());
                    let (mut io_acc, mut space_acc) = (0.0, 0.0);
                    for &(io, space) in z {
                        let lo = ((space_acc / 100.0 * slots as f64) as u64).min(slots - 1);
                        space_acc += space;
                        io_acc += io / 100.0;
                        let hi = ((space_acc / 100.0 * slots as f64) as u64).clamp(lo + 1, slots);
                        if io > 0.0 {
                            zones.push((io_acc, lo, hi));
                        }
                    }
                    if let Some(last) = zones.last_mut() {
                        last.0 = 1.0;
                    }
                    (AddressKind::Zoned(zones), 0.0)
                }
            };
            Some(AddressSampler::new(&kind, slots, rotate, &mut rng, key)?)
        };
        Ok(FioSource {
            rng,
            ops: p.ops,
            sizes: p.sizes.clone(),
            sequential: p.sequential,
            sampler,
            align: p.align,
            region_offset: p.region_offset,
            region_end: p.region_offset + p.region_bytes,
            seq_pos: [p.region_offset; 3],
            io_limit: p.io_limit,
            ios_limit: p.ios_limit,
            fsync_every: p.fsync_every,
            timing: p.timing,
            issued_ios: 0,
            issued_bytes: 0,
            writes_since_sync: [0; 2],
            pending: VecDeque::new(),
            zbd: match (zones, &p.zbd) {
                (Some((table, flow)), Some((job, _))) => Some((table, job.clone(), flow)),
                _ => None,
            },
            wrote: false,
            fdp: p.fdp.clone().map(|f| (f, fdp_rng, 0)),
            done: false,
        })
    }
}

impl FioSource {
    /// fio's `dp_fill_dspec_data`: the placement ID of the next write.
    fn next_placement(&mut self) -> u16 {
        let Some((plan, rng, loc)) = &mut self.fdp else {
            return 0;
        };
        let n = plan.ids.len();
        if plan.random {
            plan.ids[rng.gen_range(0..n)]
        } else {
            if *loc >= n {
                *loc = 0;
            }
            *loc += 1;
            plan.ids[*loc - 1]
        }
    }

    /// The next I/O's direction, size and (unadjusted) offset.
    fn draw(&mut self) -> (HostOp, u64, u64) {
        let mut op = match self.ops {
            Ops::Only(op) => op,
            Ops::Mix(r) => {
                if self.rng.gen::<f64>() < r {
                    HostOp::Read
                } else {
                    HostOp::Write
                }
            }
        };
        // fio's zbd_adjust_ddir: a mixed job's first I/O is a write while nothing is
        // written (all zones start empty).
        if let (Some((_, job, _)), Ops::Mix(r)) = (&self.zbd, self.ops) {
            if op == HostOp::Read && !self.wrote && !job.read_beyond_wp && r < 1.0 {
                op = HostOp::Write;
            }
        }
        let d = dir_index(op);
        let size = self.sizes[d].sample(&mut self.rng);
        let offset = if self.sequential {
            // fio's setup_zbd_zone_mode: a sequential writer at a zone's capacity end
            // skips to the zone's end.
            if let (Some((table, _, _)), HostOp::Write) = (&self.zbd, op) {
                let t = table.lock().expect("zone table");
                self.seq_pos[d] = t.skip_capacity_gap(self.seq_pos[d]);
            }
            if self.seq_pos[d] + size > self.region_end {
                self.seq_pos[d] = self.region_offset;
            }
            self.seq_pos[d]
        } else {
            let slot = match &mut self.sampler {
                Some(s) => s.next_slot(&mut self.rng, 1),
                None => 0,
            };
            self.region_offset + slot * self.align
        };
        (op, size, offset)
    }
}

impl RequestSource for FioSource {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Ok(Some(r));
            }
            if self.done
                || self.ios_limit.is_some_and(|n| self.issued_ios >= n)
                || self.io_limit.is_some_and(|b| self.issued_bytes >= b)
            {
                return Ok(None);
            }
            let (op, size, offset) = self.draw();
            let d = dir_index(op);
            let k = self.issued_ios;
            let arrival_ns = match self.timing {
                Timing::Closed(_) => 0,
                Timing::Rate(iops) => {
                    (k as u128 * 1_000_000_000 / iops as u128).min(u64::MAX as u128) as u64
                }
                Timing::Think { think_ns, blocks } => (k / blocks).saturating_mul(think_ns),
            };
            let random = !self.sequential;
            let (offset, size) = match &self.zbd {
                None => (offset, size),
                Some((table, job, flow)) => {
                    let mut t = table.lock().expect("zone table");
                    let placed = match op {
                        HostOp::Write => {
                            let mut before = Vec::new();
                            let w =
                                t.write(job, *flow, offset, size, random, arrival_ns, &mut before);
                            self.pending.extend(before);
                            w
                        }
                        HostOp::Read => t.read(job, offset, size, random),
                        _ => match t.trim(job, offset, random, arrival_ns) {
                            None => None,
                            Some(reset) => {
                                // A trim is a zone reset; an empty zone's sends nothing.
                                drop(t);
                                self.issued_ios += 1;
                                self.issued_bytes += size;
                                if self.sequential {
                                    self.seq_pos[d] = offset + size;
                                }
                                if let Some(r) = reset {
                                    self.pending.push_back(r);
                                }
                                continue;
                            }
                        },
                    };
                    match placed {
                        Some(p) => p,
                        None => {
                            // fio's io_u_eof: no zone to read or write, the job ends.
                            self.done = true;
                            continue;
                        }
                    }
                }
            };
            if self.sequential {
                self.seq_pos[d] = offset + size;
            }
            self.issued_ios += 1;
            self.issued_bytes += size;
            let mut placement_id = 0;
            if op == HostOp::Write {
                self.wrote = true;
                placement_id = self.next_placement();
            }
            let request = HostRequest {
                arrival_ns,
                op,
                offset_bytes: offset,
                size_bytes: size,
                placement_id,
                ..Default::default()
            };
            self.pending.push_back(request);
            if op == HostOp::Write {
                // Writes since the last fsync / fdatasync; a flush when either count reaches N.
                let mut due = false;
                for (since, &every) in self.writes_since_sync.iter_mut().zip(&self.fsync_every) {
                    *since += 1;
                    if every > 0 && *since >= every {
                        *since = 0;
                        due = true;
                    }
                }
                if due {
                    self.pending.push_back(HostRequest {
                        arrival_ns,
                        op: HostOp::Flush,
                        ..Default::default()
                    });
                }
            }
        }
    }
}

/// Build the flows of the job file text `text` (named `file` in errors).
pub fn build_from_str(
    text: &str,
    file: &str,
    ctx: &WorkloadContext,
) -> Result<Workload, WorkloadError> {
    if ctx.logical_bytes == 0 {
        return Err(WorkloadError::config(
            "path",
            "the device has no logical capacity",
        ));
    }
    let sections = parse_sections(text, file)?;
    let mut plans = Vec::with_capacity(sections.len());
    for job in &sections {
        plans.push(plan_job(job, file, ctx)?);
    }
    // One run duration: every job with a runtime must agree, and then all jobs need one.
    let mut duration: Option<(u64, &Setting)> = None;
    for p in &plans {
        match (&p.runtime_ns, duration) {
            (Some((ns, s)), None) => duration = Some((*ns, s)),
            (Some((ns, s)), Some((d, _))) if *ns != d => {
                return Err(WorkloadError::Parse {
                    file: file.to_string(),
                    line: s.line,
                    text: s.text.clone(),
                    reason: format!(
                        "runtime: job `{}` runs {ns} ns but another job {d} ns; ssdlab has one run duration, give all jobs the same runtime",
                        p.name
                    ),
                });
            }
            _ => {}
        }
    }
    if let Some((_, s)) = duration {
        if let Some(p) = plans.iter().find(|p| p.runtime_ns.is_none()) {
            return Err(WorkloadError::Parse {
                file: file.to_string(),
                line: s.line,
                text: s.text.clone(),
                reason: format!(
                    "runtime: job `{}` has no runtime while others do; ssdlab has one run duration, give all jobs the same runtime",
                    p.name
                ),
            });
        }
    }
    // zonemode=zbd: one zone table for every job, as fio keeps one per device.
    let mut table: Option<SharedZones> = None;
    if let (Some(geo), true) = (ctx.zones, plans.iter().any(|p| p.zbd.is_some())) {
        let mut max_open: Option<(u32, &Setting)> = None;
        let mut reset_range: Option<(u32, u32)> = None;
        for p in &plans {
            let Some((job, set)) = &p.zbd else { continue };
            if let Some((v, s)) = set {
                match max_open {
                    Some((m, _)) if m != *v => {
                        return Err(WorkloadError::Parse {
                            file: file.to_string(),
                            line: s.line,
                            text: s.text.clone(),
                            reason: format!(
                                "max_open_zones: job `{}` sets {v} but another job {m}; fio takes one value per device",
                                p.name
                            ),
                        })
                    }
                    _ => max_open = Some((*v, s)),
                }
            }
            if job.reset_threshold > 0.0 && !matches!(p.ops, Ops::Only(HostOp::Read)) {
                let r = (job.min_zone, job.max_zone);
                match reset_range {
                    Some(q) if q != r => {
                        return Err(WorkloadError::Config {
                            key: "path".into(),
                            reason: format!(
                                "{file}: job `{}`: zone_reset_threshold needs every write job on the same zones (fio: multi-jobs with different write ranges are not supported)",
                                p.name
                            ),
                        })
                    }
                    _ => reset_range = Some(r),
                }
            }
        }
        let flows: u32 = plans.iter().map(|p| p.numjobs).sum();
        let limit = max_open.map_or(geo.max_open_zones.max(1), |m| m.0);
        let mut t = ZoneTable::new(geo, limit, flows as usize);
        if let Some((a, b)) = reset_range {
            let freq = plans
                .iter()
                .filter_map(|p| p.zbd.as_ref())
                .map(|(j, _)| j.reset_frequency)
                .fold(0.0, f64::max);
            t.set_vdb_range(a, b, freq);
        } else if let Some(freq) = plans
            .iter()
            .filter_map(|p| p.zbd.as_ref())
            .map(|(j, _)| j.reset_frequency)
            .find(|&f| f > 0.0)
        {
            t.set_write_cnt(freq);
        }
        table = Some(std::sync::Arc::new(std::sync::Mutex::new(t)));
    }
    let mut flows = Vec::new();
    let mut flow_index = 0u32;
    for (j, p) in plans.iter().enumerate() {
        let arrival = match p.timing {
            Timing::Closed(qd) => Arrival::Closed { queue_depth: qd },
            _ => Arrival::Open,
        };
        for n in 0..p.numjobs {
            let rng = stream(p.seed, (tag::FIO << 32) | ((j as u64) << 16) | n as u64);
            let key = (tag::FIO << 32) | ((j as u64) << 16) | n as u64;
            let fdp_rng = stream(p.seed, (tag::FIO_FDP << 32) | (key & 0xFFFF_FFFF));
            let zones = table.clone().map(|t| (t, flow_index));
            flow_index += 1;
            let source = FioSource::new(p, rng, "random_distribution", zones, fdp_rng)?;
            let name = if p.numjobs == 1 {
                p.name.clone()
            } else {
                format!("{}.{n}", p.name)
            };
            flows.push(Flow {
                name,
                arrival,
                source: Box::new(source),
            });
        }
    }
    Ok(Workload {
        flows,
        duration_ns: duration.map(|d| d.0),
        stats: WorkloadStats::default(),
    })
}

/// Read and build the job file of `c` (a relative path resolves against `ctx.base_dir`).
pub fn build(c: &FioWorkloadConfig, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    if c.path.as_os_str().is_empty() {
        return Err(WorkloadError::config("path", "set the fio job file"));
    }
    let path = ctx.resolve_path(&c.path);
    let text = read_text(&path)?;
    build_from_str(&text, &path.display().to_string(), ctx)
}

fn read_text(path: &Path) -> Result<String, WorkloadError> {
    let bytes = std::fs::read(path).map_err(|err| WorkloadError::Io {
        file: path.display().to_string(),
        err,
    })?;
    String::from_utf8(bytes).map_err(|e| WorkloadError::Io {
        file: path.display().to_string(),
        err: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {e}"),
        ),
    })
}

mod zbd;

#[cfg(test)]
mod tests;
