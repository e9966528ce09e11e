//! Power cuts as a standing property of `ssdlab serve` (the real binary, a small device of
//! the serve-small kind so GC runs): an NBD client keeps random whole-unit WRITEs (some with
//! FUA), TRIMs and WRITE_ZEROES (with and without NO_HOLE, some with FUA) and FLUSHes in
//! flight on disjoint units, cuts the power with SIGUSR1 at a random point, reconnects to
//! the recovered device and reads every unit back. Each unit must hold exactly one of the
//! states it was given from the last one a completed FLUSH (or FUA) made durable on:
//! never an older one, never one it was not given, never sectors of two writes (torn).
//!
//! `SSDLAB_POWERCUT_CYCLES=N` runs N cuts (default 4: a few seconds);
//! `SSDLAB_POWERCUT_SEED=S` picks the request stream.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);
const UNIT: u64 = 4096;
const SECTOR: usize = 512;
const MAGIC: u32 = 0x5353_4c42;

const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_FLUSH: u16 = 3;
const CMD_TRIM: u16 = 4;
const CMD_WRITE_ZEROES: u16 = 6;
const FLAG_FUA: u16 = 1;
const FLAG_NO_HOLE: u16 = 2;

/// The device: configs/serve-small.toml (TLC, 2 dies of 2 planes, OP 25 %, soft/hard GC
/// thresholds 4/2) with 40 blocks of 16 pages per plane: 40 MiB raw, GC from the first
/// pass over it.
fn config(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(repo.join("configs/serve-small.toml"))
        .unwrap()
        .replace("blocks_per_plane = 80", "blocks_per_plane = 40")
        .replace("pages_per_block = 64", "pages_per_block = 16");
    let path = dir.join("device.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
        })
        .unwrap_or(default)
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `ssdlab serve` in a scratch dir (killed and removed on drop).
struct Server {
    child: Option<Child>,
    dir: PathBuf,
    sock: PathBuf,
    size: u64,
}

