#!/usr/bin/env bash
# Does `ssdlab serve --time realtime` keep time? (issue 50, item 2.) The job of
# scripts/serve-bench.sh (fio 4 KiB random 70/30 at QD16 over the nbd engine, time based) on a
# preconditioned device in realtime mode, once per rate asked (fio --rate_iops; "max": no
# limit). Prints, per rate: the IOPS fio saw, the replies, the share more than 20 µs after
# their due time, the worst lateness, and the load average before the run.
#
#   scripts/serve-realtime-bench.sh [SSDLAB_BINARY] [SECONDS] [CONFIG] [RATES...]
#
# Defaults: target/release/ssdlab, 10 s, configs/serve-small.toml, rates "500 2000 max".
# SERVE_ARGS adds options to `ssdlab serve` (e.g. "--dilation 2", or "--realtime-priority 1"
# where the scheduler grants SCHED_FIFO); NICE sets the server's
# niceness (default 0; below 0 needs the privilege). WARMUP_S runs the job unmeasured for
# that many seconds first, at the device's pace (default 0; ~20 s fills serve-small's blocks
# once, after which a first program no longer takes fresh memory); the late share is then
# of the measured replies only (max_late_ms still covers the warm-up too); give WARMUP_S
# above SECONDS + 1 (the server writes one results snapshot after the warm-up, the next
# after the measured run).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/release/ssdlab}"
secs="${2:-10}"
config="${3:-configs/serve-small.toml}"
shift $(( $# < 3 ? $# : 3 ))
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(500 2000 max)
command -v fio >/dev/null || { echo "serve-realtime-bench: fio is not installed" >&2; exit 2; }
dir="$(mktemp -d)"
pid=
cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

size="$(python3 -c "
import sys, tomllib
c = tomllib.load(open('$config', 'rb'))
g = c['device']['geometry']
raw = g['channels'] * g['chips_per_channel'] * g['dies_per_chip'] * g['planes_per_die'] \
    * g['blocks_per_plane'] * g['pages_per_block'] * g['page_size_bytes']
op = c['device'].get('over_provisioning_ratio', 0.07)
unit = g.get('mapping_unit_bytes', 4096)
# Logical bytes, rounded down to a MiB; fio only needs a range inside the export.
print(int(raw / (1 + op)) // (1 << 20))" 2>/dev/null || echo 256)"

printf '%-6s %9s %9s %8s %11s  %s\n' rate iops replies late% max_late_ms load
for rate in "${rates[@]}"; do
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    nice -n "${NICE:-0}" "$bin" serve "$config" --socket "$dir/s.sock" --out "$dir/out" \
        --set precondition.enabled=true --time realtime ${WARMUP_S:+--stats-interval $(python3 -c "print(${WARMUP_S} + 0.5)")} ${SERVE_ARGS:-} 2>"$dir/serve.log" >/dev/null &
    pid=$!
    for _ in $(seq 1 600); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
    [ -S "$dir/s.sock" ] || { echo "serve-realtime-bench: the socket never appeared" >&2; cat "$dir/serve.log" >&2; exit 1; }
    if [ "${WARMUP_S:-0}" != 0 ]; then
        fio --name=warm --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s.sock" --rw=randrw \
            --rwmixread=70 --bs=4k --iodepth=16 --size="${size}m" --time_based \
            --runtime="$WARMUP_S" --output-format=terse >/dev/null
        # The server's one snapshot, written just after the warm-up (the next would come
        # after the measured run when WARMUP_S > SECONDS + 1): subtracted below.
        for _ in $(seq 1 100); do [ -f "$dir/out/results.json" ] && break; sleep 0.05; done
        cp "$dir/out/results.json" "$dir/warm.json"
    else
        echo '{"serve": {"all_cycles": {"commands": {"ok": 0}, "late_replies": 0}}}' >"$dir/warm.json"
    fi
    limit=()
    [ "$rate" = max ] || limit=(--rate_iops="$rate")
    fio --name=mix --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s.sock" --rw=randrw \
        --rwmixread=70 --bs=4k --iodepth=16 --size="${size}m" --time_based --runtime="$secs" \
        --ramp_time=1 "${limit[@]}" --output-format=json --output="$dir/fio.json" >/dev/null
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
    python3 -c "
import json
j = json.load(open('$dir/fio.json'))['jobs'][0]
s = json.load(open('$dir/out/results.json'))['serve']['all_cycles']
w = json.load(open('$dir/warm.json'))['serve']['all_cycles']
n = s['commands']['ok'] - w['commands']['ok']
late = s['late_replies'] - w['late_replies']
print(f\"{'$rate':<6} {round(j['read']['iops'] + j['write']['iops']):>9} {n:>9} \"
      f\"{100 * late / max(n, 1):>8.2f} {s['max_late_ns'] / 1e6:>11.3f}  $load\")"
    grep "slice" "$dir/serve.log" || true
    rm -f "$dir/s.sock"
    rm -rf "$dir/out"
done
