//! Per-format line parsers. Each works on the raw bytes of one line (line end removed)
//! and allocates nothing unless the line is malformed (blkparse replaying `D` with
//! `journal_process` keeps a bounded map of the queued bios' submitters).

use crate::{HostOp, ZoneGeometry};
use std::collections::BTreeMap;

/// One request as read from a trace, in the trace's own time unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// Timestamp in the format's tick (see [`LineParser::ns_per_tick`]).
    pub ts: u64,
    pub op: HostOp,
    pub offset: u64,
    pub size: u64,
    /// blkparse `F…` requests: a flush is issued before the data request.
    pub preflush: bool,
    /// Ground truth of journal traffic (blkparse with `journal_process`).
    pub journal: Option<bool>,
    /// FDP placement identifier (the `ssdlab` format's 5th column), 0 otherwise.
    pub placement_id: u16,
}

/// What one line holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Record(Record),
    /// Blank line, comment, header, or an event that carries no request.
    Skip,
    /// A request rejected by a filter.
    Filtered,
    /// No request; the parser forgot this many queued submitters (its cap was reached).
    Forgot(u64),
}

pub(crate) trait LineParser: Send {
    /// Parse one line; `Err` holds what was expected.
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String>;
    /// Nanoseconds per timestamp tick.
    fn ns_per_tick(&self) -> u64;
}

pub(crate) const SECTOR_BYTES: u64 = 512;

pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if first.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if last.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    s
}

/// Decimal unsigned integer (surrounding blanks allowed), `None` on anything else or overflow.
#[inline]
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    let s = trim(s);
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// Seconds as a plain decimal (`12`, `12.5`, `0.000000123`) converted exactly to
/// nanoseconds; digits beyond the 9th decimal are truncated.
pub(crate) fn parse_seconds_ns(s: &[u8]) -> Option<u64> {
    let s = trim(s);
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let secs = if int.is_empty() { 0 } else { parse_u64(int)? };
    let mut ns: u64 = 0;
    for i in 0..9 {
        let d = match frac.get(i) {
            Some(&b) if b.is_ascii_digit() => (b - b'0') as u64,
            Some(_) => return None,
            None => 0,
        };
        ns = ns * 10 + d;
    }
    if frac.len() > 9 && !frac[9..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

fn starts_with_ic(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn is_blank_or_comment(line: &[u8]) -> bool {
    matches!(trim(line).first(), None | Some(b'#'))
}

/// Whitespace-separated tokens without allocation.
fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
}

// ---------------------------------------------------------------- MSR Cambridge

/// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`; timestamps in 100 ns
/// Windows ticks, offset and size in bytes.
pub(crate) struct MsrParser {
    pub disk_number: Option<u64>,
}

impl LineParser for MsrParser {
    #[inline]
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        const EXPECTED: &str = "expected 7 comma-separated fields Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";
        if line.first() == Some(&b'#') {
            return Ok(Parsed::Skip);
        }
        let mut it = line.split(|&b| b == b',');
        let (Some(ts), Some(_host), Some(disk), Some(typ), Some(off), Some(size), Some(_resp)) = (
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
        ) else {
            if is_blank_or_comment(line) {
                return Ok(Parsed::Skip);
            }
            return Err(EXPECTED.into());
        };
        let Some(ts) = parse_u64(ts) else {
            if starts_with_ic(trim(ts), b"timestamp") {
                return Ok(Parsed::Skip); // header
            }
            return Err("Timestamp: expected an unsigned integer (100 ns Windows ticks)".into());
        };
        let disk = parse_u64(disk).ok_or("DiskNumber: expected an unsigned integer")?;
        let typ = trim(typ);
        let op = if typ.eq_ignore_ascii_case(b"read") {
            HostOp::Read
        } else if typ.eq_ignore_ascii_case(b"write") {
            HostOp::Write
        } else {
            return Err("Type: expected Read or Write".into());
        };
        let offset = parse_u64(off).ok_or("Offset: expected an unsigned integer (bytes)")?;
        let size = parse_u64(size).ok_or("Size: expected an unsigned integer (bytes)")?;
        if self.disk_number.is_some_and(|d| d != disk) {
            return Ok(Parsed::Filtered);
        }
        Ok(Parsed::Record(Record {
            ts,
            op,
            offset,
            size,
            preflush: false,
            journal: None,
            placement_id: 0,
        }))
    }

    fn ns_per_tick(&self) -> u64 {
        100
    }
}

// ---------------------------------------------------------------- SPC (UMass)

/// `ASU,LBA,Size,Opcode,Timestamp[,…]`; LBA in 512 B sectors, size in bytes, timestamp in
/// seconds.
pub(crate) struct SpcParser {
    pub asu: Option<u64>,
}

impl LineParser for SpcParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut it = line.split(|&b| b == b',');
        let (Some(asu), Some(lba), Some(size), Some(opcode), Some(ts)) =
            (it.next(), it.next(), it.next(), it.next(), it.next())
        else {
            if is_blank_or_comment(line) {
                return Ok(Parsed::Skip);
            }
            return Err("expected comma-separated fields ASU,LBA,Size,Opcode,Timestamp".into());
        };
        let Some(asu) = parse_u64(asu) else {
            if starts_with_ic(trim(asu), b"asu") {
                return Ok(Parsed::Skip); // header
            }
            return Err("ASU: expected an unsigned integer".into());
        };
        let lba = parse_u64(lba).ok_or("LBA: expected an unsigned integer (512 B sectors)")?;
        let size = parse_u64(size).ok_or("Size: expected an unsigned integer (bytes)")?;
        let op = match trim(opcode) {
            b"r" | b"R" => HostOp::Read,
            b"w" | b"W" => HostOp::Write,
            _ => return Err("Opcode: expected r or w".into()),
        };
        let ts =
            parse_seconds_ns(ts).ok_or("Timestamp: expected seconds as a plain decimal number")?;
        let offset = lba.checked_mul(SECTOR_BYTES).ok_or("LBA: too large")?;
        if self.asu.is_some_and(|a| a != asu) {
            return Ok(Parsed::Filtered);
        }
        Ok(Parsed::Record(Record {
            ts,
            op,
            offset,
            size,
            preflush: false,
            journal: None,
            placement_id: 0,
        }))
    }

    fn ns_per_tick(&self) -> u64 {
        1
    }
}

