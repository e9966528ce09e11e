//! `ssdlab serve` in process against raw clients: functional mode, the counts of a power
//! cut (per cycle and over all cycles), results that cannot be written, the stored-bytes cap.

mod common;

use common::*;
use ssdlab_core::Config;
use ssdlab_serve::nbd::proto::*;
use ssdlab_serve::{serve, TimeMode};
use std::io::Write;
use std::time::Duration;

/// Functional mode answers each request as it comes, in both time modes (a FUA write and a
/// FUA write-zeroes included: their flush completes at once too), and in realtime under
/// `SCHED_FIFO` where this process may have it.
#[test]
fn functional_mode_answers_each_request_at_once() {
    let realtime = TimeMode::Realtime { dilation: 1.0 };
    let mut modes = vec![(TimeMode::Virtual, None), (realtime, None)];
    if ssdlab_serve::sched::Fifo::probe(1).is_ok() {
        modes.push((realtime, Some(1)));
    }
    for (k, (time, priority)) in modes.into_iter().enumerate() {
        let dir = scratch(&format!("functional-{k}"));
        let cfg = Config::from_toml_str(
            &DEVICE.replace("mode = \"timed\"", "mode = \"functional\""),
            "f",
        )
        .unwrap();
        let mut opts = options(&dir);
        opts.time = time;
        opts.realtime_priority = priority;
        let sock = opts.socket.clone().unwrap();
        let server = std::thread::spawn(move || serve(cfg, opts));
        let mut s = connect_go(&sock);
        // No reply within 5 s is a failure (the read times out).
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let a = vec![0xa5u8; 8192];
        assert_eq!(call(&mut s, NBD_CMD_WRITE, 0, 1, 0, 8192, &a).0, 0);
        assert!(call(&mut s, NBD_CMD_READ, 0, 2, 0, 8192, &[]).1 == a);
        assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 3, 0, 0, &[]).0, 0);
        let b = vec![0x5au8; 4096];
        let fua = NBD_CMD_FLAG_FUA;
        assert_eq!(call(&mut s, NBD_CMD_WRITE, fua, 4, 8192, 4096, &b).0, 0);
        assert_eq!(
            call(&mut s, NBD_CMD_WRITE_ZEROES, fua, 5, 0, 4096, &[]).0,
            0
        );
        let got = call(&mut s, NBD_CMD_READ, 0, 6, 0, 12288, &[]).1;
        assert!(got[..4096] == [0; 4096] && got[4096..8192] == a[..4096] && got[8192..] == b[..]);
        send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
        let summary = server.join().unwrap().expect("serve");
        let c = &summary.all_cycles.commands;
        assert_eq!(
            (c.write, c.read, c.flush, c.write_zeroes, c.fua),
            (2, 2, 1, 1, 2)
        );
        assert_eq!((c.ok, c.errors, c.in_flight), (6, 0, 0));
        // write, read, flush, write + flush, trim + flush, read.
        assert_eq!(c.device_requests, 8);
        let r = json(&dir.join("out/results.json"));
        let h = &r["host"];
        let n = |k: &str| h[k].as_u64().unwrap();
        assert_eq!(
            n("reads") + n("writes") + n("trims") + n("flushes"),
            8,
            "{h:#}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v:#}"))
}

