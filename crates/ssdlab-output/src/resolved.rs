//! `config.resolved.toml`: a configuration with every default filled in, then its derived
//! values (and a zoned device's zones) as comments.

use serde::Serialize;
use ssdlab_core::config::Derived;
use ssdlab_core::Config;

/// `config.resolved.toml`: `cfg` with every default filled in, then the derived values as
/// comments.
pub fn resolved_toml(cfg: &Config, d: &Derived) -> String {
    let mut shown = cfg.clone();
    if cfg.device.zns.is_some() {
        // A zoned device's zone buffers are power-loss protected, whatever the key says
        // (docs/zns.md): the effective value.
        shown.ftl.power_loss_protection = true;
    }
    format!(
        "{}\n# ---- derived (read-only) ----\n{}{}",
        shown.to_toml_string(),
        derived_toml(d),
        zones_toml(cfg, d)
    )
}

/// A zoned device's zones as `config show` prints them.
#[derive(Serialize)]
struct ZonesView {
    zones: u32,
    zone_bytes: u64,
    zone_capacity_bytes: u64,
    /// Dies a zone stripes over.
    zone_dies: u32,
    max_open_zones: u32,
    max_active_zones: u32,
    /// What the zones hold: zones × zone capacity.
    capacity_bytes: u64,
    /// With the host log-structured layer: the user capacity it offers (the rest of the
    /// zones is its spare, `workload.spare_ratio`).
    #[serde(skip_serializing_if = "Option::is_none")]
    host_layer_user_bytes: Option<u64>,
    /// Zone write buffers survive power loss: a flush programs nothing.
    power_loss_protected_buffers: bool,
}

/// The zones of a zoned device as TOML comments (nothing on a conventional device).
fn zones_toml(cfg: &Config, d: &Derived) -> String {
    let (Some(z), Some(geo)) = (&cfg.device.zns, cfg.host_zones(d)) else {
        return String::new();
    };
    let unit = d.geometry.unit_bytes as u64;
    let layer = match &cfg.workload {
        ssdlab_workload::WorkloadConfig::LogStructured(l) => {
            Some(ssdlab_workload::log_structured::user_units(&geo, unit, l.spare_ratio) * unit)
        }
        _ => None,
    };
    let v = ZonesView {
        zones: geo.zones,
        zone_bytes: geo.zone_bytes,
        zone_capacity_bytes: geo.zone_capacity_bytes,
        zone_dies: if z.zone_dies == 0 {
            d.geometry.dies
        } else {
            z.zone_dies
        },
        max_open_zones: geo.max_open_zones,
        max_active_zones: geo.max_active_zones,
        capacity_bytes: geo.zones as u64 * geo.zone_capacity_bytes,
        host_layer_user_bytes: layer,
        power_loss_protected_buffers: true,
    };
    #[derive(Serialize)]
    struct Wrap {
        zones: ZonesView,
    }
    let body = toml::to_string(&Wrap { zones: v }).unwrap_or_default();
    let mut out = String::from("# \n");
    out.extend(body.lines().map(|l| format!("# {l}\n")));
    out
}

#[derive(Serialize)]
struct DerivedView<'a> {
    logical_units: u32,
    logical_bytes: u64,
    physical_bytes: u64,
    dies: u32,
    planes: u32,
    blocks: u32,
    pages: u64,
    slots_per_page: u32,
    units_per_block: u32,
    reserve_blocks_per_plane: u32,
    min_over_provisioning_ratio: f64,
    mapping_table_bytes: u64,
    /// Approximate memory a run holds (without integrity mode).
    estimated_memory_bytes: u64,
    write_buffer_units: u32,
    stripe_planes_first: &'a [u32],
    regions: Vec<RegionView<'a>>,
}

/// One region as `config show` prints it.
#[derive(Serialize)]
struct RegionView<'a> {
    name: &'a str,
    content: &'static str,
    cell_mode: &'static str,
    /// Block indexes `first_index .. first_index + blocks_per_plane` of every plane.
    first_index: u32,
    blocks_per_plane: u32,
    /// The planes a region on some planes only takes blocks on (`first_index`: on the first).
    #[serde(skip_serializing_if = "<[u32]>::is_empty")]
    planes: &'a [u32],
    pages_per_block: u32,
    units_per_block: u32,
    blocks: u64,
    physical_bytes: u64,
    /// What the same blocks hold in the device's native cell mode: the region's cost.
    native_bytes: u64,
    gc_policy: &'static str,
    gc_soft_free_blocks: u32,
    gc_hard_free_blocks: u32,
    reserve_blocks_per_plane: u32,
    relocate_to: &'a str,
}

/// The derived values of a configuration as TOML comments (`# key = value`).
pub fn derived_toml(d: &Derived) -> String {
    let g = &d.geometry;
    let v = DerivedView {
        logical_units: d.logical_units,
        logical_bytes: d.logical_bytes,
        physical_bytes: d.physical_bytes,
        dies: g.dies,
        planes: g.planes,
        blocks: g.blocks,
        pages: g.pages,
        slots_per_page: g.slots_per_page,
        units_per_block: g.units_per_block,
        reserve_blocks_per_plane: d.reserve_blocks_per_plane,
        min_over_provisioning_ratio: d.min_over_provisioning_ratio,
        mapping_table_bytes: d.mapping_table_bytes,
        estimated_memory_bytes: d.estimated_memory_bytes(false),
        write_buffer_units: d.write_buffer_units,
        stripe_planes_first: &d.stripe_planes[..d.stripe_planes.len().min(16)],
        regions: d
            .regions
            .iter()
            .map(|r| RegionView {
                name: &r.name,
                content: r.content.name(),
                cell_mode: r.cell_mode.name(),
                first_index: r.first_index,
                blocks_per_plane: r.blocks_per_plane,
                planes: &r.planes,
                pages_per_block: r.pages_per_block,
                units_per_block: r.units_per_block,
                blocks: r.blocks,
                physical_bytes: r.physical_bytes,
                native_bytes: r.native_bytes,
                gc_policy: r.gc.name(),
                gc_soft_free_blocks: r.gc_soft_free_blocks,
                gc_hard_free_blocks: r.gc_hard_free_blocks,
                reserve_blocks_per_plane: r.reserve_blocks_per_plane,
                relocate_to: &d.regions[r.relocate_to as usize].name,
            })
            .collect(),
    };
    let body = toml::to_string(&v).unwrap_or_default();
    body.lines().map(|l| format!("# {l}\n")).collect()
}
