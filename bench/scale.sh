#!/usr/bin/env bash
# scale.sh - many ranks on one host: pscomm (tools/ps_comm_run) against
# Open MPI (mpirun), start to exit of a job that initialises, runs one
# checked 4 KiB allreduce and finalizes (examples/allreduce -c and its MPI
# twin bench/mpi_allreduce.c, same options), or with -j alltoall one
# exchange of 4 KiB between every pair of ranks (bench/alltoall.c and
# bench/mpi_alltoall.c, each byte checked). Each round runs every rank
# count and provider once per system, the system that goes first
# alternating from round to round.
#
# usage: bench/scale.sh [-r ROUNDS] [-n "64 128"] [-p "shm tcp"] [-j JOB] [-o OUTDIR] [BUILD]
#   -r ROUNDS   rounds (default 5, at least 5)
#   -j JOB      allreduce (default) or alltoall
#   -n COUNTS   rank counts (default "64 128")
#   -p PROVS    pscomm's FI_PROVIDER per row: shm (Open MPI: its own
#               shared memory, vader) or tcp (Open MPI: btl tcp)
#   -o OUTDIR   raw CSV and summary.md (default: a temp dir, printed)
#   BUILD       pscomm build with tools/ps_comm_run and examples/allreduce
#               (default: $PSCOMM_BUILD, else .)
#
# Per run, measured alike for both systems:
#   wall_s      the launcher's start to exit (/usr/bin/time)
#   shm_mib     the most /dev/shm held beyond what it held before the run
#               (df, sampled every 0.1 s), and files left after it
#   rss_mib     each rank's peak resident set (/usr/bin/time -f %M around
#               each rank): the median and the largest rank
#   fds_rank0   rank 0's most open descriptors (sampled every 0.1 s)
#   fi_cpu_s    pscomm only: the CPU its ranks spent in libfabric's first
#               fi_getinfo, summed (each rank's own measure, logged at
#               info level); rest_s is wall_s less fi_cpu_s over the
#               cores, what the job would take without it
# A run that fails (or whose check finds a wrong element) is reported and
# left out of the medians. Exit status: 0, 1 if a run failed, 2 for bad
# usage.
set -u -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/mpi_common.sh disable=SC1091
. "$here/mpi_common.sh"

ROUNDS=5 COUNTS="64 128" PROVS="shm tcp" OUTDIR="" JOB=allreduce
while getopts "r:n:p:j:o:h" opt; do
    case $opt in
    j) JOB=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    n) COUNTS=$OPTARG ;;
    p) PROVS=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    *) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
build=$(cd "${1:-${PSCOMM_BUILD:-.}}" && pwd) || exit 2
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 5 ]] || { say "scale.sh: -r wants 5 or more"; exit 2; }
[[ $JOB == allreduce || $JOB == alltoall ]] || { say "scale.sh: -j wants allreduce or alltoall"; exit 2; }
for t in /usr/bin/time mpirun.openmpi mpicc.openmpi; do
    command -v "$t" >/dev/null || { say "scale.sh: needs $t (tools/install-deps --bench)"; exit 2; }
done
find_pscomm allreduce
[[ $have_pscomm == 1 ]] || exit 2
[[ -n $OUTDIR ]] || OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/scale.XXXXXX")
mkdir -p "$OUTDIR" || exit 2
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
mpi_bin=$work/mpi_$JOB
compile_peer mpicc.openmpi "$mpi_bin" "$here/mpi_$JOB.c" -I"$here" || exit 2
ps_dir=$build/examples args=(-c --csv -m 4K -M 4K -i 1)
[[ $JOB == alltoall ]] && ps_dir=$build/bench args=(-s 4096 -i 1)
# The program itself, not libtool's wrapper script (a shell per rank).
if [[ -x $ps_dir/.libs/$JOB ]]; then
    ps_prog=(env LD_LIBRARY_PATH="$build/.libs" "$ps_dir/.libs/$JOB")