// ---------------------------------------------------------------- blkparse

/// blkparse's default text output:
/// `maj,min cpu seq sec.nsec pid action rwbs [sector + nsectors] [(elapsed)] [process]`.
pub(crate) struct BlkparseParser {
    /// `b'Q'` or `b'D'`.
    pub action: u8,
    pub process: Option<String>,
    pub device: Option<String>,
    /// Requests of a process whose name starts with this are labelled journal traffic.
    pub journal_process: Option<String>,
    /// Past the first line of blkparse's closing summary: everything is skipped.
    pub in_summary: bool,
    /// Replaying `D` with `journal_process`: the submitters of queued bios not yet
    /// dispatched or completed, `(device, first sector) → (end sector, journal)`. A `D`
    /// line names whoever dispatched the request (often a `kworker`), so a dispatched
    /// request's label comes from the `Q` lines of the sectors it covers (see
    /// [`BlkparseParser::dispatched_journal`]). A `BTreeMap`: nothing depends on hash order.
    pub queued: BTreeMap<(u64, u64), (u64, bool)>,
    /// At most this many queued submitters are kept ([`MAX_QUEUED_SUBMITTERS`]).
    pub max_queued: usize,
}

/// Queued submitters kept at most (a trace whose `Q`s are never dispatched, e.g. of a
/// bio-based device with no device filter): at the cap they are all forgotten and counted
/// ([`crate::stats::WorkloadStatsSnapshot::forgotten_submitters`]).
pub(crate) const MAX_QUEUED_SUBMITTERS: usize = 1 << 18;

/// `maj,min` as one number.
fn device_key(tok: &[u8]) -> u64 {
    let p = tok.iter().position(|&b| b == b',').unwrap_or(0);
    let maj = parse_u64(&tok[..p]).unwrap_or(0);
    let min = parse_u64(&tok[p + 1..]).unwrap_or(0);
    (maj << 32) | (min & 0xffff_ffff)
}

/// The `[process]` field of a blkparse line (empty when absent).
fn process_name(line: &[u8]) -> &[u8] {
    match (
        line.iter().rposition(|&b| b == b'['),
        line.iter().rposition(|&b| b == b']'),
    ) {
        (Some(a), Some(b)) if a < b => &line[a + 1..b],
        _ => &[][..],
    }
}

