use super::parse::{BlkparseParser, LineParser, Parsed};
use super::*;
use crate::WorkloadConfig;
use std::io::Write;

const GIB: u64 = 1 << 30;

fn ctx() -> WorkloadContext {
    WorkloadContext {
        logical_bytes: GIB,
        unit_bytes: 4096,
        seed: 1,
        base_dir: None,
        zones: None,
        placement_ids: 0,
    }
}

/// A fresh file under the system temp dir, removed (with its directory, once empty) when
/// the guard goes out of scope, also when the test fails.
fn write_file(name: &str, bytes: &[u8]) -> TempFile {
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    TempFile(path)
}

struct TempFile(PathBuf);

impl std::ops::Deref for TempFile {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir); // fails while other tests' files remain
        }
    }
}

fn cfg(path: &Path) -> TraceWorkloadConfig {
    TraceWorkloadConfig {
        path: path.to_path_buf(),
        ..Default::default()
    }
}

fn drain_with(
    c: &TraceWorkloadConfig,
    ctx: &WorkloadContext,
) -> Result<(Vec<HostRequest>, WorkloadStats), WorkloadError> {
    let mut w = build(c, ctx)?;
    let stats = w.stats.clone();
    let mut out = Vec::new();
    while let Some(r) = w.flows[0].source.next_request()? {
        out.push(r);
    }
    Ok((out, stats))
}

fn drain(c: &TraceWorkloadConfig) -> Vec<HostRequest> {
    drain_with(c, &ctx()).unwrap().0
}

fn req(arrival_ns: u64, op: HostOp, offset_bytes: u64, size_bytes: u64) -> HostRequest {
    HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns,
        op,
        offset_bytes,
        size_bytes,
        journal: None,
    }
}

fn flush(arrival_ns: u64) -> HostRequest {
    req(arrival_ns, HostOp::Flush, 0, 0)
}

use HostOp::{Read as R, Trim as T, Write as W};

const MSR: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\r\n\
128166372000000000,hm,0,Read,4096,8192,100\r\n\
\r\n\
128166372000010000,hm,1,Write,0,4096,100\r\n\
128166372000020000,hm,0,Write,8192,0,50\r\n\
128166372000005000,hm,0,Write,12288,4096,50\r\n\
128166372000030000,hm,0,write,16384,512,1\r\n";

#[test]
fn msr_crlf_header_blank_zero_size_unsorted() {
    let p = write_file("a.msr.csv", MSR.as_bytes());
    let (reqs, stats) = drain_with(&cfg(&p), &ctx()).unwrap();
    assert_eq!(
        reqs,
        vec![
            req(0, R, 4096, 8192),
            req(1_000_000, W, 0, 4096),
            req(1_000_000, W, 12288, 4096), // 0.5 ms is earlier than 1 ms: clamped
            req(3_000_000, W, 16384, 512),
        ]
    );
    assert_eq!(stats.zero_size_requests(), 1);
    assert_eq!(stats.clamped_arrivals(), 1);
    assert_eq!(detect_format(&p).unwrap(), TraceFormat::Msr);
}

#[test]
fn msr_disk_filter_and_closed_loop() {
    let p = write_file("b.msr.csv", MSR.as_bytes());
    let c = TraceWorkloadConfig {
        disk_number: Some(0),
        ..cfg(&p)
    };
    let (reqs, stats) = drain_with(&c, &ctx()).unwrap();
    assert_eq!(
        reqs,
        vec![
            req(0, R, 4096, 8192),
            req(500_000, W, 12288, 4096),
            req(3_000_000, W, 16384, 512)
        ]
    );
    assert_eq!(stats.filtered_records(), 1);
    assert_eq!(stats.clamped_arrivals(), 0);

    let c = TraceWorkloadConfig {
        replay: ReplayMode::Closed,
        queue_depth: 8,
        ..cfg(&p)
    };
    let w = build(&c, &ctx()).unwrap();
    assert_eq!(w.flows[0].arrival, Arrival::Closed { queue_depth: 8 });
    assert!(drain(&c).iter().all(|r| r.arrival_ns == 0));
}

