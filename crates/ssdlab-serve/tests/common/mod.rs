//! Shared by the in-process `serve` tests: a tiny device, a raw NBD client, options.
#![allow(dead_code)]

use ssdlab_serve::nbd::proto::*;
use ssdlab_serve::ServeOptions;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// 2 planes × 24 blocks × 16 pages of 16 KiB: 12 MiB raw, 8 MiB logical.
pub const DEVICE: &str = r#"
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

pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ssdlab-served-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `serve`'s defaults into `dir`, exact virtual time, ending when the last client leaves.
pub fn options(dir: &Path) -> ServeOptions {
    let mut o = ServeOptions::new(dir.join("s.sock"), dir.join("out"), "test");
    o.run_ahead_ns = 0;
    o.owed_slack = 0;
    o.exit_on_disconnect = true;
    o
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn read_n(s: &mut UnixStream, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).expect("read from server");
    b
}

pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

/// Connect and negotiate (fixed newstyle, NO_ZEROES, OPT_GO) once the socket appears.
pub fn connect_go(path: &Path) -> UnixStream {
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

pub fn send(
    s: &mut UnixStream,
    kind: u16,
    flags: u16,
    cookie: u64,
    off: u64,
    len: u32,
    data: &[u8],
) {
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

/// One simple reply header: (errno, cookie).
pub fn reply(s: &mut UnixStream) -> (u32, u64) {
    let h = read_n(s, 16);
    assert_eq!(be32(&h), NBD_SIMPLE_REPLY_MAGIC);
    (
        be32(&h[4..]),
        u64::from_be_bytes(h[8..16].try_into().unwrap()),
    )
}

/// A command and its reply: the errno (a READ's data is read and returned too).
pub fn call(
    s: &mut UnixStream,
    kind: u16,
    flags: u16,
    cookie: u64,
    off: u64,
    len: u32,
    data: &[u8],
) -> (u32, Vec<u8>) {
    send(s, kind, flags, cookie, off, len, data);
    let (errno, c) = reply(s);
    assert_eq!(c, cookie);
    let got = if kind == NBD_CMD_READ && errno == 0 {
        read_n(s, len as usize)
    } else {
        Vec::new()
    };
    (errno, got)
}

/// The `serve.this_cycle.commands` (or `all_cycles`) identity: every command received is
/// ok, an error or in flight, and the errors add up by cause.
pub fn assert_conserved(c: &serde_json::Value) {
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {c:#}"));
    let received = n("read") + n("write") + n("flush") + n("trim") + n("write_zeroes");
    assert_eq!(received, n("ok") + n("errors") + n("in_flight"), "{c:#}");
    let by = &c["errors_by_cause"];
    let causes: u64 = by
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(causes, n("errors"), "{c:#}");
}

/// A document `serve` wrote at the end of a power cycle (a cut, the end) carries the
/// `serve` section's checks in its audit, after the core's, every one passed; and no
/// internal error.
pub fn assert_serve_audited(doc: &serde_json::Value) {
    let a = &doc["audit"];
    assert_ne!(a["verdict"], "internal_error", "{a:#}");
    let checks = a["checks"].as_array().expect("audit.checks");
    let serve: Vec<(&str, &str)> = checks
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["verdict"].as_str().unwrap()))
        .filter(|(n, _)| n.starts_with("serve_"))
        .collect();
    assert_eq!(
        serve,
        [
            ("serve_commands_answered", "ok"),
            ("serve_errors_by_cause", "ok"),
            ("serve_nothing_in_flight", "ok"),
            ("serve_all_cycles_sum", "ok"),
            ("serve_device_requests", "ok"),
        ],
        "{a:#}"
    );
    assert_eq!(checks.len(), ssdlab_core::sim::audit::CHECKS.len() + 5);
}
