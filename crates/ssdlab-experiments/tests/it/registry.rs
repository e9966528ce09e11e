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
    assert_eq!(
        names,
        ["op", "ssr", "wl", "dftl", "slc", "mq", "zns", "fdp", "retry"]
    );
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

/// An eighth experiment is one `impl Experiment`: through the blanket registration it has
/// a subcommand with the shared flags, its output files (the JSON the marker, first among
/// the managed names), its report with the shape section and a Python table.
mod toy {
    use super::*;
    use ssdlab_experiments::experiment::{Common, Experiment, PlotResult, Registered, Say};
    use ssdlab_experiments::{ExperimentError, Result};

    pub struct Toy;

    #[derive(clap::Args)]
    pub struct ToyArgs {
        /// Divide the points by this.
        #[arg(long, default_value_t = 1)]
        scale: u32,
    }

    #[derive(serde::Serialize)]
    pub struct ToyReport {
        points: Vec<u32>,
    }

    impl Experiment for Toy {
        const NAME: &'static str = "toy";
        const ABOUT: &'static str = "A toy: squares";
        type Args = ToyArgs;
        type Params = u32;
        type Report = ToyReport;

        fn params(a: &ToyArgs, _: &Common) -> Result<u32> {
            match 8u32.checked_div(a.scale) {
                Some(n) if n > 0 => Ok(n),
                _ => Err(ExperimentError::invalid(
                    "scale",
                    format!("{}: 1..=8", a.scale),
                )),
            }
        }
        fn banner(n: &u32, threads: usize) -> String {
            format!("reproduce toy: {n} points on {threads} threads")
        }
        fn run(n: &u32, say: &dyn Say) -> Result<ToyReport> {
            say.progress("  done");
            Ok(ToyReport {
                points: (0..*n).map(|i| i * i).collect(),
            })
        }
        fn csv(r: &ToyReport) -> String {
            r.points.iter().map(|p| format!("{p}\n")).collect()
        }
        fn checks(r: &ToyReport) -> Vec<Check> {
            vec![Check::new(
                "",
                "squares grow",
                Some(r.points.windows(2).all(|w| w[0] < w[1])),
                format!("{} points", r.points.len()),
            )]
        }
        fn markdown(r: &ToyReport, _: &u32, _: f64) -> String {
            let shape = Shape {
                title: "toy",
                group: None,
            };
            format!("# Toy\n{}", shape_section(shape, &Self::checks(r), 1, 0.0))
        }
        fn plot(_: &ToyReport, svg: &mut String) -> PlotResult {
            use plotters::prelude::*;
            let root = SVGBackend::with_string(svg, (100, 100)).into_drawing_area();
            root.fill(&WHITE)?;
            root.present()?;
            Ok(())
        }
    }

    #[test]
    fn an_eighth_experiment_is_one_impl() {
        let e: &dyn Registered = &Toy;
        let m = e
            .command()
            .try_get_matches_from(["toy", "--scale", "2", "--seed", "3", "-q"])
            .unwrap();
        let prepared = e.prepare(&m).unwrap();
        assert_eq!(
            prepared.files(),
            ["toy.json", "toy.md", "toy.csv", "toy.svg"]
        );
        assert_eq!(prepared.banner(2), "reproduce toy: 4 points on 2 threads");
        let done = prepared.run(&experiment::Silent).unwrap();
        assert_eq!(done.checks()[0].holds, Some(true));
        let out = done.outputs().unwrap();
        let names: Vec<&str> = out.files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["toy.md", "toy.csv", "toy.json", "toy.svg"]);
        assert_eq!(out.files[1].1, "0\n1\n4\n9\n");
        assert_eq!(
            out.files[2].1,
            "{\n  \"points\": [\n    0,\n    1,\n    4,\n    9\n  ]\n}\n"
        );
        assert!(out.files[3].1.starts_with("<svg"));
        assert!(out.markdown.contains("| squares grow | yes | 4 points |"));
        let table = e
            .table(&experiment::TableOptions {
                scale: 4.0,
                requests: Some(7), // no requests flag: ignored
                ..Default::default()
            })
            .unwrap();
        assert_eq!(table, "0\n1\n");
        let m = e
            .command()
            .try_get_matches_from(["toy", "--scale", "9"])
            .unwrap();
        let err = e.prepare(&m).err().unwrap().to_string();
        assert_eq!(err, "scale: 9: 1..=8");
    }
}
