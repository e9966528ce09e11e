//! `ssdlab serve` (the real binary, configs/serve-small.toml: 256 MiB) against real NBD
//! clients: fio's nbd engine through GC, qemu-io, nbdcopy, nbdinfo, raw bad clients, and
//! ext4 on nbdfuse + a loop device. A test whose tool is missing says so and returns (CI
//! installs them, .ci/run). Unix sockets only, in a per-test temp dir with the pid in its
//! name; every wait is bounded; only the processes started here are signalled.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The export of configs/serve-small.toml.
const SIZE: u64 = 256 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        println!("skipping: {tool} not installed");
    }
    found
}

/// Waits for `child` at most `limit`; kills it (and fails) when it does not exit.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `cond` every 10 ms for at most `limit`.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// One `ssdlab serve` process with its scratch dir (socket, out/, stderr), killed and
/// removed on drop.
struct Server {
    child: Option<Child>,
    dir: PathBuf,
    sock: PathBuf,
}

/// A fresh scratch directory for test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ssdlab-serve-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Server {
    fn start(name: &str, extra: &[&str]) -> Server {
        let s = Server::start_config(name, &repo().join("configs/serve-small.toml"), extra);
        assert!(
            s.stderr().contains("serve: 268435456 bytes on unix:"),
            "{}",
            s.stderr()
        );
        s
    }

    /// `ssdlab serve CONFIG` listening (on a socket in its scratch dir).
    fn start_config(name: &str, config: &Path, extra: &[&str]) -> Server {
        let dir = scratch(name);
        let sock = dir.join("s.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_ssdlab"))
            .arg("serve")
            .arg(config)
            .arg("--socket")
            .arg(&sock)
            .arg("--out")
            .arg(dir.join("out"))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(File::create(dir.join("stdout")).unwrap())
            .stderr(File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("start ssdlab serve");
        let mut s = Server {
            child: Some(child),
            dir,
            sock,
        };
        let listening = wait_until(TIMEOUT, || {
            if let Some(st) = s.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("ssdlab serve exited ({st}): {}", s.stderr());
            }
            s.stderr().contains(" bytes on unix:")
        });
        assert!(listening, "not listening in time: {}", s.stderr());
        assert!(s.sock.exists(), "listening but no socket file");
        s
    }

    fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.sock.display())
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// SIGTERM, exit 0 within the timeout, the socket gone; results.json parsed.
    fn stop(&mut self) -> serde_json::Value {
        self.signal(libc::SIGTERM);
        self.exited("ssdlab serve after SIGTERM")
    }

    fn signal(&self, sig: libc::c_int) {
        let child = self.child.as_ref().expect("server running");
        // SAFETY: a signal to the process this test started (still ours: not yet waited).
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
    }

    /// VmRSS of the server, bytes.
    fn rss_bytes(&self) -> u64 {
        let pid = self.child.as_ref().expect("server running").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kib: u64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .expect("VmRSS");
        kib * 1024
    }

    /// The server exits by itself (0) within the timeout, the socket gone; results.json.
    fn exited(&mut self, what: &str) -> serde_json::Value {
        let mut child = self.child.take().expect("server running");
        let st = wait_bounded(&mut child, TIMEOUT, what);
        assert!(st.success(), "serve exited {st}: {}", self.stderr());
        assert!(!self.sock.exists(), "socket file left behind");
        let out = self.dir.join("out");
        let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(out.join("latency.csv").is_file(), "latency.csv missing");
        // One time-series row per 100 ms of simulated time (none for a shorter run, as `run`).
        if u(&v["host"]["sim_time_ns"]) >= 200_000_000 {
            assert!(
                out.join("timeseries.csv").is_file(),
                "timeseries.csv missing"
            );
        }
        assert_eq!(v["status"], "completed", "{v:#}");
        assert_eq!(v["integrity"]["errors"], 0, "{v:#}");
        // The final results' audit, said as `ssdlab run` says it: the serve section's
        // checks after the core's, none broken (in any document: serving went on, but
        // the server would have failed).
        let err = self.stderr();
        let said = format!(
            "serve: audit: {} checks, ",
            v["audit"]["checks"].as_array().unwrap().len()
        );
        assert!(err.contains(&said), "{err}");
        assert!(!err.contains("INTERNAL ERROR"), "{err}");
        assert_ne!(v["audit"]["verdict"], "internal_error", "{v:#}");
        assert!(
            v["audit"]["checks"][ssdlab_core::sim::audit::CHECKS.len()]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("serve_")),
            "{v:#}"
        );
        v
    }

    /// Exit status and results.json (if any) once the server ends by itself.
    fn ended(&mut self, what: &str) -> (ExitStatus, Option<serde_json::Value>) {
        let mut child = self.child.take().expect("server running");
        let st = wait_bounded(&mut child, TIMEOUT, what);
        let text = std::fs::read_to_string(self.dir.join("out/results.json")).ok();
        (st, text.map(|t| serde_json::from_str(&t).unwrap()))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs a tool under `timeout` (bounded, killed after), in `dir`.
fn tool(dir: &Path, secs: u32, prog: &str, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["-k", "5", &secs.to_string(), prog])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {prog}: {e}"))
}

