//! The experiments' registration: one line each in `experiment::ALL` gives a subcommand,
//! doc tables and a Python name; the paper experiments run the policies their papers name.

use ssdlab_experiments::experiment::{self, shape_section, Check, Shape};
use std::collections::BTreeSet;

/// Every registered experiment has a unique name, a well-formed subcommand (its own flags
/// and the shared ones without a clash: clap's debug checks) with its help, and doc tables
/// with unique names.
#[test]
fn every_experiment_is_registered_once_with_a_sound_subcommand() {
    let names = experiment::names();
    assert_eq!(names, ["op", "ssr", "wl", "dftl", "slc", "mq", "zns"]);
    let mut tables = BTreeSet::new();
    for e in experiment::ALL {
        let mut cmd = e.command();
        cmd.build();
        cmd.clone().debug_assert();
        assert_eq!(cmd.get_name(), e.name());
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        assert_eq!(about, e.about(), "{}", e.name());
        for flag in ["out", "jobs", "seed", "quiet", "set", "scale"] {
            assert!(
                cmd.get_arguments().any(|a| a.get_long() == Some(flag)),
                "{}: --{flag}",
                e.name()
            );
        }
        for t in e.doc_tables() {
            assert!(tables.insert(t.name), "doc table {} twice", t.name);
        }
        assert!(experiment::find(e.name()).is_some());
    }
    assert!(experiment::find("nope").is_none());
}

/// A flag the experiment refuses is an error naming it, before any run (through the
/// registration, as the CLI and Python reach it).
#[test]
fn a_bad_flag_is_refused_through_the_registration() {
    let mq = experiment::find("mq").unwrap();
    let m = mq
        .command()
        .try_get_matches_from(["mq", "--duration-ms", "0"])
        .unwrap();
    let err = mq.prepare(&m).err().expect("refused").to_string();
    assert!(err.starts_with("--duration-ms: 0: "), "{err}");
    let o = experiment::TableOptions {
        scale: 3.0,
        ..Default::default()
    };
    let err = mq.table(&o).unwrap_err().to_string();
    assert!(err.starts_with("scale: 3: "), "{err}");
    let o = experiment::TableOptions {
        scale: 2.5,
        ..Default::default()
    };
    let err = mq.table(&o).unwrap_err().to_string();
    assert!(err.contains("'--scale <SCALE>'"), "{err}");
}

/// The shape section: a group column only where the experiment has groups, each check's
/// verdict as yes / no / not run.
#[test]
fn the_shape_section_shows_each_check() {
    let checks = [
        Check::new("GC", "a holds", Some(true), "1 > 0"),
        Check::new("GC", "b fails", Some(false), "0 > 1; why"),
        Check::missing("no GC", "c"),
    ];
    let grouped = shape_section(
        Shape {
            title: "T",
            group: Some("device state"),
        },
        &checks,
        3,
        1.25,
    );
    assert_eq!(
        grouped,
        "\n## Expected shape (T)\n\n| device state | check | holds | numbers |\n|---|---|---|---|\n| GC | a holds | yes | 1 > 0 |\n| GC | b fails | no | 0 > 1; why |\n| no GC | c | not run | not run |\n\nRuns: 3 in 1.2 s wall.\n"
    );
    let plain = shape_section(
        Shape {
            title: "T",
            group: None,
        },
        &checks[..1],
        1,
        0.0,
    );
    assert!(
        plain.contains("| check | holds | numbers |\n|---|---|---|\n| a holds | yes | 1 > 0 |\n")
    );
}