#[test]
fn time_scale_skip_and_max() {
    let p = write_file("c.msr.csv", MSR.as_bytes());
    let c = TraceWorkloadConfig {
        time_scale: 0.5,
        ..cfg(&p)
    };
    let arrivals: Vec<u64> = drain(&c).iter().map(|r| r.arrival_ns).collect();
    assert_eq!(arrivals, vec![0, 500_000, 500_000, 1_500_000]);
    // Skip the first request: t = 0 moves to the second one.
    let c = TraceWorkloadConfig {
        skip_requests: 1,
        max_requests: 2,
        ..cfg(&p)
    };
    assert_eq!(drain(&c), vec![req(0, W, 0, 4096), req(0, W, 12288, 4096)]);
}

/// `max_requests` stops before the line after the last request: a bad line there is not
/// read (it failed the run before), one line earlier it is an error.
#[test]
fn max_requests_reads_no_line_past_the_last_request() {
    let text = format!("{MSR}junk,line\r\n");
    let p = write_file("m.msr.csv", text.as_bytes());
    let c = TraceWorkloadConfig {
        max_requests: 4,
        ..cfg(&p)
    };
    let (reqs, _) = drain_with(&c, &ctx()).unwrap();
    assert_eq!(reqs.len(), 4);
    let c = TraceWorkloadConfig {
        max_requests: 5,
        ..cfg(&p)
    };
    let e = drain_with(&c, &ctx()).unwrap_err().to_string();
    assert!(e.contains("m.msr.csv:"), "{e}");
}

const SPC: &str = "0,20941264,8192,W,0.551706\n\
1,20939840,8192,w,0.554041\n\
0,100,0,r,0.6\n\
\n\
0,8,512,R,0.700000000,extra,fields\n\
0,16,1024,r,0.65\n";

#[test]
fn spc_units_filters_and_extra_fields() {
    let p = write_file("a.spc", SPC.as_bytes());
    assert_eq!(detect_format(&p).unwrap(), TraceFormat::Spc);
    let big = WorkloadContext {
        logical_bytes: 16 * GIB,
        ..ctx()
    };
    let drain = |c: &TraceWorkloadConfig| drain_with(c, &big).unwrap().0;
    let (reqs, stats) = drain_with(&cfg(&p), &big).unwrap();
    assert_eq!(
        reqs,
        vec![
            req(0, W, 20941264 * 512, 8192),
            req(2_335_000, W, 20939840 * 512, 8192),
            req(148_294_000, R, 8 * 512, 512),
            req(148_294_000, R, 16 * 512, 1024), // 0.65 < 0.7: clamped
        ]
    );
    assert_eq!(
        (stats.zero_size_requests(), stats.clamped_arrivals()),
        (1, 1)
    );
    let c = TraceWorkloadConfig {
        asu: Some(1),
        ..cfg(&p)
    };
    assert_eq!(drain(&c), vec![req(0, W, 20939840 * 512, 8192)]);
    // A header line is accepted.
    let p = write_file(
        "b.spc",
        format!("ASU,LBA,Size,Opcode,Timestamp\n{SPC}").as_bytes(),
    );
    assert_eq!(drain(&cfg(&p)).len(), 4);
}

const BLKPARSE: &str = "  8,0    3        1     0.000000000  4162  Q  WS 1000 + 8 [fio]
  8,0    3        2     0.000001000  4162  G  WS 1000 + 8 [fio]
  8,0    3        3     0.000002000  4162  D  WS 1000 + 8 (    1000) [fio]
  8,0    3        4     0.000100000     0  C  WS 1000 + 8 [0]
  8,0    1        5     0.000200000   215  Q FWS [kworker/1:1H]
  8,16   1        6     0.000250000  4162  Q   W 77 + 8 [fio]
  8,0    1        7     0.000300000  4162  Q   D 2048 + 16 [fstrim]
  8,0    1        8     0.000400000  4162  Q  RM 64 + 1 [fio]
  8,0    1        9     0.000500000  4162  Q FWFS 4096 + 8 [jbd2/sda1-8]
  8,0    0       10     0.000600000  4162  Q   N [fio]
  8,0    0       11     0.000700000  4162  m   N cfq4162 insert_request
  8,0    0       12     0.000800000  4162  Q  WS 5000 + 0 [fio]
CPU0 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB
 Read Dispatches:        0,        0KiB\t Write Dispatches:        1,        4KiB

