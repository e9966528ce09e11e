//! Power cuts asked for (SIGUSR1) before the server made the last one are queued, each
//! made in turn: none is dropped, not even one asked while a recovery runs. (Its own test
//! binary: the requests are process-wide.)

mod common;

use common::*;
use ssdlab_core::Config;
use ssdlab_serve::nbd::proto::*;
use ssdlab_serve::{request_power_cut, serve};
use std::time::{Duration, Instant};

#[test]
fn power_cuts_asked_before_the_last_one_is_made_are_all_made() {
    let dir = scratch("queue");
    let cfg = Config::from_toml_str(DEVICE, "device").unwrap();
    let opts = options(&dir);
    let sock = opts.socket.clone().unwrap();
    let out = opts.out_dir.clone();
    let server = std::thread::spawn(move || serve(cfg, opts));
    let mut s = connect_go(&sock);
    assert_eq!(call(&mut s, NBD_CMD_WRITE, 0, 1, 0, 4096, &[3; 4096]).0, 0);
    assert_eq!(call(&mut s, NBD_CMD_FLUSH, 0, 2, 0, 0, &[]).0, 0);
    // Two cuts asked at once (as two SIGUSR1 in a row): the second is asked before the
    // first is made, and made after its recovery.
    request_power_cut();
    request_power_cut();
    let t0 = Instant::now();
    while !out.join("power-cycle-2/results.json").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the second power cut was dropped"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut t = connect_go(&sock);
    assert!(call(&mut t, NBD_CMD_READ, 0, 1, 0, 4096, &[]).1 == [3; 4096]);
    send(&mut s, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    send(&mut t, NBD_CMD_DISC, 0, 0, 0, 0, &[]);
    let summary = server.join().unwrap().expect("serve");
    assert_eq!(summary.power_cycle, 3);
    assert_eq!(summary.recoveries.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
