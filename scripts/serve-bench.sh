#!/usr/bin/env bash
# Speed of `ssdlab serve` (virtual time) against `nbdkit memory`, the same fio job on both,
# in the same session on the same machine (issue 35, point 8): 4 KiB random 70/30
# read/write at QD16 over fio's nbd engine, time based. Prints both IOPS (fio's, client
# side) and their ratio.
#
#   scripts/serve-bench.sh [SSDLAB_BINARY] [SECONDS]
#
# Default binary: target/release/ssdlab (build it first: cargo build --release). The device
# is configs/serve-small.toml (256 MiB) preconditioned (filled and overwritten once, so
# reads go to NAND and writes meet GC); nbdkit's memory disk is first filled by fio.
# SERVE_ARGS adds options to `ssdlab serve` (e.g. "--grace-us 0").
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/release/ssdlab}"
secs="${2:-20}"
for t in fio nbdkit; do
    command -v "$t" >/dev/null || { echo "serve-bench: $t is not installed" >&2; exit 2; }
done
dir="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

wait_for() { # socket
    for _ in $(seq 1 300); do [ -S "$1" ] && return 0; sleep 0.1; done
    echo "serve-bench: $1 never appeared" >&2
    exit 1
}

# fio job against socket $1 (filled first with "fill"): the measured mix; prints IOPS
# (read + write).
measure() {
    local uri="nbd+unix:///?socket=$1"
    if [ "${3:-}" = fill ]; then
        fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=1m --iodepth=4 \
            --size=256m --output-format=terse >/dev/null
    fi
    fio --name=mix --ioengine=nbd --uri="$uri" --rw=randrw --rwmixread=70 --bs=4k \
        --iodepth=16 --size=256m --time_based --runtime="$secs" --ramp_time=2 \
        --output-format=json --output="$dir/$2.json" >/dev/null
    python3 -c "
import json, sys
j = json.load(open('$dir/$2.json'))['jobs'][0]
print(round(j['read']['iops'] + j['write']['iops']))"
}

"$bin" serve configs/serve-small.toml --socket "$dir/ssdlab.sock" --out "$dir/out" \
    --set precondition.enabled=true ${SERVE_ARGS:-} \
    2>"$dir/serve.log" &
pids+=($!)
wait_for "$dir/ssdlab.sock"
ssdlab_iops="$(measure "$dir/ssdlab.sock" ssdlab)"
kill -TERM "${pids[0]}"
wait "${pids[0]}" || true
python3 -c "
import json
s = json.load(open('$dir/out/results.json'))['serve']
print(f\"ssdlab serve: the device saw a mean queue depth of {s['mean_queue_depth']} \"
      f\"({s['this_cycle']['grace_timeouts']} of {s['this_cycle']['grace_waits']} grace waits ran out)\")"


nbdkit -f -U "$dir/nbdkit.sock" memory 256M &
pids+=($!)
wait_for "$dir/nbdkit.sock"
nbdkit_iops="$(measure "$dir/nbdkit.sock" nbdkit fill)"

python3 -c "
s, n = $ssdlab_iops, $nbdkit_iops
print(f'ssdlab serve (virtual): {s} IOPS')
print(f'nbdkit memory:          {n} IOPS')
print(f'ratio: {s / n:.2f} (the bar, issue 50: at least 1.0; exact mode 0.8)')"
