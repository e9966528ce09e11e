//! Bad configurations get errors that name the key and the reason.

use ssdlab_core::Config;

const BASE: &str = r#"
[device]
over_provisioning_ratio = 0.25
[device.geometry]
channels = 2
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 32
pages_per_block = 16
page_size_bytes = 16384
"#;

fn parse_err(text: &str) -> String {
    Config::from_toml_str(text, "bad.toml")
        .unwrap_err()
        .to_string()
}

fn validate_err(text: &str) -> String {
    Config::from_toml_str(text, "bad.toml")
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string()
}

#[test]
fn base_is_valid() {
    let d = Config::from_toml_str(BASE, "base.toml")
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(d.geometry.slots_per_page, 4);
    assert_eq!(d.logical_units, 6553, "floor(8192 / 1.25)");
}

#[test]
fn unknown_keys_are_errors_with_file_line_and_key() {
    let e = parse_err(&BASE.replace("channels = 2", "channels = 2\nchanels = 3"));
    assert!(
        e.contains("bad.toml") && e.contains("chanels") && e.contains("line"),
        "{e}"
    );
    let e = parse_err(&format!(
        "{BASE}\n[ftl]\ngc = {{ policy = \"greedy\" }}\nvictim = 1\n"
    ));
    assert!(e.contains("victim") && e.contains("unknown field"), "{e}");
    let e = parse_err(&format!("colour = 1\n{BASE}"));
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn wrong_types_and_unknown_policy_names() {
    let e = parse_err(&BASE.replace("channels = 2", "channels = \"two\""));
    assert!(e.contains("channels") || e.contains("line 6"), "{e}");
    let e = parse_err(&format!(
        "{BASE}\n[ftl]\ngc = {{ policy = \"smartest\" }}\n"
    ));
    assert!(e.contains("smartest") && e.contains("greedy"), "{e}");
    let e = parse_err(&format!(
        "{BASE}\n[ftl.gc]\npolicy = \"d-choices\"\nd = 4\nk = 2\n"
    ));
    assert!(e.contains("unknown field") && e.contains('k'), "{e}");
    let e = parse_err(&format!("{BASE}\n[ftl]\ngc_victim = \"greedy\"\n"));
    assert!(e.contains("gc_victim"), "old keys are errors: {e}");
}

/// An erase-suspend policy's table flattens the shared guard keys; an unknown key there is
/// still told the keys the policy takes (serde names them only without flattening).
#[test]
fn unknown_suspend_keys_name_the_policy_keys() {
    let suspend = |t: &str| parse_err(&format!("{BASE}\n[scheduler]\nerase_suspend = {t}\n"));
    let e = suspend("{ policy = \"des\", bogus = 1 }");
    assert!(
        e.contains("unknown field `bogus`, expected one of `max_erase_postponement_ns`, `max_suspensions_per_erase`, `programs_preempt`"),
        "{e}"
    );
    let e = suspend("{ policy = \"ies\", max_suspensions_per_erase = 1 }");
    assert!(
        e.contains("unknown field `max_suspensions_per_erase`, expected `programs_preempt`"),
        "{e}"
    );
    let e = suspend("{ policy = \"none\", programs_preempt = true }");
    assert!(
        e.contains("unknown field `programs_preempt`, there are no fields"),
        "{e}"
    );
}

#[test]
fn zero_and_inconsistent_geometry() {
    assert_eq!(
        validate_err(&BASE.replace("channels = 2", "channels = 0")),
        "device.geometry.channels: must be > 0"
    );
    let e = validate_err(&BASE.replace("page_size_bytes = 16384", "page_size_bytes = 10000"));
    assert!(
        e.starts_with("device.geometry.mapping_unit_bytes") && e.contains("10000"),
        "{e}"
    );
    let e = validate_err(&BASE.replace("blocks_per_plane = 32", "blocks_per_plane = 4"));
    assert!(e.starts_with("device.geometry.blocks_per_plane"), "{e}");
}

#[test]
fn op_that_leaves_gc_no_room_names_the_minimum() {
    let e = validate_err(&BASE.replace(
        "over_provisioning_ratio = 0.25",
        "over_provisioning_ratio = 0.0",
    ));
    assert!(
        e.starts_with("device.over_provisioning_ratio")
            && e.contains("minimum for this geometry is 0.2047"),
        "{e}"
    );
    let e = validate_err(&BASE.replace(
        "over_provisioning_ratio = 0.25",
        "over_provisioning_ratio = -1.0",
    ));
    assert!(e.starts_with("device.over_provisioning_ratio"), "{e}");
}

#[test]
fn ftl_and_timing_values() {
    let e = validate_err(&format!("{BASE}\n[ftl]\ngc_hard_free_blocks = 0\n"));
    assert!(e.starts_with("ftl.gc_hard_free_blocks"), "{e}");
    let e = validate_err(&format!(
        "{BASE}\n[ftl]\ngc_soft_free_blocks = 1\ngc_hard_free_blocks = 2\n"
    ));
    assert!(e.starts_with("ftl.gc_soft_free_blocks"), "{e}");
    let e = validate_err(&format!("{BASE}\n[ftl]\nstripe_order = \"CCDP\"\n"));
    assert!(e.starts_with("ftl.stripe_order"), "{e}");
    let e = validate_err(&format!("{BASE}\n[ftl]\nwrite_buffer_bytes = 4096\n"));
    assert!(e.starts_with("ftl.write_buffer_bytes"), "{e}");
    let timing = "\n[device.timing.tlc]\nread_ns = 1\nprogram_ns = 1\nerase_loop_ns = 1\nerase_loops = [[5, 2]]\nendurance_pe_cycles = 10\n";
    let e = validate_err(&format!("{BASE}{timing}"));
    assert!(e.starts_with("device.timing.tlc.erase_loops"), "{e}");
}

/// Errors inside `[workload]` point at the key's own line, not the table header.
#[test]
fn workload_errors_name_the_line_of_the_key() {
    let text = format!(
        "{BASE}[workload]\nkind = \"synthetic\"\nread_percent = 50.0\nrequests = -5\nqueue_depth = 4\n"
    );
    let line = |t: &str, key: &str| t.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let e = parse_err(&text);
    assert!(
        e.contains(&format!("line {}", line(&text, "requests"))) && e.contains("requests = -5"),
        "{e}"
    );
    let text = text.replace("requests = -5", "requestz = 5");
    let e = parse_err(&text);
    assert!(
        e.contains(&format!("line {}", line(&text, "requestz")))
            && e.contains("unknown field `requestz`"),
        "{e}"
    );
}

/// Policy parameters, free-block thresholds, precondition numbers and the seed out of
/// range are errors naming the key (found by a user trying bad values: each of these ran
/// before, silently, as something else).
#[test]
fn out_of_range_parameters_name_their_key() {
    let v = |extra: &str| validate_err(&format!("{BASE}{extra}"));
    let e = v("\n[ftl]\ngc = { policy = \"d-choices\", d = 0 }\n");
    assert!(e.starts_with("ftl.gc.d: must be >= 1"), "{e}");
    let e = v("\n[ftl]\nwear_leveling = { policy = \"pet\", th_percent = 150.0 }\n");
    assert!(e.starts_with("ftl.wear_leveling.th_percent: 150"), "{e}");
    let e = v("\n[ftl]\nwear_leveling = { policy = \"pet\", th_percent = nan }\n");
    assert!(e.starts_with("ftl.wear_leveling.th_percent: NaN"), "{e}");
    let e = v("\n[ftl]\nwear_leveling = { policy = \"epet\", beta = -1.0 }\n");
    assert!(e.starts_with("ftl.wear_leveling.beta: -1"), "{e}");
    let e =
        v("\n[ftl]\nwear_leveling = { policy = \"adaptive\", max_bound = 1, min_bound = 10 }\n");
    assert!(
        e.starts_with("ftl.wear_leveling.min_bound: 10 is above"),
        "{e}"
    );
    let e = v("\n[ftl]\ngc_soft_free_blocks = 1000\n");
    assert!(
        e.starts_with("ftl.gc_soft_free_blocks: 1000 free blocks") && e.contains("32 blocks"),
        "{e}"
    );
    let e = v("\n[precondition]\nrandom_overwrite_capacity_multiple = -1.0\n");
    assert!(
        e.starts_with("precondition.random_overwrite_capacity_multiple: -1"),
        "{e}"
    );
    let e = v("\n[precondition]\nsteady_state_waf_tolerance = -0.5\n");
    assert!(
        e.starts_with("precondition.steady_state_waf_tolerance"),
        "{e}"
    );
    // In range: accepted.
    for ok in [
        "\n[ftl]\ngc = { policy = \"d-choices\", d = 1 }\n",
        "\n[ftl]\nwear_leveling = { policy = \"pet\", th_percent = 100.0 }\n",
        "\n[ftl]\ngc_soft_free_blocks = 20\n",
    ] {
        Config::from_toml_str(&format!("{BASE}{ok}"), "ok.toml")
            .unwrap()
            .validate()
            .unwrap();
    }
    // The seed must fit a TOML integer (the resolved config is written as TOML).
    let mut c = Config::from_toml_str(BASE, "bad.toml").unwrap();
    c.seed = u64::MAX;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.starts_with("seed: 18446744073709551615 is above"), "{e}");
}

