//! `ssdlab serve` with flash that errs (`[device.reliability]`, docs/reliability.md): a read
//! no retry step corrects is an `EIO` of cause `device`, counted in `reliability`; data the
//! write buffer still holds reads back intact.

mod common;

use common::*;
use ssdlab_core::Config;
use ssdlab_serve::nbd::proto::*;
use ssdlab_serve::serve;
use std::time::Duration;

#[test]
fn an_uncorrectable_read_is_eio_and_other_data_is_intact() {
    let dir = scratch("uncorrectable");
    let mut cfg = Config::from_toml_str(DEVICE, "retry").unwrap();
    // A constant RBER of 0.1 against 72 bits per 1 KiB codeword, one retry step and no
    // soft decoder: every NAND read is uncorrectable (P(X ≤ 72 | λ ≈ 600) < 1e-9).
    let r = &mut cfg.device.reliability;
    r.retry_steps = 1;
    r.soft_correctable_bits_per_codeword = 0;
    for m in [
        &mut r.rber.slc,
        &mut r.rber.mlc,
        &mut r.rber.tlc,
        &mut r.rber.qlc,
    ] {
        m.base_rber = 0.1;
    }
    let opts = options(&dir);
    let sock = opts.socket.clone().unwrap();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let a = vec![0xa5u8; 16384];
    assert_eq!(call(&mut s, NBD_CMD_WRITE, 0, 1, 0, 16384, &a).0, 0);
    assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 2, 0, 0, &[]).0, 0);
    // On flash now: the read fails.
    let (errno, data) = call(&mut s, NBD_CMD_READ, 0, 3, 0, 4096, &[]);
    assert_eq!((errno, data.len()), (NBD_EIO, 0));
    // Still in the write buffer: read back as written.
    let b = vec![0x5au8; 4096];
    assert_eq!(call(&mut s, NBD_CMD_WRITE, 0, 4, 65536, 4096, &b).0, 0);
    assert_eq!(call(&mut s, NBD_CMD_READ, 0, 5, 65536, 4096, &[]), (0, b));
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let summary = server.join().unwrap().expect("serve");
    let c = &summary.all_cycles.commands;
    assert_eq!((c.ok, c.errors), (4, 1));
    let doc = json(&dir.join("out/results.json"));
    let x = &doc["reliability"];
    assert_eq!(x["uncorrectable_host_reads"], 1, "{x:#}");
    assert_eq!(doc["host"]["failed_requests"], 1, "{:#}", doc["host"]);
    assert_conserved(&doc["serve"]["all_cycles"]["commands"]);
    assert_ne!(
        doc["audit"]["verdict"], "internal_error",
        "{:#}",
        doc["audit"]
    );
}
