#!/usr/bin/env bash
# allreduce_scaling.sh - how allreduce time scales with message size and
# rank count, against the alpha-beta model of the algorithm that ran.
#
# usage: bench/allreduce_scaling.sh [-p PROVIDER] [-n "2 4 8"] [-a ALGO]
#                                   [-m MIN] [-M MAX] [-r RUNS] [BUILD_DIR]
#
# For each rank count it runs examples/allreduce (float32 sum) RUNS times,
# takes the median time per size, then fits the model of ALGO by least
# squares over every (n, m) point:
#   ring          T = 2(n-1) a + 2((n-1)/n) m b
#   rd            T = ceil(log2 n) (a + m b)          (+2 steps if n != 2^k)
#   rabenseifner  T = 2 log2(p) a + 2((p-1)/p) m b    (+2 a + 2 m b if n != p)
# (the reduction term g is folded into b), once for all rank counts and once
# per rank count, and prints measured time, both models' times and ratios.
# A per-count alpha or beta that grows with n shows what the model leaves
# out, e.g. more ranks than cores.
set -euo pipefail
prov=tcp ranks="2 4 8" algo=ring min=65536 max=67108864 runs=3
while getopts "p:n:a:m:M:r:" o; do
	case $o in
	p) prov=$OPTARG ;; n) ranks=$OPTARG ;; a) algo=$OPTARG ;;
	m) min=$OPTARG ;; M) max=$OPTARG ;; r) runs=$OPTARG ;;
	*) sed -n '2,16p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-${PSCOMM_BUILD:-.}}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for n in $ranks; do
	for ((r = 1; r <= runs; r++)); do
		cmd=("$build/tools/ps_comm_run" -n "$n" --provider "$prov" --
		     "$build/examples/allreduce" -a "$algo" -m "$min" -M "$max" --csv)
		[ "$r" = 1 ] && echo "# ${cmd[*]}"
		"${cmd[@]}" | awk -F, -v n="$n" 'NR > 1 { print n, $1, $6 }' \
			>>"$out/raw"
	done
done
python3 - "$algo" "$out/raw" <<'PY'
import math, statistics, sys
algo, path = sys.argv[1], sys.argv[2]
pts = {}
for line in open(path):
    n, m, t = line.split()
    pts.setdefault((int(n), int(m)), []).append(float(t))
def terms(n, m):
    if algo == "ring":
        return 2 * (n - 1), 2 * (n - 1) / n * m
    p = 1 << (n.bit_length() - 1)
    extra = 0 if p == n else 2
    if algo == "rd":
        k = int(math.log2(p)) + extra
        return k, k * m
    k = 2 * int(math.log2(p))
    return k + extra, 2 * (p - 1) / p * m + extra * m
rows = sorted((n, m, statistics.median(ts)) for (n, m), ts in pts.items())
def fit(sel):
    """least squares for t = a*x + b*y over sel, both >= 0"""
    sxx = sxy = syy = sxt = syt = 0.0
    for n, m, t in sel:
        x, y = terms(n, m)
        sxx += x * x; sxy += x * y; syy += y * y; sxt += x * t; syt += y * t
    det = sxx * syy - sxy * sxy
    if det == 0:
        return 0.0, (syt / syy if syy else 0.0)
    return (max((sxt * syy - syt * sxy) / det, 0.0),
            max((syt * sxx - sxt * sxy) / det, 0.0))
a, b = fit(rows)
print("# %s, one model for every rank count: alpha = %.1f us, beta = %.3f ns/byte"
      % (algo, a, b * 1e3))
fits = {}
for n in sorted({r[0] for r in rows}):
    fits[n] = fit([r for r in rows if r[0] == n])
    print("# %d ranks alone: alpha = %.1f us, beta = %.3f ns/byte (%.2f GB/s)"
          % (n, fits[n][0], fits[n][1] * 1e3,
             1e-3 / fits[n][1] if fits[n][1] else float("inf")))
print("%5s %10s %12s %12s %7s %12s %7s" % ("ranks", "bytes", "measured_us",
      "model_us", "ratio", "own_fit_us", "ratio"))
for n, m, t in rows:
    x, y = terms(n, m)
    mod = a * x + b * y
    own = fits[n][0] * x + fits[n][1] * y
    print("%5d %10d %12.1f %12.1f %7.2f %12.1f %7.2f"
          % (n, m, t, mod, t / mod if mod else 0, own, t / own if own else 0))
PY
