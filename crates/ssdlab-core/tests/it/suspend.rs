//! Erase suspension in the timed engine, hand-checked (spec 01, docs/erase-suspend.md).
//!
//! One die, one plane. Writes fill the device until GC erases a block that holds no valid
//! data (so GC issues only the erase). Reads of other units arrive while the erase runs;
//! every completion time below is derived by hand from C (command), L (erase loop), P
//! (suspend penalty), R (one 4 KiB read: C + tR + transfer) and H (its data crossing the
//! host data path after the die is done).

use crate::common;

use common::{flush, open, req};
use ssdlab_core::config::{Mode, SuspendConfig};
use ssdlab_core::policy::suspend::{ies, ssr_dynamic, ssr_static, Guard, Preempt};
use ssdlab_core::stats::EraseRecord;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::{HostOp, HostRequest};

const C: u64 = 1000;
const L: u64 = 5_000_000;
const P: u64 = 100_000;
const R: u64 = C + 40_000 + 5120;
/// 4 KiB over the host data path (`device.host_transfer_mb_per_s` = 7877).
const H: u64 = 520;

fn config(policy: &str) -> Config {
    let mut c = common::tiny(1, 8, 4, 1, 1.0);
    c.mode = Mode::Timed;
    c.scheduler.erase_suspend = SuspendConfig::by_name(policy).unwrap();
    assert_eq!(
        (
            c.device.timing.tlc.erase_loop_ns,
            c.device.timing.tlc.erase_loops.clone(),
            c.device.timing.tlc.erase_suspend_penalty_ns
        ),
        (L, vec![(0, 5)], P)
    );
    c
}

/// The fill that makes GC erase a block without valid data.
fn prep() -> Vec<HostRequest> {
    vec![
        req(HostOp::Write, 0, 16),
        flush(),
        req(HostOp::Write, 0, 4),
        flush(),
        req(HostOp::Write, 4, 4),
        flush(),
        req(HostOp::Write, 8, 4),
        flush(),
    ]
}

fn read_at(unit: u64, at_ns: u64) -> HostRequest {
    let mut r = req(HostOp::Read, unit, 1);
    r.arrival_ns = at_ns;
    r
}

struct Run {
    /// (arrival, completion) of the reads, in arrival order.
    reads: Vec<(u64, u64)>,
    erase: EraseRecord,
    results: ssdlab_core::Results,
}

fn run(c: Config, reads: &[(u64, u64)]) -> Run {
    let mut s = Simulation::new(c).unwrap();
    s.trace_completions = true;
    let mut w = prep();
    w.extend(reads.iter().map(|&(u, t)| read_at(u, t)));
    let results = s.run_workload_with(open(w), &mut NoProgress).unwrap();
    let mut rd: Vec<(u64, u64)> = s
        .completions
        .iter()
        .filter(|c| c.op == HostOp::Read)
        .map(|c| (c.submit_ns, c.complete_ns))
        .collect();
    rd.sort_unstable();
    Run {
        reads: rd,
        erase: s.erase_trace.first().expect("GC erased a block").clone(),
        results,
    }
}

/// Start of the first erase (the same for every policy: nothing differs before the reads).
fn erase_start() -> u64 {
    let r = run(config("none"), &[]);
    assert_eq!(
        (
            r.erase.loops,
            r.erase.suspensions,
            r.erase.end_ns - r.erase.start_ns
        ),
        (5, 0, C + 5 * L)
    );
    r.erase.start_ns
}

/// The erase took its loops plus the penalties it paid, and nothing finished early or late.
fn check_exec(e: &EraseRecord) {
    assert_eq!(
        e.exec_ns,
        e.command_ns + e.loops as u64 * e.loop_ns + e.penalties_ns,
        "{e:?}"
    );
}

