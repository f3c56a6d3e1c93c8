#!/usr/bin/env bash
# compare_builds.sh - measure a change to pscomm's hot path against the tree
# before it.  Both builds run the same fixed cases (pingpong latency on tcp,
# net and shm, allreduce time on shm) in one session: every round runs each case
# on OLD and on NEW back to back, and the build that goes first alternates
# from round to round, so slow drift of the machine affects both alike.  The
# summary is a Markdown table of medians, spreads and new/old ratios.  See
# bench/README.md.
#
# usage: bench/compare_builds.sh [-r ROUNDS] [-c PATTERN] [-o CSV] [-t SECONDS] [-a CPUS] OLD_BUILD NEW_BUILD
#        (the options may also follow the build directories)
#   OLD_BUILD, NEW_BUILD  tops of two configured and built pscomm trees, each
#                with tools/ps_comm_run, examples/pingpong, examples/allreduce
#   -r ROUNDS    rounds (default 7, at least 5)
#   -c PATTERN   only the cases whose label matches this extended regular
#                expression, e.g. 'allreduce shm n=[24] 16 MiB', to run a
#                flagged case again with more rounds
#   -o CSV       raw samples (default bench/results/compare-DATE/samples.csv);
#                the summary goes to CSV with .md in place of .csv, and the
#                output of every run to the directory CSV with .logs
#   -t SECONDS   limit per run, passed to ps_comm_run --timeout (default 60)
#   -a CPUS      run every job under taskset -c CPUS, e.g. -a 0 to put all
#                ranks on one core, where every wait hands the core over
#                and a protocol's extra round trip shows plainly
#
# Exit status: 0 when every run succeeded, 1 when a run failed (its stderr
# is shown, and that case is dropped for the remaining rounds), 2 for bad
# usage or a build that lacks a program.  Environment variables reach the
# ranks of both builds, e.g. PS_COMM_SPIN_US=0.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/mpi_common.sh disable=SC1091
. "$here/mpi_common.sh"

usage() { sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "compare_builds: $*" >&2; exit 2; }

invocation=("$0" "$@")
ROUNDS=7
RUN_TIMEOUT=60
csv=""
pattern=""
cpus=""
dirs=()
while [[ $# -gt 0 ]]; do
    case $1 in
    -r|-o|-t|-c|-a) [[ $# -ge 2 ]] || die "$1 needs a value"
        case $1 in
        -r) ROUNDS=$2 ;; -o) csv=$2 ;; -t) RUN_TIMEOUT=$2 ;; -c) pattern=$2 ;;
        -a) cpus=$2 ;;
        esac
        shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; dirs+=("$@"); break ;;
    -*) echo "compare_builds: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) dirs+=("$1"); shift ;;
    esac
