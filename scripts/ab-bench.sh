#!/usr/bin/env bash
# Compare the timed figures of two ssdlab binaries on a noisy machine: both run
# `ssdlab bench` at once, pinned to the same CPU, taking turns of QUANTUM seconds
# (SIGSTOP/SIGCONT), and each reports its requests per CPU second of its process
# (the bench's "per CPU second" figure; pinned to one CPU, no workload thread is started). Both see the same minutes of the machine, so a
# clock that drifts between 2 and 3.5 GHz from one second to the next (docs/speed.md)
# weighs on both alike; the turns are long enough that refilling the caches after a
# switch costs little. Identical binaries agree within a few per cent per round: compare
# several rounds.
#
#   scripts/ab-bench.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# Environment: CPU (default 0: the CPU both run on; this script's own loop should run on
# another, e.g. `taskset -c 1 scripts/ab-bench.sh ...`), QUANTUM (default 0.1 s),
# BENCH_ARGS (default: 10 runs of 1 M requests per figure, a short functional figure).
set -euo pipefail
if [ $# -lt 2 ]; then
    sed -n '2,15p' "$0"
    exit 2
fi
a="$1"
b="$2"
rounds="${3:-3}"
cpu="${CPU:-0}"
quantum="${QUANTUM:-0.1}"
read -r -a args <<<"${BENCH_ARGS:---functional-writes 100000 --repeat 10 --timed-requests 1000000}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

alive() { kill -0 "$1" 2>/dev/null; }

for round in $(seq 1 "$rounds"); do
    taskset -c "$cpu" "$a" bench "${args[@]}" >"$out/a" 2>&1 &
    pa=$!
    taskset -c "$cpu" "$b" bench "${args[@]}" >"$out/b" 2>&1 &
    pb=$!
    kill -STOP "$pb" 2>/dev/null || true
    # Take turns until both are done (the one left runs alone to its end).
    while alive "$pa" || alive "$pb"; do
        sleep "$quantum"
        if alive "$pb"; then kill -STOP "$pa" 2>/dev/null || true; kill -CONT "$pb" 2>/dev/null || true; fi
        sleep "$quantum"
        if alive "$pa"; then kill -STOP "$pb" 2>/dev/null || true; kill -CONT "$pa" 2>/dev/null || true; fi
    done
    wait "$pa" "$pb" || true
    for side in a b; do
        bin="$a"
        [ "$side" = b ] && bin="$b"
        figures="$(grep '^timed' "$out/$side" | grep -o 'per CPU second: best [0-9.]*, median [0-9.]*' |
            sed 's/per CPU second: //' | paste -sd '|' - || true)"
        echo "round $round  ${figures:-no per-CPU figure (older binary?)}  $bin"
    done
done
