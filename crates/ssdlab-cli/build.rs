//! Names the build for the speed figures (`ssdlab bench`, perf.json): the cargo profile and
//! whether the compiler had a profile to optimise from (`scripts/build-pgo.sh`), so that a
//! figure is never quoted without the kind of binary that measured it.

fn main() {
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let pgo = if flags.contains("profile-use") {
        ", PGO"
    } else if flags.contains("profile-generate") {
        ", PGO-instrumented"
    } else {
        ""
    };
    println!("cargo:rustc-env=SSDLAB_BUILD={profile}{pgo}");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}