Total (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB
Throughput (R/W): 0KiB/s / 4KiB/s
Events (8,0): 12 entries
";

#[test]
fn blkparse_queue_events_flush_discard_summary() {
    let p = write_file("a.blkparse", BLKPARSE.as_bytes());
    assert_eq!(detect_format(&p).unwrap(), TraceFormat::Blkparse);
    let (reqs, stats) = drain_with(&cfg(&p), &ctx()).unwrap();
    assert_eq!(
        reqs,
        vec![
            req(0, W, 1000 * 512, 4096),
            flush(200_000),
            req(250_000, W, 77 * 512, 4096),
            req(300_000, T, 2048 * 512, 8192),
            req(400_000, R, 64 * 512, 512),
            flush(500_000), // preflush of the FUA journal write
            req(500_000, W, 4096 * 512, 4096),
        ]
    );
    assert_eq!(stats.zero_size_requests(), 1);
}

#[test]
fn blkparse_dispatch_process_and_device_filters() {
    let p = write_file("b.blkparse", BLKPARSE.as_bytes());
    let c = TraceWorkloadConfig {
        blkparse_action: BlkparseAction::Dispatch,
        ..cfg(&p)
    };
    assert_eq!(drain(&c), vec![req(0, W, 1000 * 512, 4096)]);
    let c = TraceWorkloadConfig {
        process: Some("fio".into()),
        device: Some("8,0".into()),
        ..cfg(&p)
    };
    let (reqs, stats) = drain_with(&c, &ctx()).unwrap();
    assert_eq!(
        reqs,
        vec![req(0, W, 1000 * 512, 4096), req(400_000, R, 64 * 512, 512)]
    );
    assert_eq!(stats.filtered_records(), 4);
    // The config spelling of the action.
    let t: TraceWorkloadConfig = toml::from_str("path = \"x\"\nblkparse_action = \"D\"").unwrap();
    assert_eq!(t.blkparse_action, BlkparseAction::Dispatch);
}

/// jbd2 queues journal bios; a kworker (or jbd2 unplugging others' requests) dispatches
/// them, often merged (M back, F front) or split (X).
const BLKPARSE_JOURNAL: &str = "\
  8,0    0        1     0.000000000   300  Q  WS 1000 + 8 [jbd2/sda1-8]
  8,0    0        2     0.000001000   300  G  WS 1000 + 8 [jbd2/sda1-8]
  8,0    0        3     0.000002000   300  Q  WS 1008 + 8 [jbd2/sda1-8]
  8,0    0        4     0.000003000   300  M  WS 1008 + 8 [jbd2/sda1-8]
  8,0    0        5     0.000004000   400  Q   W 5000 + 8 [fio]
  8,0    0        6     0.000005000   400  Q   W 4992 + 8 [fio]
  8,0    0        7     0.000006000   400  F   W 4992 + 8 [fio]
  8,16   0        8     0.000006500   300  Q  WS 6000 + 8 [jbd2/sdb1-8]
  8,0    1        9     0.000010000    50  D  WS 1000 + 16 [kworker/1:1H]
  8,0    1       10     0.000011000    50  D   W 4992 + 16 [kworker/1:1H]
  8,0    1       11     0.000011500    50  C  WS 1000 + 16 [0]
  8,0    0       12     0.000012000   500  Q   W 2000 + 8 [fio]
  8,0    0       13     0.000013000   300  Q  WS 2008 + 8 [jbd2/sda1-8]
  8,0    0       14     0.000014000   300  M  WS 2008 + 8 [jbd2/sda1-8]
  8,0    1       15     0.000020000    50  D   W 2000 + 16 [kworker/1:1H]
  8,0    0       16     0.000021000   300  D  WS 3000 + 8 [jbd2/sda1-8]
  8,0    0       17     0.000022000   300  Q  WS 8000 + 16 [jbd2/sda1-8]
  8,0    0       18     0.000022500   300  X  WS 8000 / 8008 [jbd2/sda1-8]
  8,0    1       19     0.000023000    50  D  WS 8000 + 8 [kworker/1:1H]
  8,0    1       20     0.000024000    50  D  WS 8008 + 8 [kworker/1:1H]
  8,0    0       21     0.000025000   400  Q   W 9000 + 8 [fio]
  8,0    0       22     0.000026000   300  D   W 9000 + 8 [jbd2/sda1-8]
  8,16   1       23     0.000027000    50  D  WS 6000 + 8 [kworker/0:1H]
";

/// The journal label of a dispatched (`D`) request comes from the `Q` lines of its sectors
/// (any of them queued by jbd2: journal), not from the process that dispatched it; a
/// request with no queued sector seen keeps its own line's process (issue 33).
#[test]
fn blkparse_dispatch_labels_journal_by_the_queueing_process() {
    let p = write_file("j.blkparse", BLKPARSE_JOURNAL.as_bytes());
    let labels = |action| {
        let c = TraceWorkloadConfig {
            blkparse_action: action,
            journal_process: Some("jbd2".into()),
            ..cfg(&p)
        };
        let (reqs, stats) = drain_with(&c, &ctx()).unwrap();
        assert_eq!(stats.snapshot().forgotten_submitters, 0);
        reqs.iter()
            .map(|r| (r.offset_bytes / 512, r.journal.unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        labels(BlkparseAction::Dispatch),
        vec![
            (1000, true),  // jbd2's two bios, merged, dispatched by a kworker
            (4992, false), // fio's two bios (front merge), kworker
            (2000, true),  // fio's bio with jbd2's merged behind it
            (3000, true),  // no Q seen: the D line's own process
            (8000, true),  // jbd2's bio split in two, both halves
            (8008, true),
            (9000, false), // fio's bio dispatched by jbd2 unplugging
            (6000, true),  // another device: its own queue
        ]
    );
    assert_eq!(
        labels(BlkparseAction::Queue),
        vec![
            (1000, true),
            (1008, true),
            (5000, false),
            (4992, false),
            (6000, true),
            (2000, false),
            (2008, true),
            (8000, true),
            (9000, false),
        ]
    );
}

/// The queued submitters are bounded: at the cap they are forgotten and counted.
#[test]
fn blkparse_queued_submitters_are_bounded() {
    let mut p = BlkparseParser {
        action: b'D',
        process: None,
        device: None,
        journal_process: Some("jbd2".into()),
        in_summary: false,
        queued: Default::default(),
        max_queued: 2,
    };
    let q = |s: u64| format!("8,0 0 1 0.0 300 Q WS {s} + 8 [jbd2/sda1-8]");
    assert_eq!(p.parse(q(0).as_bytes()), Ok(Parsed::Skip));
    assert_eq!(p.parse(q(8).as_bytes()), Ok(Parsed::Skip));
    assert_eq!(p.parse(q(16).as_bytes()), Ok(Parsed::Forgot(2)));
    assert_eq!(p.queued.len(), 1);
    // A completion forgets what it covers without a dispatch.
    let c = "8,0 0 2 0.1 0 C WS 16 + 8 [0]";
    assert_eq!(p.parse(c.as_bytes()), Ok(Parsed::Skip));
    assert!(p.queued.is_empty());
}

#[test]
fn fio_iolog_v2_waits_and_syncs() {
    let log = "fio version 2 iolog\n/dev/nvme0n1 add\n/dev/nvme0n1 open\n/dev/nvme0n1 write 0 4096\n\
/dev/nvme0n1 wait 1000 0\n/dev/nvme0n1 read 4096 8192\n/dev/nvme0n1 sync 0 0\n/dev/other write 0 512\n\
/dev/nvme0n1 trim 8192 4096\n/dev/nvme0n1 close\n";
    let p = write_file("a.iolog", log.as_bytes());
    assert_eq!(detect_format(&p).unwrap(), TraceFormat::FioIolog);
    let all = drain(&cfg(&p));
    assert_eq!(all.len(), 5);
    let c = TraceWorkloadConfig {
        device: Some("/dev/nvme0n1".into()),
        ..cfg(&p)
    };
    assert_eq!(
        drain(&c),
        vec![
            req(0, W, 0, 4096),
            req(1_000_000, R, 4096, 8192),
            flush(1_000_000),
            req(1_000_000, T, 8192, 4096)
        ]
    );
}

#[test]
fn fio_iolog_v3_timestamps_crlf_unsorted() {
    let log = "fio version 3 iolog\r\n0 /dev/sdb add\r\n0 /dev/sdb open\r\n10 /dev/sdb write 0 4096\r\n\
25 /dev/sdb read 4096 4096\r\n20 /dev/sdb datasync 0 0\r\n40 /dev/sdb trim 0 4096\r\n41 /dev/sdb write 0 0\r\n50 /dev/sdb close\r\n";
    let p = write_file("b.iolog", log.as_bytes());
    let (reqs, stats) = drain_with(&cfg(&p), &ctx()).unwrap();
    assert_eq!(
        reqs,
        vec![
            req(0, W, 0, 4096),
            req(15_000, R, 4096, 4096),
            flush(15_000),
            req(30_000, T, 0, 4096)
        ]
    );
    assert_eq!(
        (stats.clamped_arrivals(), stats.zero_size_requests()),
        (1, 1)
    );
}

#[test]
fn gzip_and_zstd_multi_frame() {
    let plain = drain(&cfg(&write_file("plain.csv", MSR.as_bytes())));
    // Two gzip members.
    let (a, b) = MSR.as_bytes().split_at(150);
    let mut gz = Vec::new();
    for part in [a, b] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(part).unwrap();
        gz.extend(e.finish().unwrap());
    }
    let p = write_file("trace.gz", &gz);
    assert_eq!(detect_format(&p).unwrap(), TraceFormat::Msr);
    assert_eq!(drain(&cfg(&p)), plain);
    // Two zstd frames, no telling file name.
    let mut zst = Vec::new();
    for part in [a, b] {
        zst.extend(ruzstd::encoding::compress_to_vec(
            part,
            ruzstd::encoding::CompressionLevel::Fastest,
        ));
    }
    let p = write_file("trace.bin", &zst);
    assert_eq!(drain(&cfg(&p)), plain);
    // A corrupt compressed file is an I/O error, not a panic.
    let p = write_file("bad.gz", &gz[..20]);
    let e = drain_with(&cfg(&p), &ctx()).err().unwrap();
    assert!(
        matches!(e, WorkloadError::Io { .. } | WorkloadError::Parse { .. }),
        "{e}"
    );
}

#[test]
fn malformed_line_reports_file_line_text_and_expectation() {
    let long_tail = "x".repeat(300);
    let text = format!(
        "128166372000000000,hm,0,Read,0,4096,1\n128166372000000001,hm,0,Raed,0,4096,1{long_tail}\n"
    );
    let p = write_file("bad.csv", text.as_bytes());
    let e = drain_with(
        &TraceWorkloadConfig {
            format: TraceFormat::Msr,
            ..cfg(&p)
        },
        &ctx(),
    )
    .err()
    .unwrap();
    match &e {
        WorkloadError::Parse {
            file,
            line,
            text,
            reason,
        } => {
            assert!(file.ends_with("bad.csv"));
            assert_eq!(*line, 2);
            assert!(
                text.starts_with("128166372000000001,hm,0,Raed") && text.chars().count() <= 121,
                "{text}"
            );
            assert!(reason.contains("Type: expected Read or Write"), "{reason}");
        }
        other => panic!("{other}"),
    }
    let shown = e.to_string();
    assert!(shown.contains("bad.csv:2:"), "{shown}");
}

#[test]
fn endless_line_is_an_error_not_a_memory_hog() {
    let mut text = b"0,h,0,Write,0,4096,1\n".to_vec();
    text.extend(vec![b'7'; 3 << 20]);
    let p = write_file("endless.csv", &text);
    let e = drain_with(&cfg(&p), &ctx()).err().unwrap().to_string();
    assert!(
        e.contains("endless.csv:2:") && e.contains("line longer than"),
        "{e}"
    );
}

#[test]
fn skip_bad_lines_counts_then_fails() {
    let text = "128166372000000000,hm,0,Read,0,4096,1\ngarbage\n128166372000000001,hm,0,Write,0,4096,1\n1,2\n\
128166372000000002,hm,0,Write,4096,4096,1\n";
    let p = write_file("skip.csv", text.as_bytes());
    let c = TraceWorkloadConfig {
        skip_bad_lines: 2,
        ..cfg(&p)
    };
    let mut w = build(&c, &ctx()).unwrap();
    let mut n = 0;
    while w.flows[0].source.next_request().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(
        (n, w.skipped_lines(), w.stats.snapshot().skipped_bad_lines),
        (3, 2, 2)
    );
    let c = TraceWorkloadConfig {
        skip_bad_lines: 1,
        ..cfg(&p)
    };
    let e = drain_with(&c, &ctx()).err().unwrap().to_string();
    assert!(
        e.contains("skip.csv:4:") && e.contains("skip_bad_lines = 1"),
        "{e}"
    );
}

#[test]
fn out_of_range_error_wrap_scale() {
    // Device of 1 MiB; trace up to 4 MiB.
    let small = WorkloadContext {
        logical_bytes: 1 << 20,
        ..ctx()
    };
    let text = "0,h,0,Write,0,4096,1\n1,h,0,Write,1048576,4096,1\n2,h,0,Write,4190208,4096,1\n3,h,0,Write,1046528,4096,1\n";
    let p = write_file("range.csv", text.as_bytes());
    let e = drain_with(&cfg(&p), &small).err().unwrap().to_string();
    assert!(
        e.contains("range.csv:2:") && e.contains("out_of_range"),
        "{e}"
    );

    let (reqs, stats) = drain_with(
        &TraceWorkloadConfig {
            out_of_range: OutOfRange::Wrap,
            ..cfg(&p)
        },
        &small,
    )
    .unwrap();
    let offs: Vec<u64> = reqs.iter().map(|r| r.offset_bytes).collect();
    // 4190208 % 1 MiB = 1044480; 1046528 + 4096 crosses the end: moved back to end there.
    assert_eq!(offs, vec![0, 0, 1_044_480, (1 << 20) - 4096]);
    assert_eq!(stats.remapped_requests(), 3);

    let (reqs, _) = drain_with(
        &TraceWorkloadConfig {
            out_of_range: OutOfRange::Scale,
            ..cfg(&p)
        },
        &small,
    )
    .unwrap();
    let offs: Vec<u64> = reqs.iter().map(|r| r.offset_bytes).collect();
    // Highest end 4 MiB -> factor 1/4, rounded down to 4 KiB units.
    assert_eq!(offs, vec![0, 262_144, 1_044_480, 258_048]);
    assert!(reqs
        .iter()
        .all(|r| r.offset_bytes + r.size_bytes <= 1 << 20));
}

#[test]
fn detection_override_and_config_errors() {
    let p = write_file("x.txt", b"\n\nhello world\n");
    let e = build(&cfg(&p), &ctx()).err().unwrap().to_string();
    assert!(
        e.contains("x.txt:3:") && e.contains("set format explicitly"),
        "{e}"
    );
    // Explicit override of a detectable file: SPC data parsed as MSR is malformed.
    let p = write_file("o.spc", SPC.as_bytes());
    let e = drain_with(
        &TraceWorkloadConfig {
            format: TraceFormat::Msr,
            ..cfg(&p)
        },
        &ctx(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("expected 7 comma-separated fields"),
        "{e}"
    );
    let e = build(
        &TraceWorkloadConfig {
            asu: Some(0),
            ..cfg(&write_file("f.csv", MSR.as_bytes()))
        },
        &ctx(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("workload.asu") && e.to_string().contains("msr"),
        "{e}"
    );
    let e = build(
        &TraceWorkloadConfig {
            time_scale: 0.0,
            ..cfg(&p)
        },
        &ctx(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("workload.time_scale"));
    let e = build(&cfg(Path::new("/nonexistent/trace.csv")), &ctx())
        .err()
        .unwrap();
    assert!(matches!(e, WorkloadError::Io { .. }));
}

#[test]
fn toml_config_and_relative_path() {
    let p = write_file("rel.csv", MSR.as_bytes());
    let c: WorkloadConfig = toml::from_str(
        "kind = \"trace\"\npath = \"rel.csv\"\nformat = \"msr\"\nreplay = \"closed\"\nqueue_depth = 4\n\
out_of_range = \"wrap\"\nskip_bad_lines = 3\ntime_scale = 2.0\n",
    )
    .unwrap();
    let ctx = WorkloadContext {
        base_dir: p.parent().map(Path::to_path_buf),
        ..ctx()
    };
    let w = c.build(&ctx).unwrap();
    assert_eq!(w.flows[0].arrival, Arrival::Closed { queue_depth: 4 });
    assert!(
        toml::from_str::<WorkloadConfig>("kind = \"trace\"\npath = \"a\"\nfromat = \"msr\"")
            .is_err()
    );
    let fmt: TraceWorkloadConfig = toml::from_str("path = \"a\"\nformat = \"fio-iolog\"").unwrap();
    assert_eq!(fmt.format, TraceFormat::FioIolog);
}

// ---------------------------------------------------------------- round trip

mod roundtrip {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug)]
    struct Gen {
        op: u8,
        sector: u64,
        sectors: u64,
        /// Time step in µs (fits every format's resolution).
        dt_us: u64,
    }

    fn gen() -> impl Strategy<Value = Gen> {
        (0u8..4, 0u64..1_000_000, 1u64..256, 0u64..5_000).prop_map(
            |(op, sector, sectors, dt_us)| Gen {
                op,
                sector,
                sectors,
                dt_us,
            },
        )
    }

    /// The ops each format can express.
    fn op_of(g: &Gen, fmt: TraceFormat) -> HostOp {
        let ops: &[HostOp] = match fmt {
            TraceFormat::Msr | TraceFormat::Spc => &[R, W],
            _ => &[R, W, T, HostOp::Flush],
        };
        ops[g.op as usize % ops.len()]
    }

    fn render(gens: &[Gen], fmt: TraceFormat, base_us: u64) -> (String, Vec<HostRequest>) {
        let mut text = String::new();
        let mut expect = Vec::new();
        if fmt == TraceFormat::FioIolog {
            text.push_str("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n");
        }
        let mut t_us = base_us;
        for (i, g) in gens.iter().enumerate() {
            t_us += g.dt_us;
            let op = op_of(g, fmt);
            let (off, size) = if op == HostOp::Flush {
                (0, 0)
            } else {
                (g.sector * 512, g.sectors * 512)
            };
            expect.push(req((t_us - base_us - gens[0].dt_us) * 1000, op, off, size));
            let word = |r: &str, w: &str, t: &str, f: &str| match op {
                R => r.to_string(),
                W => w.to_string(),
                T => t.to_string(),
                HostOp::Flush => f.to_string(),
                _ => unreachable!(),
            };
            match fmt {
                TraceFormat::Msr => {
                    text += &format!(
                        "{},srv,2,{},{off},{size},{}\n",
                        t_us * 10,
                        word("Read", "Write", "", ""),
                        17 + i
                    )
                }
                TraceFormat::Spc => {
                    text += &format!(
                        "{},{},{size},{},{}.{:06}\n",
                        i % 3,
                        g.sector,
                        word("r", "w", "", ""),
                        t_us / 1_000_000,
                        t_us % 1_000_000
                    )
                }
                TraceFormat::Blkparse => {
                    let rwbs = word("R", "WS", "D", "FWS");
                    let what = if op == HostOp::Flush {
                        String::new()
                    } else {
                        format!("{} + {} ", g.sector, g.sectors)
                    };
                    text += &format!(
                        "  8,0    1 {:8} {:5}.{:09} {:5}  Q {rwbs:>3} {what}[proc]\n",
                        i + 1,
                        t_us / 1_000_000,
                        (t_us % 1_000_000) * 1000,
                        100 + i
                    );
                }
                TraceFormat::FioIolog => {
                    text += &format!(
                        "{t_us} /dev/x {} {off} {size}\n",
                        word("read", "write", "trim", "sync")
                    )
                }
                TraceFormat::Ssdlab => {
                    text += &format!("{},{},{off},{size}\n", t_us * 1000, ssdlab_code(op))
                }
                TraceFormat::Auto => unreachable!(),
            }
        }
        (text, expect)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn every_format_reads_back_what_was_written(
            gens in proptest::collection::vec(gen(), 1..60),
            base_us in 0u64..10_000_000_000,
            fmt_i in 0usize..5,
            compress in 0u8..3,
        ) {
            let fmt = [TraceFormat::Msr, TraceFormat::Spc, TraceFormat::Blkparse, TraceFormat::FioIolog, TraceFormat::Ssdlab][fmt_i];
            let (text, expect) = render(&gens, fmt, base_us);
            let bytes = match compress {
                0 => text.into_bytes(),
                1 => {
                    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    e.write_all(text.as_bytes()).unwrap();
                    e.finish().unwrap()
                }
                _ => ruzstd::encoding::compress_to_vec(text.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest),
            };
            let p = write_file(&format!("prop-{fmt_i}-{compress}.trace"), &bytes);
            prop_assert_eq!(detect_format(&p).unwrap(), fmt);
            let got = drain(&cfg(&p));
            prop_assert_eq!(got, expect);
        }
    }
}

// ---------------------------------------------------------------- ssdlab (zoned CSV)

/// 4 zones of 64 KiB, 4 placement identifiers.
fn zoned_ctx() -> WorkloadContext {
    WorkloadContext {
        logical_bytes: 4 << 16,
        zones: Some(crate::ZoneGeometry {
            zone_bytes: 1 << 16,
            zone_capacity_bytes: 1 << 16,
            zones: 4,
            max_open_zones: 2,
            max_active_zones: 2,
        }),
        placement_ids: 4,
        ..ctx()
    }
}

#[test]
fn ssdlab_format_round_trips_every_op() {
    let z = 1u64 << 16;
    let want: Vec<HostRequest> = [
        (HostOp::Write, 0, 8192, 3),
        (HostOp::Read, 4096, 4096, 0),
        (HostOp::Trim, z, 4096, 0),
        (HostOp::Flush, 0, 0, 0),
        (HostOp::ZoneAppend, 2 * z, 4096, 1),
        (HostOp::ZoneOpen, 3 * z, 0, 0),
        (HostOp::ZoneClose, 3 * z, 0, 0),
        (HostOp::ZoneFinish, 3 * z, 0, 0),
        (HostOp::ZoneReset, 2 * z, 0, 0),
        (HostOp::ZoneReport, z + 512, 4096, 0),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(op, off, size, pid))| HostRequest {
        placement_id: pid,
        ..req(i as u64 * 1000, op, off, size)
    })
    .collect();
    assert_eq!(
        HostOp::ALL.to_vec(),
        {
            let mut ops: Vec<HostOp> = want.iter().map(|r| r.op).collect();
            ops.sort();
            ops
        },
        "every op is in the trace"
    );
    // Short codes with a header and the placement column; long names without either.
    let mut short = String::from("time_ns,op,offset_bytes,size_bytes,placement_id\n# comment\n");
    let mut long = String::new();
    for r in &want {
        short += &format!(
            "{},{},{},{},{}\n",
            r.arrival_ns,
            ssdlab_code(r.op),
            r.offset_bytes,
            r.size_bytes,
            r.placement_id
        );
        if r.placement_id == 0 {
            long += &format!(
                "{}, {}, {}, {}\r\n",
                r.arrival_ns,
                r.op.name(),
                r.offset_bytes,
                r.size_bytes
            );
        } else {
            long += &format!(
                "{},{},{},{},{}\n",
                r.arrival_ns,
                r.op.name().to_uppercase(),
                r.offset_bytes,
                r.size_bytes,
                r.placement_id
            );
        }
    }
    for (name, text) in [("short.csv", short), ("long.csv", long)] {
        let p = write_file(name, text.as_bytes());
        assert_eq!(detect_format(&p).unwrap(), TraceFormat::Ssdlab, "{name}");
        let (got, _) = drain_with(&cfg(&p), &zoned_ctx()).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn ssdlab_format_errors_name_line_column_and_why() {
    let err = |text: &str, ctx: &WorkloadContext| -> (u64, String) {
        let p = write_file("bad-ssdlab.csv", text.as_bytes());
        let c = TraceWorkloadConfig {
            format: TraceFormat::Ssdlab,
            ..cfg(&p)
        };
        match drain_with(&c, ctx).expect_err("an error") {
            WorkloadError::Parse {
                line, reason, file, ..
            } => {
                assert!(file.ends_with("bad-ssdlab.csv"));
                (line, reason)
            }
            other => panic!("{other}"),
        }
    };
    let conventional = WorkloadContext {
        placement_ids: 2,
        ..ctx()
    };
    for (text, ctx, line, words) in [
        (
            "0,W,0,4096\n1,ZR,0,0\n",
            &conventional,
            2,
            "column 2 (op): a zone_reset needs a zoned device",
        ),
        ("0,A,0,4096\n", &conventional, 1, "zoned device"),
        (
            "0,W,0,4096,2\n",
            &conventional,
            1,
            "column 5 (placement_id): 2, but the device has placement identifiers 0 to 1",
        ),
        ("0,W,0,4096,1\n", &ctx(), 1, "no FDP"),
        (
            "0,R,0,4096,1\n",
            &zoned_ctx(),
            1,
            "only writes and zone appends",
        ),
        (
            "0,W,0,4096\n5,X,0,4096\n",
            &zoned_ctx(),
            2,
            "column 2 (op): expected R, W",
        ),
        (
            "0,ZR,4096,0\n",
            &zoned_ctx(),
            1,
            "column 3 (offset_bytes): a zone_reset names a zone by its first byte",
        ),
        (
            "0,F,0,4096\n",
            &zoned_ctx(),
            1,
            "column 4 (size_bytes): a flush carries no data",
        ),
        ("0,ZP,0,0\n", &zoned_ctx(), 1, "report buffer"),
        (
            "0,A,0,4040964096\n",
            &zoned_ctx(),
            1,
            "column 4 (size_bytes): a zone append of 4040964096 bytes is larger than a zone",
        ),
        ("x,W,0,4096\n", &zoned_ctx(), 1, "column 1 (time_ns)"),
        ("0,W,0\n", &zoned_ctx(), 1, "expected 4 or 5"),
        ("0,ZR,1048576,0\n", &zoned_ctx(), 1, "beyond the device"),
    ] {
        let (l, why) = err(text, ctx);
        assert_eq!(l, line, "{text:?}: {why}");
        assert!(why.contains(words), "{text:?}: {why}");
    }
}