/// The same errors from a file name the key's line.
#[test]
fn range_errors_name_the_line() {
    let text = format!(
        "{BASE}\n[precondition]\nenabled = true\nrandom_overwrite_capacity_multiple = -1.0\n"
    );
    let line = text
        .lines()
        .position(|l| l.starts_with("random_overwrite"))
        .unwrap()
        + 1;
    let e = Config::from_toml_str(&text, "bad.toml")
        .unwrap()
        .validate_in(&text, "bad.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("bad.toml:{line}")), "{e}");
}

/// A request larger than the logical space names the request size, not a working set the
/// file never set; more flows than NVMe has queues is an error.
#[test]
fn workload_size_and_flow_limits() {
    let w = |extra: &str| {
        let text = format!(
            "{BASE}[workload]\nkind = \"synthetic\"\nrequests = 10\nqueue_depth = 4\n{extra}"
        );
        let c = Config::from_toml_str(&text, "bad.toml").unwrap();
        let sim = ssdlab_core::Simulation::new(c).unwrap();
        sim.check_workload(10).unwrap_err().to_string()
    };
    let e = w("block_size_bytes = 100000000000\n");
    assert!(
        e.contains("block_size_bytes") && !e.contains("working_set_bytes:"),
        "{e}"
    );
    let e = w("flows = 100000\n");
    assert!(e.contains("flows") && e.contains("65536"), "{e}");
}

/// An absurd OP (10^6 left 2 logical units of a 10 GiB device) is refused, naming the
/// file, line and key and the geometry's maximum: the logical space must fill a block of
/// every plane (here 4 planes x 64 units of 8,192 slots: at most OP 31).
#[test]
fn over_provisioning_above_one_block_per_plane_of_data_is_an_error() {
    let text = BASE.replace("0.25", "1000000");
    let cfg = Config::from_toml_str(&text, "bad.toml").unwrap();
    let e = cfg.validate_in(&text, "bad.toml").unwrap_err().to_string();
    assert_eq!(
        e,
        "bad.toml:3: device.over_provisioning_ratio: 1000000 leaves 0 logical units: the logical space must fill at least one block per plane (4 planes x 64 units); the maximum for this geometry is 31.000000"
    );
    let at = |op: &str| Config::from_toml_str(&BASE.replace("0.25", op), "x.toml").unwrap();
    assert_eq!(at("31").validate().unwrap().logical_units, 256);
    let e = at("32").validate().unwrap_err().to_string();
    assert!(e.contains(": 32 leaves 248 logical units: "), "{e}");
}

/// `ftl.die_affine_group_dies` must divide the dies and is not for a zoned device.
#[test]
fn die_affine_groups_must_divide_the_dies() {
    let with = |k: u32| format!("{BASE}\n[ftl]\ndie_affine_group_dies = {k}\n");
    for k in [0, 1, 2] {
        Config::from_toml_str(&with(k), "ok.toml")
            .unwrap()
            .validate()
            .unwrap();
    }
    for k in [3, 4] {
        let e = validate_err(&with(k));
        assert!(
            e.contains("ftl.die_affine_group_dies")
                && e.contains("must divide the device's 2 dies"),
            "{e}"
        );
    }
    let mut zoned = Config::from_toml_str(&with(1), "zoned.toml").unwrap();
    zoned.device.over_provisioning_ratio = 0.0;
    zoned.device.zns = Some(Default::default());
    let e = zoned.validate().unwrap_err().to_string();
    assert!(
        e.contains("ftl.die_affine_group_dies") && e.contains("zoned"),
        "{e}"
    );
}