/// The optional `sector + nsectors` of a blkparse line.
fn sector_range<'a>(mut rest: impl Iterator<Item = &'a [u8]>) -> Result<(u64, u64), String> {
    let (mut sector, mut nsec) = (0u64, 0u64);
    if let Some(tok) = rest.next() {
        if tok[0].is_ascii_digit() {
            sector = parse_u64(tok).ok_or("sector: expected an unsigned integer")?;
            if rest.next() != Some(b"+".as_slice()) {
                return Err("expected `sector + nsectors`".into());
            }
            nsec = rest
                .next()
                .and_then(parse_u64)
                .ok_or("nsectors: expected an unsigned integer after `+`")?;
        }
    }
    Ok((sector, nsec))
}

impl BlkparseParser {
    /// Whether `D` requests take their submitter from the `Q` lines.
    fn tracks_submitters(&self) -> bool {
        self.action == b'D' && self.journal_process.is_some()
    }

    /// A `Q` (note its submitter) or `C` (forget what it covers) line while replaying `D`.
    fn note<'a>(
        &mut self,
        action: u8,
        dev: &[u8],
        rest: impl Iterator<Item = &'a [u8]>,
        line: &[u8],
    ) -> Parsed {
        let Ok((sector, nsec)) = sector_range(rest) else {
            return Parsed::Skip; // lines not replayed are not checked
        };
        if nsec == 0 || self.device.as_ref().is_some_and(|d| dev != d.as_bytes()) {
            return Parsed::Skip;
        }
        let (dev, end) = (device_key(dev), sector.saturating_add(nsec));
        if action == b'C' {
            self.take_range(dev, sector, end);
            return Parsed::Skip;
        }
        let journal = self
            .journal_process
            .as_ref()
            .is_some_and(|p| process_name(line).starts_with(p.as_bytes()));
        let mut forgot = 0;
        if self.queued.len() >= self.max_queued {
            forgot = self.queued.len() as u64;
            self.queued.clear();
        }
        let e = self.queued.entry((dev, sector)).or_insert((end, false));
        *e = (e.0.max(end), e.1 || journal);
        if forgot > 0 {
            Parsed::Forgot(forgot)
        } else {
            Parsed::Skip
        }
    }

    /// Forget the queued sectors of `dev` in `[start, end)` (a queued range reaching out of
    /// it keeps its outside part): whether any was queued by the journal process, `None`
    /// when none was queued.
    fn take_range(&mut self, dev: u64, start: u64, end: u64) -> Option<bool> {
        let mut found: Option<bool> = None;
        // A range queued before `start` that reaches into it (a split request).
        if let Some((&(d, s), &(e, j))) = self.queued.range(..(dev, start)).next_back() {
            if d == dev && e > start {
                found = Some(j);
                self.queued.insert((d, s), (start, j));
                if e > end {
                    self.queued.insert((dev, end), (e, j));
                }
            }
        }
        while let Some((&k, &(e, j))) = self.queued.range((dev, start)..(dev, end)).next() {
            found = Some(found.unwrap_or(false) || j);
            self.queued.remove(&k);
            if e > end {
                let r = self.queued.entry((dev, end)).or_insert((e, j));
                *r = (r.0.max(e), r.1 || j);
            }
        }
        found
    }

    /// The journal label of a dispatched request `[start, start + nsec)` of `dev`: journal
    /// when any of its sectors was queued by the journal process (a request the block layer
    /// merged from bios of several processes is journal I/O if it carries journal blocks).
    /// A request none of whose sectors was seen queued (the trace starts mid-flight, a
    /// requeue) keeps the `D` line's own process.
    fn dispatched_journal(&mut self, dev: &[u8], start: u64, nsec: u64) -> Option<bool> {
        if nsec == 0 {
            return None;
        }
        self.take_range(device_key(dev), start, start.saturating_add(nsec))
    }
}

fn is_device(tok: &[u8]) -> bool {
    match tok.iter().position(|&b| b == b',') {
        Some(p) => parse_u64(&tok[..p]).is_some() && parse_u64(&tok[p + 1..]).is_some(),
        None => false,
    }
}

