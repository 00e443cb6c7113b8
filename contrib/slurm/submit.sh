#!/bin/bash
# Submit a harness-probe run to Slurm as N shards plus the merge that depends on them; prints both job ids.
#
#   contrib/slurm/submit.sh N OUT [RUN ARGS...]      e.g. submit.sh 4 /shared/hp-run -H reference --jobs 2
#
# OUT must be on storage every node sees. Extra sbatch options (partition, time, account) go in SBATCH_* or
# HARNESS_PROBE_SBATCH_ARGS. `sbatch --wait`-style blocking: set HARNESS_PROBE_WAIT=1 and this exits with the
# merge job's exit code.
set -euo pipefail
usage() { echo "usage: $0 N OUT [RUN ARGS...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
n=$1 out=$2; shift 2
[[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
# The merge takes every shard-I folder that holds a whole summary: one left by an earlier submission would stand in
# for a shard of this one that failed. So each submission gets an OUT of its own.
for old in "$out/merged" "$out"/shard-*; do
  [ ! -e "$old" ] || { echo "$old already exists; choose a new OUT (results are never mixed)" >&2; exit 2; }
done
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/logs"
read -r -a extra <<<"${HARNESS_PROBE_SBATCH_ARGS:-}"
export HARNESS_PROBE_OUT=$out HARNESS_PROBE_SHARDS=$n
array=$(sbatch --parsable "${extra[@]}" --array="1-$n" --output="$out/logs/shard-%a.log" \
  "$here/shard.sbatch" "$@")
array=${array%%;*}  # --parsable prints "id[;cluster]"
wait=()
[ "${HARNESS_PROBE_WAIT:-}" != 1 ] || wait=(--wait)
echo "array job $array (shards 1-$n), merge after it: $out/merged" >&2
rc=0
merge=$(sbatch --parsable "${extra[@]}" "${wait[@]}" --dependency="afterany:$array" \
  --output="$out/logs/merge.log" "$here/merge.sbatch") || rc=$?
echo "$array ${merge%%;*}"
exit "$rc"
