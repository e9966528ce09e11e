//! Prints model tables.
//!
//! * `cargo run -p ssdlab-model --example waf_table [b] [r f]` — WAF vs OP for
//!   greedy and FIFO.
//! * `cargo run -p ssdlab-model --example waf_table paper` — predicted counts for the
//!   paper's experiment (800 user blocks × 128 pages × 1 KiB, 100 GB of uniform
//!   random writes, read:program:erase = 10 µs : 100 µs : 1 ms, greedy), assuming an
//!   FTL with a 2-free-block GC reserve and one shared open block.
use ssdlab_model::{predict_costs, waf, waf_for_device, FrontierLayout, GcPolicyModel, Traffic};

fn paper() {
    let (b, user_blocks) = (128u64, 800u64);
    let host_writes = 100u64 * 1024 * 1024; // 100 GB / 1 KiB
    println!("op   eff_op  WAF     reads          programs       erases       time_h  improv%");
    let mut t0 = None;
    for i in 0..=10u64 {
        let op_blocks = user_blocks * i / 10;
        // OP 0 % needs a reserve outside the user blocks: assume 2 GC + 1 open.
        let physical_blocks = user_blocks + op_blocks.max(3);
        let r = waf_for_device(
            GcPolicyModel::Greedy,
            Traffic::Uniform,
            user_blocks * b,
            physical_blocks * b,
            b as u32,
            2.0,
            FrontierLayout::Shared,
        );
        match r {
            Ok((w, eff)) => {
                let c = predict_costs(w, host_writes, b as u32, 10e3, 100e3, 1e6).unwrap();
                let t0 = *t0.get_or_insert(c.time_ns);
                println!(
                    "{:>3}% {eff:>6.4} {w:>6.3} {:>14.0} {:>14.0} {:>12.0} {:>7.2} {:>6.2}",
                    i * 10,
                    c.nand_reads,
                    c.nand_programs,
                    c.nand_erases,
                    c.time_ns / 3.6e12,
                    (1.0 - c.time_ns / t0) * 100.0
                );
            }
            Err(e) => println!("{:>3}% {e}", i * 10),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("paper") {
        paper();
        return;
    }
    let b: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(128);
    let traffic = match (args.get(2), args.get(3)) {
        (Some(r), Some(f)) => Traffic::HotCold {
            hot_io_fraction: r.parse().expect("r"),
            hot_space_fraction: f.parse().expect("f"),
        },
        _ => Traffic::Uniform,
    };
    println!("b={b} traffic={traffic:?}");
    println!("{:>6} {:>12} {:>12}", "op", "greedy", "fifo");
    for i in 1..=20 {
        let op = 0.05 * i as f64;
        let g = waf(GcPolicyModel::Greedy, traffic, op, b);
        let f = waf(GcPolicyModel::Fifo, traffic, op, b);
        match (g, f) {
            (Ok(g), Ok(f)) => println!("{op:>6.2} {g:>12.5} {f:>12.5}"),
            (g, f) => println!("{op:>6.2} {g:?} {f:?}"),
        }
    }
}
