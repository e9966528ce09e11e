//! Small configurations shared by unit tests.

/// 1 channel × 1 chip × 1 die × 2 planes × 8 blocks × 4 pages of 4 KiB, unit 4 KiB.
pub const TINY_TOML: &str = r#"
seed = 7
[device]
over_provisioning_ratio = 2.0
channel_rate_mb_per_s = 800
command_overhead_ns = 0
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 8
pages_per_block = 4
page_size_bytes = 4096
mapping_unit_bytes = 4096
[ftl]
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
write_buffer_bytes = 16384
"#;

/// An FTL on the [`TINY_TOML`] device.
pub fn tiny_ftl() -> crate::ftl::Ftl {
    let c = crate::Config::from_toml_str(TINY_TOML, "tiny").unwrap();
    let d = c.validate().unwrap();
    crate::ftl::Ftl::new(&c, &d).unwrap()
}