#[test]
fn one_read_mid_loop_under_each_policy() {
    let t0 = erase_start();
    let w0 = t0 + C; // array work starts
    let ta = w0 + 2 * L + 1_650_000; // position 2.33 L: inside the third loop
    let end = w0 + 5 * L;
    // (policy, suspension time, suspensions in loop 3 (index 2), erase end)
    let cases = [
        ("none", None, end + R),
        ("ies", Some(ta), end + P + R),
        ("des", Some(w0 + 3 * L), end + P + R),
        ("ssr-static", Some(w0 + 2 * L + 2_000_000), end + P + R),
        // 30 safe points per loop at low P/E: the 10th of the loop, at floor(10 L / 30).
        ("ssr-dynamic", Some(w0 + 2 * L + 1_666_666), end + P + R),
    ];
    for (policy, suspend_at, erase_end_or_read) in cases {
        let r = run(config(policy), &[(15, ta)]);
        assert_eq!(r.erase.start_ns, t0, "{policy:?}");
        check_exec(&r.erase);
        let s = r.results.suspend.as_ref().unwrap();
        match suspend_at {
            None => {
                assert_eq!(
                    r.reads,
                    vec![(ta, end + R + H)],
                    "none: the read waits for the whole erase"
                );
                assert_eq!(r.erase.end_ns, end);
                assert_eq!(s.erase_read_delay_max_ns, end - ta);
            }
            Some(ts) => {
                assert_eq!(r.reads, vec![(ta, ts + P + R + H)], "{policy:?}");
                assert_eq!(
                    r.erase.end_ns, erase_end_or_read,
                    "{policy:?}: the remaining work resumes exactly"
                );
                assert_eq!(
                    (r.erase.suspensions, r.erase.penalties_ns),
                    (1, P),
                    "{policy:?}"
                );
                // D-ES suspends at the end of loop 3, which counts for loop 3.
                assert_eq!(
                    r.erase.suspensions_per_loop,
                    vec![0, 0, 1, 0, 0],
                    "{policy:?}"
                );
                assert_eq!(s.erase_read_delay_max_ns, ts + P - ta, "{policy:?}");
                assert_eq!(
                    (
                        s.erase_suspensions,
                        s.erases_exceeding_safe_limit,
                        s.max_suspensions_per_loop
                    ),
                    (1, 0, 1)
                );
            }
        }
    }
}

/// A second read arrives while the first is served in the suspension: I-ES serves it in the
/// same suspension; D-ES and SSR serve only the reads queued at the suspension, so the
/// second read waits for the next safe point (SSR(s): 0.1 L later).
#[test]
fn read_arriving_during_suspension() {
    let t0 = erase_start();
    let w0 = t0 + C;
    let ta = w0 + 2 * L + 1_650_000;
    let end = w0 + 5 * L;
    // I-ES
    let r = run(config("ies"), &[(15, ta), (14, ta + P + 10_000)]);
    assert_eq!(
        r.reads,
        vec![(ta, ta + P + R + H), (ta + P + 10_000, ta + P + 2 * R + H)]
    );
    assert_eq!((r.erase.suspensions, r.erase.end_ns), (1, end + P + 2 * R));
    check_exec(&r.erase);
    // SSR(s)
    let t1 = w0 + 2 * L + 2_000_000;
    let r = run(config("ssr-static"), &[(15, ta), (14, t1 + P + 10_000)]);
    let resume = t1 + P + R;
    let t2 = resume + L / 10;
    assert_eq!(
        r.reads,
        vec![(ta, t1 + P + R + H), (t1 + P + 10_000, t2 + P + R + H)]
    );
    assert_eq!(
        (r.erase.suspensions, r.erase.end_ns),
        (2, end + 2 * (P + R))
    );
    assert_eq!(r.erase.suspensions_per_loop, vec![0, 0, 2, 0, 0]);
    check_exec(&r.erase);
    // D-ES: the second suspension is at the end of the fourth loop.
    let t1 = w0 + 3 * L;
    let r = run(config("des"), &[(15, ta), (14, t1 + P + 10_000)]);
    let resume = t1 + P + R;
    let t2 = resume + L;
    assert_eq!(
        r.reads,
        vec![(ta, t1 + P + R + H), (t1 + P + 10_000, t2 + P + R + H)]
    );
    assert_eq!(r.erase.suspensions_per_loop, vec![0, 0, 1, 1, 0]);
    check_exec(&r.erase);
}

/// The resume penalty (re-ramp) delays the rest of the erase, not the read.
#[test]
fn resume_penalty_is_charged_on_resume() {
    let t0 = erase_start();
    let w0 = t0 + C;
    let ta = w0 + 2 * L + 1_650_000;
    let mut c = config("ssr-static");
    c.device.timing.tlc.resume_penalty_ns = 20_000;
    let r = run(c, &[(15, ta)]);
    let t1 = w0 + 2 * L + 2_000_000;
    assert_eq!(r.reads, vec![(ta, t1 + P + R + H)]);
    assert_eq!(
        (r.erase.end_ns, r.erase.penalties_ns),
        (w0 + 5 * L + P + R + 20_000, P + 20_000)
    );
    check_exec(&r.erase);
}