impl LineParser for BlkparseParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        let mut it = tokens(line);
        let Some(dev) = it.next() else {
            return Ok(Parsed::Skip);
        };
        if !is_device(dev) {
            if self.in_summary || dev.starts_with(b"#") {
                return Ok(Parsed::Skip);
            }
            if dev.starts_with(b"CPU") || dev == b"Total" {
                self.in_summary = true;
                return Ok(Parsed::Skip);
            }
            return Err(
                "expected a blkparse event `maj,min cpu seq sec.nsec pid action rwbs ...`".into(),
            );
        }
        let (Some(_cpu), Some(_seq), Some(time), Some(_pid), Some(action), Some(rwbs)) = (
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
            it.next(),
        ) else {
            return Err(
                "expected at least 7 fields `maj,min cpu seq sec.nsec pid action rwbs`".into(),
            );
        };
        if action.len() != 1 {
            return Ok(Parsed::Skip);
        }
        if action[0] != self.action {
            if self.tracks_submitters() && matches!(action[0], b'Q' | b'C') {
                return Ok(self.note(action[0], dev, it, line));
            }
            return Ok(Parsed::Skip);
        }
        let ts = parse_seconds_ns(time).ok_or("time: expected seconds.nanoseconds")?;
        // rwbs: optional leading F (preflush), then D (discard) / W / R / N, then modifiers.
        let (preflush, op_char) = match rwbs {
            [b'F', rest @ ..] => (true, rest.first().copied()),
            _ => (false, rwbs.first().copied()),
        };
        let op = match op_char {
            Some(b'D') => Some(HostOp::Trim),
            Some(b'W') => Some(HostOp::Write),
            Some(b'R') => Some(HostOp::Read),
            Some(b'N') | None => None,
            Some(_) => {
                return Err("rwbs: expected [F]D, [F]W, [F]R or [F]N followed by modifiers".into())
            }
        };
        // Optional `sector + nsectors`.
        let (sector, nsec) = sector_range(it)?;
        if let Some(dev_filter) = &self.device {
            if dev != dev_filter.as_bytes() {
                return Ok(Parsed::Filtered);
            }
        }
        // The submitter: the `Q` line's process, whichever action is replayed (taken
        // before the process filter, so a filtered request's sectors are forgotten too).
        let queued = if self.tracks_submitters() && op.is_some() {
            self.dispatched_journal(dev, sector, nsec)
        } else {
            None
        };
        let name = process_name(line);
        if let Some(proc_filter) = &self.process {
            if name != proc_filter.as_bytes() {
                return Ok(Parsed::Filtered);
            }
        }
        let journal = self
            .journal_process
            .as_ref()
            .map(|p| queued.unwrap_or_else(|| name.starts_with(p.as_bytes())));
        let size = nsec
            .checked_mul(SECTOR_BYTES)
            .ok_or("nsectors: too large")?;
        let offset = sector
            .checked_mul(SECTOR_BYTES)
            .ok_or("sector: too large")?;
        match op {
            Some(op) if !(preflush && size == 0) => Ok(Parsed::Record(Record {
                ts,
                op,
                offset,
                size,
                preflush,
                journal,
                placement_id: 0,
            })),
            // An empty preflush bio or a pure flush request.
            _ if preflush => Ok(Parsed::Record(Record {
                ts,
                op: HostOp::Flush,
                offset: 0,
                size: 0,
                preflush: false,
                journal: None,
                placement_id: 0,
            })),
            _ => Ok(Parsed::Skip), // N: no data, no flush
        }
    }

    fn ns_per_tick(&self) -> u64 {
        1
    }
}

// ---------------------------------------------------------------- fio iolog

/// fio iolog v2 (`filename action [offset length]`, time from `wait` lines in µs) and v3
/// (`usec filename action [offset length]`).
pub(crate) struct IologParser {
    pub device: Option<String>,
    /// 0 until the header line has been read.
    pub version: u8,
    /// v2: time accumulated from `wait` actions, µs.
    pub clock_us: u64,
}

