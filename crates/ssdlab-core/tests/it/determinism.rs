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

/// With a host interface (two flows in weighted round robin, few command slots, requests
/// split at 8 KiB) the results stay byte-identical.
#[test]
fn timed_results_with_a_host_interface_are_byte_identical() {
    let with_link = |seed| {
        let mut c = small("timed", seed);
        let mut t = toml::to_string(&c).unwrap();
        t.push_str(
            "[device.host_interface]\nlanes = 1\nmax_commands_in_flight = 4\nmax_data_transfer_bytes = 8192\narbitration = { policy = \"weighted-round-robin\" }\nflow_priority = [\"high\", \"low\"]\n",
        );
        c = Config::from_toml_str(&t, "small+link").unwrap();
        c
    };
    let a = json(with_link(11));
    assert_eq!(a, json(with_link(11)));
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let hi = &v["host_interface"];
    assert!(hi["split_requests"].as_u64().unwrap() > 0, "{hi}");
    assert_eq!(hi["per_flow"][0]["priority"], "high");
    assert_ne!(a, json(small("timed", 11)));
}

#[test]
fn functional_results_are_byte_identical_for_the_same_seed() {
    let a = json(small("functional", 5));
    assert_eq!(a, json(small("functional", 5)));
    assert_ne!(a, json(small("functional", 6)));
}

/// A trace drawn on a thread of its own (`workload_threads`) gives the same results,
/// workload counters included, as one drawn on the simulating thread: in both modes,
/// with malformed, filtered, zero-size, out-of-range and out-of-order records counted
/// while drawing.
#[test]
fn trace_results_are_the_same_with_and_without_a_workload_thread() {
    ssdlab_workload::threaded::set_max_workers(1000); // whatever the machine's CPUs
    let dir = std::env::temp_dir().join(format!("ssdlab-trace-thread-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.csv");
    let mut text = String::new();
    let mut t = 128_166_372_000_000_000u64;
    for i in 0..6000u64 {
        t = if i % 7 == 3 { t - 50 } else { t + 3000 };
        let offset = (i * 2_654_435_761 % 6000) * 4096; // a third beyond the device: wrapped
        match i % 50 {
            0 => text.push_str("not a record\n"),
            1 => text.push_str(&format!("{t},h,1,Write,{offset},4096,1\n")), // other disk
            2 => text.push_str(&format!("{t},h,0,Write,{offset},0,1\n")),    // zero size
            _ => {
                let op = if i % 3 == 0 { "Read" } else { "Write" };
                text.push_str(&format!("{t},h,0,{op},{offset},4096,1\n"));
            }
        }
    }
    // The trace ends with lines that count but yield no request.
    text.push_str("not a record either\n");
    text.push_str(&format!("{t},h,2,Read,0,4096,1\n"));
    std::fs::write(&path, text).unwrap();
    let run_with = |mode: &str, threads: usize| {
        let mut c = small(mode, 5);
        let toml = format!(
            "kind = \"trace\"\nformat = \"msr\"\npath = {:?}\ndisk_number = 0\nskip_bad_lines = 1000\nout_of_range = \"wrap\"\n",
            path.to_str().unwrap()
        );
        c.workload = toml::from_str(&toml).unwrap();
        let mut sim = ssdlab_core::Simulation::new(c).unwrap();
        sim.workload_threads = threads;
        sim.precondition(&mut NoProgress).unwrap();
        serde_json::to_string_pretty(&sim.run_workload(&mut NoProgress).unwrap()).unwrap()
    };
    for mode in ["timed", "functional"] {
        let inline = run_with(mode, 0);
        let workers = ssdlab_workload::threaded::workers_started();
        assert_eq!(inline, run_with(mode, 1), "{mode}");
        assert_eq!(ssdlab_workload::threaded::workers_started(), workers + 1);
        let v: serde_json::Value = serde_json::from_str(&inline).unwrap();
        let w = &v["workload"];
        assert_eq!(w["skipped_bad_lines"], 121, "{mode}");
        assert_eq!(w["filtered_records"], 121, "{mode}");
        assert_eq!(w["zero_size_requests"], 120, "{mode}");
        assert!(w["clamped_arrivals"].as_u64().unwrap() > 0, "{mode}");
        assert!(w["remapped_requests"].as_u64().unwrap() > 0, "{mode}");
        assert_eq!(v["host"]["requests"], 6000 - 360, "{mode}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
