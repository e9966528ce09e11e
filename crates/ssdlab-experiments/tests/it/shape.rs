//! Every expected-shape check of every `reproduce` experiment is decided by the rows it
//! reads: for each, a change of the rows makes it hold and another makes it fail. A check
//! that cannot fail is a defect (one compared two identical runs).

/// A change of a report, named for the message.
pub type Change<R> = Box<dyn Fn(&mut R)>;

/// For each `(check, good, bad)`: `holds(good(report), check) == Some(true)` and
/// `holds(bad(report), check) == Some(false)`; `checks` is the number of checks the report
/// has, which the cases must cover.
pub fn assert_each_can_hold_and_fail<R: Clone>(
    report: &R,
    checks: usize,
    holds: impl Fn(&R, &str) -> Option<bool>,
    cases: Vec<(String, Change<R>, Change<R>)>,
) {
    assert_eq!(cases.len(), checks, "every check has its case");
    for (check, good, bad) in &cases {
        for (change, want) in [(good, true), (bad, false)] {
            let mut r = report.clone();
            change(&mut r);
            assert_eq!(holds(&r, check), Some(want), "{check}: should be {want}");
        }
    }
}
