//! Same config and seed → byte-identical results.json; another seed → different results.

use ssdlab_core::{run, Config, NoProgress};

fn small(mode: &str, seed: u64) -> Config {
    let text = format!(
        r#"
seed = {seed}
mode = "{mode}"
[device]
over_provisioning_ratio = 0.3
command_overhead_ns = 500
[device.geometry]
channels = 2
chips_per_channel = 2
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 24
pages_per_block = 16
page_size_bytes = 8192
[ftl]
gc_soft_free_blocks = 3
gc_hard_free_blocks = 1
write_buffer_bytes = 131072
[precondition]
enabled = true
random_overwrite_capacity_multiple = 0.5
[workload]
kind = "synthetic"
read_percent = 60.0
trim_percent = 5.0
block_size_split = [[4096, 50.0], [8192, 30.0], [16384, 20.0]]
queue_depth = 8
flows = 2
pattern = "zipf"
zipf_theta = 0.9
requests = 4000
"#
    );
    Config::from_toml_str(&text, "small").unwrap()
}

fn json(c: Config) -> String {
    serde_json::to_string_pretty(&run(c, &mut NoProgress).unwrap()).unwrap()
}

#[test]
fn timed_results_are_byte_identical_for_the_same_seed() {
    let a = json(small("timed", 11));
    assert_eq!(a, json(small("timed", 11)));
    assert_ne!(a, json(small("timed", 12)));
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["host"]["requests"], 8000);
    assert!(v["latency_ns"]["read"]["p99_9999"].as_u64().unwrap() > 0);
    assert!(
        v["nand"]["erases"]["gc"].as_u64().unwrap() > 0,
        "the run exercises GC"
    );
    assert_eq!(v["latency_ns"]["per_flow"].as_array().unwrap().len(), 2);
}

#[test]
fn functional_results_are_byte_identical_for_the_same_seed() {
    let a = json(small("functional", 5));
    assert_eq!(a, json(small("functional", 5)));
    assert_ne!(a, json(small("functional", 6)));
}