fn tool_ok(dir: &Path, secs: u32, prog: &str, args: &[&str]) -> Output {
    let out = tool(dir, secs, prog, args);
    assert!(
        out.status.success(),
        "{prog} {args:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// fio with JSON output into a file (its nbd engine prints a line on stdout).
fn fio(srv: &Server, tag: &str, args: &[&str]) -> serde_json::Value {
    let json = srv.dir.join(format!("fio-{tag}.json"));
    let mut all = vec![
        "--output-format=json".to_string(),
        format!("--output={}", json.display()),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    tool_ok(&srv.dir, 120, "fio", &all);
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn fio_job<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no fio job {name} in {v:#}"))
}

fn json_file(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Deterministic bytes (xorshift).
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

// ---- 1. fio through GC ---------------------------------------------------------------------

#[test]
fn fio_verifies_at_qd16_and_after_gc_and_results_count_its_bytes() {
    if !have("fio") {
        return;
    }
    let mut srv = Server::start("fio", &[]);
    let uri = format!("--uri={}", srv.uri());
    let common = [
        "--ioengine=nbd",
        uri.as_str(),
        "--iodepth=16",
        "--verify=crc32c",
        "--verify_fatal=1",
        "--verify_state_save=0",
    ];
    // Job a: 32 MiB of random 4 KiB writes at QD16 in [0, 32 MiB), verified. Job b, at the
    // same time: random 64 KiB writes over the other 224 MiB, three times (verified after
    // each pass), so the device is overwritten about three times, GC runs, and a's data,
    // which shares blocks with b's dead data, is moved by it.
    let a = [
        "--name=a",
        "--rw=randwrite",
        "--bs=4k",
        "--size=32m",
        "--do_verify=1",
    ];
    let b = [
        "--name=b",
        "--rw=randwrite",
        "--bs=64k",
        "--offset=32m",
        "--size=224m",
        "--loops=3",
        // A new order each pass (by default every loop repeats the first one's offsets, so
        // whole blocks die in the order they were written and GC never copies).
        "--randrepeat=0",
        "--do_verify=1",
    ];
    let args: Vec<&str> = common.iter().chain(&a).chain(&b).copied().collect();
    let r = fio(&srv, "write", &args);
    let (ja, jb) = (fio_job(&r, "a"), fio_job(&r, "b"));
    assert_eq!(ja["error"], 0, "{r:#}");
    assert_eq!(jb["error"], 0, "{r:#}");
    assert_eq!(u(&ja["write"]["io_bytes"]), 32 << 20);
    assert_eq!(u(&ja["read"]["io_bytes"]), 32 << 20, "a verified");
    assert_eq!(u(&jb["write"]["io_bytes"]), 3 * (224 << 20));
    assert_eq!(u(&jb["read"]["io_bytes"]), 3 * (224 << 20), "b verified");
    let written = u(&ja["write"]["io_bytes"]) + u(&jb["write"]["io_bytes"]);

    // After all that: a's data read back and verified again (same job, same seed).
    let args: Vec<&str> = common
        .iter()
        .chain(&a)
        .copied()
        .chain(["--verify_only"])
        .collect();
    let r = fio(&srv, "verify", &args);
    let ja = fio_job(&r, "a");
    assert_eq!(ja["error"], 0, "{r:#}");
    assert_eq!(u(&ja["read"]["io_bytes"]), 32 << 20, "{r:#}");

    let res = srv.stop();
    let waf = res["waf"].as_f64().unwrap();
    println!("waf {waf}, gc.copied_units {}", res["gc"]["copied_units"]);
    assert!(waf > 1.0, "waf {waf}: {res:#}");
    assert!(u(&res["gc"]["copied_units"]) > 0, "{res:#}");
    assert_eq!(u(&res["host"]["write_bytes"]), written, "{res:#}");
    assert_eq!(
        u(&res["serve"]["this_cycle"]["commands"]["write_bytes"]),
        written
    );
    assert_eq!(
        u(&res["serve"]["this_cycle"]["commands"]["read_bytes"]),
        written + (32 << 20),
        "every verify read reached the device"
    );
    assert_eq!(res["serve"]["this_cycle"]["commands"]["errors"], 0);
}

// ---- 2. qemu-io ----------------------------------------------------------------------------

#[test]
fn qemu_io_write_read_discard_flush_zero() {
    if !have("qemu-io") {
        return;
    }
    let mut srv = Server::start("qemu", &[]);
    let uri = srv.uri();
    let cmds = [
        "write -P 0xab 0 1M",
        "read -P 0xab 0 1M",
        "discard 0 64k",
        "read -P 0 0 64k",
        "read -P 0xab 64k 64k",
        "flush",
        "write -z 1M 256k",
        "read -P 0 1M 256k",
    ];
    let mut args = vec!["-f", "raw", &uri];
    for c in &cmds {
        args.extend(["-c", c]);
    }
    let out = tool_ok(&srv.dir, 60, "qemu-io", &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One summary line per command (flush prints none), in order.
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" bytes at offset "))
        .collect();
    assert_eq!(
        lines,
        [
            "wrote 1048576/1048576 bytes at offset 0",
            "read 1048576/1048576 bytes at offset 0",
            "discard 65536/65536 bytes at offset 0",
            "read 65536/65536 bytes at offset 0",
            "read 65536/65536 bytes at offset 65536",
            "wrote 262144/262144 bytes at offset 1048576",
            "read 262144/262144 bytes at offset 1048576",
        ],
        "{stdout}"
    );
    assert!(!stdout.contains("failed"), "{stdout}");
    // The pattern check can fail: the discarded range no longer holds 0xab.
    let out = tool(
        &srv.dir,
        60,
        "qemu-io",
        &["-f", "raw", &uri, "-c", "read -P 0xab 0 4k"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Pattern verification failed at offset 0, 4096 bytes"),
        "{stdout}"
    );
    let res = srv.stop();
    let c = &res["serve"]["this_cycle"]["commands"];
    assert_eq!(c["write"], 1, "{res:#}");
    assert_eq!(c["write_bytes"], 1 << 20, "{res:#}");
    assert_eq!(c["trim"], 1, "{res:#}");
    assert_eq!(c["write_zeroes"], 1, "{res:#}");
    assert!(u(&c["flush"]) >= 1, "{res:#}");
    assert_eq!(res["host"]["trim_bytes"], 65536, "{res:#}");
    assert_eq!(res["serve"]["this_cycle"]["connections"], 2, "{res:#}");
}

#[test]
fn qemu_io_sub_unit_requests_with_min_block_512_then_exit_on_disconnect() {
    if !have("qemu-io") {
        return;
    }
    let mut srv = Server::start("qemu512", &["--min-block", "512", "--exit-on-disconnect"]);
    let uri = srv.uri();
    // Within one 4 KiB unit and across two: read-modify-writes of partial units.
    let cmds = [
        "write -P 0x11 0 8k",
        "write -P 0x22 512 512",
        "write -P 0x33 3584 1k",
        "read -P 0x11 0 512",
        "read -P 0x22 512 512",
        "read -P 0x11 1024 2560",
        "read -P 0x33 3584 1k",
        "read -P 0x11 4608 3584",
        "write -z 1536 512",
        "read -P 0 1536 512",
        "read -P 0x11 2048 1536",
    ];
    let mut args = vec!["-f", "raw", &uri];
    for c in &cmds {
        args.extend(["-c", c]);
    }
    let out = tool_ok(&srv.dir, 60, "qemu-io", &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("failed"), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains(" bytes at offset "))
            .count(),
        cmds.len(),
        "{stdout}"
    );
    // The only client left: the server writes its results and exits by itself.
    let res = srv.exited("ssdlab serve --exit-on-disconnect after qemu-io");
    let c = &res["serve"]["this_cycle"]["commands"];
    assert_eq!(c["write"], 3, "{res:#}");
    assert_eq!(c["write_bytes"], 8192 + 512 + 1024, "{res:#}");
    assert_eq!(c["write_zeroes"], 1, "{res:#}");
    assert!(u(&res["host"]["rmw_reads"]) > 0, "{res:#}");
}

// ---- 3. nbdcopy, nbdinfo -------------------------------------------------------------------

#[test]
fn nbdcopy_in_and_out_is_byte_identical() {
    if !have("nbdcopy") {
        return;
    }
    let mut srv = Server::start("nbdcopy", &[]);
    let uri = srv.uri();
    let input = srv.dir.join("in.bin");
    let output = srv.dir.join("out.bin");
    let data = random_bytes(0x5eed, 8 << 20);
    std::fs::write(&input, &data).unwrap();
    tool_ok(
        &srv.dir,
        60,
        "nbdcopy",
        &["--flush", input.to_str().unwrap(), &uri],
    );
    tool_ok(&srv.dir, 60, "nbdcopy", &[&uri, output.to_str().unwrap()]);
    let back = std::fs::read(&output).unwrap();
    assert_eq!(back.len() as u64, SIZE);
    assert!(back[..data.len()] == data[..], "the 8 MiB read back differ");
    assert!(
        back[data.len()..].iter().all(|&b| b == 0),
        "the rest of the fresh device is not zeros"
    );
    let res = srv.stop();
    let c = &res["serve"]["this_cycle"]["commands"];
    assert_eq!(c["write_bytes"], 8 << 20, "{res:#}");
    assert_eq!(c["read_bytes"], SIZE, "{res:#}");
    assert!(u(&c["flush"]) >= 1, "{res:#}");
}

#[test]
fn nbdinfo_reports_the_real_export() {
    if !have("nbdinfo") {
        return;
    }
    for (min_block, extra) in [(4096, &[][..]), (512, &["--min-block", "512"][..])] {
        let mut srv = Server::start(&format!("nbdinfo-{min_block}"), extra);
        let out = tool_ok(&srv.dir, 30, "nbdinfo", &["--json", &srv.uri()]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &v["exports"][0];
        assert_eq!(e["export-size"], SIZE, "{v:#}");
        assert_eq!(e["block_size_minimum"], min_block, "{v:#}");
        assert_eq!(e["block_size_preferred"], 4096, "{v:#}");
        assert_eq!(e["export-name"], "ssdlab", "{v:#}");
        for key in [
            "can_flush",
            "can_fua",
            "can_trim",
            "can_zero",
            "can_multi_conn",
        ] {
            assert_eq!(e[key], true, "{key} in {v:#}");
        }
        assert_eq!(e["is_read_only"], false, "{v:#}");
        srv.stop();
    }
}

// ---- 4. Bad clients (raw) ------------------------------------------------------------------

// The NBD protocol numbers, from the spec (not from the server's code).
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
const OPT_GO: u32 = 7;
const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const INFO_BLOCK_SIZE: u16 = 3;
const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_FLUSH: u16 = 3;
const EINVAL: u32 = 22;

fn connect(path: &Path) -> UnixStream {
    let s = UnixStream::connect(path).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    s
}

fn read_n(s: &mut impl Read, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).expect("read from server");
    b
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

/// Fixed newstyle handshake, GO on the default export; in transmission afterwards.
fn connect_go(path: &Path) -> UnixStream {
    connect_go_sized(path, SIZE)
}

/// [`connect_go`] to an export of `size` bytes.
fn connect_go_sized(path: &Path, size: u64) -> UnixStream {
    let mut s = connect(path);
    let g = read_n(&mut s, 18);
    assert_eq!(&g[..16], b"NBDMAGICIHAVEOPT");
    s.write_all(&3u32.to_be_bytes()).unwrap(); // FIXED_NEWSTYLE | NO_ZEROES
    let mut o = b"IHAVEOPT".to_vec();
    o.extend_from_slice(&OPT_GO.to_be_bytes());
    o.extend_from_slice(&8u32.to_be_bytes()); // name "" + one info request
    o.extend_from_slice(&0u32.to_be_bytes());
    o.extend_from_slice(&1u16.to_be_bytes());
    o.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    s.write_all(&o).unwrap();
    loop {
        let h = read_n(&mut s, 20);
        assert_eq!(be64(&h), 0x3e889045565a9, "option reply magic");
        assert_eq!(be32(&h[8..]), OPT_GO);
        let data = read_n(&mut s, be32(&h[16..]) as usize);
        match be32(&h[12..]) {
            REP_INFO => {
                if data[..2] == [0, 0] {
                    assert_eq!(be64(&data[2..]), size, "export size");
                }
            }
            REP_ACK => return s,
            t => panic!("GO answered {t:#x}"),
        }
    }
}

fn request(s: &mut impl Write, kind: u16, cookie: u64, offset: u64, len: u32, payload: &[u8]) {
    let mut b = Vec::with_capacity(28 + payload.len());
    b.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(payload);
    s.write_all(&b).unwrap();
}

/// One simple reply header: (errno, cookie).
fn read_reply(s: &mut impl Read) -> (u32, u64) {
    let h = read_n(s, 16);
    assert_eq!(be32(&h), SIMPLE_REPLY_MAGIC, "simple reply magic in {h:?}");
    (be32(&h[4..]), be64(&h[8..]))
}

fn write_ok(s: &mut UnixStream, cookie: u64, offset: u64, payload: &[u8]) {
    request(s, CMD_WRITE, cookie, offset, payload.len() as u32, payload);
    assert_eq!(read_reply(s), (0, cookie));
}

fn read_ok(s: &mut UnixStream, cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    request(s, CMD_READ, cookie, offset, len, &[]);
    assert_eq!(read_reply(s), (0, cookie));
    read_n(s, len as usize)
}

/// The server closed the connection: EOF (or a reset) within the timeout, no more bytes.
fn expect_closed(s: &mut UnixStream) {
    let mut b = [0u8; 64];
    // A read on a socket with a timeout fails with EINTR after any signal (also a stop and
    // continue of this process): read again, a bounded number of times.
    for _ in 0..100 {
        match s.read(&mut b) {
            Ok(0) => return,
            Ok(n) => panic!("expected a close, got {n} more bytes: {:?}", &b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("expected the server to close, got {e}"),
        }
    }
    panic!("reading for the close: interrupted 100 times");
}

#[test]
fn bad_clients_do_not_hurt_the_real_server() {
    let mut srv = Server::start("bad", &[]);
    let p = srv.sock.clone();
    let keep_at = 1 << 20;
    let keep = random_bytes(11, 65536);
    // A good client's data, flushed; the connection stays open.
    let mut good = connect_go(&p);
    write_ok(&mut good, 1, keep_at, &keep);
    request(&mut good, CMD_FLUSH, 2, 0, 0, &[]);
    assert_eq!(read_reply(&mut good), (0, 2));

    // Wrong request magic: that connection is closed.
    let mut bad = connect_go(&p);
    let mut junk = vec![0x12, 0x34, 0x56, 0x78];
    junk.extend_from_slice(&[0u8; 24]);
    bad.write_all(&junk).unwrap();
    expect_closed(&mut bad);
    // A truncated header, then EOF: closed.
    let mut bad = connect_go(&p);
    bad.write_all(&REQUEST_MAGIC.to_be_bytes()).unwrap();
    bad.write_all(&[0u8; 6]).unwrap();
    bad.shutdown(std::net::Shutdown::Write).unwrap();
    expect_closed(&mut bad);

    // Invalid requests: EINVAL each, the connection stays in sync.
    let mut s = connect_go(&p);
    let cases: [(u16, u64, u32, Vec<u8>); 5] = [
        (9, 0, 4096, vec![]),                  // unknown command
        (CMD_READ, SIZE - 4096, 8192, vec![]), // beyond the end
        (CMD_READ, SIZE, 4096, vec![]),        // starts at the end
        (CMD_READ, 512, 4096, vec![]),         // offset not 4 KiB-aligned
        (CMD_WRITE, 0, 512, vec![0xee; 512]),  // length not 4 KiB-aligned
    ];
    for (i, (kind, offset, len, payload)) in cases.iter().enumerate() {
        let cookie = 100 + i as u64;
        request(&mut s, *kind, cookie, *offset, *len, payload);
        assert_eq!(read_reply(&mut s), (EINVAL, cookie), "case {i}");
    }
    assert_eq!(read_ok(&mut s, 1, keep_at, 65536), keep);
    assert_eq!(
        read_ok(&mut s, 2, 0, 4096),
        vec![0u8; 4096],
        "the bad write"
    );

    // A write over the good data whose payload stops after 1000 of 8192 bytes.
    let mut bad = connect_go(&p);
    request(&mut bad, CMD_WRITE, 7, keep_at, 8192, &[0xff; 1000]);
    drop(bad);
    assert!(
        wait_until(TIMEOUT, || srv
            .stderr()
            .contains("in the middle of the 8192-byte payload of WRITE")),
        "{}",
        srv.stderr()
    );

    // 64 connections at once, each writing and reading back its own 4 KiB.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(64));
    let clients: Vec<_> = (0..64u64)
        .map(|i| {
            let (p, barrier) = (p.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut s = connect_go(&p);
                barrier.wait();
                let data = random_bytes(1000 + i, 4096);
                let at = (8 << 20) + i * 4096;
                write_ok(&mut s, i, at, &data);
                barrier.wait(); // all 64 written and still open
                assert_eq!(read_ok(&mut s, 1000 + i, at, 4096), data, "client {i}");
            })
        })
        .collect();
    for c in clients {
        c.join().expect("a client of the 64 failed");
    }

    // The good data is intact, on the old connection and a new one.
    assert_eq!(read_ok(&mut good, 3, keep_at, 65536), keep);
    let mut fresh = connect_go(&p);
    assert_eq!(read_ok(&mut fresh, 1, keep_at, 65536), keep);
    let all = {
        let mut v = Vec::new();
        for i in 0..4u64 {
            v.extend(read_ok(
                &mut fresh,
                2 + i,
                (8 << 20) + i * (1 << 16),
                1 << 16,
            ));
        }
        v
    };
    for i in 0..64u64 {
        let at = i as usize * 4096;
        assert_eq!(
            all[at..at + 4096],
            random_bytes(1000 + i, 4096),
            "block {i}"
        );
    }
    drop(fresh);
    drop(good);

    let err = srv.stderr();
    for msg in [
        "bad request magic 0x12345678, closing",
        "truncated request header (10 of 28 bytes)",
    ] {
        assert!(err.contains(msg), "{msg:?} not in {err}");
    }
    let res = srv.stop();
    let c = &res["serve"]["this_cycle"]["commands"];
    // good 1 write + 64; reads: s 2, 64 clients, good 1, fresh 5; nothing rejected counted.
    assert_eq!(c["write"], 65, "{res:#}");
    assert_eq!(c["write_bytes"], 65536 + 64 * 4096, "{res:#}");
    assert_eq!(c["read"], 2 + 64 + 1 + 5, "{res:#}");
    assert_eq!(c["flush"], 1, "{res:#}");
    assert_eq!(c["errors"], 0, "{res:#}");
    // good, bad magic, truncated, invalid requests, mid-payload, 64, fresh
    assert_eq!(res["serve"]["this_cycle"]["connections"], 70, "{res:#}");
}

// ---- 5. ext4 on nbdfuse + loop -------------------------------------------------------------

/// The filesystem stack, torn down in reverse order on drop (also after a failed step).
#[derive(Default)]
struct FsStack {
    nbdfuse: Option<Child>,
    fuse_dir: Option<PathBuf>,
    loop_dev: Option<String>,
    mounted: Option<PathBuf>,
}

fn quiet(prog: &str, args: &[&str]) -> bool {
    Command::new(prog)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl FsStack {
    fn teardown(&mut self) {
        if let Some(m) = self.mounted.take() {
            quiet("umount", &["-l", m.to_str().unwrap()]);
        }
        if let Some(d) = self.loop_dev.take() {
            quiet("losetup", &["-d", &d]);
        }
        if let Some(f) = self.fuse_dir.take() {
            if !quiet("fusermount3", &["-u", f.to_str().unwrap()]) {
                quiet("umount", &["-l", f.to_str().unwrap()]);
            }
        }
        if let Some(mut c) = self.nbdfuse.take() {
            if !wait_until(Duration::from_secs(5), || {
                c.try_wait().is_ok_and(|s| s.is_some())
            }) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

impl Drop for FsStack {
    fn drop(&mut self) {
        self.teardown();
    }
}

#[test]
fn ext4_on_nbdfuse_and_a_loop_device() {
    for t in [
        "nbdfuse",
        "losetup",
        "mkfs.ext4",
        "fsck.ext4",
        "mount",
        "umount",
        "fstrim",
        "fusermount3",
        "fio",
    ] {
        if !have(t) {
            return;
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipping: not root (losetup and mount need it)");
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        println!("skipping: no /dev/fuse");
        return;
    }
    if !quiet("losetup", &["--find"]) {
        println!("skipping: no free loop device (losetup --find failed)");
        return;
    }
    let mut srv = Server::start("ext4", &[]);
    let dir = srv.dir.clone();
    let fuse_dir = dir.join("fuse");
    let mnt = dir.join("mnt");
    std::fs::create_dir(&fuse_dir).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let image = fuse_dir.join("nbd");
    let (fuse_s, mnt_s, image_s) = (
        fuse_dir.to_str().unwrap().to_string(),
        mnt.to_str().unwrap().to_string(),
        image.to_str().unwrap().to_string(),
    );
    let mut fs = FsStack::default();

    fs.nbdfuse = Some(
        Command::new("nbdfuse")
            .arg(&fuse_dir)
            .arg(srv.uri())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(dir.join("nbdfuse.err")).unwrap())
            .spawn()
            .expect("start nbdfuse"),
    );
    fs.fuse_dir = Some(fuse_dir.clone());
    let up = wait_until(TIMEOUT, || {
        if let Some(st) = fs.nbdfuse.as_mut().unwrap().try_wait().unwrap() {
            panic!(
                "nbdfuse exited {st}: {}",
                std::fs::read_to_string(dir.join("nbdfuse.err")).unwrap_or_default()
            );
        }
        std::fs::metadata(&image).is_ok_and(|m| m.len() == SIZE)
    });
    assert!(up, "{image_s} did not appear");

    let out = tool_ok(
        &dir,
        30,
        "losetup",
        &[
            "--find",
            "--show",
            "--sector-size",
            "4096",
            "--direct-io=on",
            &image_s,
        ],
    );
    let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(dev.starts_with("/dev/loop"), "{dev}");
    fs.loop_dev = Some(dev.clone());
    tool_ok(&dir, 60, "mkfs.ext4", &["-q", &dev]);
    tool_ok(&dir, 30, "mount", &["-o", "discard", &dev, &mnt_s]);
    fs.mounted = Some(mnt.clone());

    let dir_arg = format!("--directory={mnt_s}");
    let fio_args = [
        "--name=fs",
        dir_arg.as_str(),
        "--ioengine=psync",
        "--direct=1",
        "--rw=randwrite",
        "--bs=4k",
        "--size=32m",
        "--fsync=64",
        "--verify=crc32c",
        "--verify_fatal=1",
        "--verify_state_save=0",
    ];
    let fio_args: Vec<&str> = fio_args.to_vec();
    let mut write_args = fio_args.clone();
    write_args.push("--do_verify=1");
    let r = fio(&srv, "fs", &write_args);
    let j = fio_job(&r, "fs");
    assert_eq!(j["error"], 0, "{r:#}");
    assert_eq!(u(&j["write"]["io_bytes"]), 32 << 20, "{r:#}");
    assert_eq!(u(&j["read"]["io_bytes"]), 32 << 20, "{r:#}");

    let out = tool_ok(&dir, 60, "fstrim", &["-v", &mnt_s]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("trimmed"), "{text}");
    // The file's data survived the trim of the free space (direct reads: from the device).
    let mut verify_args = fio_args.clone();
    verify_args.push("--verify_only");
    let r = fio(&srv, "fs-verify", &verify_args);
    assert_eq!(fio_job(&r, "fs")["error"], 0, "{r:#}");
    assert_eq!(u(&fio_job(&r, "fs")["read"]["io_bytes"]), 32 << 20);

    tool_ok(&dir, 30, "umount", &[&mnt_s]);
    fs.mounted = None;
    let out = tool_ok(&dir, 60, "fsck.ext4", &["-fn", &dev]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" files ("), "{text}");
    tool_ok(&dir, 30, "losetup", &["-d", &dev]);
    fs.loop_dev = None;
    tool_ok(&dir, 30, "fusermount3", &["-u", &fuse_s]);
    fs.fuse_dir = None;
    let mut nbdfuse = fs.nbdfuse.take().unwrap();
    let st = wait_bounded(&mut nbdfuse, TIMEOUT, "nbdfuse after fusermount3 -u");
    assert!(st.success(), "nbdfuse exited {st}");

    let res = srv.stop();
    let c = &res["serve"]["this_cycle"]["commands"];
    assert!(u(&c["write_bytes"]) >= 32 << 20, "{res:#}");
    assert!(u(&c["flush"]) > 0, "fsync reached the device: {res:#}");
    assert!(u(&c["trim"]) > 0, "fstrim reached the device: {res:#}");
    assert!(
        u(&res["host"]["trim_bytes"]) > 100 << 20,
        "most of the free space trimmed: {res:#}"
    );
}

/// The ext4 test's prerequisites; false (with a message) when a tool or root is missing.
fn fs_stack_possible() -> bool {
    for t in [
        "nbdfuse",
        "losetup",
        "mkfs.ext4",
        "fsck.ext4",
        "mount",
        "umount",
        "fusermount3",
        "fio",
    ] {
        if !have(t) {
            return false;
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipping: not root (losetup and mount need it)");
        return false;
    }
    if !Path::new("/dev/fuse").exists() {
        println!("skipping: no /dev/fuse");
        return false;
    }
    if !quiet("losetup", &["--find"]) {
        println!("skipping: no free loop device (losetup --find failed)");
        return false;
    }
    true
}

/// nbdfuse on a new connection to `srv`, and a 4 KiB-sector loop device over it.
fn attach(srv: &Server, fs: &mut FsStack, tag: &str) -> String {
    let fuse_dir = srv.dir.join(format!("fuse-{tag}"));
    std::fs::create_dir_all(&fuse_dir).unwrap();
    let image = fuse_dir.join("nbd");
    let err = srv.dir.join(format!("nbdfuse-{tag}.err"));
    fs.nbdfuse = Some(
        Command::new("nbdfuse")
            .arg(&fuse_dir)
            .arg(srv.uri())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&err).unwrap())
            .spawn()
            .expect("start nbdfuse"),
    );
    fs.fuse_dir = Some(fuse_dir.clone());
    let up = wait_until(TIMEOUT, || {
        std::fs::metadata(&image).is_ok_and(|m| m.len() == SIZE)
    });
    assert!(up, "{} did not appear", image.display());
    let out = tool_ok(
        &srv.dir,
        30,
        "losetup",
        &[
            "--find",
            "--show",
            "--sector-size",
            "4096",
            "--direct-io=on",
            image.to_str().unwrap(),
        ],
    );
    let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(dev.starts_with("/dev/loop"), "{dev}");
    fs.loop_dev = Some(dev.clone());
    dev
}

/// A power cut in the middle of a write burst on a mounted ext4: after the next power-on
/// (the FTL rebuilt from what was durable) the journal replays at mount and `fsck.ext4
/// -fn` finds the filesystem clean; a file written and synced before the cut reads back.
#[test]
fn ext4_survives_a_power_cut_in_a_write_burst() {
    if !fs_stack_possible() {
        return;
    }
    let mut srv = Server::start("ext4-cut", &[]);
    let mnt = srv.dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mnt_s = mnt.to_str().unwrap().to_string();
    let mut fs = FsStack::default();
    let dev = attach(&srv, &mut fs, "before");
    tool_ok(&srv.dir, 60, "mkfs.ext4", &["-q", &dev]);
    tool_ok(&srv.dir, 30, "mount", &[&dev, &mnt_s]);
    fs.mounted = Some(mnt.clone());
    // A file written and synced before the cut: it must survive.
    let kept: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(mnt.join("kept"), &kept).unwrap();
    tool_ok(&srv.dir, 30, "sync", &[]);

    // The burst: fio writes with fsyncs; the power goes about half a second in.
    let dir_arg = format!("--directory={mnt_s}");
    let mut burst = Command::new("timeout")
        .args([
            "-k",
            "5",
            "60",
            "fio",
            "--name=burst",
            &dir_arg,
            "--ioengine=psync",
        ])
        .args([
            "--rw=randwrite",
            "--bs=16k",
            "--size=64m",
            "--fsync=8",
            "--numjobs=2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fio");
    std::thread::sleep(Duration::from_millis(500));
    let pid = srv.child.as_ref().unwrap().id() as i32;
    // SAFETY: a signal to the server this test started (not yet waited for).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    // fio meets I/O errors (the device it wrote to is gone): it ends, in error.
    let _ = wait_bounded(&mut burst, Duration::from_secs(70), "fio after the cut");
    // Take the old stack down (its device lost power: writes fail, unmount still works).
    fs.teardown();

    // Power on: a new connection sees the recovered device.
    let dev = attach(&srv, &mut fs, "after");
    tool_ok(&srv.dir, 60, "mount", &[&dev, &mnt_s]); // replays the journal
    fs.mounted = Some(mnt.clone());
    assert!(
        std::fs::read(mnt.join("kept")).unwrap() == kept,
        "the synced file survived"
    );
    tool_ok(&srv.dir, 30, "umount", &[&mnt_s]);
    fs.mounted = None;
    let out = tool_ok(&srv.dir, 60, "fsck.ext4", &["-fn", &dev]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" files ("), "{text}");
    fs.teardown();
    let res = srv.stop();
    assert_eq!(res["serve"]["power_cycle"], 2, "{res:#}");
    let rec = &res["serve"]["recoveries"][0];
    assert!(u(&rec["pages_scanned"]) > 0, "{res:#}");
    let first: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(srv.dir.join("out/power-cycle-1/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(first["status"], "power_cut");
}

// ---- 7. Flags, ends, hostile clients, memory, what the server says -----------------------

/// `ssdlab serve ARGS` that must fail before it listens: its exit status and stderr.
fn refused(name: &str, config: &Path, args: &[&str]) -> (i32, String) {
    let dir = scratch(name);
    let sock = dir.join("s.sock");
    let out = tool(
        &dir,
        20,
        env!("CARGO_BIN_EXE_ssdlab"),
        &[
            &[
                "serve",
                config.to_str().unwrap(),
                "--socket",
                sock.to_str().unwrap(),
            ][..],
            args,
        ]
        .concat(),
    );
    assert!(!sock.exists(), "{args:?}: it listened");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.code().unwrap_or(-1), err)
}

#[test]
fn numeric_flags_out_of_range_are_refused_naming_the_flag() {
    let small = repo().join("configs/serve-small.toml");
    let cases: &[(&str, &str)] = &[
        ("--dilation", "1e-300"),
        ("--dilation", "inf"),
        ("--dilation", "0"),
        ("--stats-interval", "1e30"),
        ("--stats-interval", "0"),
        ("--stats-interval", "nan"),
        ("--grace-us", "10000000000"),
        ("--run-ahead-ns", "99999999999999"),
        ("--owed-slack", "4294967295"),
        ("--min-block", "100"),
        ("--power-cut-after-requests", "0"),
        ("--max-connections", "0"),
        ("--max-requests-per-connection", "0"),
        ("--max-bytes-per-connection", "1"),
        ("--max-bytes-per-connection", "12XB"),
        ("--handshake-timeout-s", "0"),
        ("--idle-timeout-s", "-1"),
        ("--drain-timeout-s", "1e300"),
        ("--max-stored-bytes", "18446744073709551615GiB"),
    ];
    for (flag, value) in cases {
        let (code, err) = refused("flags", &small, &[&format!("{flag}={value}")]);
        assert_eq!(code, 2, "{flag} {value}: exit {code}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
        assert!(!err.contains("panicked"), "{flag} {value}: {err}");
    }
}

/// `--realtime-priority` is refused before anything runs: in virtual time (it would do
/// nothing), and when the scheduler will not grant it (the message says what it needs).
#[test]
fn realtime_priority_is_checked_before_anything_runs() {
    let small = repo().join("configs/serve-small.toml");
    let (code, err) = refused("rtprio", &small, &["--realtime-priority", "5"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--realtime-priority 5: only with --time realtime"),
        "{err}"
    );
    // Where this process may not have SCHED_FIFO (an unprivileged user: RLIMIT_RTPRIO 0),
    // the server refuses before it listens, saying what it needs.
    if ssdlab_serve::sched::Fifo::probe(99).is_err() {
        let (code, err) = refused(
            "rtprio-denied",
            &small,
            &["--time", "realtime", "--realtime-priority", "99"],
        );
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("CAP_SYS_NICE"), "{err}");
    }
}

/// A SIGTERM whose drain needs the device to settle for longer than one poll of the stop
/// flag (a 96 MiB write buffer of 512-byte pages: over 64 Ki events) still ends in order,
/// exit 0, results complete.
#[test]
fn a_sigterm_whose_drain_is_long_still_writes_the_results() {
    // The small device in 512-byte pages and units (the same 256 MiB).
    let args = [
        "--set",
        "device.geometry.page_size_bytes=512",
        "--set",
        "device.geometry.mapping_unit_bytes=512",
        "--set",
        "device.geometry.pages_per_block=512",
        "--set",
        "device.geometry.blocks_per_plane=320",
        "--set",
        "ftl.write_buffer_bytes=100663296",
    ];
    let mut srv = Server::start_config("drain", &repo().join("configs/serve-small.toml"), &args);
    let mut s = connect_go(&srv.sock);
    let mib = 90u64;
    for i in 0..mib {
        write_ok(&mut s, i, i << 20, &random_bytes(i, 1 << 20));
    }
    let res = srv.stop();
    assert_eq!(u(&res["host"]["write_bytes"]), mib << 20);
    assert_eq!(u(&res["host"]["write_units"]), mib << 11);
    assert!(u(&res["nand"]["programs"]["host"]) >= mib << 11, "{res:#}");

    // Given 1 ms, the same drain times out: the figures up to the stop, said so.
    let mut srv = Server::start_config(
        "drain-timeout",
        &repo().join("configs/serve-small.toml"),
        &[&args[..], &["--drain-timeout-s", "0.001"]].concat(),
    );
    let mut s = connect_go(&srv.sock);
    for i in 0..mib {
        write_ok(&mut s, i, i << 20, &random_bytes(i, 1 << 20));
    }
    srv.signal(libc::SIGTERM);
    let (st, res) = srv.ended("serve after SIGTERM");
    assert!(st.success(), "exit {st}: {}", srv.stderr());
    let res = res.expect("results.json written");
    assert_eq!(res["status"], "stopped", "{res:#}");
    assert_eq!(u(&res["host"]["write_bytes"]), mib << 20);
    assert!(
        srv.stderr()
            .contains("did not settle within --drain-timeout-s"),
        "{}",
        srv.stderr()
    );
}

/// A client that sends 48 READs of 32 MiB and never reads a reply: the server holds about
/// its bound (64 MiB per connection), not 1.5 GiB, and serves another client meanwhile.
#[test]
fn a_client_that_never_reads_its_replies_costs_bounded_memory() {
    let srv = Server::start("slowreader", &[]);
    let before = srv.rss_bytes();
    let mut slow = connect_go(&srv.sock);
    for i in 0..48u64 {
        request(
            &mut slow,
            CMD_READ,
            i,
            (i * (32 << 20)) % SIZE,
            32 << 20,
            &[],
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    let mut other = connect_go(&srv.sock);
    write_ok(&mut other, 1, 0, &random_bytes(1, 4096));
    assert_eq!(read_ok(&mut other, 2, 0, 4096), random_bytes(1, 4096));
    let grew = srv.rss_bytes().saturating_sub(before);
    assert!(grew < 256 << 20, "the server grew {} MiB", grew >> 20);
}

/// Hostile clients: an export name with control characters is logged escaped (no line of
/// its own, no terminal escape); a handshake trickled a byte at a time ends at its
/// deadline; with every slot taken by idle clients, a new one takes the place of the idlest.
#[test]
fn hostile_clients_cannot_forge_log_lines_or_hold_the_slots() {
    let mut srv = Server::start(
        "hostile",
        &[
            "--handshake-timeout-s",
            "1",
            "--max-connections",
            "2",
            "--idle-timeout-s",
            "0.5",
        ],
    );
    let mut s = connect(&srv.sock);
    read_n(&mut s, 18);
    s.write_all(&1u32.to_be_bytes()).unwrap(); // FIXED_NEWSTYLE
    let name = b"x\nserve: connection 9: all is well\x1b[2J";
    let mut o = b"IHAVEOPT".to_vec();
    o.extend_from_slice(&1u32.to_be_bytes()); // NBD_OPT_EXPORT_NAME
    o.extend_from_slice(&(name.len() as u32).to_be_bytes());
    o.extend_from_slice(name);
    s.write_all(&o).unwrap();
    expect_closed(&mut s);
    assert!(
        wait_until(TIMEOUT, || srv.stderr().contains("unknown export")),
        "{}",
        srv.stderr()
    );
    let err = srv.stderr();
    assert!(
        err.contains(r"x\nserve: connection 9: all is well\u{1b}[2J"),
        "{err}"
    );
    assert!(
        !err.lines().any(|l| l.starts_with("serve: connection 9")),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "{err}");

    // A trickled handshake: one byte every 200 ms, each in time; closed after 1 s in all.
    let mut t = connect(&srv.sock);
    let t0 = Instant::now();
    read_n(&mut t, 18);
    let mut w = t.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for b in 3u32.to_be_bytes().iter().chain(b"IHAVEOPT") {
            std::thread::sleep(Duration::from_millis(200));
            if w.write_all(&[*b]).is_err() {
                return;
            }
        }
    });
    expect_closed(&mut t);
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t0.elapsed()
    );
    trickle.join().unwrap();

    // Two idle clients hold both slots; once idle for 0.5 s, a third takes a place.
    let _a = connect_go(&srv.sock);
    let _b = connect_go(&srv.sock);
    std::thread::sleep(Duration::from_millis(700));
    let mut c = connect_go(&srv.sock);
    write_ok(&mut c, 1, 0, &random_bytes(3, 4096));
    assert!(
        srv.stderr()
            .contains("closed to make room for a new client"),
        "{}",
        srv.stderr()
    );
    drop(c);
    srv.stop();
}

/// A device whose stored bytes, written full, would not fit in memory is refused before
/// the server listens (naming the parts and the ways out); with the stored bytes capped it
/// serves, and writes past the cap get ENOSPC.
#[test]
fn a_device_too_large_for_memory_is_refused_unless_its_stored_bytes_are_capped() {
    let dir = scratch("large");
    let config = dir.join("large.toml");
    // 14 TiB logical in 1 MiB units: small structures, 16 TiB of blocks.
    std::fs::write(
        &config,
        "seed = 1\nmode = \"timed\"\n[device]\nover_provisioning_ratio = 0.25\n\
         [device.geometry]\nchannels = 8\nchips_per_channel = 4\ndies_per_chip = 2\n\
         planes_per_die = 2\nblocks_per_plane = 2048\npages_per_block = 64\n\
         page_size_bytes = 1048576\nmapping_unit_bytes = 1048576\n\
         [ftl]\nwrite_buffer_bytes = 16777216\n[precondition]\nenabled = false\n",
    )
    .unwrap();
    let (code, err) = refused("large-refused", &config, &[]);
    assert_eq!(code, 1, "{err}");
    for part in [
        "of stored bytes",
        "--max-stored-bytes",
        "--allow-large-memory",
        "large.toml",
    ] {
        assert!(err.contains(part), "{part:?} not in {err}");
    }
    // Under an address-space limit (`ulimit -v`, 1.5 GiB) the small device made 2.5 GiB
    // of blocks is refused too: the limit, not the machine's memory, is what it may take.
    let out = tool(
        &dir,
        20,
        "sh",
        &[
            "-c",
            &format!(
                "ulimit -v 1572864 && exec {} serve {} --socket {} --set device.geometry.blocks_per_plane=640",
                env!("CARGO_BIN_EXE_ssdlab"),
                repo().join("configs/serve-small.toml").display(),
                dir.join("limited.sock").display()
            ),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("of stored bytes") && err.contains("GiB this machine has available"),
        "{err}"
    );
    let mut srv = Server::start_config(
        "large-capped",
        &config,
        &["--max-stored-bytes", "64MiB", "--min-block", "65536"],
    );
    let size = 14_073_747_996_672;
    let mut s = connect_go_sized(&srv.sock, size);
    let mut nospace = 0;
    for i in 0..200u64 {
        request(
            &mut s,
            CMD_WRITE,
            i,
            i << 20,
            1 << 20,
            &random_bytes(i, 1 << 20),
        );
        match read_reply(&mut s) {
            (0, _) => {}
            (28, _) => nospace += 1, // ENOSPC
            r => panic!("{r:?}"),
        }
    }
    assert!(nospace > 0, "no write past 64 MiB refused");
    assert_eq!(read_ok(&mut s, 1000, 0, 1 << 20), random_bytes(0, 1 << 20));
    drop(s);
    let res = srv.stop();
    let c = &res["serve"]["this_cycle"]["commands"];
    assert_eq!(u(&c["errors_by_cause"]["no_space"]), nospace, "{res:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the server says on stderr: the preconditioning before it listens; a power cut
/// (what was lost) and the recovery (pages scanned, time); replies running late in real
/// time.
#[test]
fn the_server_says_what_it_does() {
    let mut srv = Server::start(
        "says",
        &[
            "--set",
            "precondition.enabled=true",
            "--set",
            "precondition.random_overwrite_capacity_multiple=0.1",
            "--power-cut-after-requests",
            "20",
        ],
    );
    let err = srv.stderr();
    let (pre, listening) = (
        err.find("serve: preconditioning"),
        err.find(" bytes on unix:"),
    );
    assert!(pre.is_some_and(|p| p < listening.unwrap()), "{err}");
    assert!(err.contains("serve: preconditioned in"), "{err}");
    let mut s = connect_go(&srv.sock);
    for i in 0..20u64 {
        request(
            &mut s,
            CMD_WRITE,
            i,
            i << 16,
            65536,
            &random_bytes(i, 65536),
        );
    }
    for _ in 0..20 {
        read_reply(&mut s);
    }
    assert!(wait_until(TIMEOUT, || srv
        .stderr()
        .contains("serve: power on: recovered")));
    let err = srv.stderr();
    assert!(
        err.contains("serve: power cut: power cycle 1 ended"),
        "{err}"
    );
    assert!(
        err.contains("units in the write buffer, not yet durable, are lost"),
        "{err}"
    );
    // The power cycle's results audit, in a line (its findings by name).
    let cut = json_file(&srv.dir.join("out/power-cycle-1/results.json"));
    let line = format!(
        "serve: power-cycle-1/results.json: audit: {} checks, {} warnings",
        cut["audit"]["checks"].as_array().unwrap().len(),
        cut["audit"]["warnings"]
    );
    assert!(err.contains(&line), "{line} in {err}");
    assert!(err.contains(", 0 errors\n"), "{err}");
    assert!(err.contains("pages scanned"), "{err}");
    drop(s);
    srv.stop();

    // Real time a thousand times faster than the device: a 4 MiB write takes the device
    // milliseconds (hundreds of programs), due microseconds later on the wall clock, and
    // takes the simulation longer than that: late, and said so.
    let mut srv = Server::start("late", &["--time", "realtime", "--dilation", "0.001"]);
    let mut s = connect_go(&srv.sock);
    for i in 0..10u64 {
        write_ok(&mut s, i, i << 22, &random_bytes(i, 4 << 20));
    }
    drop(s);
    let res = srv.stop();
    let late = u(&res["serve"]["this_cycle"]["late_replies"]);
    assert!(late >= 5, "{res:#}");
    let err = srv.stderr();
    assert!(
        err.contains(&format!("serve: realtime: {late} of 10 replies")),
        "{err}"
    );
}

/// One file of the `data=journal` pattern: allocated with `posix_fallocate`, a few small
/// writes into it at offsets inside, then `fsync` of the file and of its directory. Returns
/// its expected content (zeros where nothing was written), or the error the power cut
/// brought.
fn write_synced_file(dir: &Path, name: &str, seed: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    use std::os::unix::io::AsRawFd;
    const LEN: usize = 64 << 10;
    let path = dir.join(name);
    let f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)?;
    // SAFETY: a valid open file descriptor; the range is within i64.
    let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, LEN as libc::off_t) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    let mut want = vec![0u8; LEN];
    let bytes = random_bytes(seed, 3 * 3000);
    for (k, chunk) in bytes.chunks(3000).enumerate() {
        // Small writes at unaligned offsets, apart: ext4 zeroes the blocks around them.
        let at = k * 20_000 + (seed as usize % 1000);
        let n = 500 + (seed as usize + k * 777) % 2500;
        f.write_all_at(&chunk[..n], at as u64)?;
        want[at..at + n].copy_from_slice(&chunk[..n]);
    }
    f.sync_all()?;
    File::open(dir)?.sync_all()?;
    Ok(want)
}

/// ext4 with `data=journal` over nbdfuse and a loop device (which turns the blocks ext4
/// zeroes into punched holes, TRIM on the device): old files filled and half deleted, then
/// files written as `posix_fallocate` + small `pwrite`s + `fsync` of file and directory
/// until a power cut. After the next power-on the journal replays and every file synced
/// before the cut holds exactly its bytes and zeros — not another file's old data that a
/// trim had dropped and the cut brought back — and `fsck.ext4 -fn` is clean.
#[test]
fn ext4_data_journal_keeps_every_fsynced_file_over_a_power_cut() {
    if !fs_stack_possible() {
        return;
    }
    let mut srv = Server::start("ext4-journal-cut", &[]);
    let mnt = srv.dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mnt_s = mnt.to_str().unwrap().to_string();
    let mut fs = FsStack::default();
    let dev = attach(&srv, &mut fs, "before");
    tool_ok(&srv.dir, 60, "mkfs.ext4", &["-q", &dev]);
    tool_ok(&srv.dir, 30, "mount", &["-o", "data=journal", &dev, &mnt_s]);
    fs.mounted = Some(mnt.clone());
    // Old data: 48 MiB of files, half of them deleted (their blocks freed, some reused).
    let old = mnt.join("old");
    std::fs::create_dir(&old).unwrap();
    for i in 0..96u64 {
        std::fs::write(old.join(format!("o{i}")), random_bytes(1000 + i, 512 << 10)).unwrap();
    }
    tool_ok(&srv.dir, 60, "sync", &[]);
    for i in (0..96u64).step_by(2) {
        std::fs::remove_file(old.join(format!("o{i}"))).unwrap();
    }
    tool_ok(&srv.dir, 60, "sync", &[]);

    // The files, written until the power goes (300 synced first).
    let new = mnt.join("new");
    std::fs::create_dir(&new).unwrap();
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let writer = {
        let (new, stop, count) = (new.clone(), stop.clone(), count.clone());
        std::thread::spawn(move || {
            let mut synced = Vec::new();
            for i in 0..100_000u64 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                match write_synced_file(&new, &format!("f{i}"), i) {
                    Ok(want) => synced.push((i, want)),
                    Err(_) => break, // the device is gone
                }
                count.store(synced.len(), Ordering::Relaxed);
            }
            synced
        })
    };
    let enough = wait_until(Duration::from_secs(60), || {
        count.load(Ordering::Relaxed) >= 300 || writer.is_finished()
    });
    assert!(enough && !writer.is_finished(), "the writer stopped early");
    let pid = srv.child.as_ref().unwrap().id() as i32;
    // SAFETY: a signal to the server this test started (not yet waited for).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let synced = writer.join().expect("writer thread");
    assert!(
        synced.len() > 20,
        "{} files synced before the cut",
        synced.len()
    );
    fs.teardown();

    let dev = attach(&srv, &mut fs, "after");
    tool_ok(&srv.dir, 60, "mount", &["-o", "data=journal", &dev, &mnt_s]); // journal replay
    fs.mounted = Some(mnt.clone());
    let bad: Vec<u64> = synced
        .iter()
        .filter(|(i, want)| std::fs::read(new.join(format!("f{i}"))).ok().as_ref() != Some(want))
        .map(|&(i, _)| i)
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} fsync'd files differ after the cut: {:?}",
        bad.len(),
        synced.len(),
        &bad[..bad.len().min(20)]
    );
    tool_ok(&srv.dir, 30, "umount", &[&mnt_s]);
    fs.mounted = None;
    let out = tool_ok(&srv.dir, 60, "fsck.ext4", &["-fn", &dev]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" files ("), "{text}");
    fs.teardown();
    let res = srv.stop();
    assert_eq!(res["serve"]["power_cycle"], 2, "{res:#}");
}
