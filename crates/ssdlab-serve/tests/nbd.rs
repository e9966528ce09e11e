//! The NBD server against raw std clients (byte-exact protocol checks, bad clients) and a
//! tiny in-memory device loop; plus nbdinfo / qemu-io when they are installed.

use ssdlab_serve::nbd::Wire;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ssdlab_serve::nbd::proto::*;
use ssdlab_serve::nbd::{listen, CmdKind, Command, Event, Export, Limits, ListenOptions, Server};

const SIZE: u64 = 1 << 20;
const MAX_BLOCK: u32 = 64 * 1024;
const TIMEOUT: Duration = Duration::from_secs(10);

fn export() -> Export {
    Export {
        name: "ssd".into(),
        description: "simulated SSD".into(),
        size_bytes: SIZE,
        min_block_bytes: 512,
        preferred_block_bytes: 4096,
        max_block_bytes: MAX_BLOCK,
    }
}

/// How the test device answers.
enum Mode {
    /// Each command at once.
    Immediate,
    /// Holds commands until it has this many, then answers them newest first.
    Reverse(usize),
    /// Holds the commands (logged as they come), answering the oldest for each token
    /// received on the channel.
    Gated(Receiver<()>),
}

type Log = Arc<Mutex<Vec<String>>>;

struct Harness {
    server: Option<Server>,
    path: PathBuf,
    log: Log,
    /// What the server said on its log (clients refused or closed, and why).
    said: Log,
}

impl Harness {
    fn start(mode: Mode) -> Harness {
        Harness::start_with(mode, 128, |_| {})
    }

    fn start_with(mode: Mode, max_connections: u32, init: impl FnOnce(&mut Vec<u8>)) -> Harness {
        Harness::start_limited(mode, max_connections, Limits::default(), init)
    }