impl LineParser for IologParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        if is_blank_or_comment(line) {
            return Ok(Parsed::Skip);
        }
        if self.version == 0 {
            let t = trim(line);
            self.version = match t {
                b"fio version 2 iolog" => 2,
                b"fio version 3 iolog" => 3,
                _ => {
                    return Err(
                        "expected the header `fio version 2 iolog` or `fio version 3 iolog`".into(),
                    )
                }
            };
            return Ok(Parsed::Skip);
        }
        let mut it = tokens(line);
        let ts = if self.version == 3 {
            let t = it.next().unwrap_or_default();
            Some(parse_u64(t).ok_or("timestamp: expected microseconds since the start (v3)")?)
        } else {
            None
        };
        let (Some(file), Some(action)) = (it.next(), it.next()) else {
            return Err(if self.version == 3 {
                "expected `usec filename action [offset length]`".into()
            } else {
                "expected `filename action [offset length]`".into()
            });
        };
        let (off, len) = (it.next(), it.next());
        if it.next().is_some() {
            return Err("too many fields".into());
        }
        let io = match (off, len) {
            (Some(o), Some(l)) => Some((
                parse_u64(o).ok_or("offset: expected an unsigned integer (bytes)")?,
                parse_u64(l).ok_or("length: expected an unsigned integer (bytes)")?,
            )),
            (None, None) => None,
            _ => return Err("expected both offset and length".into()),
        };
        let op =
            match (action, io) {
                (b"add" | b"open" | b"close", None) => return Ok(Parsed::Skip),
                (b"read", Some(_)) => HostOp::Read,
                (b"write", Some(_)) => HostOp::Write,
                (b"trim", Some(_)) => HostOp::Trim,
                (b"sync" | b"datasync" | b"sync_file_range", Some(_)) => HostOp::Flush,
                (b"wait", Some((usec, _))) => {
                    if self.version == 2 {
                        self.clock_us = self.clock_us.saturating_add(usec);
                    }
                    // fio ignores `wait` in v3 (timestamps carry the timing).
                    return Ok(Parsed::Skip);
                }
                (b"add" | b"open" | b"close", Some(_)) => {
                    return Err("file actions take no offset/length".into())
                }
                (_, None) => {
                    return Err(
                        "expected a file action (add, open, close) or an offset and length".into(),
                    )
                }
                _ => return Err(
                    "action: expected read, write, trim, sync, datasync, wait, add, open or close"
                        .into(),
                ),
            };
        if self.device.as_ref().is_some_and(|d| d.as_bytes() != file) {
            return Ok(Parsed::Filtered);
        }
        let (offset, size) = if op == HostOp::Flush {
            (0, 0)
        } else {
            io.unwrap_or_default()
        };
        Ok(Parsed::Record(Record {
            ts: ts.unwrap_or(self.clock_us),
            op,
            offset,
            size,
            preflush: false,
            journal: None,
            placement_id: 0,
        }))
    }

    fn ns_per_tick(&self) -> u64 {
        1000
    }
}

// ---------------------------------------------------------------- ssdlab (zoned CSV)

/// The op codes of the `ssdlab` format, short and long (`HostOp::name`).
const SSDLAB_OPS: [(&[u8], HostOp); 10] = [
    (b"R", HostOp::Read),
    (b"W", HostOp::Write),
    (b"T", HostOp::Trim),
    (b"F", HostOp::Flush),
    (b"A", HostOp::ZoneAppend),
    (b"ZO", HostOp::ZoneOpen),
    (b"ZC", HostOp::ZoneClose),
    (b"ZF", HostOp::ZoneFinish),
    (b"ZR", HostOp::ZoneReset),
    (b"ZP", HostOp::ZoneReport),
];

/// `op` column of the `ssdlab` format: a short code or the long name, any case.
pub(crate) fn ssdlab_op(s: &[u8]) -> Option<HostOp> {
    let s = trim(s);
    SSDLAB_OPS
        .iter()
        .find(|(code, op)| {
            s.eq_ignore_ascii_case(code) || s.eq_ignore_ascii_case(op.name().as_bytes())
        })
        .map(|e| e.1)
}

/// The short code of `op` in the `ssdlab` format.
pub fn ssdlab_code(op: HostOp) -> &'static str {
    let (code, _) = SSDLAB_OPS
        .iter()
        .find(|e| e.1 == op)
        .expect("every op has a code");
    std::str::from_utf8(code).expect("ASCII")
}

/// `time_ns,op,offset_bytes,size_bytes[,placement_id]`: ssdlab's own trace, the one with
/// zone commands and FDP placement identifiers (docs/zns.md).
pub(crate) struct SsdlabParser {
    pub zones: Option<ZoneGeometry>,
    pub placement_ids: u16,
}

