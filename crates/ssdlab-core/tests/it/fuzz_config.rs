//! Configuration parser fuzzing (issue 13, item 17): mutated presets through TOML parsing
//! and validation must give a configuration or an error naming a key — never a panic.
//! `SSDLAB_FUZZ_CASES` sets the case count (default 2000; the note reports 10^6).

use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use ssdlab_core::Config;

const PRESETS: [&str; 4] = [
    include_str!("../../../../configs/default.toml"),
    include_str!("../../../../configs/dftl-64g.toml"),
    include_str!("../../../../configs/slc-journal-64g.toml"),
    include_str!("../../../../configs/ssr-table1.toml"),
];

const INTERESTING: &[&str] = &[
    "0",
    "-1",
    "1e300",
    "nan",
    "inf",
    "4294967296",
    "18446744073709551616",
    "\"\"",
    "[]",
    "{}",
    "true",
    "0.0",
    "\"x\"",
    "[[0, 1]]",
    "{ policy = \"nope\" }",
    "=",
    "[",
    "\n[x]\n",
    "1",
    "65536",
    "0.999999",
    "-0.5",
];

/// Replace the value of random `key = value` lines, drop lines, duplicate lines, or flip
/// bytes.
fn mutated() -> impl Strategy<Value = String> {
    (
        0usize..PRESETS.len(),
        prop::collection::vec(
            (
                0u8..4,
                any::<prop::sample::Index>(),
                any::<prop::sample::Index>(),
                any::<u8>(),
            ),
            1..6,
        ),
    )
        .prop_map(|(p, edits)| {
            let mut lines: Vec<String> = PRESETS[p].lines().map(str::to_string).collect();
            for (kind, at, pick, byte) in edits {
                let i = at.index(lines.len());
                match kind {
                    0 => {
                        if let Some((k, _)) = lines[i].split_once('=') {
                            lines[i] =
                                format!("{k}= {}", INTERESTING[pick.index(INTERESTING.len())]);
                        }
                    }
                    1 => {
                        lines.remove(i);
                    }
                    2 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    _ => {
                        let mut b = lines[i].clone().into_bytes();
                        if !b.is_empty() {
                            let j = pick.index(b.len());
                            b[j] = byte;
                        }
                        lines[i] = String::from_utf8_lossy(&b).into_owned();
                    }
                }
            }
            lines.join("\n")
        })
}

#[test]
fn config_parsing_and_validation_never_panic() {
    let cases = std::env::var("SSDLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(PtConfig {
        cases,
        failure_persistence: None,
        ..PtConfig::default()
    });
    runner
        .run(&mutated(), |text| {
            if let Ok(c) = Config::from_toml_str(&text, "fuzz.toml") {
                if let Ok(d) = c.validate() {
                    let _ = d.estimated_memory_bytes(c.integrity);
                }
            }
            Ok(())
        })
        .unwrap();
}