/// In the last loop D-ES has no loop boundary left: the read waits for the erase.
#[test]
fn des_never_suspends_in_the_last_loop() {
    let t0 = erase_start();
    let w0 = t0 + C;
    let ta = w0 + 4 * L + 1_000;
    let r = run(config("des"), &[(15, ta)]);
    assert_eq!(r.reads, vec![(ta, w0 + 5 * L + R + H)]);
    assert_eq!(r.erase.suspensions, 0);
}

/// The starvation guard stops suspending after `max_suspensions_per_erase`.
#[test]
fn starvation_guard_limits_suspensions() {
    let t0 = erase_start();
    let w0 = t0 + C;
    let mut c = config("ssr-static");
    c.scheduler.erase_suspend = SuspendConfig::SsrStatic(ssr_static::Params {
        guard: Guard {
            max_suspensions_per_erase: 1,
            ..Default::default()
        },
        ..Default::default()
    });
    let ta = w0 + L / 2 + 1;
    let r = run(c, &[(15, ta), (14, w0 + 3 * L)]);
    let t1 = w0 + L / 2 + L / 10;
    assert_eq!(
        r.reads,
        vec![
            (ta, t1 + P + R + H),
            (w0 + 3 * L, w0 + 5 * L + P + R + R + H)
        ]
    );
    assert_eq!(r.erase.suspensions, 1);
}

#[test]
fn bad_suspend_config_is_an_error() {
    let mut c = config("ssr-dynamic");
    c.scheduler.erase_suspend = SuspendConfig::SsrDynamic(ssr_dynamic::Params {
        safe_points: vec![(10, 30)],
        ..Default::default()
    });
    let e = Simulation::new(c).err().unwrap().to_string();
    assert!(e.starts_with("scheduler.erase_suspend.safe_points"), "{e}");
    let mut c = config("ssr-static");
    c.scheduler.erase_suspend = SuspendConfig::SsrStatic(ssr_static::Params {
        points_per_loop: 0,
        ..Default::default()
    });
    let e = Simulation::new(c).err().unwrap().to_string();
    assert!(
        e.starts_with("scheduler.erase_suspend.points_per_loop"),
        "{e}"
    );
    let text = "[scheduler]\nerase_suspend = { policy = \"ssr-static\", points_per_loopz = 3 }\n";
    assert!(
        Config::from_toml_str(text, "x.toml").is_err(),
        "unknown keys are errors"
    );
    let text = "[scheduler]\nerase_suspend = { policy = \"sometimes\" }\n";
    assert!(Config::from_toml_str(text, "x.toml").is_err());
    let text = "[scheduler]\nerase_suspend = { policy = \"des\", points_per_loop = 3 }\n";
    assert!(
        Config::from_toml_str(text, "x.toml").is_err(),
        "a parameter of another policy is an error"
    );
}

/// The erase-suspend keys that moved into the policy's table are refused with file, line
/// and the key to write instead.
#[test]
fn moved_suspend_keys_name_the_new_key() {
    let cases = [
        (
            "[scheduler]\nerase_suspend = \"des\"\n",
            "x.toml:2: scheduler.erase_suspend: a policy is now a table with its parameters: write erase_suspend = { policy = \"des\" }",
        ),
        (
            "[scheduler]\nerase_suspend = { policy = \"ssr-static\" }\nsafe_points_per_loop = 4\n",
            "x.toml:3: scheduler.safe_points_per_loop: moved into the erase-suspend policy's table: write scheduler.erase_suspend.points_per_loop, e.g. erase_suspend = { policy = \"ssr-static\", points_per_loop = 4 }",
        ),
        (
            "seed = 3\n[scheduler]\nssr_dynamic_safe_points = [[0, 5]]\n",
            "x.toml:3: scheduler.ssr_dynamic_safe_points: moved into the erase-suspend policy's table: write scheduler.erase_suspend.safe_points, e.g. erase_suspend = { policy = \"ssr-dynamic\", safe_points = [[0, 5]] }",
        ),
        (
            "[scheduler]\nerase_suspend = { policy = \"des\" }\nmax_suspensions_per_erase = 2\n",
            "x.toml:3: scheduler.max_suspensions_per_erase: moved into the erase-suspend policy's table: write scheduler.erase_suspend.max_suspensions_per_erase, e.g. erase_suspend = { policy = \"des\", max_suspensions_per_erase = 2 }",
        ),
        (
            "[scheduler]\nmax_erase_postponement_ns = 9\n",
            "x.toml:2: scheduler.max_erase_postponement_ns: moved into the erase-suspend policy's table: write scheduler.erase_suspend.max_erase_postponement_ns",
        ),
    ];
    for (text, want) in cases {
        let e = Config::from_toml_str(text, "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}\nwant: {want}");
    }
}

