//! `ssdlab serve` in process, driven by a raw pipelined NBD client: the data a client
//! reads back is what it wrote (through GC), and `--record-trace` replayed by `ssdlab
//! run`'s sequence gives the same FTL counters as the served run.

use ssdlab_core::Config;
use ssdlab_serve::nbd::proto::*;
use ssdlab_serve::{serve, ServeOptions, TimeMode};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// 2 planes × 24 blocks × 16 pages of 16 KiB: 12 MiB raw, 8 MiB logical.
const DEVICE: &str = r#"
seed = 5
mode = "timed"
[device]
over_provisioning_ratio = 0.5
channel_rate_mb_per_s = 800
command_overhead_ns = 1000
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 2
planes_per_die = 2
blocks_per_plane = 24
pages_per_block = 16
page_size_bytes = 16384
mapping_unit_bytes = 4096
[ftl]
gc_soft_free_blocks = 3
gc_hard_free_blocks = 2
write_buffer_bytes = 262144
[precondition]
enabled = false
"#;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ssdlab-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn read_n(s: &mut UnixStream, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).expect("read from server");
    b
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

/// Connect and negotiate (fixed newstyle, NO_ZEROES, OPT_GO) once the socket appears.
fn connect_go(path: &Path) -> UnixStream {
    let t0 = Instant::now();
    let mut s = loop {
        match UnixStream::connect(path) {
            Ok(s) => break s,
            Err(_) if t0.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("server never listened: {e}"),
        }
    };
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let g = read_n(&mut s, 18);
    assert_eq!(&g[..8], b"NBDMAGIC");
    s.write_all(&3u32.to_be_bytes()).unwrap();
    let mut o = Vec::new();
    o.extend_from_slice(b"IHAVEOPT");
    o.extend_from_slice(&NBD_OPT_GO.to_be_bytes());
    o.extend_from_slice(&6u32.to_be_bytes());
    o.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // name "", no info requests
    s.write_all(&o).unwrap();
    loop {
        let h = read_n(&mut s, 20);
        let len = be32(&h[16..]) as usize;
        read_n(&mut s, len);
        if be32(&h[12..]) == NBD_REP_ACK {
            return s;
        }
    }
}

