//! `reproduce slc` (spec 05): J2, the journal's write latency (issue 36, item 2).

use ssdlab_experiments::slc::{self, SlcParams};

/// J2: with programs preempting erases (the preset's `programs_preempt = true`) a journal
/// page no longer waits for a whole 2 ms SLC erase of the journal region, so slc-journal's
/// journal write latency is below the baseline's, mean and p99 (data mode, the shortest
/// fsync interval, the smallest scale: 2 planes). Without it (the same SSR(s) policy, reads
/// only) the p99 is above the baseline's (+39 %: an erase before the program). Ordered
/// mode's p99 at this scale is set by other waits (+10 % with and without; see
/// docs/slc-journal.md).
#[test]
fn journal_writes_are_faster_than_the_baselines_mean_and_p99() {
    let params = |sets: Vec<String>| SlcParams {
        scale: 16,
        fsync_every: vec![2],
        filebench_requests: 200,
        seed: None,
        sets,
    };
    let on = slc::run(&params(Vec::new()), &|_| {}).unwrap();
    let off = slc::run(
        &params(vec![
            "scheduler.erase_suspend={ policy = \"ssr-static\", points_per_loop = 10 }".into(),
        ]),
        &|_| {},
    )
    .unwrap();
    let (mean, p99) = on.latency_change_pct("data", 2).unwrap();
    assert!(mean < 0.0 && p99 < 0.0, "{mean:+.0} % / {p99:+.0} %");
    let (_, p99_off) = off.latency_change_pct("data", 2).unwrap();
    assert!(p99_off > 0.0, "without preemption: p99 {p99_off:+.0} %");
}