/// A cut with writes in flight: they are answered EIO and counted so, in the cycle that
/// ended (`power-cycle-1/results.json`: host counts only what completed, the rest failed),
/// and the final document's `this_cycle` is the second cycle's while `all_cycles` adds both.
#[test]
fn a_power_cut_is_counted_per_cycle_and_over_all_cycles_exactly() {
    let dir = scratch("cut-counts");
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let mut opts = options(&dir);
    // 40 writes, a flush, then 8 pipelined writes of 1 MiB (the buffer holds 256 KiB:
    // they wait for programs), the cut on the last of them.
    opts.power_cut_after_requests = Some(40 + 1 + 8);
    let sock = opts.socket.clone().unwrap();
    let out = opts.out_dir.clone();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    for u in 0..40u64 {
        assert_eq!(
            call(
                &mut s,
                NBD_CMD_WRITE,
                0,
                u,
                u * 4096,
                4096,
                &[u as u8; 4096]
            )
            .0,
            0
        );
    }
    assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 40, 0, 0, &[]).0, 0);
    let big = vec![0xeeu8; 1 << 20];
    for k in 0..8u64 {
        send(
            &mut s,
            NBD_CMD_WRITE,
            0,
            100 + k,
            (1 << 20) + k * (1 << 20) % (6 << 20),
            1 << 20,
            &big,
        );
    }
    let mut eio = 0;
    for _ in 0..8 {
        match reply(&mut s).0 {
            0 => {}
            NBD_EIO => eio += 1,
            e => panic!("errno {e}"),
        }
    }
    assert!(eio >= 1, "writes waiting for the buffer at the cut");
    // The old connection's device is gone.
    assert_eq!(
        call(&mut s, NBD_CMD_READ, 0, 200, 0, 4096, &[]).0,
        NBD_ESHUTDOWN
    );
    let mut t = connect_go(&sock);
    for u in [0u64, 39] {
        assert!(call(&mut t, NBD_CMD_READ, 0, 300 + u, u * 4096, 4096, &[]).1 == [u as u8; 4096]);
    }
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    send(&mut t, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let summary = server.join().unwrap().expect("serve");
    assert_eq!(summary.power_cycle, 2);

    let first = json(&out.join("power-cycle-1/results.json"));
    assert_eq!(first["status"], "power_cut");
    let c = &first["serve"]["this_cycle"]["commands"];
    assert_conserved(c);
    assert_eq!(
        (n(c, "write"), n(c, "flush"), n(c, "read")),
        (48, 1, 0),
        "{c:#}"
    );
    assert_eq!(n(c, "ok"), 41 + 8 - eio, "{c:#}");
    assert_eq!(n(c, "errors"), eio, "{c:#}");
    assert_eq!(n(&c["errors_by_cause"], "power_cut"), eio, "{c:#}");
    assert_eq!(n(c, "in_flight"), 0, "{c:#}");
    assert_eq!(n(c, "device_requests"), 49, "{c:#}");
    // Host: what completed, and the rest failed; each request once.
    let h = &first["host"];
    assert_eq!(n(h, "writes"), 48 - eio, "{h:#}");
    assert_eq!(
        n(h, "writes"),
        n(&first["latency_ns"]["write"], "count"),
        "{first:#}"
    );
    assert_eq!(
        n(h, "flushes"),
        n(&first["latency_ns"]["flush"], "count"),
        "{first:#}"
    );
    assert_eq!(n(h, "failed_requests"), eio, "{h:#}");
    assert_eq!(
        n(h, "write_bytes"),
        40 * 4096 + (8 - eio) * (1 << 20),
        "{h:#}"
    );
    assert_eq!(
        n(h, "reads") + n(h, "writes") + n(h, "trims") + n(h, "flushes") + n(h, "failed_requests"),
        n(c, "device_requests")
    );

    let last = json(&out.join("results.json"));
    assert_eq!(last["status"], "completed");
    let (this, all) = (&last["serve"]["this_cycle"], &last["serve"]["all_cycles"]);
    let c2 = &this["commands"];
    assert_conserved(c2);
    assert_conserved(&all["commands"]);
    assert_eq!(
        (n(c2, "read"), n(c2, "ok"), n(c2, "errors")),
        (3, 2, 1),
        "{c2:#}"
    );
    assert_eq!(n(&c2["errors_by_cause"], "old_connection"), 1, "{c2:#}");
    assert_eq!(n(this, "connections"), 1, "{this:#}");
    assert_eq!(n(&first["serve"]["this_cycle"], "connections"), 1);
    for k in [
        "read",
        "write",
        "flush",
        "ok",
        "errors",
        "device_requests",
        "read_bytes",
        "write_bytes",
    ] {
        assert_eq!(
            n(&all["commands"], k),
            n(c, k) + n(c2, k),
            "all_cycles.commands.{k}"
        );
    }
    assert_eq!(
        n(&last["host"], "reads"),
        2,
        "the second cycle's host figures"
    );
    // Both documents' audits hold the serve section's identities (the cut's included:
    // the writes in flight at the cut had units placed, in no host count).
    assert_serve_audited(&first);
    assert_serve_audited(&last);
    assert_eq!(
        serde_json::to_value(&summary.audit).unwrap(),
        last["audit"],
        "the summary's audit is the final document's"
    );
    assert!(summary.internal_error().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Results are an aid: snapshots and a power cycle's files that cannot be written are
/// logged and serving goes on (the data too); only the final results.json failing fails.
#[test]
fn results_that_cannot_be_written_do_not_stop_the_server() {
    let dir = scratch("unwritable");
    let out = dir.join("out");
    std::fs::create_dir_all(out.join(".results.json.tmp")).unwrap(); // rename target blocked
    std::fs::write(out.join("power-cycle-1"), b"a file where a directory goes").unwrap();
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let mut opts = options(&dir);
    opts.stats_interval = Some(Duration::from_millis(20));
    opts.power_cut_after_requests = Some(22);
    let sock = opts.socket.clone().unwrap();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    for u in 0..20u64 {
        assert_eq!(
            call(&mut s, NBD_CMD_WRITE, 0, u, u * 4096, 4096, &[7; 4096]).0,
            0
        );
        std::thread::sleep(Duration::from_millis(5)); // snapshots are due meanwhile
    }
    assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 20, 0, 0, &[]).0, 0);
    // The cut comes with this one (answered, or EIO in flight).
    let e = call(&mut s, NBD_CMD_WRITE, 0, 21, 4096, 4096, &[9; 4096]).0;
    assert!(e == 0 || e == NBD_EIO, "errno {e}");
    assert_eq!(
        call(&mut s, NBD_CMD_READ, 0, 22, 0, 4096, &[]).0,
        NBD_ESHUTDOWN
    );
    let mut t = connect_go(&sock);
    assert!(call(&mut t, NBD_CMD_READ, 0, 1, 19 * 4096, 4096, &[]).1 == [7; 4096]);
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(call(&mut t, NBD_CMD_WRITE, 0, 2, 0, 4096, &[8; 4096]).0, 0);
    // The final results.json cannot be written either: the one failure that fails.
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    send(&mut t, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let err = server
        .join()
        .unwrap()
        .expect_err("the final results.json failed");
    assert!(
        matches!(
            &err,
            ssdlab_serve::ServeError::Sim {
                err: ssdlab_core::SimError::Io { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("writing the results into"), "{err}");
    assert!(!err.contains("internal error"), "{err}");
    // Once the disk is writable again, the same run writes its results.
    std::fs::remove_dir(out.join(".results.json.tmp")).unwrap();
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let opts = options(&dir);
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 1, 0, 0, &[]).0, 0);
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    server.join().unwrap().expect("serve");
    assert_eq!(json(&out.join("results.json"))["status"], "completed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--max-stored-bytes`: writes that would take the stored bytes past the cap get ENOSPC,
/// the stored bytes pass it by no more than the blocks being filled, reads and trims go on.
#[test]
fn writes_past_the_stored_bytes_cap_get_enospc() {
    let dir = scratch("cap");
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let mut opts = options(&dir);
    let max = 4 << 20;
    opts.max_stored_bytes = Some(max);
    let sock = opts.socket.clone().unwrap();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    let (mut ok, mut nospace) = (0u64, 0u64);
    for u in 0..2048u64 {
        match call(
            &mut s,
            NBD_CMD_WRITE,
            0,
            u,
            (u % 2048) * 4096,
            4096,
            &[u as u8; 4096],
        )
        .0
        {
            0 => ok += 1,
            NBD_ENOSPC => nospace += 1,
            e => panic!("errno {e}"),
        }
    }
    assert!(
        ok >= 100 && nospace >= 100,
        "{ok} written, {nospace} refused"
    );
    assert!(call(&mut s, NBD_CMD_READ, 0, 5000, 0, 4096, &[]).1 == [0u8; 4096]);
    assert_eq!(call(&mut s, NBD_CMD_TRIM, 0, 5001, 0, 1 << 20, &[]).0, 0);
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let summary = server.join().unwrap().expect("serve");
    // Past the cap by at most the blocks being filled: a host and a GC block per plane.
    let open = 2 * 4 * (16 * 16384);
    assert!(
        summary.stored_data_bytes <= max + open,
        "{} stored",
        summary.stored_data_bytes
    );
    let c = &summary.all_cycles.commands;
    assert_eq!((c.errors_by_cause.no_space, c.errors), (nospace, nospace));
    assert_eq!(summary.max_stored_bytes, Some(max));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A device that failed (worn out) is read-only: writes, trims and — without power-loss
/// protection — flushes are answered `EIO` (counted as `worn_out`), never acknowledged
/// and dropped; reads still answer with what it kept.
#[test]
fn a_worn_out_device_refuses_what_it_cannot_keep() {
    for plp in [false, true] {
        let dir = scratch(if plp { "worn-plp" } else { "worn" });
        let mut cfg = Config::from_toml_str(DEVICE, "device").unwrap();
        cfg.device.timing.tlc.endurance_pe_cycles = 3;
        cfg.device.cell_mode = ssdlab_core::config::CellMode::Tlc;
        cfg.ftl.power_loss_protection = plp;
        let opts = options(&dir);
        let (sock, out) = (opts.socket.clone().unwrap(), opts.out_dir.clone());
        let server = std::thread::spawn(move || serve(cfg, opts));
        let mut s = connect_go(&sock);
        assert_eq!(call(&mut s, NBD_CMD_WRITE, 0, 1, 0, 4096, &[7; 4096]).0, 0);
        assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 2, 0, 0, &[]).0, 0);
        // Rewrite the rest of the device until a write is refused: it has failed.
        let units = 4u64 * 24 * 16 * 4 * 2 / 3; // well within its logical capacity
        let mut refused = None;
        'outer: for pass in 0..200u64 {
            for u in 1..units {
                let cookie = 10 + pass * units + u;
                let e = call(&mut s, NBD_CMD_WRITE, 0, cookie, u * 4096, 4096, &[1; 4096]).0;
                if e != 0 {
                    refused = Some(e);
                    break 'outer;
                }
            }
        }
        assert_eq!(refused, Some(NBD_EIO), "plp {plp}: never refused");
        assert_eq!(call(&mut s, NBD_CMD_TRIM, 0, 3, 0, 4096, &[]).0, NBD_EIO);
        let flush = call(&mut s, NBD_CMD_FLUSH, 0, 4, 0, 0, &[]).0;
        assert_eq!(flush, if plp { 0 } else { NBD_EIO }, "plp {plp}");
        assert_eq!(call(&mut s, NBD_CMD_READ, 0, 5, 0, 4096, &[]).1, [7; 4096]);
        send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
        server.join().unwrap().expect("serve");
        let doc = json(&out.join("results.json"));
        let c = &doc["serve"]["this_cycle"]["commands"];
        assert_eq!(doc["status"], "worn_out", "plp {plp}");
        let want = if plp { 2 } else { 3 };
        assert_eq!(c["errors_by_cause"]["worn_out"], want, "plp {plp}: {c:#}");
        assert_conserved(c);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A spinning grace wait (`grace_spin`) changes how the loop waits, not when requests
/// arrive: the same client (exact virtual time, writes at queue depth 2, then reads one at
/// a time) gives the device the same requests at the same simulated times, so the same
/// results, spinning or not; and the bytes read back are the bytes written.
#[test]
fn a_spinning_grace_wait_gives_the_same_device_results() {
    let run = |spin_us: u64| {
        let dir = scratch(&format!("spin-{spin_us}"));
        let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
        let mut opts = options(&dir);
        opts.grace = Duration::from_millis(300);
        opts.grace_spin = Duration::from_micros(spin_us);
        let sock = opts.socket.clone().unwrap();
        let out = opts.out_dir.clone();
        let server = std::thread::spawn(move || serve(cfg, opts));
        let mut s = connect_go(&sock);
        // Writes at queue depth 2 (a new one sent for each reply: the loop waits for it),
        // then each read back alone.
        let off = |i: u64| (i * 7 % 64) * 4096;
        let write = |i: u64, b: &mut Vec<u8>| {
            b.extend_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
            b.extend_from_slice(&0u16.to_be_bytes());
            b.extend_from_slice(&NBD_CMD_WRITE.to_be_bytes());
            b.extend_from_slice(&i.to_be_bytes());
            b.extend_from_slice(&off(i).to_be_bytes());
            b.extend_from_slice(&4096u32.to_be_bytes());
            b.extend_from_slice(&[i as u8; 4096]);
        };
        // The first two in one `write`: they arrive together (a request arrives when it
        // is read).
        let mut b = Vec::new();
        write(0, &mut b);
        write(1, &mut b);
        s.write_all(&b).unwrap();
        assert_eq!(reply(&mut s).0, 0);
        let mut answered = 1;
        for i in 2..64u64 {
            b.clear();
            write(i, &mut b);
            s.write_all(&b).unwrap();
            assert_eq!(reply(&mut s).0, 0);
            answered += 1;
        }
        assert_eq!(reply(&mut s).0, 0);
        assert_eq!(answered + 1, 64);
        for i in 0..64u64 {
            let back = call(&mut s, NBD_CMD_READ, 0, 1000 + i, off(i), 4096, &[]).1;
            assert_eq!(back, [i as u8; 4096]);
        }
        send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
        let summary = server.join().unwrap().expect("serve");
        let doc = json(&out.join("results.json"));
        let _ = std::fs::remove_dir_all(&dir);
        (summary, doc)
    };
    let (quiet, a) = run(0);
    let (spun, b) = run(1000);
    // One wait runs out, at the writes' end: the client sends nothing more until both its
    // last writes are answered. (The grace is far longer than a client's answer otherwise.)
    assert_eq!(quiet.this_cycle.grace_timeouts, 1);
    assert_eq!(spun.this_cycle.grace_timeouts, 1);
    assert_eq!(quiet.this_cycle.commands.ok, 128);
    assert_eq!(spun.this_cycle.commands.ok, 128);
    // The writes at queue depth 2 waited for their client (how often depends on whether
    // its request was already there when the loop looked: wall time, not the device's).
    assert!(quiet.this_cycle.grace_waits > 0 && spun.this_cycle.grace_waits > 0);
    assert!(a["host"]["sim_time_ns"].as_u64().unwrap() > 0);
    for k in ["host", "nand", "waf"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!(quiet.mean_queue_depth, spun.mean_queue_depth);
}