fn send(s: &mut UnixStream, kind: u16, flags: u16, cookie: u64, off: u64, len: u32, data: &[u8]) {
    let mut b = Vec::with_capacity(28 + data.len());
    b.extend_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&off.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A pipelined client (queue depth 8, disjoint ranges in flight): writes three times the
/// capacity, reads (checked against its own model), trims, flushes and FUA writes.
fn client(path: &Path, logical: u64) -> u64 {
    let mut s = connect_go(path);
    let mut model = vec![0u8; logical as usize];
    let mut rng = Xorshift(0x9e3779b97f4a7c15);
    let unit = 4096u64;
    let units = logical / unit;
    let mut flight: HashMap<u64, (u16, u64, u32)> = HashMap::new();
    let (mut sent, mut checked, mut written) = (0u64, 0u64, 0u64);
    let target = 3 * logical;
    while written < target || !flight.is_empty() {
        if written < target && flight.len() < 8 {
            let n = 1 + rng.next() % 4;
            let first = rng.next() % (units - n);
            let (off, len) = (first * unit, (n * unit) as u32);
            let busy = flight
                .values()
                .any(|&(_, o, l)| off < o + l as u64 && o < off + len as u64);
            if !busy {
                sent += 1;
                let cookie = sent;
                let kind = match rng.next() % 20 {
                    0..=11 => NBD_CMD_WRITE,
                    12..=16 => NBD_CMD_READ,
                    17 => NBD_CMD_TRIM,
                    _ => NBD_CMD_FLUSH,
                };
                match kind {
                    NBD_CMD_WRITE => {
                        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                        model[off as usize..off as usize + len as usize].copy_from_slice(&data);
                        let fua = if rng.next().is_multiple_of(8) {
                            NBD_CMD_FLAG_FUA
                        } else {
                            0
                        };
                        send(&mut s, kind, fua, cookie, off, len, &data);
                        written += len as u64;
                    }
                    NBD_CMD_TRIM => {
                        model[off as usize..off as usize + len as usize].fill(0);
                        send(&mut s, kind, 0, cookie, off, len, &[]);
                    }
                    NBD_CMD_FLUSH => send(&mut s, kind, 0, cookie, 0, 0, &[]),
                    _ => send(&mut s, kind, 0, cookie, off, len, &[]),
                }
                let range = if kind == NBD_CMD_FLUSH {
                    (0, 0)
                } else {
                    (off, len)
                };
                flight.insert(cookie, (kind, range.0, range.1));
                continue;
            }
        }
        let h = read_n(&mut s, 16);
        assert_eq!(be32(&h), NBD_SIMPLE_REPLY_MAGIC);
        let cookie = u64::from_be_bytes(h[8..16].try_into().unwrap());
        let (kind, off, len) = flight.remove(&cookie).expect("known cookie");
        assert_eq!(
            be32(&h[4..]),
            0,
            "error reply to command {kind} at {off}+{len}"
        );
        if kind == NBD_CMD_READ {
            let got = read_n(&mut s, len as usize);
            assert!(
                got[..] == model[off as usize..off as usize + len as usize],
                "read of {len} bytes at {off} differs from what was written"
            );
            checked += 1;
        }
    }
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    checked
}

fn options(dir: &Path, trace: Option<PathBuf>) -> ServeOptions {
    let mut o = ServeOptions::new(dir.join("s.sock"), dir.join("out"), "replay-test");
    o.record_trace = trace;
    o.max_connections = 8;
    o.run_ahead_ns = 0;
    o.owed_slack = 0;
    o.exit_on_disconnect = true;
    o
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn data_reads_back_and_the_recorded_trace_replays_to_the_same_ftl_counters() {
    let dir = scratch("trace");
    let trace = dir.join("served.blktrace");
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let logical = cfg.validate().unwrap().logical_bytes;
    let opts = options(&dir, Some(trace.clone()));
    let sock = opts.socket.clone().unwrap();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let checked = client(&sock, logical);
    let summary = server.join().unwrap().expect("serve");
    assert!(checked > 100, "{checked} reads checked");
    assert!(summary.all_cycles.commands.fua > 0 && summary.all_cycles.commands.trim > 0);
    let served = json(&dir.join("out/results.json"));
    assert!(served["gc"]["copied_units"].as_u64().unwrap() > 0, "GC ran");

    // Replay the trace on the same device, as `ssdlab run` would.
    let text = format!(
        "{DEVICE}integrity = true\n[workload]\nkind = \"trace\"\nformat = \"blkparse\"\npath = \"{}\"\n",
        trace.display()
    );
    let text = text.replacen("seed = 5\n", "seed = 5\nintegrity = true\n", 1);
    let text = text.replace("integrity = true\n[workload]", "[workload]");
    // As served (out/config.resolved.toml says so too).
    let text = text.replacen(
        "[ftl]\n",
        "[ftl]\nhold_overwritten_until_durable = true\n",
        1,
    );
    let cfg = Config::from_toml_str(&text, "replay").unwrap();
    let mut sim = ssdlab_core::Simulation::new(cfg).unwrap();
    let replayed =
        serde_json::to_value(sim.run_workload(&mut ssdlab_core::NoProgress).unwrap()).unwrap();
    for key in ["nand", "gc", "waf", "wear"] {
        assert_eq!(served[key], replayed[key], "{key}: served vs replayed");
    }
    for key in [
        "reads",
        "writes",
        "trims",
        "flushes",
        "write_units",
        "rmw_reads",
    ] {
        assert_eq!(served["host"][key], replayed["host"][key], "host.{key}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real time with a dilation of 10 000: a reply never leaves before its simulated
/// completion × 10 000 after the start, so the client's own latency reads as the device's
/// (scaled); and with `--stats-interval` results.json appears while serving, status
/// `serving`.
#[test]
fn realtime_replies_wait_for_their_dilated_completion_and_stats_come_while_serving() {
    let dir = scratch("realtime");
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let mut opts = options(&dir, None);
    let k = 10_000.0;
    opts.time = TimeMode::Realtime { dilation: k };
    opts.stats_interval = Some(Duration::from_millis(100));
    let sock = opts.socket.clone().unwrap();
    let out = opts.out_dir.clone();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    let mut client_ns = Vec::new();
    for i in 0..6u64 {
        let t = Instant::now();
        if i % 2 == 0 {
            send(
                &mut s,
                NBD_CMD_WRITE,
                0,
                i,
                i * 4096,
                4096,
                &[i as u8; 4096],
            );
        } else {
            send(&mut s, NBD_CMD_READ, 0, i, (i - 1) * 4096, 4096, &[]);
        }
        let h = read_n(&mut s, 16);
        assert_eq!(be32(&h[4..]), 0);
        if i % 2 == 1 {
            assert_eq!(read_n(&mut s, 4096), vec![(i - 1) as u8; 4096]);
        }
        client_ns.push(t.elapsed().as_nanos() as u64);
    }
    // Stats while serving.
    let t0 = Instant::now();
    while !out.join("results.json").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no results while serving"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let during = json(&out.join("results.json"));
    assert_eq!(during["status"], "serving");
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let summary = server.join().unwrap().expect("serve");
    let r = json(&out.join("results.json"));
    assert_eq!(r["status"], "completed");
    assert_eq!(summary.time_mode, "realtime");
    // The device's fastest request, dilated, is a floor under every client latency.
    let min_sim_ns = ["read", "write"]
        .iter()
        .map(|op| r["latency_ns"][op]["min"].as_u64().unwrap_or(u64::MAX))
        .min()
        .unwrap();
    let floor = (min_sim_ns as f64 * k * 0.9) as u64;
    assert!(min_sim_ns > 0 && min_sim_ns < u64::MAX);
    for (i, &c) in client_ns.iter().enumerate() {
        assert!(
            c >= floor,
            "request {i}: {c} ns on the wall, floor {floor} ns"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn reply(s: &mut UnixStream) -> (u32, u64) {
    let h = read_n(s, 16);
    assert_eq!(be32(&h), NBD_SIMPLE_REPLY_MAGIC);
    (
        be32(&h[4..]),
        u64::from_be_bytes(h[8..16].try_into().unwrap()),
    )
}

/// A power cut after a given number of requests: what a flush (or FUA) acknowledged
/// survives, an unflushed rewrite reads as its old or its new bytes, the old connection is
/// refused (`ESHUTDOWN`), a new one is served the recovered device, and each power cycle's
/// figures are kept.
#[test]
fn a_power_cut_keeps_what_a_flush_acknowledged() {
    let dir = scratch("cut");
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let mut opts = options(&dir, None);
    // 40 writes, a flush, 10 FUA writes, then the cut on the 20th unflushed rewrite.
    opts.power_cut_after_requests = Some(40 + 1 + 10 + 20);
    let sock = opts.socket.clone().unwrap();
    let out = opts.out_dir.clone();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    let unit = |u: u64, v: u8| vec![v ^ (u as u8); 4096];
    let mut cookie = 0;
    let mut call = |s: &mut UnixStream, kind: u16, flags: u16, off: u64, data: &[u8]| {
        cookie += 1;
        let len = if kind == NBD_CMD_FLUSH { 0 } else { 4096 };
        send(s, kind, flags, cookie, off, len, data);
        reply(s).0
    };
    for u in 0..40 {
        assert_eq!(call(&mut s, NBD_CMD_WRITE, 0, u * 4096, &unit(u, 1)), 0);
    }
    assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 0, &[]), 0);
    for u in 40..50 {
        assert_eq!(
            call(
                &mut s,
                NBD_CMD_WRITE,
                NBD_CMD_FLAG_FUA,
                u * 4096,
                &unit(u, 3)
            ),
            0
        );
    }
    let mut errors = 0;
    for u in 0..20 {
        let e = call(&mut s, NBD_CMD_WRITE, 0, u * 4096, &unit(u, 2));
        errors += (e != 0) as u32;
    }
    // The cut came with the last of them: this connection's device is gone.
    assert_eq!(call(&mut s, NBD_CMD_READ, 0, 0, &[]), NBD_ESHUTDOWN);
    let mut t = connect_go(&sock);
    for u in 0..50u64 {
        send(&mut t, NBD_CMD_READ, 0, 1000 + u, u * 4096, 4096, &[]);
        assert_eq!(reply(&mut t), (0, 1000 + u));
        let got = read_n(&mut t, 4096);
        let ok = match u {
            0..=19 => got == unit(u, 1) || got == unit(u, 2),
            20..=39 => got == unit(u, 1),
            _ => got == unit(u, 3),
        };
        assert!(ok, "unit {u} after the cut: {:?}…", &got[..4]);
    }
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    send(&mut t, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let summary = server.join().unwrap().expect("serve");
    assert!(
        errors <= 1,
        "{errors} rewrites failed: at most the one in flight at the cut"
    );
    assert_eq!(summary.power_cycle, 2);
    assert!(summary.recoveries[0]["pages_scanned"].as_u64().unwrap() > 0);
    let first = json(&out.join("power-cycle-1/results.json"));
    assert_eq!(first["status"], "power_cut");
    assert_eq!(json(&out.join("results.json"))["status"], "completed");
    let _ = std::fs::remove_dir_all(&dir);
}
