#!/usr/bin/env bash
# A real ext4 journal against spec 05's journal detector (issue 35, point 7; docs/serve.md).
#
# For each workload (fio with fsync under data=ordered, the same under data=journal, SQLite
# in WAL mode) and each placement (slc-journal, the slc-buffer baseline), on a fresh device:
# `ssdlab serve configs/serve-slc-journal.toml --journal-range LO:HI` -> nbdfuse -> a loop
# device (4 KiB sectors, direct I/O) -> mkfs.ext4 -J size=16 -> mount -> workload -> umount,
# e2fsck -fn -> stop everything -> results.json. The ground truth (the journal inode's extent)
# comes from mkfs.ext4 on a plain file of the export's size with the same options, and is
# checked against the served device's with debugfs. Prints a table: detector precision and
# recall, learned vs real range, simulated write throughput and the slc-journal / slc-buffer
# ratio.
#
# Usage: scripts/serve-ext4-journal.sh [--out DIR] [--bin PATH] [--workloads "fio-ordered
#   fio-journal sqlite"] [--policies "slc-journal slc-buffer"] [--fio-size-mb N]
#   [--sqlite-rows N] [--grace-us N] [--record-trace]
# --record-trace also replays each slc-journal run's trace closed-loop at queue depth 1
# under both placements (`ssdlab run`, the same request stream): a second throughput ratio
# free of the served runs' timing noise.
# Needs root, nbdfuse (libnbd), fuse3, losetup, e2fsprogs, fio, python3.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/debug/ssdlab
CONFIG=$ROOT/configs/serve-slc-journal.toml
OUT=/tmp/serve-ext4-journal
WORKLOADS="fio-ordered fio-journal sqlite"
POLICIES="slc-journal slc-buffer"
FIO_SIZE_MB=128 # per job; 2 jobs
SQLITE_ROWS=100000
GRACE_US=1000 # serve --grace-us: wait this long for a client's next request (less noise
              # in simulated time on a loaded machine than the default 100)
RECORD_TRACE=0
JOURNAL_MB=16
MKFS_OPTS=(-q -F -b 4096 -J "size=$JOURNAL_MB" -E lazy_itable_init=0,lazy_journal_init=0)
# slc-buffer gets the SLC of both regions (8 + 7 blocks per plane) as its buffer.
BASELINE_SETS=(--set 'ftl.placement={policy="slc-buffer"}'
  --set 'ftl.regions=[{name="data",content="data"},{name="slc",content="cache",cell_mode="slc",blocks_per_plane=15,drain_when_idle=true,gc_soft_free_blocks=1,gc_hard_free_blocks=1}]')

while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --policies) POLICIES=$2; shift 2 ;;
    --fio-size-mb) FIO_SIZE_MB=$2; shift 2 ;;
    --sqlite-rows) SQLITE_ROWS=$2; shift 2 ;;
    --grace-us) GRACE_US=$2; shift 2 ;;
    --record-trace) RECORD_TRACE=1; shift ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "serve-ext4-journal.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