impl LineParser for SsdlabParser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, String> {
        if is_blank_or_comment(line) {
            return Ok(Parsed::Skip);
        }
        let mut it = line.split(|&b| b == b',');
        let (Some(ts), Some(op), Some(off), Some(size)) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            return Err("expected 4 or 5 comma-separated columns time_ns,op,offset_bytes,size_bytes[,placement_id]".into());
        };
        let pid = it.next();
        if it.next().is_some() {
            return Err(
                "more than 5 columns (time_ns,op,offset_bytes,size_bytes[,placement_id])".into(),
            );
        }
        let Some(ts) = parse_u64(ts) else {
            if starts_with_ic(trim(ts), b"time_ns") {
                return Ok(Parsed::Skip); // header
            }
            return Err("column 1 (time_ns): expected an unsigned integer (nanoseconds)".into());
        };
        let op = ssdlab_op(op).ok_or(
            "column 2 (op): expected R, W, T, F, A (zone append), ZO, ZC, ZF, ZR (zone open, close, finish, reset) or ZP (zone report)",
        )?;
        let offset =
            parse_u64(off).ok_or("column 3 (offset_bytes): expected an unsigned integer")?;
        let size = parse_u64(size).ok_or("column 4 (size_bytes): expected an unsigned integer")?;
        let placement_id = match pid {
            None => 0,
            Some(p) => {
                let v =
                    parse_u64(p).ok_or("column 5 (placement_id): expected an unsigned integer")?;
                u16::try_from(v).map_err(|_| "column 5 (placement_id): above 65535".to_string())?
            }
        };
        if placement_id > 0 {
            if !op.writes_data() {
                return Err(format!("column 5 (placement_id): {placement_id} on a {} (only writes and zone appends are placed)", op.name()));
            }
            if self.placement_ids == 0 {
                return Err(format!("column 5 (placement_id): {placement_id}, but the device has no FDP ([device.fdp]); use 0 or leave the column out"));
            }
            if placement_id >= self.placement_ids {
                return Err(format!(
                    "column 5 (placement_id): {placement_id}, but the device has placement identifiers 0 to {}",
                    self.placement_ids - 1
                ));
            }
        }
        if (op == HostOp::Flush || op.is_zone_management()) && size != 0 {
            return Err(format!(
                "column 4 (size_bytes): a {} carries no data, size must be 0",
                op.name()
            ));
        }
        if op.is_zone_command() {
            let Some(geo) = self.zones else {
                return Err(format!("column 2 (op): a {} needs a zoned device ([device.zns]); the space it runs on is conventional (inside a log-structured host layer: the layer's own space, where plain writes go)", op.name()));
            };
            if op == HostOp::ZoneReport {
                if size == 0 {
                    return Err(
                        "column 4 (size_bytes): a zone report needs a report buffer (size > 0)"
                            .into(),
                    );
                }
            } else if op == HostOp::ZoneAppend && size > geo.zone_bytes {
                return Err(format!(
                    "column 4 (size_bytes): a zone append of {size} bytes is larger than a zone ({} bytes)",
                    geo.zone_bytes
                ));
            } else if offset % geo.zone_bytes != 0 {
                return Err(format!(
                    "column 3 (offset_bytes): a {} names a zone by its first byte; {offset} is not a multiple of the zone size {}",
                    op.name(),
                    geo.zone_bytes
                ));
            }
        }
        let offset = if op == HostOp::Flush { 0 } else { offset };
        Ok(Parsed::Record(Record {
            ts,
            op,
            offset,
            size,
            preflush: false,
            journal: None,
            placement_id,
        }))
    }

    fn ns_per_tick(&self) -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b" 42 "), Some(42));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_seconds_ns(b"1.5"), Some(1_500_000_000));
        assert_eq!(parse_seconds_ns(b"0.000000123"), Some(123));
        assert_eq!(parse_seconds_ns(b"2"), Some(2_000_000_000));
        assert_eq!(parse_seconds_ns(b"0.0000000019"), Some(1));
        assert_eq!(parse_seconds_ns(b"1e5"), None);
        assert_eq!(parse_seconds_ns(b"."), None);
    }
}