impl Server {
    fn start() -> Server {
        let dir = std::env::temp_dir().join(format!("ssdlab-powercut-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("s.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_ssdlab"))
            .arg("serve")
            .arg(config(&dir))
            .arg("--socket")
            .arg(&sock)
            .arg("--out")
            .arg(dir.join("out"))
            .stdin(Stdio::null())
            .stdout(File::create(dir.join("stdout")).unwrap())
            .stderr(File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("start ssdlab serve");
        let mut s = Server {
            child: Some(child),
            dir,
            sock,
            size: 0,
        };
        let start = Instant::now();
        while s.size == 0 {
            if let Some(st) = s.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("ssdlab serve exited ({st}): {}", s.stderr());
            }
            assert!(start.elapsed() < TIMEOUT, "not listening: {}", s.stderr());
            s.size = s
                .stderr()
                .split("serve: ")
                .nth(1)
                .and_then(|t| t.split(" bytes on unix:").next())
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    fn signal(&self, sig: libc::c_int) {
        let pid = self.child.as_ref().expect("server running").id() as libc::pid_t;
        // SAFETY: a signal to the process this test started (not yet waited for).
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }

    /// SIGTERM; exit 0; results.json.
    fn stop(&mut self) -> serde_json::Value {
        self.signal(libc::SIGTERM);
        let mut child = self.child.take().unwrap();
        let start = Instant::now();
        let st = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if start.elapsed() > TIMEOUT {
                let _ = child.kill();
                panic!("serve did not exit after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(st.success(), "serve exited {st}: {}", self.stderr());
        let text = std::fs::read_to_string(self.dir.join("out/results.json")).unwrap();
        serde_json::from_str(&text).unwrap()
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

fn read_n(s: &mut impl Read, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    if let Err(e) = s.read_exact(&mut b) {
        panic!("no reply from the server within {TIMEOUT:?} (requests never complete?): {e}");
    }
    b
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

/// Fixed newstyle handshake, GO on the default export; in transmission afterwards.
fn connect(path: &Path) -> UnixStream {
    let mut s = UnixStream::connect(path).expect("connect");
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    let g = read_n(&mut s, 18);
    assert_eq!(&g[..16], b"NBDMAGICIHAVEOPT");
    s.write_all(&3u32.to_be_bytes()).unwrap(); // FIXED_NEWSTYLE | NO_ZEROES
    let mut o = b"IHAVEOPT".to_vec();
    o.extend_from_slice(&7u32.to_be_bytes()); // GO
    o.extend_from_slice(&6u32.to_be_bytes());
    o.extend_from_slice(&0u32.to_be_bytes()); // name ""
    o.extend_from_slice(&0u16.to_be_bytes()); // no info requests
    s.write_all(&o).unwrap();
    loop {
        let h = read_n(&mut s, 20);
        assert_eq!(be64(&h), 0x3e889045565a9, "option reply magic");
        let _ = read_n(&mut s, be32(&h[16..]) as usize);
        match be32(&h[12..]) {
            3 => {}        // INFO
            1 => return s, // ACK
            t => panic!("GO answered {t:#x}"),
        }
    }
}

fn request(s: &mut impl Write, kind: u16, flags: u16, cookie: u64, offset: u64, len: u32) {
    let mut b = Vec::with_capacity(28);
    b.extend_from_slice(&0x2560_9513u32.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    s.write_all(&b).unwrap();
}

/// A simple reply: (errno, cookie).
fn reply(s: &mut impl Read) -> (u32, u64) {
    let h = read_n(s, 16);
    assert_eq!(be32(&h), 0x6744_6698, "simple reply magic");
    (be32(&h[4..]), be64(&h[8..]))
}

/// The bytes of write `w` for unit `u`: each sector names the unit, the write and itself,
/// then bytes drawn from them (so sectors of two writes never pass for one).
fn unit_bytes(u: u64, w: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(UNIT as usize);
    for sector in 0..(UNIT as usize / SECTOR) {
        let start = b.len();
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&(u as u32).to_le_bytes());
        b.extend_from_slice(&w.to_le_bytes());
        b.extend_from_slice(&(sector as u32).to_le_bytes());
        let mut r = Rng(w.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (u << 20) ^ sector as u64 | 1);
        while b.len() < start + SECTOR {
            b.push(r.next() as u8);
        }
    }
    b
}

/// What a unit reads as: zeros, write `w`, or neither (torn or foreign bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Zero,
    Write(u64),
}

fn decode(u: u64, bytes: &[u8]) -> Result<State, String> {
    if bytes.iter().all(|&b| b == 0) {
        return Ok(State::Zero);
    }
    let w = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
    if bytes == unit_bytes(u, w).as_slice() {
        return Ok(State::Write(w));
    }
    let heads: Vec<(u32, u64)> = bytes
        .chunks(SECTOR)
        .map(|s| {
            (
                u32::from_le_bytes(s[4..8].try_into().unwrap()),
                u64::from_le_bytes(s[8..16].try_into().unwrap()),
            )
        })
        .collect();
    Err(format!(
        "unit {u}: neither zeros nor one write (sector heads (unit, write) {heads:?})"
    ))
}

/// Per unit: the states it was given in order (from the last recovery's), and the index
/// of the newest one a completed FLUSH or FUA made durable.
struct Model {
    states: Vec<Vec<State>>,
    acked: Vec<usize>,
    durable: Vec<usize>,
}

impl Model {
    /// After a recovery, unit `u` reads as `got`: one of its states from the durable one on.
    fn check(&self, u: usize, got: State) -> Result<(), String> {
        let s = &self.states[u];
        if s[self.durable[u]..].contains(&got) {
            return Ok(());
        }
        let given = s.iter().position(|&x| x == got);
        Err(format!(
            "unit {u} reads {got:?}, {}; durable since the last flush: {:?} (states {:?})",
            match given {
                Some(i) => format!(
                    "state {i}, older than the durable state {}",
                    self.durable[u]
                ),
                None => "never given to it".into(),
            },
            s[self.durable[u]],
            &s[s.len().saturating_sub(6)..]
        ))
    }
}

/// A request in flight: its kind, flags, units, state index per unit (writes, zeroes),
/// and for a flush the acknowledged state of every unit when it was sent.
struct Pending {
    kind: u16,
    flags: u16,
    lo: usize,
    n: usize,
    flush_snapshot: Option<Vec<usize>>,
}

#[test]
fn served_power_cuts_lose_nothing_acknowledged() {
    let cycles = env_u64("SSDLAB_POWERCUT_CYCLES", 4);
    let mut rng = Rng(env_u64("SSDLAB_POWERCUT_SEED", 0x5eed) | 1);
    let mut srv = Server::start();
    let units = (srv.size / UNIT) as usize;
    let mut m = Model {
        states: vec![vec![State::Zero]; units],
        acked: vec![0; units],
        durable: vec![0; units],
    };
    let mut next_write = 1u64;
    let (mut checked_units, mut requests) = (0u64, 0u64);
    for cycle in 0..cycles {
        let mut s = connect(&srv.sock);
        let mut flight: HashMap<u64, Pending> = HashMap::new();
        let mut cookie = 0u64;
        let cut_after = 200 + rng.below(3000);
        let mut sent = 0u64;
        while sent < cut_after {
            while flight.len() < 16 && sent < cut_after {
                let roll = rng.below(100);
                let (kind, max) = match roll {
                    0..=59 => (CMD_WRITE, 16),
                    60..=71 => (CMD_TRIM, 64),
                    72..=91 => (CMD_WRITE_ZEROES, 64),
                    _ => (CMD_FLUSH, 0),
                };
                let n = 1 + rng.below(max.max(1)) as usize;
                let lo = rng.below((units - n) as u64) as usize;
                let busy = flight
                    .values()
                    .any(|p| p.kind != CMD_FLUSH && lo < p.lo + p.n && p.lo < lo + n);
                if kind != CMD_FLUSH && busy {
                    break;
                }
                let mut flags = if kind != CMD_FLUSH && rng.below(5) == 0 {
                    FLAG_FUA
                } else {
                    0
                };
                if kind == CMD_WRITE_ZEROES && rng.below(2) == 0 {
                    flags |= FLAG_NO_HOLE;
                }
                cookie += 1;
                let mut p = Pending {
                    kind,
                    flags,
                    lo,
                    n,
                    flush_snapshot: None,
                };
                match kind {
                    CMD_FLUSH => {
                        p.flush_snapshot = Some(m.acked.clone());
                        request(&mut s, kind, 0, cookie, 0, 0);
                    }
                    CMD_WRITE => {
                        let mut payload = Vec::with_capacity(n * UNIT as usize);
                        for u in lo..lo + n {
                            payload.extend(unit_bytes(u as u64, next_write));
                            m.states[u].push(State::Write(next_write));
                            next_write += 1;
                        }
                        request(
                            &mut s,
                            kind,
                            flags,
                            cookie,
                            lo as u64 * UNIT,
                            payload.len() as u32,
                        );
                        s.write_all(&payload).unwrap();
                    }
                    _ => {
                        for u in lo..lo + n {
                            m.states[u].push(State::Zero);
                        }
                        request(
                            &mut s,
                            kind,
                            flags,
                            cookie,
                            lo as u64 * UNIT,
                            (n as u64 * UNIT) as u32,
                        );
                    }
                }
                flight.insert(cookie, p);
                sent += 1;
            }
            if flight.is_empty() {
                break;
            }
            let (err, c) = reply(&mut s);
            assert_eq!(err, 0, "cycle {cycle}: request {c} failed before the cut");
            acknowledge(&mut m, flight.remove(&c).expect("a request in flight"));
        }
        // The power goes with requests in flight; each is answered, done or EIO.
        srv.signal(libc::SIGUSR1);
        while !flight.is_empty() {
            let (err, c) = reply(&mut s);
            let p = flight.remove(&c).expect("a request in flight");
            if err == 0 {
                acknowledge(&mut m, p);
            }
        }
        // The cut has happened once this connection is refused service.
        let start = Instant::now();
        loop {
            cookie += 1;
            request(&mut s, CMD_READ, 0, cookie, 0, UNIT as u32);
            let (err, c) = reply(&mut s);
            assert_eq!(c, cookie);
            if err != 0 {
                break;
            }
            let _ = read_n(&mut s, UNIT as usize);
            assert!(start.elapsed() < TIMEOUT, "no power cut after SIGUSR1");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(s);
        requests += sent;

        // Power on: read every unit of the recovered device.
        let mut s = connect(&srv.sock);
        let chunk = 256usize;
        for first in (0..units).step_by(chunk) {
            let k = chunk.min(units - first);
            cookie += 1;
            request(
                &mut s,
                CMD_READ,
                0,
                cookie,
                first as u64 * UNIT,
                (k as u64 * UNIT) as u32,
            );
            assert_eq!(reply(&mut s), (0, cookie), "read after recovery {cycle}");
            let data = read_n(&mut s, k * UNIT as usize);
            for (i, bytes) in data.chunks(UNIT as usize).enumerate() {
                let u = first + i;
                let got = decode(u as u64, bytes)
                    .and_then(|st| m.check(u, st).map(|_| st))
                    .unwrap_or_else(|e| panic!("after power cut {}: {e}", cycle + 1));
                // What the recovered device holds is durable: the next cycle starts there.
                m.states[u] = vec![got];
                m.acked[u] = 0;
                m.durable[u] = 0;
                checked_units += 1;
            }
        }
    }
    // GC ran under the cuts (the device was written over several times).
    let gc: u64 = (1..=cycles)
        .map(|c| {
            let text =
                std::fs::read_to_string(srv.dir.join(format!("out/power-cycle-{c}/results.json")))
                    .unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["status"], "power_cut", "{v:#}");
            v["gc"]["invocations"].as_u64().unwrap()
        })
        .sum();
    let res = srv.stop();
    assert_eq!(res["serve"]["power_cycle"], cycles + 1, "{res:#}");
    assert_eq!(res["integrity"]["errors"], 0, "{res:#}");
    println!(
        "{cycles} power cuts, {requests} requests, {checked_units} units checked after recovery, {gc} GC victims"
    );
    assert!(gc > 0, "no GC ran");
}

/// Request `p` completed: its states are acknowledged; a FUA makes them durable, a flush
/// makes durable every state acknowledged when it was sent.
fn acknowledge(m: &mut Model, p: Pending) {
    if let Some(snap) = p.flush_snapshot {
        for (d, a) in m.durable.iter_mut().zip(snap) {
            *d = (*d).max(a);
        }
        return;
    }
    for u in p.lo..p.lo + p.n {
        // The unit's newest state is this request's (requests on a unit never overlap).
        let i = m.states[u].len() - 1;
        m.acked[u] = i;
        if p.flags & FLAG_FUA != 0 {
            m.durable[u] = i;
        }
    }
}
