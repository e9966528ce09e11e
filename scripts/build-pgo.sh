#!/usr/bin/env bash
# Build the `ssdlab` binary with profile-guided optimisation (PGO): the same code, laid out
# and inlined by the compiler from a profile of the bench's work. Results are the same byte
# for byte (the profile changes how fast the code runs, never what it computes); the timed
# figures gain 5-10 % on this project's 2-core VM (docs/speed.md).
#
#   scripts/build-pgo.sh            # -> target/pgo/release/ssdlab  (about 5 minutes)
#   SSDLAB_PGO_QUICK=1 scripts/build-pgo.sh   # a smaller training run (CI's smoke test)
#
# Steps: an instrumented build (target/pgo-generate), a training run of that binary (the
# bench's figures at reduced size — the trace replay small, so that the synthetic
# work's paths keep their weight in the profile — then every bundled config briefly), the profiles
# merged with the toolchain's own llvm-profdata (rustup component `llvm-tools`, added if
# missing), and the optimised build (target/pgo). RUSTFLAGS from the environment are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

host="$(rustc -vV | sed -n 's/^host: //p')"
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    if command -v rustup >/dev/null 2>&1; then
        echo "== rustup component add llvm-tools (llvm-profdata, matching rustc's LLVM)"
        rustup component add llvm-tools
    fi
    if [ ! -x "$profdata" ]; then
        echo "error: $profdata not found; install the toolchain's llvm-tools component" \
             "(rustup component add llvm-tools): llvm-profdata must match rustc's LLVM" >&2
        exit 1
    fi
fi

data="$PWD/target/pgo-data"
rm -rf "$data"
mkdir -p "$data"
base_flags="${RUSTFLAGS:-}"

echo "== instrumented build (target/pgo-generate)"
RUSTFLAGS="$base_flags -Cprofile-generate=$data/raw" \
    cargo build --release -p ssdlab-cli --target-dir target/pgo-generate
gen=target/pgo-generate/release/ssdlab

echo "== training run"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
if [ "${SSDLAB_PGO_QUICK:-0}" = 1 ]; then
    "$gen" bench --functional-writes 200000 --repeat 1 --timed-requests 100000 --table1-scale 4 \
        --trace-requests 10000
    requests=20000
else
    "$gen" bench --functional-writes 2000000 --repeat 1 --timed-requests 500000 \
        --trace-requests 50000
    requests=200000
fi
for cfg in configs/*.toml; do
    set=(--set "workload.requests=$requests")
    case "$cfg" in
        # The bench runs these two devices.
        configs/ssr-table1.toml | configs/op-paper.toml) continue ;;
        # A file-system workload: its own length.
        configs/slc-journal-64g.toml) set=() ;;
        # The host log-structured layer: its inner workload's length.
        configs/zns.toml) set=(--set "workload.inner.requests=$requests") ;;
    esac
    "$gen" run -q --out "$out/$(basename "$cfg" .toml)" "$cfg" "${set[@]}" >/dev/null
done

echo "== merge profiles"
"$profdata" merge -o "$data/merged.profdata" "$data/raw"

echo "== optimised build (target/pgo)"
RUSTFLAGS="$base_flags -Cprofile-use=$data/merged.profdata" \
    cargo build --release -p ssdlab-cli --target-dir target/pgo
echo "built target/pgo/release/ssdlab"