/// `suspend_penalty_ns` split into an erase and a program penalty (issue 36): the old key
/// is refused with file, line and both new names; `programs_preempt` is a parameter of the
/// policies that suspend (not of `none`).
#[test]
fn split_suspend_penalty_key_names_both_new_keys() {
    let text = "seed = 1\n[device.timing.slc]\nread_ns = 1\nprogram_ns = 2\nerase_loop_ns = 3\nerase_loops = [[0, 1]]\nendurance_pe_cycles = 9\nsuspend_penalty_ns = 5000\n";
    let e = Config::from_toml_str(text, "x.toml")
        .unwrap_err()
        .to_string();
    let want = "x.toml:8: device.timing.slc.suspend_penalty_ns: split into erase_suspend_penalty_ns (suspending an erase) and program_suspend_penalty_ns (suspending a program): write both, e.g. erase_suspend_penalty_ns = 5000 and program_suspend_penalty_ns = 5000";
    assert!(e.contains(want), "{e}\nwant: {want}");
    // Not through the file reader (e.g. `--set` re-parsed): serde refuses it too.
    let e = toml::from_str::<Config>(text).unwrap_err().to_string();
    assert!(
        e.contains("suspend_penalty_ns: split into erase_suspend_penalty_ns"),
        "{e}"
    );
    // `config show` writes the two new keys (and never the old one); they read back.
    let mut c = config("none");
    c.device.timing.tlc.program_suspend_penalty_ns = 5000;
    let shown = c.to_toml_string();
    assert!(
        shown.contains("erase_suspend_penalty_ns = 100000")
            && shown.contains("program_suspend_penalty_ns = 5000")
            && !shown.contains("\nsuspend_penalty_ns"),
        "{shown}"
    );
    assert_eq!(Config::from_toml_str(&shown, "shown.toml").unwrap(), c);
    use ssdlab_core::config::SchedulerConfig;
    let sched = |t: &str| toml::from_str::<SchedulerConfig>(t);
    let e = sched("erase_suspend = { policy = \"none\", programs_preempt = true }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("programs_preempt"), "{e}");
    let c = sched("erase_suspend = { policy = \"ies\", programs_preempt = true }").unwrap();
    assert!(matches!(
        c.erase_suspend,
        SuspendConfig::Ies(ies::Params {
            preempt: Preempt {
                programs_preempt: true
            }
        })
    ));
}

/// Program suspend: a read waiting on a program runs at the next ISPP loop boundary, after
/// `program_suspend_penalty_ns`.
#[test]
fn program_suspend_at_loop_boundary() {
    let mut c = config("none");
    c.scheduler.program_suspend = true;
    // A program's suspension pays its own penalty, not the erase's P.
    let pp = 30_000;
    c.device.timing.tlc.program_suspend_penalty_ns = pp;
    let prog = c.device.timing.tlc.program_ns;
    let loops = c.device.timing.tlc.program_loops as u64;
    let mut s = Simulation::new(c).unwrap();
    s.trace_completions = true;
    // Unit 0 on flash, then a write whose program a read of unit 0 interrupts.
    s.run_workload_with(
        common::closed(vec![req(HostOp::Write, 0, 1), flush()], 1),
        &mut NoProgress,
    )
    .unwrap();
    let x = 5120; // one 4 KiB page over the channel
    let prog_start = C + x; // the flush programs the partial page at once
    let ta = prog_start + prog / loops + 7;
    let mut rd = read_at(0, ta);
    rd.arrival_ns = ta;
    let mut w = req(HostOp::Write, 1, 1);
    w.arrival_ns = 0;
    let r = s
        .run_workload_with(open(vec![w, flush(), rd]), &mut NoProgress)
        .unwrap();
    let read = s.completions.iter().find(|c| c.op == HostOp::Read).unwrap();
    let boundary = prog_start + 2 * prog / loops;
    assert_eq!(
        (read.submit_ns, read.complete_ns),
        (ta, boundary + pp + R + H)
    );
    assert_eq!(r.suspend.unwrap().program_suspensions, 1);
    let fl = s
        .completions
        .iter()
        .find(|c| c.op == HostOp::Flush)
        .unwrap();
    assert_eq!(
        fl.complete_ns,
        prog_start + prog + pp + R + 1000,
        "the program resumes after the read; + buffer_access_ns"
    );
}

/// `config show` output (`Config::to_toml_string`) reads back as the same configuration,
/// for every erase-suspend policy (with parameters off their defaults) and every bundled
/// configuration.
#[test]
fn suspend_tables_round_trip_through_toml() {
    let mut configs: Vec<Config> = SuspendConfig::NAMES.iter().map(|n| config(n)).collect();
    let mut c = config("ssr-dynamic");
    c.scheduler.erase_suspend = SuspendConfig::SsrDynamic(ssr_dynamic::Params {
        safe_points: vec![(0, 7), (50, 3)],
        guard: Guard {
            max_suspensions_per_erase: 4,
            max_erase_postponement_ns: 9_000,
        },
        preempt: Preempt {
            programs_preempt: true,
        },
    });
    configs.push(c);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    for e in std::fs::read_dir(dir).unwrap() {
        configs.push(Config::from_file(&e.unwrap().path()).unwrap());
    }
    for c in configs {
        let text = c.to_toml_string();
        let back = Config::from_toml_str(&text, "shown.toml").unwrap();
        assert_eq!(back, c, "{text}");
    }
}

/// The fill of [`prep`] with the last overwrite cut to two units: GC starts when the host
/// opens its last block but one, and erases a block without valid data while the host's
/// open block still has free pages (so host programs need not wait for the erase).
fn prep_room() -> Vec<HostRequest> {
    let mut w = prep();
    w[6] = req(HostOp::Write, 8, 2);
    w
}

/// Completions (op, arrival, completion) after the fill of [`prep_room`] followed by
/// `extra`, and the first erase.
fn run_extra(c: Config, extra: Vec<HostRequest>) -> (Vec<(HostOp, u64, u64)>, EraseRecord) {
    let mut s = Simulation::new(c).unwrap();
    s.trace_completions = true;
    let mut w = prep_room();
    w.extend(extra);
    s.run_workload_with(open(w), &mut NoProgress).unwrap();
    let done = s
        .completions
        .iter()
        .map(|c| (c.op, c.submit_ns, c.complete_ns))
        .collect();
    (
        done,
        s.erase_trace.first().expect("GC erased a block").clone(),
    )
}

fn preempting(policy: &str) -> Config {
    let mut c = config(policy);
    c.scheduler.erase_suspend = match c.scheduler.erase_suspend {
        SuspendConfig::Ies(mut p) => {
            p.preempt.programs_preempt = true;
            SuspendConfig::Ies(p)
        }
        SuspendConfig::Des(mut p) => {
            p.preempt.programs_preempt = true;
            SuspendConfig::Des(p)
        }
        SuspendConfig::SsrStatic(mut p) => {
            p.preempt.programs_preempt = true;
            SuspendConfig::SsrStatic(p)
        }
        SuspendConfig::SsrDynamic(mut p) => {
            p.preempt.programs_preempt = true;
            SuspendConfig::SsrDynamic(p)
        }
        other => other,
    };
    c
}

/// One host program on the die: command, one 4 KiB page over the channel, tPROG.
const PR: u64 = C + 5120 + 660_000;

fn write_flush_at(unit: u64, at_ns: u64) -> Vec<HostRequest> {
    let mut w = req(HostOp::Write, unit, 1);
    w.arrival_ns = at_ns;
    let mut f = flush();
    f.arrival_ns = at_ns;
    vec![w, f]
}

/// The flush's completion (the program it waited for + `buffer_access_ns`).
fn flush_done(done: &[(HostOp, u64, u64)], at_ns: u64) -> u64 {
    done.iter()
        .find(|d| d.0 == HostOp::Flush && d.1 == at_ns)
        .expect("the flush completed")
        .2
}

/// Spec 05's J2 mechanism (issue 36): with `programs_preempt` a host program waiting on a
/// die whose erase runs suspends the erase at the policy's position, as a read does; the
/// die pays the erase-suspend penalty, runs the program, and resumes the erase with exactly
/// its remaining work. Every time is derived by hand from C, L, P and PR (one program).
#[test]
fn programs_preempt_erases_at_the_policys_position() {
    // The fill: its last three programs are queued when the erase starts (at t0, work from
    // w0). Without preemption they wait for the whole erase; with it (SSR(s), 10 safe
    // points per loop) the first safe point, 0.1 L in, serves the two queued then, and the
    // next one the third (queued when the first two freed buffer space).
    let (done, e) = run_extra(config("ssr-static"), vec![]);
    let (t0, w0) = (e.start_ns, e.start_ns + C);
    assert_eq!((e.end_ns, e.suspensions), (w0 + 5 * L, 0));
    assert!(
        done.iter().all(|d| d.2 <= t0),
        "the fill's requests are done"
    );
    let (_, e) = run_extra(preempting("ssr-static"), vec![]);
    assert_eq!(e.start_ns, t0);
    let d = 2 * P + 3 * PR; // the fill's share of the erase's suspensions
    assert_eq!(
        (e.end_ns, e.suspensions, e.penalties_ns),
        (w0 + 5 * L + d, 2, 2 * P)
    );
    assert_eq!(e.suspensions_per_loop, vec![2, 0, 0, 0, 0]);
    check_exec(&e);

    // One more page, written and flushed at work position 2.33 L.
    let ta = w0 + d + 2 * L + 1_650_000;
    let end = w0 + d + 5 * L;
    // (policy, suspension time, the fill's suspensions, suspensions per loop)
    let cases = [
        // I-ES serves the third program of the fill in its first suspension (it arrives
        // during it), so its erase is one penalty P ahead at ta.
        ("ies", ta, 1, vec![1, 0, 1, 0, 0]),
        (
            "ssr-static",
            w0 + d + 2 * L + 2_000_000,
            2,
            vec![2, 0, 1, 0, 0],
        ),
        // D-ES: the fill's suspensions at the ends of loops 1 and 2; then the end of loop 3.
        ("des", w0 + d + 3 * L, 2, vec![1, 1, 1, 0, 0]),
    ];
    for (policy, ts, k, per_loop) in cases {
        let (done, e) = run_extra(preempting(policy), write_flush_at(15, ta));
        assert_eq!(e.start_ns, t0, "{policy}");
        assert_eq!(
            flush_done(&done, ta),
            ts + P + PR + 1000,
            "{policy}: the program runs at the suspension"
        );
        assert_eq!(
            (e.end_ns, e.suspensions, e.penalties_ns),
            (end - (2 - k) * P + P + PR, k as u32 + 1, (k + 1) * P),
            "{policy}: the erase resumes with exactly its remaining work"
        );
        assert_eq!(e.suspensions_per_loop, per_loop, "{policy}");
        check_exec(&e);
    }

    // Off (the default): the program waits for the erase's end.
    let (done, e) = run_extra(config("ssr-static"), write_flush_at(15, ta));
    assert_eq!(e.end_ns, w0 + 5 * L);
    assert!(flush_done(&done, ta) > e.end_ns);

    // The guard applies as for reads: after two suspensions the program waits.
    let mut c = preempting("ssr-static");
    if let SuspendConfig::SsrStatic(p) = &mut c.scheduler.erase_suspend {
        p.guard.max_suspensions_per_erase = 2;
    }
    let (done, e) = run_extra(c, write_flush_at(15, ta));
    assert_eq!((e.end_ns, e.suspensions), (end, 2));
    assert_eq!(flush_done(&done, ta), end + PR + 1000);
}

/// The erase's penalty is `erase_suspend_penalty_ns`, a program's
/// `program_suspend_penalty_ns`: each suspension pays its own.
#[test]
fn erase_and_program_suspensions_pay_their_own_penalty() {
    let (p_erase, p_prog) = (70_000, 30_000);
    let mut c = preempting("ies");
    c.device.timing.tlc.erase_suspend_penalty_ns = p_erase;
    c.device.timing.tlc.program_suspend_penalty_ns = p_prog;
    let (_, e) = run_extra(c, vec![]);
    let d = p_erase + 3 * PR; // one suspension (I-ES), three programs
    assert_eq!(e.penalties_ns, p_erase);
    assert_eq!(e.end_ns, e.start_ns + C + 5 * L + d);
    check_exec(&e);
}