for tool in nbdfuse fusermount3 losetup mkfs.ext4 debugfs e2fsck fio python3; do
  command -v "$tool" >/dev/null || { echo "serve-ext4-journal.sh: $tool not found" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "serve-ext4-journal.sh: $BIN not built (cargo build -p ssdlab-cli)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "serve-ext4-journal.sh: needs root (losetup, mount)" >&2; exit 1; }

mkdir -p "$OUT"
SERVER_PID= NBDFUSE_PID= LOOP= MNT= FUSE=

# Stop what this script started, in order: filesystem, loop device, nbdfuse, server.
teardown() {
  if [ -n "$MNT" ] && mountpoint -q "$MNT"; then umount "$MNT" || true; fi
  if [ -n "$LOOP" ]; then losetup -d "$LOOP" 2>/dev/null || true; LOOP=; fi
  # (grep, not mountpoint: the mount of an nbdfuse that died answers ENOTCONN.)
  if [ -n "$FUSE" ] && grep -q " $FUSE fuse" /proc/mounts; then
    fusermount3 -u "$FUSE" 2>/dev/null || fusermount3 -uz "$FUSE" || true
  fi
  if [ -n "$NBDFUSE_PID" ]; then
    for _ in $(seq 50); do kill -0 "$NBDFUSE_PID" 2>/dev/null || break; sleep 0.1; done
    kill "$NBDFUSE_PID" 2>/dev/null || true
    wait "$NBDFUSE_PID" 2>/dev/null || true
    NBDFUSE_PID=
  fi
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap teardown EXIT
trap 'exit 130' INT TERM

wait_for() { # wait_for TEST_ARGS... (up to 10 s)
  for _ in $(seq 100); do if test "$@"; then return 0; fi; sleep 0.1; done
  echo "serve-ext4-journal.sh: timed out waiting for test $*" >&2; return 1
}

journal_extent() { # journal_extent DEVICE_OR_FILE -> "FIRST_BLOCK LAST_BLOCK"
  debugfs -R "stat <8>" "$1" 2>/dev/null | python3 -c '
import re, sys
ext = re.findall(r"\((\d+)-(\d+)\):(\d+)-(\d+)", sys.stdin.read())
if len(ext) != 1:
    sys.exit("journal inode: expected one extent, got %r" % (ext,))
print(ext[0][2], ext[0][3])'
}

# The export's size, and the ground truth from mkfs on a plain file of that size.
SIZE=$("$BIN" config show "$CONFIG" | sed -n 's/^# logical_bytes = //p')
PLAIN=$OUT/plain.img
truncate -s 0 "$PLAIN"; truncate -s "$SIZE" "$PLAIN"
mkfs.ext4 "${MKFS_OPTS[@]}" "$PLAIN"
read -r J_FIRST J_LAST < <(journal_extent "$PLAIN")
rm -f "$PLAIN"
J_LO=$((J_FIRST * 4096)); J_HI=$(((J_LAST + 1) * 4096))
echo "export $SIZE bytes; ext4 journal blocks $J_FIRST-$J_LAST = bytes $J_LO:$J_HI"

run_workload() { # run_workload NAME MOUNTDIR
  case $1 in
    fio-ordered|fio-journal)
      fio --name=fsync --directory="$2" --rw=randwrite --bs=4k --size="${FIO_SIZE_MB}m" \
        --numjobs=2 --fsync=1 --ioengine=psync --randseed=1 --group_reporting \
        --output="$RUN/fio.txt" ;;
    sqlite)
      python3 - "$2/test.db" "$SQLITE_ROWS" >"$RUN/sqlite.txt" <<'EOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v TEXT)")
db.execute("CREATE INDEX tk ON t (k)")
rows, per_txn, t0 = int(sys.argv[2]), 4, time.time()
for i in range(0, rows, per_txn):
    db.execute("BEGIN")
    for j in range(i, min(rows, i + per_txn)):
        db.execute("INSERT INTO t (k, v) VALUES (?, ?)", ((j * 7919) % rows, "x" * 100))
    db.execute("COMMIT")
db.close()
print(f"{rows} rows in transactions of {per_txn}: {time.time() - t0:.1f} s")
EOF
      ;;
    *) echo "serve-ext4-journal.sh: unknown workload $1" >&2; return 1 ;;
  esac
}

for wl in $WORKLOADS; do
  case $wl in
    fio-journal) DATA_MODE=journal ;;
    *) DATA_MODE=ordered ;;
  esac
  for pol in $POLICIES; do
    RUN=$OUT/$wl-$pol
    rm -rf "$RUN"; mkdir -p "$RUN/fuse" "$RUN/mnt"
    FUSE=$RUN/fuse MNT=$RUN/mnt
    SETS=()
    if [ "$pol" = slc-buffer ]; then SETS=("${BASELINE_SETS[@]}"); fi
    TRACE=()
    if [ "$RECORD_TRACE" = 1 ]; then TRACE=(--record-trace "$RUN/trace.txt"); fi
    echo "== $wl ($DATA_MODE) on $pol: $RUN"
    "$BIN" serve "$CONFIG" --socket "$RUN/sock" --out "$RUN/out" --grace-us "$GRACE_US" \
      --journal-range "$J_LO:$J_HI" ${SETS[@]+"${SETS[@]}"} ${TRACE[@]+"${TRACE[@]}"} \
      >"$RUN/server.log" 2>&1 &
    SERVER_PID=$!
    wait_for -S "$RUN/sock"
    nbdfuse "$FUSE" "nbd+unix:///?socket=$RUN/sock" >"$RUN/nbdfuse.log" 2>&1 &
    NBDFUSE_PID=$!
    wait_for -f "$FUSE/nbd"
    LOOP=$(losetup --find --show --sector-size 4096 --direct-io=on "$FUSE/nbd")
    mkfs.ext4 "${MKFS_OPTS[@]}" "$LOOP"
    read -r F L < <(journal_extent "$LOOP")
    if [ "$F $L" != "$J_FIRST $J_LAST" ]; then
      echo "serve-ext4-journal.sh: journal extent on $LOOP is $F-$L, not $J_FIRST-$J_LAST" >&2
      exit 1
    fi
    mount -o "data=$DATA_MODE" "$LOOP" "$MNT"
    run_workload "$wl" "$MNT"
    umount "$MNT"
    e2fsck -fn "$LOOP" >"$RUN/fsck.txt" 2>&1 || {
      echo "serve-ext4-journal.sh: e2fsck -fn found problems: $RUN/fsck.txt" >&2; exit 1; }
    teardown
    [ -s "$RUN/out/results.json" ] || { echo "no $RUN/out/results.json" >&2; exit 1; }
    rmdir "$RUN/fuse" "$RUN/mnt"
  done