    fn start_limited(
        mode: Mode,
        max_connections: u32,
        limits: Limits,
        init: impl FnOnce(&mut Vec<u8>),
    ) -> Harness {
        let path = socket_path();
        let log: Log = Arc::default();
        let mut data = vec![0u8; SIZE as usize];
        init(&mut data);
        let log2 = Arc::clone(&log);
        let said: Log = Arc::default();
        let said2 = Arc::clone(&said);
        let opts = ListenOptions {
            socket: Some(path.clone()),
            tcp: None,
            max_connections,
            limits,
            log: ssdlab_serve::Log::new(move |l| said2.lock().unwrap().push(l.to_string())),
        };
        let (server, wire) = listen(&opts, export()).expect("listen");
        std::thread::spawn(move || device(wire, data, mode, log2));
        assert_eq!(server.socket_path(), Some(path.as_path()));
        Harness {
            server: Some(server),
            path,
            log,
            said,
        }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (bounded) until the server has said a line satisfying `pred`; returns it.
    fn wait_said(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let said = self.said.lock().unwrap().clone();
            if let Some(l) = said.iter().find(|l| pred(l)) {
                return l.clone();
            }
            assert!(
                start.elapsed() < TIMEOUT,
                "timed out waiting for the server to say {what}; it said {said:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits (bounded) until a log line satisfies `pred`; returns it.
    fn wait_log(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            if let Some(l) = self.log().into_iter().find(|l| pred(l)) {
                return l;
            }
            assert!(
                start.elapsed() < TIMEOUT,
                "timed out waiting for {what}; log: {:#?}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn socket_path() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "ssdlab-nbd-{}-{}.sock",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ))
}

/// The in-memory device loop: bytes in a Vec, every event logged; it polls the wire on
/// its own thread, as the simulation's device loop does.
fn device(mut wire: Wire, mut data: Vec<u8>, mode: Mode, log: Log) {
    let mut conns: std::collections::HashSet<u32> = Default::default();
    let mut held: Vec<Command> = Vec::new();
    let exec = |c: Command, data: &mut Vec<u8>, wire: &mut Wire| {
        let range = c.offset_bytes as usize..(c.offset_bytes + u64::from(c.length_bytes)) as usize;
        match c.kind {
            CmdKind::Read => wire.ok_data(c.ticket(), &data[range]),
            CmdKind::Write => {
                data[range].copy_from_slice(&c.data);
                wire.ok(c.ticket());
            }
            CmdKind::WriteZeroes => {
                data[range].fill(0);
                wire.ok(c.ticket());
            }
            CmdKind::Flush | CmdKind::Trim => wire.ok(c.ticket()),
        }
        wire.give_back(c.data);
    };
    let mut gated: std::collections::VecDeque<Command> = Default::default();
    let mut events = Vec::new();
    while !wire.finished() {
        wire.poll(Duration::from_millis(2), &mut events);
        for ev in events.drain(..) {
            match ev {
                Event::Connected { conn } => {
                    log.lock().unwrap().push(format!("connected {conn}"));
                    conns.insert(conn);
                }
                Event::Command(c) => {
                    log.lock().unwrap().push(format!(
                        "cmd {} {:?} cookie={} off={} len={} fua={} no_hole={} data={}",
                        c.conn,
                        c.kind,
                        c.cookie,
                        c.offset_bytes,
                        c.length_bytes,
                        c.fua,
                        c.no_hole,
                        c.data.len()
                    ));
                    assert!(conns.contains(&c.conn));
                    match &mode {
                        Mode::Immediate => exec(c, &mut data, &mut wire),
                        Mode::Reverse(n) => {
                            held.push(c);
                            if held.len() == *n {
                                for c in held.drain(..).rev() {
                                    exec(c, &mut data, &mut wire);
                                }
                            }
                        }
                        Mode::Gated(_) => gated.push_back(c),
                    }
                }
                Event::Disconnected { conn, why } => {
                    log.lock()
                        .unwrap()
                        .push(format!("disconnected {conn} {why:?}"));
                    conns.remove(&conn);
                }
            }
        }
        if let Mode::Gated(gate) = &mode {
            while !gated.is_empty() && gate.try_recv().is_ok() {
                let c = gated.pop_front().unwrap();
                exec(c, &mut data, &mut wire);
            }
        }
    }
}

// ---- Raw client helpers ------------------------------------------------------------------

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

/// Reads and checks the greeting byte-exactly, then sends the client flags.
fn greet(s: &mut (impl Read + Write), client_flags: u32) {
    let g = read_n(s, 18);
    assert_eq!(&g[..8], b"NBDMAGIC");
    assert_eq!(&g[8..16], b"IHAVEOPT");
    assert_eq!(
        &g[16..18],
        &[0, 3],
        "handshake flags FIXED_NEWSTYLE | NO_ZEROES"
    );
    s.write_all(&client_flags.to_be_bytes()).unwrap();
}

fn send_opt(s: &mut impl Write, option: u32, data: &[u8]) {
    let mut b = Vec::new();
    b.extend_from_slice(b"IHAVEOPT");
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

/// One option reply: (option, reply type, data); checks the reply magic.
fn read_opt_reply(s: &mut impl Read) -> (u32, u32, Vec<u8>) {
    let h = read_n(s, 20);
    assert_eq!(be64(&h), 0x3e889045565a9, "option reply magic");
    let len = be32(&h[16..]) as usize;
    (be32(&h[8..]), be32(&h[12..]), read_n(s, len))
}

fn info_data(name: &str, infos: &[u16]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&(name.len() as u32).to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

/// Sends INFO/GO and collects the replies up to the final one: (INFO payloads, final type).
fn info_or_go(
    s: &mut (impl Read + Write),
    option: u32,
    name: &str,
    infos: &[u16],
) -> (Vec<Vec<u8>>, u32) {
    send_opt(s, option, &info_data(name, infos));
    let mut got = Vec::new();
    loop {
        let (opt, ty, data) = read_opt_reply(s);
        assert_eq!(opt, option);
        if ty == NBD_REP_INFO {
            got.push(data);
        } else {
            return (got, ty);
        }
    }
}

/// A connection in the transmission phase (GO with a block size request).
fn connect_go(path: &Path) -> UnixStream {
    let mut s = connect(path);
    greet(&mut s, 3);
    let (_, last) = info_or_go(&mut s, NBD_OPT_GO, "ssd", &[NBD_INFO_BLOCK_SIZE]);
    assert_eq!(last, NBD_REP_ACK);
    s
}

fn request(
    s: &mut impl Write,
    flags: u16,
    kind: u16,
    cookie: u64,
    offset: u64,
    len: u32,
    payload: &[u8],
) {
    let mut b = Vec::with_capacity(28 + payload.len());
    b.extend_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
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
    assert_eq!(
        be32(&h),
        NBD_SIMPLE_REPLY_MAGIC,
        "simple reply magic in {h:?}"
    );
    (be32(&h[4..]), be64(&h[8..]))
}

fn write_ok(s: &mut UnixStream, cookie: u64, offset: u64, payload: &[u8]) {
    request(
        s,
        0,
        NBD_CMD_WRITE,
        cookie,
        offset,
        payload.len() as u32,
        payload,
    );
    assert_eq!(read_reply(s), (0, cookie));
}

fn read_ok(s: &mut UnixStream, cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    request(s, 0, NBD_CMD_READ, cookie, offset, len, &[]);
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
            Ok(n) => panic!(
                "expected the server to close, got {n} more bytes: {:?}",
                &b[..n]
            ),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("expected the server to close, got {e}"),
        }
    }
    panic!("reading for the close: interrupted 100 times");
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

// ---- Handshake ---------------------------------------------------------------------------

#[test]
fn go_replies_are_byte_exact_and_enter_transmission() {
    let h = Harness::start(Mode::Immediate);
    let mut s = connect(&h.path);
    greet(&mut s, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);

    // INFO on the default name: export and block sizes always, then ACK; no transmission.
    let (infos, last) = info_or_go(&mut s, NBD_OPT_INFO, "", &[]);
    assert_eq!(last, NBD_REP_ACK);
    let export_info = [0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0x01, 0x6d]; // 1 MiB, flags 0x16d
    let block_info = [0, 3, 0, 0, 2, 0, 0, 0, 0x10, 0, 0, 1, 0, 0]; // 512, 4096, 65536
    assert_eq!(infos, vec![export_info.to_vec(), block_info.to_vec()]);

    // GO by name asking for name and description too.
    let (mut infos, last) = info_or_go(
        &mut s,
        NBD_OPT_GO,
        "ssd",
        &[NBD_INFO_NAME, NBD_INFO_DESCRIPTION, NBD_INFO_BLOCK_SIZE],
    );
    assert_eq!(last, NBD_REP_ACK);
    infos.sort();
    let mut want = vec![
        export_info.to_vec(),
        [&[0u8, 1][..], b"ssd"].concat(),
        [&[0u8, 2][..], b"simulated SSD"].concat(),
        block_info.to_vec(),
    ];
    want.sort();
    assert_eq!(infos, want);

    // Transmission: no padding after the ACK, a read answers at once.
    assert_eq!(read_ok(&mut s, 1, 0, 512), vec![0u8; 512]);
    request(&mut s, 0, NBD_CMD_DISC, 2, 0, 0, &[]);
    expect_closed(&mut s);
    h.wait_log("disconnect", |l| l == "disconnected 0 None");
    // Events: Connected, the command, Disconnected once.
    assert_eq!(
        h.log(),
        vec![
            "connected 0".to_string(),
            "cmd 0 Read cookie=1 off=0 len=512 fua=false no_hole=false data=0".into(),
            "disconnected 0 None".into()
        ]
    );
}

#[test]
fn export_name_replies_size_and_flags_with_and_without_zeroes() {
    let h = Harness::start(Mode::Immediate);
    // NO_ZEROES negotiated: 10 bytes, then straight into transmission.
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    send_opt(&mut s, NBD_OPT_EXPORT_NAME, b"ssd");
    let r = read_n(&mut s, 10);
    assert_eq!(be64(&r), SIZE);
    assert_eq!(&r[8..], &TRANSMISSION_FLAGS.to_be_bytes());
    write_ok(&mut s, 1, 512, &pattern(1, 512));
    assert_eq!(read_ok(&mut s, 2, 512, 512), pattern(1, 512));

    // Without NO_ZEROES: 124 zero bytes follow.
    let mut s = connect(&h.path);
    greet(&mut s, NBD_FLAG_C_FIXED_NEWSTYLE);
    send_opt(&mut s, NBD_OPT_EXPORT_NAME, b"");
    let r = read_n(&mut s, 134);
    assert_eq!(be64(&r), SIZE);
    assert_eq!(&r[10..], &[0u8; 124][..]);
    assert_eq!(read_ok(&mut s, 3, 512, 512), pattern(1, 512));

    // An unknown name: the server cannot reply an error, it closes.
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    send_opt(&mut s, NBD_OPT_EXPORT_NAME, b"other");
    expect_closed(&mut s);
}

#[test]
fn list_then_abort() {
    let h = Harness::start(Mode::Immediate);
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    send_opt(&mut s, NBD_OPT_LIST, &[]);
    let (opt, ty, data) = read_opt_reply(&mut s);
    assert_eq!((opt, ty), (NBD_OPT_LIST, NBD_REP_SERVER));
    assert_eq!(
        data,
        [&[0u8, 0, 0, 3][..], b"ssd", b"simulated SSD"].concat()
    );
    assert_eq!(read_opt_reply(&mut s), (NBD_OPT_LIST, NBD_REP_ACK, vec![]));
    // LIST with data is invalid, negotiation goes on.
    send_opt(&mut s, NBD_OPT_LIST, b"x");
    assert_eq!(read_opt_reply(&mut s).1, NBD_REP_ERR_INVALID);
    send_opt(&mut s, NBD_OPT_ABORT, &[]);
    assert_eq!(read_opt_reply(&mut s), (NBD_OPT_ABORT, NBD_REP_ACK, vec![]));
    expect_closed(&mut s);
    // A session that never reached transmission is not the device's business.
    std::thread::sleep(Duration::from_millis(20));
    assert!(h.log().is_empty(), "{:?}", h.log());
}

#[test]
fn unsupported_options_get_err_unsup_and_go_still_works() {
    let h = Harness::start(Mode::Immediate);
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    for (opt, data) in [
        (NBD_OPT_STRUCTURED_REPLY, &[][..]),
        (NBD_OPT_STARTTLS, &[]),
        (NBD_OPT_EXTENDED_HEADERS, &[]),
        (NBD_OPT_SET_META_CONTEXT, &[0, 0, 0, 0, 0, 0, 0, 0][..]),
        (4242, b"some data the server must skip"),
    ] {
        send_opt(&mut s, opt, data);
        let (o, ty, _msg) = read_opt_reply(&mut s);
        assert_eq!((o, ty), (opt, NBD_REP_ERR_UNSUP), "option {opt}");
    }
    // Unknown export: an error, negotiation goes on; malformed GO: invalid.
    assert_eq!(
        info_or_go(&mut s, NBD_OPT_GO, "other", &[]),
        (vec![], NBD_REP_ERR_UNKNOWN)
    );
    send_opt(&mut s, NBD_OPT_GO, &[0, 0, 0, 9, b'a']);
    assert_eq!(read_opt_reply(&mut s).1, NBD_REP_ERR_INVALID);
    assert_eq!(info_or_go(&mut s, NBD_OPT_GO, "", &[]).1, NBD_REP_ACK);
    assert_eq!(read_ok(&mut s, 9, 0, 4096), vec![0u8; 4096]);
}

#[test]
fn bad_handshakes_are_closed() {
    let h = Harness::start(Mode::Immediate);
    // Unknown client flag.
    let mut s = connect(&h.path);
    greet(&mut s, 3 | 4);
    expect_closed(&mut s);
    // Bad option magic.
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    s.write_all(b"IHAVEOPX\0\0\0\x07\0\0\0\0").unwrap();
    expect_closed(&mut s);
    // An absurd option length: an error reply, then closed (nothing allocated).
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    let mut head = b"IHAVEOPT".to_vec();
    head.extend_from_slice(&NBD_OPT_GO.to_be_bytes());
    head.extend_from_slice(&0xffff_fff0u32.to_be_bytes());
    s.write_all(&head).unwrap();
    assert_eq!(read_opt_reply(&mut s).1, NBD_REP_ERR_TOO_BIG);
    expect_closed(&mut s);
    // Closing in the middle of the greeting exchange.
    let mut s = connect(&h.path);
    let _ = read_n(&mut s, 18);
    s.write_all(&[0, 0]).unwrap();
    drop(s);
    // The server still serves.
    let mut s = connect_go(&h.path);
    assert_eq!(read_ok(&mut s, 1, 0, 512), vec![0u8; 512]);
}

// ---- Transmission ------------------------------------------------------------------------

#[test]
fn write_flush_trim_zero_and_read_back() {
    let h = Harness::start(Mode::Immediate);
    let mut s = connect_go(&h.path);
    let data = pattern(7, 8192);
    request(
        &mut s,
        NBD_CMD_FLAG_FUA,
        NBD_CMD_WRITE,
        10,
        4096,
        8192,
        &data,
    );
    assert_eq!(read_reply(&mut s), (0, 10));
    request(&mut s, 0, NBD_CMD_FLUSH, 11, 0, 0, &[]);
    assert_eq!(read_reply(&mut s), (0, 11));
    assert_eq!(read_ok(&mut s, 12, 4096, 8192), data);
    // The largest allowed read and write (the maximum block size).
    let big = pattern(3, MAX_BLOCK as usize);
    write_ok(&mut s, 13, SIZE - u64::from(MAX_BLOCK), &big);
    assert_eq!(
        read_ok(&mut s, 14, SIZE - u64::from(MAX_BLOCK), MAX_BLOCK),
        big
    );
    request(
        &mut s,
        NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE,
        NBD_CMD_WRITE_ZEROES,
        15,
        4096,
        4096,
        &[],
    );
    assert_eq!(read_reply(&mut s), (0, 15));
    request(&mut s, 0, NBD_CMD_TRIM, 16, 0, 512, &[]);
    assert_eq!(read_reply(&mut s), (0, 16));
    let back = read_ok(&mut s, 17, 4096, 8192);
    assert_eq!(&back[..4096], &[0u8; 4096][..]);
    assert_eq!(&back[4096..], &data[4096..]);
    let log = h.log();
    assert!(log.contains(
        &"cmd 0 Write cookie=10 off=4096 len=8192 fua=true no_hole=false data=8192".to_string()
    ));
    assert!(log.contains(
        &"cmd 0 WriteZeroes cookie=15 off=4096 len=4096 fua=true no_hole=true data=0".to_string()
    ));
    assert!(log
        .contains(&"cmd 0 Flush cookie=11 off=0 len=0 fua=false no_hole=false data=0".to_string()));
}

#[test]
fn replies_go_out_of_order_matched_by_cookie() {
    let h = Harness::start_with(Mode::Reverse(4), 128, |d| {
        for (i, b) in d.iter_mut().enumerate() {
            *b = (i / 4096) as u8;
        }
    });
    let mut s = connect_go(&h.path);
    for cookie in 1..=4u64 {
        request(&mut s, 0, NBD_CMD_READ, cookie, cookie * 4096, 4096, &[]);
    }
    let mut order = Vec::new();
    for _ in 0..4 {
        let (errno, cookie) = read_reply(&mut s);
        assert_eq!(errno, 0);
        assert_eq!(
            read_n(&mut s, 4096),
            vec![cookie as u8; 4096],
            "data of cookie {cookie}"
        );
        order.push(cookie);
    }
    assert_eq!(order, vec![4, 3, 2, 1]);
}

#[test]
fn invalid_requests_get_errors_and_the_connection_stays_usable() {
    let h = Harness::start(Mode::Immediate);
    let mut s = connect_go(&h.path);
    let end = SIZE;
    // (flags, type, offset, length, payload, expected errno)
    let cases: Vec<(u16, u16, u64, u32, Vec<u8>, u32)> = vec![
        (0, 9, 0, 512, vec![], NBD_EINVAL),             // unknown command
        (0, NBD_CMD_CACHE, 0, 512, vec![], NBD_EINVAL), // not advertised
        (NBD_CMD_FLAG_DF, NBD_CMD_READ, 0, 512, vec![], NBD_EINVAL), // flag not negotiated
        (1 << 9, NBD_CMD_WRITE, 0, 512, vec![1; 512], NBD_EINVAL), // unknown flag
        (
            NBD_CMD_FLAG_NO_HOLE,
            NBD_CMD_TRIM,
            0,
            512,
            vec![],
            NBD_EINVAL,
        ), // NO_HOLE not for TRIM
        (0, NBD_CMD_READ, end - 512, 1024, vec![], NBD_EINVAL), // read beyond the end
        (0, NBD_CMD_TRIM, end, 512, vec![], NBD_EINVAL), // trim beyond the end
        (0, NBD_CMD_WRITE, end - 512, 1024, vec![2; 1024], NBD_ENOSPC), // write beyond the end
        (0, NBD_CMD_WRITE_ZEROES, end, 512, vec![], NBD_ENOSPC), // zeroes beyond the end
        (0, NBD_CMD_READ, 100, 512, vec![], NBD_EINVAL), // unaligned offset
        (0, NBD_CMD_WRITE, 0, 100, vec![3; 100], NBD_EINVAL), // unaligned length
        (0, NBD_CMD_READ, 0, 0, vec![], NBD_EINVAL),    // zero length
        (0, NBD_CMD_READ, 0, MAX_BLOCK + 512, vec![], NBD_EINVAL), // over the maximum
        (
            0,
            NBD_CMD_WRITE,
            0,
            MAX_BLOCK + 512,
            vec![4; MAX_BLOCK as usize + 512],
            NBD_EINVAL,
        ),
        (0, NBD_CMD_FLUSH, 512, 0, vec![], NBD_EINVAL), // flush offset must be 0
    ];
    for (i, (flags, kind, offset, len, payload, errno)) in cases.into_iter().enumerate() {
        let cookie = 100 + i as u64;
        request(&mut s, flags, kind, cookie, offset, len, &payload);
        assert_eq!(read_reply(&mut s), (errno, cookie), "case {i}");
    }
    // Nothing bad reached the device, no write payload was taken for a request, and the
    // stream is still in sync.
    assert_eq!(read_ok(&mut s, 1, 0, 1024), vec![0u8; 1024]);
    assert_eq!(read_ok(&mut s, 2, end - 512, 512), vec![0u8; 512]);
    assert_eq!(
        h.log().iter().filter(|l| l.starts_with("cmd")).count(),
        2,
        "{:?}",
        h.log()
    );
}

#[test]
fn bad_request_magic_closes_only_that_connection() {
    let h = Harness::start(Mode::Immediate);
    let mut good = connect_go(&h.path);
    let mut bad = connect_go(&h.path);
    write_ok(&mut good, 1, 0, &pattern(5, 512));
    let mut junk = vec![0x12, 0x34, 0x56, 0x78];
    junk.extend_from_slice(&[0u8; 24]);
    bad.write_all(&junk).unwrap();
    expect_closed(&mut bad);
    let line = h.wait_log("bad connection's end", |l| l.starts_with("disconnected 1"));
    assert_eq!(
        line,
        "disconnected 1 Some(\"bad request magic 0x12345678, closing\")"
    );
    // The server says it on its log (the library prints nothing itself).
    h.wait_said("the bad connection", |l| {
        l == "serve: connection 1: bad request magic 0x12345678, closing"
    });
    assert_eq!(read_ok(&mut good, 2, 0, 512), pattern(5, 512));
}

#[test]
fn truncated_header_closes_the_connection() {
    let h = Harness::start(Mode::Immediate);
    let mut s = connect_go(&h.path);
    s.write_all(&NBD_REQUEST_MAGIC.to_be_bytes()).unwrap();
    s.write_all(&[0u8; 6]).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    expect_closed(&mut s);
    let line = h.wait_log("end", |l| l.starts_with("disconnected 0"));
    assert!(
        line.contains("truncated request header (10 of 28 bytes)"),
        "{line}"
    );
    let mut s = connect_go(&h.path);
    assert_eq!(read_ok(&mut s, 1, 0, 512), vec![0u8; 512]);
}

#[test]
fn disconnect_mid_write_payload_keeps_earlier_data_and_other_clients() {
    let h = Harness::start(Mode::Immediate);
    let mut other = connect_go(&h.path);
    let mut s = connect_go(&h.path);
    write_ok(&mut s, 1, 0, &pattern(9, 4096));
    // A write of 8 KiB at 4096 whose payload stops after 1000 bytes.
    request(&mut s, 0, NBD_CMD_WRITE, 2, 4096, 8192, &pattern(1, 1000));
    drop(s);
    let line = h.wait_log("end", |l| l.starts_with("disconnected 1"));
    assert!(
        line.contains(
            "client disconnected in the middle of the 8192-byte payload of WRITE cookie 0x2"
        ),
        "{line}"
    );
    assert_eq!(read_ok(&mut other, 3, 0, 4096), pattern(9, 4096));
    assert_eq!(read_ok(&mut other, 4, 4096, 8192), vec![0u8; 8192]);
    assert!(
        !h.log().iter().any(|l| l.contains("cookie=2")),
        "the partial write reached the device"
    );
}

#[test]
fn sixty_four_connections_at_once() {
    let h = Harness::start_with(Mode::Immediate, 64, |_| {});
    let path = h.path.clone();
    let clients: Vec<_> = (0..64u64)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut s = connect_go(&path);
                let data = pattern(i as u8, 4096);
                write_ok(&mut s, i, i * 4096, &data);
                s
            })
        })
        .collect();
    let mut streams: Vec<UnixStream> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    // All 64 are open now; each reads its own and its neighbour's block.
    for (i, s) in streams.iter_mut().enumerate() {
        let i = i as u64;
        assert_eq!(read_ok(s, 1000 + i, i * 4096, 4096), pattern(i as u8, 4096));
        let j = (i + 1) % 64;
        assert_eq!(read_ok(s, 2000 + i, j * 4096, 4096), pattern(j as u8, 4096));
    }
    // A 65th is over the limit: accepted and closed without a greeting.
    let mut extra = connect(&h.path);
    expect_closed(&mut extra);
    drop(streams.pop());
    // Once one left, a new one is served.
    let start = Instant::now();
    loop {
        let mut s = connect(&h.path);
        let mut g = [0u8; 8];
        if s.read_exact(&mut g).is_ok() {
            assert_eq!(&g, b"NBDMAGIC");
            break;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "no connection accepted after one closed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn disc_with_a_reply_outstanding_still_gets_the_reply() {
    let (gate_tx, gate_rx) = mpsc::channel();
    let h = Harness::start_with(Mode::Gated(gate_rx), 128, |d| d[..512].fill(0xab));
    let mut s = connect_go(&h.path);
    request(&mut s, 0, NBD_CMD_READ, 77, 0, 512, &[]);
    request(&mut s, 0, NBD_CMD_DISC, 78, 0, 0, &[]);
    h.wait_log("the read", |l| l.contains("cookie=77"));
    std::thread::sleep(Duration::from_millis(30));
    assert!(
        !h.log().iter().any(|l| l.starts_with("disconnected")),
        "disconnected before the reply"
    );
    gate_tx.send(()).unwrap();
    assert_eq!(read_reply(&mut s), (0, 77));
    assert_eq!(read_n(&mut s, 512), vec![0xab; 512]);
    expect_closed(&mut s);
    h.wait_log("end", |l| l == "disconnected 0 None");
}

#[test]
fn shutdown_closes_connections_and_removes_the_socket() {
    let mut h = Harness::start(Mode::Immediate);
    let mut s = connect_go(&h.path);
    assert_eq!(read_ok(&mut s, 1, 0, 512), vec![0u8; 512]);
    // A second server on the same live socket is refused.
    let opts = ListenOptions {
        socket: Some(h.path.clone()),
        tcp: None,
        max_connections: 4,
        limits: Limits::default(),
        log: Default::default(),
    };
    let err = listen(&opts, export())
        .err()
        .expect("second listen must fail");
    assert!(
        err.to_string().contains("another server is listening"),
        "{err}"
    );
    h.server.take().unwrap().shutdown();
    expect_closed(&mut s);
    assert!(!h.path.exists(), "socket file left behind");
    h.wait_log("end", |l| l.starts_with("disconnected 0"));
    // A stale socket file (nothing listening) is replaced; a regular file is not.
    drop(std::os::unix::net::UnixListener::bind(&h.path).unwrap());
    assert!(h.path.exists());
    let (server, _wire) = listen(&opts, export()).expect("stale socket replaced");
    let mut s = connect(&h.path);
    greet(&mut s, 3);
    server.shutdown();
    std::fs::write(&h.path, b"not a socket").unwrap();
    let err = listen(&opts, export())
        .err()
        .expect("a regular file must not be replaced");
    assert!(err.to_string().contains("is not a socket"), "{err}");
}

#[test]
fn tcp_listener_and_bad_options() {
    let log: Log = Arc::default();
    let log2 = Arc::clone(&log);
    let opts = ListenOptions {
        socket: None,
        tcp: Some("127.0.0.1:0".parse().unwrap()),
        max_connections: 4,
        limits: Limits::default(),
        log: Default::default(),
    };
    let (server, wire) = listen(&opts, export()).unwrap();
    std::thread::spawn(move || device(wire, vec![0; SIZE as usize], Mode::Immediate, log2));
    let addr = server.tcp_addr().unwrap();
    assert_ne!(addr.port(), 0);
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    greet(&mut s, 3);
    assert_eq!(info_or_go(&mut s, NBD_OPT_GO, "ssd", &[]).1, NBD_REP_ACK);
    request(&mut s, 0, NBD_CMD_WRITE, 1, 0, 512, &[6; 512]);
    assert_eq!(read_reply(&mut s), (0, 1));
    request(&mut s, 0, NBD_CMD_READ, 2, 0, 512, &[]);
    assert_eq!(read_reply(&mut s), (0, 2));
    assert_eq!(read_n(&mut s, 512), vec![6; 512]);
    server.shutdown();

    let none = ListenOptions {
        socket: None,
        tcp: None,
        max_connections: 4,
        limits: Limits::default(),
        log: Default::default(),
    };
    assert!(listen(&none, export()).is_err());
    let bad = Export {
        min_block_bytes: 3,
        ..export()
    };
    let err = listen(&opts, bad).err().unwrap();
    assert!(err.to_string().contains("min_block_bytes 3"), "{err}");
}

// ---- Real clients, when installed --------------------------------------------------------

fn have(tool: &str) -> bool {
    let found = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        println!("skipped: {tool} is not installed");
    }
    found
}

#[test]
fn nbdinfo_sees_size_block_sizes_and_flags() {
    if !have("nbdinfo") {
        return;
    }
    let h = Harness::start(Mode::Immediate);
    let uri = format!("nbd+unix:///ssd?socket={}", h.path.display());
    let out = std::process::Command::new("timeout")
        .args(["20", "nbdinfo", "--json", &uri])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nbdinfo failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &v["exports"][0];
    assert_eq!(e["export-size"], SIZE, "{v:#}");
    assert_eq!(e["block_size_minimum"], 512, "{v:#}");
    assert_eq!(e["block_size_preferred"], 4096, "{v:#}");
    assert_eq!(e["block_size_maximum"], MAX_BLOCK, "{v:#}");
    assert_eq!(e["description"], "simulated SSD", "{v:#}");
    for (key, want) in [
        ("is_read_only", false),
        ("can_flush", true),
        ("can_fua", true),
        ("can_trim", true),
        ("can_zero", true),
        ("can_multi_conn", true),
        ("is_rotational", false),
    ] {
        assert_eq!(e[key], want, "{key} in {v:#}");
    }
    assert_eq!(v["protocol"], "newstyle-fixed", "{v:#}");
}

#[test]
fn qemu_io_writes_and_reads_back() {
    if !have("qemu-io") {
        return;
    }
    let h = Harness::start(Mode::Immediate);
    let uri = format!("nbd+unix:///ssd?socket={}", h.path.display());
    let out = std::process::Command::new("timeout")
        .args(["30", "qemu-io", "-f", "raw", &uri])
        .args([
            "-c",
            "write -P 0x5a 4096 64k",
            "-c",
            "flush",
            "-c",
            "read -P 0x5a 4096 64k",
        ])
        .args([
            "-c",
            "write -z 4096 4k",
            "-c",
            "read -P 0 4096 4k",
            "-c",
            "discard 0 4k",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "qemu-io failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stdout.contains("failed") && !stdout.contains("Pattern verification"),
        "{stdout}"
    );
    h.wait_log("qemu-io's write", |l| {
        l.contains("Write") && l.contains("len=65536")
    });
}

#[test]
fn nbdcopy_round_trips_a_file_over_several_connections() {
    if !have("nbdcopy") {
        return;
    }
    let h = Harness::start(Mode::Immediate);
    let uri = format!("nbd+unix:///ssd?socket={}", h.path.display());
    let input = h.path.with_extension("in");
    let output = h.path.with_extension("out");
    let data: Vec<u8> = (0..SIZE as usize)
        .map(|i| (i / 512 * 7 + i % 13) as u8)
        .collect();
    std::fs::write(&input, &data).unwrap();
    for (from, to) in [
        (input.to_str().unwrap(), uri.as_str()),
        (uri.as_str(), output.to_str().unwrap()),
    ] {
        let out = std::process::Command::new("timeout")
            .args([
                "30",
                "nbdcopy",
                "--connections=4",
                "--requests=8",
                "--request-size=65536",
                from,
                to,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nbdcopy {from} {to}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let back = std::fs::read(&output).unwrap();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    assert!(back == data, "the file read back differs");
    // nbdcopy used several connections at once (CAN_MULTI_CONN).
    assert!(h.log().iter().any(|l| l == "connected 1"), "{:?}", h.log());
}

#[test]
fn fio_nbd_engine_writes_and_verifies_at_queue_depth_16() {
    if !have("fio") {
        return;
    }
    let h = Harness::start(Mode::Immediate);
    let uri = format!("nbd+unix:///ssd?socket={}", h.path.display());
    let out = std::process::Command::new("timeout")
        .args([
            "60",
            "fio",
            "--name=t",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
        ])
        .args([
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=16",
            "--size=1M",
            "--verify=crc32c",
        ])
        .args([
            "--do_verify=1",
            "--verify_fatal=1",
            "--verify_state_save=0",
            "--output-format=terse",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio failed: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        h.log().iter().filter(|l| l.contains(" Read ")).count() >= 256,
        "fio did not read back"
    );
}

// ---- What a client may hold and how long it may take ---------------------------------------

/// Commands the device has received so far.
fn commands_seen(h: &Harness) -> usize {
    h.log().iter().filter(|l| l.starts_with("cmd ")).count()
}

/// A connection holds at most its bound: with the device holding every command, the
/// reader forwards exactly as many as fit (2 × 64 KiB of READ payload, then 8 requests of
/// 512 bytes) and reads no further; each reply lets one more in.
#[test]
fn a_connection_holds_at_most_its_requests_and_bytes() {
    let (gate_tx, gate_rx) = mpsc::channel();
    let limits = Limits {
        max_requests: 8,
        max_bytes: 2 * u64::from(MAX_BLOCK),
        ..Limits::default()
    };
    let h = Harness::start_limited(Mode::Gated(gate_rx), 4, limits, |d| d.fill(7));
    let mut s = connect_go(&h.path);
    for i in 0..6u64 {
        request(&mut s, 0, NBD_CMD_READ, i, 0, MAX_BLOCK, &[]);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(commands_seen(&h), 2, "two of 64 KiB fit in 128 KiB");
    for _ in 0..6 {
        gate_tx.send(()).unwrap();
    }
    for _ in 0..6 {
        let (errno, _) = read_reply(&mut s);
        assert_eq!(errno, 0);
        assert!(read_n(&mut s, MAX_BLOCK as usize) == vec![7u8; MAX_BLOCK as usize]);
    }
    // Small requests: the count binds.
    for i in 0..20u64 {
        request(&mut s, 0, NBD_CMD_READ, 100 + i, 0, 512, &[]);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(commands_seen(&h), 6 + 8, "eight requests held");
    gate_tx.send(()).unwrap();
    assert_eq!(read_reply(&mut s), (0, 100));
    read_n(&mut s, 512);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        commands_seen(&h),
        6 + 9,
        "one reply written, one more request in"
    );
    for _ in 0..19 {
        gate_tx.send(()).unwrap();
    }
    for _ in 0..19 {
        assert_eq!(read_reply(&mut s).0, 0);
        read_n(&mut s, 512);
    }
}

/// A client that sends READs and never reads the replies: the server forwards a bounded
/// number (what the socket buffer took, plus the bound) and serves another client meanwhile;
/// once it reads, every reply comes, in full.
#[test]
fn a_client_that_does_not_read_its_replies_holds_a_bounded_number() {
    let limits = Limits {
        max_requests: 4,
        max_bytes: 2 * u64::from(MAX_BLOCK),
        ..Limits::default()
    };
    let h = Harness::start_limited(Mode::Immediate, 4, limits, |d| d.fill(3));
    let mut slow = connect_go(&h.path);
    let n = 64u64;
    for i in 0..n {
        request(&mut slow, 0, NBD_CMD_READ, i, 0, MAX_BLOCK, &[]);
    }
    std::thread::sleep(Duration::from_millis(300));
    let seen = commands_seen(&h);
    let other = {
        // Beyond the slow client's reads.
        let mut o = connect_go(&h.path);
        write_ok(&mut o, 1, 1 << 17, &pattern(5, 4096));
        read_ok(&mut o, 2, 1 << 17, 4096)
    };
    assert!(
        other == pattern(5, 4096),
        "another client is served meanwhile"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        commands_seen(&h),
        seen + 2,
        "the slow client got no further"
    );
    // The socket buffers a few replies of 64 KiB; the rest waits in the client's socket.
    assert!(
        seen < 16,
        "{seen} of {n} READs taken from a client that reads nothing"
    );
    for _ in 0..n {
        assert_eq!(read_reply(&mut slow).0, 0);
        assert!(read_n(&mut slow, MAX_BLOCK as usize) == vec![3u8; MAX_BLOCK as usize]);
    }
}

/// The handshake has a deadline as a whole: a client trickling a byte every 200 ms (each
/// read on time) is closed when it passes.
#[test]
fn a_trickling_handshake_is_closed_at_its_deadline() {
    let limits = Limits {
        handshake_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let h = Harness::start_limited(Mode::Immediate, 4, limits, |_| {});
    let mut s = connect(&h.path);
    let t0 = Instant::now();
    greet(&mut s, 3);
    let mut w = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // An option header, a byte at a time.
        for b in b"IHAVEOPT\0\0\0\x07\0\0\0\x06" {
            std::thread::sleep(Duration::from_millis(200));
            if w.write_all(&[*b]).is_err() {
                return;
            }
        }
    });
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    expect_closed(&mut s);
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
        "closed after {took:?}, the deadline is 1 s"
    );
    trickle.join().unwrap();
    // Others are served.
    let mut o = connect_go(&h.path);
    assert_eq!(read_ok(&mut o, 1, 0, 512), vec![0u8; 512]);
}

/// With every slot taken, a new client is refused while the others are busy or idle only
/// briefly, and takes the place of the connection idle longest once it has been idle for
/// the idle timeout.
#[test]
fn an_idle_connection_gives_its_place_when_every_slot_is_taken() {
    let limits = Limits {
        idle_timeout: Some(Duration::from_millis(400)),
        ..Limits::default()
    };
    let h = Harness::start_limited(Mode::Immediate, 2, limits, |_| {});
    let mut idle = connect_go(&h.path);
    let mut busy = connect_go(&h.path);
    // At once: nobody has been idle long enough.
    let mut early = connect(&h.path);
    expect_closed(&mut early);
    h.wait_said("the refusal", |l| {
        l == "serve: refused a connection: 2 connections open already (max_connections), closing"
    });
    // The busy one keeps working; the idle one passes the timeout.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(600) {
        write_ok(&mut busy, 1, 0, &pattern(1, 512));
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut new = connect_go(&h.path);
    assert_eq!(read_ok(&mut new, 2, 0, 512), pattern(1, 512));
    expect_closed(&mut idle);
    let line = h.wait_said("the eviction", |l| l.contains("idle for"));
    assert!(
        line.starts_with("serve: connection 0: idle for ")
            && line.ends_with(
                " s with every connection slot taken: closed to make room for a new client"
            ),
        "{line}"
    );
    assert_eq!(read_ok(&mut busy, 3, 0, 512), pattern(1, 512));
}
