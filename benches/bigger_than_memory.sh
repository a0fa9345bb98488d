#!/usr/bin/env bash
# A store bigger than memory, without a disk bigger than this machine's RAM:
# every reader runs in a memory cgroup whose limit is a fraction of the
# store, so the page cache it fills is reclaimed while it reads, as on a
# machine whose memory the store exceeds (the page cache a process faults
# in is charged to its cgroup). Needs root (it makes the cgroup; v1 or v2).
#
#   sudo bash benches/bigger_than_memory.sh STORE [LIMIT_MIB]
#
# LIMIT_MIB defaults to a third of the store. PYTHON (default: the package
# venv scripts/test makes, which holds zrecord and loaderx 2.0.1) runs
# benches/python/cold.py; ZRECORD_BIN (default: target/release/zrecord) the
# CLI. Each run starts with the store's pages evicted, and prints:
#   1. `zrecord bench STORE --cold` with the default backend, with pread,
#      and with direct cold reads (O_DIRECT, which the default takes for a
#      store 8 times its memory); fresh batches every round, the device's
#      own limit beside the first;
#   2. benches/python/cold.py STORE: zrecord against loaderx 2.0.1 from
#      Python, their turns alternating, each round its own batches;
#   3. the cgroup's peak memory: the readers' memory stays bounded by the
#      limit, whatever the store's size.
# On raw64k (3 GiB of 64 KiB records) under a 1 GiB limit the whole run takes
# about 25 s (results: benches/results/bigger_than_memory.md).
set -euo pipefail
cd "$(dirname "$0")/.."
store=${1:?usage: sudo bash benches/bigger_than_memory.sh STORE [LIMIT_MIB]}
size_mib=$(( $(du -sk "$store" | cut -f1) / 1024 ))
limit_mib=${2:-$(( size_mib / 3 ))}
python=${PYTHON:-$HOME/.cache/zrecord/venv-py/bin/python}
zrecord=${ZRECORD_BIN:-target/release/zrecord}
[ -x "$zrecord" ] || cargo build --release --quiet --bin zrecord

bytes=$(( limit_mib * 1024 * 1024 ))
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then # cgroup v2
  cg=/sys/fs/cgroup/zrecord-btm.$$
  mkdir "$cg"
  echo "$bytes" >"$cg/memory.max"
  peak() { cat "$cg/memory.peak" 2>/dev/null || echo "?"; }
else # cgroup v1
  cg=/sys/fs/cgroup/memory/zrecord-btm.$$
  mkdir "$cg"
  echo "$bytes" >"$cg/memory.limit_in_bytes"
  peak() { cat "$cg/memory.max_usage_in_bytes"; }
fi
trap 'rmdir "$cg" 2>/dev/null || true' EXIT

# Run "$@" inside the cgroup.
limited() { (echo "$BASHPID" >"$cg/cgroup.procs" && exec "$@"); }

echo "store $store: $size_mib MiB; memory limit $limit_mib MiB ($(( size_mib / (limit_mib > 0 ? limit_mib : 1) ))x smaller); load $(cut -d' ' -f1-3 /proc/loadavg)"
# Every run reads batches of its own seeds: this VM's host caches its
# virtual disk, so records one run read come back faster to the next.
seed=$(( $(date +%s) % 100000 * 10 ))
device=1
for how in "--backend mmap" "--backend pread" "--cold-reads direct"; do
  echo
  echo "\$ zrecord bench $store --cold $how --rounds 3 --batches 40 --seed $seed"
  # shellcheck disable=SC2086 # $how is two words
  limited "$zrecord" bench "$store" --cold $how --rounds 3 --batches 40 --seed "$seed" --quiet --device-secs $device
  seed=$(( seed + 3 ))
  device=0
done
echo
echo "\$ python benches/python/cold.py $store --rounds 3 --batches 40 --seed $seed"
limited "$python" benches/python/cold.py "$store" --rounds 3 --batches 40 --seed "$seed"
echo
# memory.peak is Linux 5.19's: without it the runs above stand, the peak is unknown.
used=$(peak)
[[ $used =~ ^[0-9]+$ ]] && used="$(( used / 1048576 )) MiB" || used="unknown (no memory.peak before Linux 5.19)"
echo "peak memory of the cgroup (page cache included): $used of $limit_mib MiB"