done
set -- "${dirs[@]}"
[[ $# -eq 2 ]] || { usage >&2; exit 2; }
if [[ ! $ROUNDS =~ ^[0-9]+$ ]] || ((10#$ROUNDS < 5)); then
    die "-r needs a whole number of at least 5 (got '$ROUNDS'): fewer rounds give no usable median and spread"
fi
ROUNDS=$((10#$ROUNDS))
if [[ ! $RUN_TIMEOUT =~ ^[0-9]+([.][0-9]+)?$ ]] ||
   awk -v t="$RUN_TIMEOUT" 'BEGIN { exit !(t + 0 == 0) }'; then
    die "-t needs a positive number of seconds (got '$RUN_TIMEOUT')"
fi
if [[ -n $cpus ]] && ! taskset -c "$cpus" true 2>/dev/null; then
    die "-a needs a CPU list that taskset accepts here (got '$cpus')"
fi

declare -A builds
have_pscomm=0
for which in old new; do
    build=$1
    shift
    [[ -d $build ]] || die "$which build '$build' is not a directory"
    build=$(cd "$build" && pwd)
    for prog in pingpong allreduce; do
        find_pscomm "$prog"
        [[ $have_pscomm == 1 ]] || die "$which build $build is not built"
    done
    builds[$which]=$build
done

if [[ -z $csv ]]; then
    csv=$here/results/compare-$(date +%Y%m%d-%H%M%S)/samples.csv
fi
base=${csv%.csv}
logdir=$base.logs
summary=$base.md
mkdir -p "$(dirname "$csv")" "$logdir" || die "cannot create $logdir"
: >"$csv" || die "cannot write $csv"

# The cases: program, provider, ranks, size in bytes and -i.  pingpong's -i
# counts iterations up to 64 KiB and is scaled by 64 KiB/size above
# (examples/pingpong.c), so the 1 MiB cases run a sixteenth of it; each
# pingpong run also streams about as many messages for its bandwidth
# column.  The counts keep a run between 1 and 2 s on 2 cores: shorter runs
# spread much more from run to run (allreduce on 4 ranks at 64 KiB: 22% at
# 1000 calls, 5% at 4000), and a default run takes 4 to 6 minutes.
cases=(
    "pingpong  tcp 2 8        50000"
    "pingpong  tcp 2 4096     25000"
    "pingpong  tcp 2 1048576  8000"
    "pingpong  tcp 2 4194304  16000"
    "pingpong  tcp 2 16777216 32000"
    "pingpong  net 2 8        50000"
    "pingpong  net 2 4096     25000"
    "pingpong  net 2 16384    25000"
    "pingpong  net 2 65536    10000"
    "pingpong  net 2 1048576  8000"
    "pingpong  net 2 4194304  16000"
    "pingpong  shm 2 8        300000"
    "pingpong  shm 2 4096     150000"
    "pingpong  shm 2 1048576  40000"
    "allreduce shm 2 65536    10000"
    "allreduce shm 2 1048576  1000"
    "allreduce shm 2 16777216 100"
    "allreduce shm 4 65536    4000"
    "allreduce shm 4 1048576  400"
    "allreduce shm 4 16777216 50"
    "allreduce shm 3 4194304  100"
    "allreduce tcp 2 65536    4000"
    "allreduce tcp 4 1048576  200"
)

human_size() {
    local b=$1
    if ((b >= 1048576 && b % 1048576 == 0)); then echo "$((b / 1048576)) MiB"
    elif ((b >= 1024 && b % 1024 == 0)); then echo "$((b / 1024)) KiB"
    else echo "$b B"; fi
}

# Split case $1 into prog, prov, nranks, size, iters, and set id (for file
# names), label (for the table), metric and col (its CSV column).
parse_case() {
    read -r prog prov nranks size iters <<<"${cases[$1]}"
    id=$prog-$prov-n$nranks-$size
    label="$prog $prov n=$nranks $(human_size "$size")"
    metric=latency_us col=2
    [[ $prog == allreduce ]] && metric=time_us col=6
}

# Keep only the cases whose label matches -c's pattern.
if [[ -n $pattern ]]; then
    kept=()
    for c in "${!cases[@]}"; do
        parse_case "$c"
        [[ $label =~ $pattern ]] && kept+=("${cases[$c]}")
    done
    [[ ${#kept[@]} -gt 0 ]] || die "-c '$pattern' matches no case"
    cases=("${kept[@]}")
fi

# Fill the global array `cmd` to run case $1 on build directory $2.
case_cmd() {
    parse_case "$1"
    cmd=("$2/tools/ps_comm_run" -n "$nranks" --provider "$prov"
         --timeout "$RUN_TIMEOUT" -- "$2/examples/$prog"
         -m "$size" -M "$size" -i "$iters" --csv)
    [[ -z $cpus ]] || cmd=(taskset -c "$cpus" "${cmd[@]}")
}

# Run `cmd` with output to $1.csv / $1.err and print column $3 of the row
# for size $2.  The outer timeout only guards against a launcher that hangs
# itself.  Returns non-zero, after reporting the run as $4, when the run
# failed or printed no such row.
run_cmd() {
    local out=$1 sz=$2 c=$3 what=$4 rc=0 val
    timeout -k 5 "$(awk -v t="$RUN_TIMEOUT" 'BEGIN { print int(t) + 30 }')" \
        "${cmd[@]}" >"$out.csv" 2>"$out.err" || rc=$?
    val=$(awk -F, -v s="$sz" -v c="$c" \
        '$1 == s && $c ~ /^[0-9]+([.][0-9]+)?$/ { print $c; exit }' "$out.csv")
    if [[ $rc -ne 0 || -z $val ]]; then
        report_failed "$what" "$rc" 0 "$out"
        [[ $rc -eq 0 ]] && tail -n 5 "$out.csv" | sed 's/^/     > /'
        show_cmd "${cmd[@]}"
        return 1
    fi
    echo "$val"
}

t_start=$(date +%s)
show_cmd "${invocation[@]}"
say ""
say "== compare_builds: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), $(nproc) cores, $ROUNDS rounds"
for which in old new; do
    rev=$(git -C "${builds[$which]}" describe --always --dirty 2>/dev/null || echo "not a git tree")
    say "   $which: ${builds[$which]} ($rev)"
done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
say "   load average: $load0 (other work on the machine widens the spread)"
say "   raw samples: $csv"
say "   run output:  $logdir"
say "-- commands (OLD; NEW runs the same with its own directory):"
for c in "${!cases[@]}"; do
    case_cmd "$c" "${builds[old]}"
    show_cmd "${cmd[@]}"
done

# One short untimed run of each program per build: libtool relinks the
# examples on first use, and a broken build fails here, before the rounds.
say "-- warm-up"
for which in old new; do
    d=${builds[$which]}
    cmd=("$d/tools/ps_comm_run" -n 2 --provider shm --timeout "$RUN_TIMEOUT" --
         "$d/examples/pingpong" -m 8 -M 8 -i 10 -w 1 --csv)
    run_cmd "$logdir/warmup-pingpong.$which" 8 2 "warm-up pingpong $which" >/dev/null || exit 1
    cmd=("$d/tools/ps_comm_run" -n 2 --provider shm --timeout "$RUN_TIMEOUT" --
         "$d/examples/allreduce" -m 4096 -M 4096 -i 2 --csv)
    run_cmd "$logdir/warmup-allreduce.$which" 4096 6 "warm-up allreduce $which" >/dev/null || exit 1
done

echo "round,case,program,provider,ranks,size_bytes,metric,build,order,value" >"$csv"
declare -A dropped
failed=0
for ((r = 1; r <= ROUNDS; r++)); do
    order=(old new)
    ((r % 2 == 0)) && order=(new old)
    t0=$SECONDS
    for c in "${!cases[@]}"; do
        [[ -n ${dropped[$c]:-} ]] && continue
        for pos in 0 1; do
            which=${order[$pos]}
            case_cmd "$c" "${builds[$which]}"
            if ! val=$(run_cmd "$logdir/$id.$which.$r" "$size" "$col" \
                               "round $r $label $which"); then
                printf '%s\n' "$val"
                failed=$((failed + 1))
                dropped[$c]="round $r, $which"
                say "   $label: dropped from the remaining rounds"
                break
            fi
            echo "$r,$id,$prog,$prov,$nranks,$size,$metric,$which,$((pos + 1)),$val" >>"$csv"
        done
    done
    say "   round $r/$ROUNDS (${order[0]} first): $((SECONDS - t0)) s"
done

# -------------------------------------------------------------- summary ----
# The samples of case id $1 on build $2, one a line.
samples() { awk -F, -v id="$1" -v b="$2" '$2 == id && $8 == b { print $10 }' "$csv"; }

# "median (min–max)" of the numbers on stdin, "-" when there are none.
spread() {
    local v med
    v=$(sort -g)
    [[ -z $v ]] && { echo "-"; return; }
    med=$(median_of %.3f <<<"$v")
    echo "$med ($(head -n 1 <<<"$v")–$(tail -n 1 <<<"$v"))"
}

{
    say ""
    show_cmd "${invocation[@]}" | sed 's/^/  /'
    say ""
    say "old: ${builds[old]}; new: ${builds[new]}; $ROUNDS rounds; times in µs, lower is better;"
    say "load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    say ""
    say "| case | metric | old median (min–max) | new median (min–max) | new/old | ≤ 1.05 |"
    say "|---|---|---|---|---|---|"
    for c in "${!cases[@]}"; do
        parse_case "$c"
        mo=$(samples "$id" old | median_of %.3f)
        mn=$(samples "$id" new | median_of %.3f)
        q=$(awk -v a="$mn" -v b="$mo" 'BEGIN {
            if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.3f\n", a / b }')
        ok=$(awk -v q="$q" 'BEGIN { print (q == "-" ? "-" : q + 0 <= 1.05 ? "yes" : "no") }')
        [[ -n ${dropped[$c]:-} ]] && ok="failed (${dropped[$c]})"
        say "| $label | $metric | $(samples "$id" old | spread) | $(samples "$id" new | spread) | $q | $ok |"
    done
} | tee "$summary"
say ""
say "== done in $(( $(date +%s) - t_start )) s; $failed failed run(s)"
say "   samples in $csv, table in $summary"
[[ $failed -eq 0 ]]