elif [[ -x $ps_dir/$JOB ]]; then
    ps_prog=("$ps_dir/$JOB")
else
    say "scale.sh: no $ps_dir/$JOB in $build (make)"; exit 2
fi
csv=$OUTDIR/raw.csv
echo "round,system,provider,ranks,ok,wall_s,shm_mib,shm_left,rss_med_mib,rss_max_mib,fds_rank0,fi_cpu_s,rest_s" >"$csv"

say "== scale: $(date -u '+%F %T') UTC on $(hostname), $(nproc) cores, $ROUNDS rounds"
say "   pscomm build $build; $(mpirun.openmpi --version 2>&1 | head -1)"

shm_used() { df -B1 --output=used /dev/shm | tail -1; }

# rank0_pid SYSTEM: the pid of rank 0 once it runs (its environment says).
rank0_pid() {
    local var=PS_COMM_RANK p
    [[ $1 == ompi ]] && var=OMPI_COMM_WORLD_RANK
    for p in $(pgrep -f "$2"); do
        [[ $(cat "/proc/$p/comm" 2>/dev/null) == time ]] && continue
        { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "$var=0" &&
            { echo "$p"; return; }
    done
}

# sample SYSTEM PROGRAM_PATTERN BASE OUT: until killed, every 0.1 s, the
# peak /dev/shm use beyond BASE and rank 0's descriptors, into OUT after
# every sample (renamed into place: a kill never leaves it half written;
# a trap on the kill could fire inside a command substitution and lose
# it).
sample() {
    local base=$3 peak=0 fds=0 r0="" u n
    while :; do
        u=$(( $(shm_used) - base ))
        (( u > peak )) && peak=$u
        [[ -z $r0 || ! -d /proc/$r0 ]] && r0=$(rank0_pid "$1" "$2")
        if [[ -n $r0 ]]; then
            n=$(ls "/proc/$r0/fd" 2>/dev/null | wc -l)
            (( n > fds )) && fds=$n
        fi
        echo "$peak $fds" >"$4.new" && mv -f "$4.new" "$4"
        sleep 0.1
    done
}

failed=0
# one ROUND SYSTEM PROVIDER N: run and record one job.
one() {
    local round=$1 sys=$2 prov=$3 n=$4 out=$work/out rss=$work/rss
    local base files_before pat cmd rc wall ok=1 peak fds left fi_cpu rest
    : >"$rss"
    base=$(shm_used)
    files_before=$(ls /dev/shm | sort)
    if [[ $sys == pscomm ]]; then
        pat=$ps_dir/
        cmd=(env PS_COMM_LOG_LEVEL=info
             "$ps_run" -n "$n" --provider "$prov" --timeout 900 --
             /usr/bin/time -f %M -a -o "$rss" "${ps_prog[@]}" "${args[@]}")
    else
        pat=$mpi_bin
        cmd=(mpirun.openmpi --oversubscribe --allow-run-as-root -n "$n")
        [[ $prov == tcp ]] && cmd+=(--mca pml ob1 --mca btl self,tcp)
        cmd+=(/usr/bin/time -f %M -a -o "$rss" "$mpi_bin" "${args[@]}")
    fi
    rm -f "$work/peak"
    sample "$sys" "$pat" "$base" "$work/peak" &
    local spid=$!
    /usr/bin/time -f %e -o "$work/wall" "${cmd[@]}" >"$out.csv" 2>"$out.err"
    rc=$?
    kill -TERM "$spid"; wait "$spid" 2>/dev/null
    peak=0 fds=0
    [[ -s $work/peak ]] && read -r peak fds <"$work/peak"
    wall=$(tail -1 "$work/wall")
    # The check: one data row with 0 errors.
    if [[ $rc -ne 0 ]] || ! awk -F, '$1 == 4096 && $NF == 0 {f = 1} END {exit !f}' "$out.csv"; then
        ok=0 failed=1
        report_failed "round $round $sys $prov n=$n" "$rc" 0 "$out"
    fi
    left=$(comm -13 <(echo "$files_before") <(ls /dev/shm | sort) | wc -l)
    read -r rmed rmax < <(sort -n "$rss" | awk '{v[NR] = $1} END {
        printf "%.1f %.1f\n", v[int((NR + 1) / 2)] / 1024, v[NR] / 1024 }')
    # Each rank's "libfabric's first fi_getinfo took N ms of CPU".
    fi_cpu=$(grep -o "first fi_getinfo took [0-9]* ms of CPU" "$out.err" |
        awk '{s += $4} END {printf "%.2f", s / 1000}')
    rest=$(awk -v w="$wall" -v f="$fi_cpu" -v c="$(nproc)" 'BEGIN {printf "%.2f", w - f / c}')
    printf '%s,%s,%s,%s,%s,%s,%.1f,%s,%s,%s,%s,%s,%s\n' "$round" "$sys" "$prov" "$n" \
        "$ok" "$wall" "$(awk -v b="$peak" 'BEGIN {print b / 1048576}')" "$left" \
        "$rmed" "$rmax" "$fds" "$fi_cpu" "$rest" >>"$csv"
    say "   round $round $sys $prov n=$n: ${wall}s, /dev/shm peak $(tail -1 "$csv" | cut -d, -f7) MiB, left $left, RSS median $rmed MiB (max $rmax), rank 0 fds $fds, first fi_getinfo ${fi_cpu} s CPU"
}

say "  \$ $ps_run -n N --provider P -- /usr/bin/time -f %M ... ${ps_prog[*]} ${args[*]}"
say "  \$ mpirun.openmpi --oversubscribe -n N [--mca pml ob1 --mca btl self,tcp] /usr/bin/time -f %M ... $mpi_bin ${args[*]}"
for ((r = 1; r <= ROUNDS; r++)); do
    order=(pscomm ompi)
    (( r % 2 == 0 )) && order=(ompi pscomm)
    for n in $COUNTS; do
        for p in $PROVS; do
            for s in "${order[@]}"; do one "$r" "$s" "$p" "$n"; done
        done
    done
done

# Summary: median (min-max) per system, and pscomm over Open MPI.
sum=$OUTDIR/summary.md
{
    say "bench/scale.sh -r $ROUNDS -n \"$COUNTS\" -p \"$PROVS\" -j $JOB at $(date -u '+%F %T') UTC, $(nproc) cores"
    say ""
    say "| provider | ranks | metric | pscomm | Open MPI | pscomm / Open MPI |"
    say "|---|---|---|---|---|---|"
    for p in $PROVS; do
        for n in $COUNTS; do
            for m in wall_s:6 rest_s:13 fi_cpu_s:12 shm_mib:7 rss_med_mib:9 rss_max_mib:10 fds_rank0:11; do
                col=${m#*:} name=${m%:*}
                cell() {
                    awk -F, -v s="$1" -v p="$p" -v n="$n" -v c="$col" \
                        'NR > 1 && $2 == s && $3 == p && $4 == n && $5 == 1 {print $c}' "$csv"
                }
                pm=$(cell pscomm | median_of '%.3g') om=$(cell ompi | median_of '%.3g')
                pr=$(cell pscomm | sort -g | awk 'NR == 1 {a = $1} {b = $1} END {if (NR) printf "%s–%s", a, b}')
                orr=$(cell ompi | sort -g | awk 'NR == 1 {a = $1} {b = $1} END {if (NR) printf "%s–%s", a, b}')
                say "| $p | $n | $name | $pm ($pr) | $om ($orr) | $(ratio "$pm" "$om") |"
            done
        done
    done
    left=$(awk -F, 'NR > 1 && $2 == "pscomm" {s += $8} END {print s + 0}' "$csv")
    say ""
    say "Files left in /dev/shm after pscomm's runs: $left."
} >"$sum"
cat "$sum"
say "-- raw: $csv"
exit "$failed"