done

# The same request stream under both placements: each slc-journal trace replayed
# closed-loop at queue depth 1.
if [ "$RECORD_TRACE" = 1 ]; then
  for wl in $WORKLOADS; do
    [ -s "$OUT/$wl-slc-journal/trace.txt" ] || continue
    for pol in slc-journal slc-buffer; do
      SETS=()
      if [ "$pol" = slc-buffer ]; then SETS=("${BASELINE_SETS[@]}"); fi
      "$BIN" run "$CONFIG" --out "$OUT/$wl-slc-journal/replay-$pol" ${SETS[@]+"${SETS[@]}"} \
        --set "workload={kind=\"trace\",path=\"$OUT/$wl-slc-journal/trace.txt\",format=\"blkparse\",replay=\"closed\",queue_depth=1}" \
        >"$OUT/$wl-slc-journal/replay-$pol.log" 2>&1
    done
  done
fi

python3 - "$OUT" "$J_LO" "$J_HI" "$WORKLOADS" "$POLICIES" <<'EOF' | tee "$OUT/table.md"
import json, os, sys
out, lo, hi, wls, pols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split()
res = {}
for wl in wls:
    for p in pols:
        with open(os.path.join(out, f"{wl}-{p}", "out", "results.json")) as f:
            res[wl, p] = json.load(f)
mib = lambda b: f"{b / 2**20:.2f}"
rng = lambda r: "none" if r is None else f"{mib(r[0])}–{mib(r[1])} MiB"
print(f"real journal: {rng([lo, hi])} (bytes {lo}:{hi})\n")
print("| workload | placement | writes | precision | recall | TP / FN / FP | learned range | host write MB/s (sim) | IOPS (sim) | slc-journal / slc-buffer |")
print("|---|---|---:|---:|---:|---|---|---:|---:|---:|")
for wl in wls:
    for p in pols:
        r = res[wl, p]; h = r["host"]; j = r.get("journal") or {}
        d = j.get("detector") or {}
        f = lambda x: "n/a" if x is None else f"{x:.4f}"
        ratio = ""
        if p == "slc-journal" and (wl, "slc-buffer") in res:
            b = res[wl, "slc-buffer"]["host"]["write_mb_per_s"]
            ratio = f"{h['write_mb_per_s'] / b:.2f}" if b else "n/a"
        learned = rng(j.get("learned_range_bytes")) if p == "slc-journal" else "—"
        dec = f"{d.get('true_positive')} / {d.get('false_negative')} / {d.get('false_positive')}" if p == "slc-journal" else "—"
        prec = f(d.get("precision")) if p == "slc-journal" else "—"
        rec = f(d.get("recall")) if p == "slc-journal" else "—"
        print(f"| {wl} | {p} | {h['writes']} | {prec} | {rec} | {dec} | {learned} | {h['write_mb_per_s']:.2f} | {h['iops']:.0f} | {ratio} |")
rows = []
for wl in wls:
    d = os.path.join(out, f"{wl}-slc-journal")
    try:
        mbs = [json.load(open(os.path.join(d, f"replay-{p}", "results.json")))["host"]["write_mb_per_s"]
               for p in ("slc-journal", "slc-buffer")]
    except OSError:
        continue
    rows.append(f"| {wl} | {mbs[0]:.2f} | {mbs[1]:.2f} | {mbs[0] / mbs[1]:.2f} |")
if rows:
    print("\nslc-journal's trace replayed closed-loop at queue depth 1 (`ssdlab run`):\n")
    print("| workload | slc-journal MB/s | slc-buffer MB/s | ratio |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))
EOF
