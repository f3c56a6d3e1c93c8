# report_lib.sh - statistics, tables and plots for bench/run, and the
# ratio comparison of bench/check.  Sourced; not run.  Works on the files
# in $OUT that run_lib.sh writes (see its header for the system names).
#
#   all.csv      kind,group,system,ranks,round,size_bytes,metric,value
#   medians.csv  kind,group,system,ranks,metric,size_bytes,median,min,max,runs
#   ratios.csv   kind,group,ranks,metric,size_bytes,peer,ratio,better
#                ratio = pscomm's median / the peer's; better says which
#                way is good (lower for times, higher for bandwidths)

# collect: every normalised sample under $OUT/raw as all.csv.
collect() {
    echo "kind,group,system,ranks,round,size_bytes,metric,value"
    local f
    for f in "$OUT"/raw/*.csv; do
        [[ -s $f ]] || continue
        awk -F, -v name="$(basename "$f" .csv)" 'BEGIN {
                n = split(name, p, ".")
                sys = p[1] "," p[2] "," p[3]
                ranks = substr(p[n - 1], 2); round = substr(p[n], 2) }
            NF == 3 { print sys "," ranks "," round "," $0 }' "$f"
    done
}

# medians: all.csv on stdin -> medians.csv on stdout (median, min, max and
# the number of rounds of every system, rank count, metric and size).
medians() {
    echo "kind,group,system,ranks,metric,size_bytes,median,min,max,runs"
    tail -n +2 | sort -t, -k1,1 -k2,2 -k3,3 -k4,4n -k7,7 -k6,6n -k8,8g |
        awk -F, '
        function flush() {
            if (n == 0) return
            med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            printf "%s,%.6g,%.6g,%.6g,%d\n", key, med, v[1], v[n], n
            n = 0
        }
        { k = $1 "," $2 "," $3 "," $4 "," $7 "," $6
          if (k != key) { flush(); key = k }
          v[++n] = $8 }
        END { flush() }'
}

# ratios: medians.csv on stdin -> ratios.csv: pscomm against every other
# system measured at the same kind, group, rank count, metric and size.
ratios() {
    echo "kind,group,ranks,metric,size_bytes,peer,ratio,better"
    tail -n +2 | awk -F, '$1 != "ref" {
            k = $1 "," $2 "," $4 "," $5 "," $6
            if ($3 == "pscomm") ps[k] = $7; else { peer[k] = peer[k] " " $3; m[k, $3] = $7 } }
        END { for (k in ps) { n = split(peer[k], q, " ")
                for (i = 1; i <= n; i++) if (m[k, q[i]] > 0) {
                    split(k, f, ",")
                    printf "%s,%s,%.4g,%s\n", k, q[i], ps[k] / m[k, q[i]],
                        f[4] ~ /_us$/ ? "lower" : "higher" } } }' |
        sort -t, -k1,1 -k2,2 -k3,3n -k4,4 -k5,5n -k6,6
}

# ------------------------------------------------------------------ tables --

# md_table KIND GROUP RANKS METRIC "SIZES" "SYSTEMS": a Markdown table of
# medians [min-max], one row per size, one column per system (NAMEs), and
# after them one column per peer with pscomm's ratio to it.
md_table() {
    awk -F, -v kind="$1" -v group="$2" -v ranks="$3" -v metric="$4" \
        -v sizes="$5" -v systems="$6" '
        function human(s,   u, i) { split("B KiB MiB GiB", u, " "); i = 1
            while (s >= 1024 && s % 1024 == 0 && i < 4) { s /= 1024; i++ }
            return s " " u[i] }
        function num(x) {
            if (x >= 100) return sprintf("%.0f", x)
            if (x >= 10) return sprintf("%.1f", x)
            return sprintf("%.3g", x) }
        $1 == kind && $2 == group && $4 == ranks && $5 == metric {
            med[$6, $3] = $7; lo[$6, $3] = $8; hi[$6, $3] = $9; seen[$3] = 1 }
        END {
            ns = split(sizes, sz, " "); nc = split(systems, c, " ")
            hdr = "| size |"; rule = "|---:|"
            for (i = 1; i <= nc; i++) if (seen[c[i]]) { hdr = hdr " " c[i] " |"; rule = rule "---:|" }
            for (i = 1; i <= nc; i++) if (seen[c[i]] && c[i] != "pscomm" && seen["pscomm"]) {
                hdr = hdr " pscomm/" c[i] " |"; rule = rule "---:|" }
            print hdr; print rule
            for (j = 1; j <= ns; j++) {
                s = sz[j]; row = "| " human(s) " |"; any = 0
                for (i = 1; i <= nc; i++) if (seen[c[i]]) {
                    if ((s, c[i]) in med) { any = 1
                        row = row " " num(med[s, c[i]]) " [" num(lo[s, c[i]]) "-" num(hi[s, c[i]]) "] |" }
                    else row = row " - |" }
                for (i = 1; i <= nc; i++) if (seen[c[i]] && c[i] != "pscomm" && seen["pscomm"]) {
                    if ((s, "pscomm") in med && (s, c[i]) in med && med[s, c[i]] > 0)
                        row = row " " sprintf("%.2f", med[s, "pscomm"] / med[s, c[i]]) " |"
                    else row = row " - |" }
                if (any) print row }
        }' "$OUT/medians.csv"
}

# names_of KIND GROUP: the NAMEs of SYSTEMS of that kind and group, in order.
names_of() {
    local s out=""
    for s in "${SYSTEMS[@]}"; do
        [[ $s == "$1.$2."* ]] && out+="${s##*.} "
    done
    echo "${out% }"
}

# legend KIND GROUP: "NAME: label" lines for the systems of a table.
legend() {
    local n
    for n in $(names_of "$1" "$2"); do echo "- \`$n\`: $(sys_label "$1.$2.$n")"; done
}

# pick_sizes "WANTED" "PRESENT": the sizes of WANTED that PRESENT has.
pick_sizes() {
    local s out=""
    for s in $1; do [[ " $2 " == *" $s "* ]] && out+="$s "; done
    echo "${out% }"
}

# The targets of the performance work, as
# "kind group ranks metric size peer limit what": pscomm / peer must be at
# most (times) or at least (bandwidths) limit.
TARGETS="\
p2p shm 2 latency_us 8 fi_pingpong 1.3 shm 8 B latency within 1.3x libfabric's floor
p2p shm 2 latency_us 8 ompi_native 2.0 shm 8 B latency within 2x Open MPI vader
p2p tcp 2 latency_us 8 fi_pingpong 1.15 tcp 8 B latency within 1.15x libfabric's floor
p2p tcp 2 latency_us 4096 fi_pingpong 1.15 tcp 4 KiB latency within 1.15x libfabric's floor
p2p tcp 2 latency_us 1048576 zmq 1.0 tcp 1 MiB latency at or below ZeroMQ
p2p tcp 2 latency_us 4096 zmq 1.0 tcp 4 KiB latency below ZeroMQ (lead kept)
p2p shm 2 bandwidth_MBps 1048576 ompi_native 1.0 shm 1 MiB bandwidth above vader (lead kept)
p2p shm 2 bandwidth_MBps 4194304 ompi_native 1.0 shm 4 MiB bandwidth above vader (lead kept)
p2p tcp 2 bandwidth_MBps 4194304 ompi_ofi 1.0 tcp 4 MiB bandwidth above Open MPI over tcp (lead kept)
p2p net 2 latency_us 8 fi_pingpong 1.15 net 8 B latency within 1.15x libfabric's floor
p2p net 2 latency_us 4096 fi_pingpong 1.15 net 4 KiB latency within 1.15x libfabric's floor
p2p net 2 latency_us 1048576 zmq 1.0 net 1 MiB latency at or below ZeroMQ (tcp://)
p2p net 2 latency_us 4096 zmq 1.0 net 4 KiB latency below ZeroMQ (tcp://)
p2p net 2 latency_us 4096 ompi_native 1.0 net 4 KiB latency below Open MPI's tcp BTL
allreduce shm 2 time_us 65536 ompi_native 1.2 allreduce 2 ranks 64 KiB within 1.2x vader
allreduce shm 2 time_us 1048576 ompi_native 1.2 allreduce 2 ranks 1 MiB within 1.2x vader
allreduce shm 4 time_us 65536 ompi_native 1.2 allreduce 4 ranks 64 KiB within 1.2x vader
allreduce shm 4 time_us 1048576 ompi_native 1.2 allreduce 4 ranks 1 MiB within 1.2x vader
allreduce shm 2 time_us 67108864 ompi_native 1.0 allreduce 2 ranks 64 MiB below vader (lead kept)
allreduce shm 4 time_us 67108864 ompi_native 1.0 allreduce 4 ranks 64 MiB below vader (lead kept)"

# targets_table: each target met or missed, from ratios.csv (rows whose
# figures this run did not measure are left out).
targets_table() {
    echo "| target | pscomm/peer | limit | |"
    echo "|---|---:|---:|---|"
    local kind group ranks metric size peer limit what row
    while read -r kind group ranks metric size peer limit what; do
        # ratios.csv's own "better" column says which way the limit cuts.
        row=$(awk -F, -v k="$kind,$group,$ranks,$metric,$size,$peer" -v l="$limit" \
            'index($0, k ",") == 1 { ok = ($8 == "lower") ? $7 <= l : $7 >= l
                printf "%s | %s | %s", $7, l, ok ? "met" : "**missed**" }' "$OUT/ratios.csv")
        [[ -n $row ]] || continue
        echo "| $what | $row |"
    done <<<"$TARGETS"
}

# summary: summary.md for the run in $OUT.
summary() {
    local g n names sizes present
    echo "# pscomm beside its peers: $(date -u +%F)"
    echo
    echo "Made by \`bench/run$([[ $QUICK == 1 ]] && echo " --quick")\` (rounds: $RUNS)."
    echo "Each cell is the median of the rounds, with [min-max]. Every round ran every"
    echo "system once, in the order listed, so machine drift hits them alike. Ratios"
    echo "are pscomm's median over the peer's: below 1 is better for times, above 1"
    echo "for bandwidths. The exact commands are in \`commands.txt\`."
    echo
    echo '```'
    cat "$OUT/env.txt"
    echo '```'
    echo
    echo "## Targets"
    echo
    targets_table
    for g in $(groups_of p2p); do
        names=$(names_of p2p "$g")
        present=$(sizes_of p2p "$g")
        echo
        echo "## Point-to-point over $g"
        echo
        legend p2p "$g"
        echo
        echo "![$g point-to-point](p2p_$g.png)"
        echo
        echo "Latency (half round trip), µs:"
        echo
        md_table p2p "$g" 2 latency_us "$(pick_sizes "1 8 64 512 4096 65536 1048576 16777216" "$present")" "$names"
        echo
        echo "Bandwidth (64-message window), MB/s (fi_pingpong measures no stream):"
        echo
        md_table p2p "$g" 2 bandwidth_MBps "$(pick_sizes "4096 65536 1048576 4194304 16777216" "$present")" "$names"
    done
    if [[ -n $(groups_of allreduce) ]]; then
        names=$(names_of allreduce shm)
        present=$(sizes_of allreduce shm)
        sizes=$(pick_sizes "4096 65536 1048576 16777216 67108864 268435456" "$present")
        echo
        echo "## Allreduce on one host (float32 sum)"
        echo
        legend allreduce shm
        for n in $NRANKS; do
            echo
            echo "### $n ranks"
            echo
            echo "![allreduce $n ranks](allreduce_n$n.png)"
            echo
            echo "Time per call (slowest rank), µs:"
            echo
            md_table allreduce shm "$n" time_us "$sizes" "$names"
        done
    fi
    if [[ " $PARTS " == *" refs "* ]]; then
        echo
        echo "## Physical references"
        echo
        legend ref shm
        legend ref tcp
        echo
        echo "memcpy, MB/s:"
        echo
        md_table ref shm 1 copy_MBps "$(pick_sizes "65536 1048576 16777216 268435456" "$(sizes_of ref shm)")" memcpy
        if [[ -n $(sizes_of ref tcp) ]]; then
            echo
            echo "iperf3 over loopback: $(awk -F, '$3 == "iperf3" { printf "%s MB/s [%s-%s]", $7, $8, $9 }' "$OUT/medians.csv")"
        fi
    fi
}

# groups_of KIND: the groups with samples of that kind, in SYSTEMS order.
groups_of() {
    local s g out=" "
    for s in "${SYSTEMS[@]}"; do
        [[ $s == "$1".* ]] || continue
        g=${s#*.} g=${g%%.*}
        grep -q "^$1,$g," "$OUT/medians.csv" && [[ $out != *" $g "* ]] && out+="$g "
    done
    echo $out
}

# sizes_of KIND GROUP: the sizes measured for that kind and group.
sizes_of() {
    awk -F, -v k="$1" -v g="$2" '$1 == k && $2 == g { print $6 }' "$OUT/medians.csv" |
        sort -un | tr '\n' ' '
}

# ------------------------------------------------------------------- plots --

# plot_data KIND GROUP RANKS METRIC NAME: "size median min max" rows.
plot_data() {
    awk -F, -v k="$1" -v g="$2" -v n="$3" -v m="$4" -v s="$5" \
        '$1 == k && $2 == g && $4 == n && $5 == m && $3 == s && $6 > 0 {
            print $6, $7, $8, $9 }' "$OUT/medians.csv"
}

# plot_panel KIND GROUP RANKS METRIC TITLE YLABEL: one gnuplot panel with a
# line per system (median, with min-max bars); data files go to $OUT/plot.
plot_panel() {
    local kind=$1 group=$2 ranks=$3 metric=$4 name f sep="plot"
    echo "set title '$5'; set ylabel '$6'"
    for name in $(names_of "$kind" "$group"); do
        f="$OUT/plot/$kind.$group.$name.n$ranks.$metric.dat"
        plot_data "$kind" "$group" "$ranks" "$metric" "$name" >"$f"
        [[ -s $f ]] || continue
        printf "%s '%s' using 1:2:3:4 with yerrorlines title '%s'" "$sep" "$f" "$name"
        sep=", \\"$'\n'"    "
    done
    echo
}

# plots: one PNG per p2p group (latency, bandwidth) and per allreduce rank
# count (time, busbw), log scales; skipped with a message without gnuplot.
plots() {
    command -v gnuplot >/dev/null || { say "!! gnuplot missing: no plots"; return 0; }
    mkdir -p "$OUT/plot"
    local g n gp
    for g in $(groups_of p2p); do
        gp="$OUT/plot/p2p_$g.gp"
        { plot_head "$OUT/p2p_$g.png" "point-to-point over $g, 2 ranks"
          plot_panel p2p "$g" 2 latency_us "latency (half round trip)" "µs"
          plot_panel p2p "$g" 2 bandwidth_MBps "bandwidth (64-message window)" "MB/s"
          echo "unset multiplot"; } >"$gp"
        gnuplot "$gp" 2>>"$OUT/plot/gnuplot.err" || say "!! gnuplot failed on $gp"
    done
    [[ -n $(groups_of allreduce) ]] || return 0
    for n in $NRANKS; do
        gp="$OUT/plot/allreduce_n$n.gp"
        { plot_head "$OUT/allreduce_n$n.png" "allreduce float32 sum, $n ranks on one host"
          plot_panel allreduce shm "$n" time_us "time per call" "µs"
          plot_panel allreduce shm "$n" busbw_GBps "bus bandwidth" "GB/s"
          echo "unset multiplot"; } >"$gp"
        gnuplot "$gp" 2>>"$OUT/plot/gnuplot.err" || say "!! gnuplot failed on $gp"
    done
}

# plot_head PNG TITLE: the gnuplot preamble of a two-panel figure.
plot_head() {
    cat <<EOF
set terminal pngcairo noenhanced size 1400,560 font ",10"
set output '$1'
set multiplot layout 1,2 title '$2'
set logscale xy 2
set format x "%.0b%B"
set format y "%g"
set xlabel 'message size (bytes; Ki = 1024)'
set grid
set key left top
EOF
}

# ------------------------------------------------------------------ check ---

# compare_ratios OLD NEW: print every ratio of NEW (ratios.csv) that got
# worse than in OLD by more than 10 %; returns 1 when there is one.
compare_ratios() {
    awk -F, 'FNR == 1 { next }
        NR == FNR { old[$1 "," $2 "," $3 "," $4 "," $5 "," $6] = $7; next }
        { k = $1 "," $2 "," $3 "," $4 "," $5 "," $6
          if (!(k in old) || old[k] <= 0 || $7 <= 0) next
          both++
          worse = ($8 == "lower") ? $7 / old[k] : old[k] / $7
          if (worse > 1.10) { bad++
              printf "WORSE %5.1f%%  %s pscomm/%s %s at %s B, %d ranks: %s -> %s\n",
                  (worse - 1) * 100, $2, $6, $4, $5, $3, old[k], $7 } }
        END { printf "%d ratios compared, %d worse by more than 10%%\n", both, bad
              exit bad > 0 }' "$1" "$2"
}
