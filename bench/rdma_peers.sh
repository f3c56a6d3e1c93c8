#!/bin/bash
# bench/rdma_peers.sh: pscomm's pingpong over verbs;ofi_rxm between the two
# guests of the RDMA rig (tests/rdma/rig.sh), against libfabric's own
# fi_pingpong on the same provider (the floor), Open MPI's pml cm with
# mtl ofi on the same provider, and MPICH over UCX (Debian's MPICH is
# ch4:ucx; rxe only: UCX has no iWARP transport), alternating them in
# every round.
#
#	bench/rdma_peers.sh [-d "rxe siw"] [-r ROUNDS] [-s "8 4096 65536"]
#			    [-i ITERS] [-o DIR]
#
# Under software emulation a round trip takes milliseconds, so the figures
# say how pscomm's protocol compares with its peers on the same device and
# wire, not what the device can do. Per device and size: the median, min
# and max of each system's latency (half a round trip, us) over the
# rounds, and pscomm's median over each peer's. Needs the build tree
# (examples/pingpong), bench/mpi_pingpong built with mpicc (this script
# builds it into DIR), and what tests/rdma needs; run it from the build
# tree. libfabric's default FI_UNIVERSE_SIZE makes rxm's connection CQ
# larger than rxe allows, so the peers get FI_UNIVERSE_SIZE=2, as pscomm
# sets for itself. Writes DIR/raw.csv (device,size,system,round,latency_us) and
# DIR/summary.md (default DIR: bench/results/rdma-peers).

set -u
top=$(cd "$(dirname "$0")/.." && pwd)
devices="rxe siw"
rounds=5
sizes="8 4096 65536"
iters=50
out=bench/results/rdma-peers
while getopts d:r:s:i:o: opt; do
	case $opt in
	d) devices=$OPTARG ;;
	r) rounds=$OPTARG ;;
	s) sizes=$OPTARG ;;
	i) iters=$OPTARG ;;
	o) out=$OPTARG ;;
	*) exit 2 ;;
	esac
done
# shellcheck source=../tests/rdma/rig.sh
. "$top/tests/rdma/rig.sh"
rig_require
rig_prepare || exit 1
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(pwd)
mpi=
if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
	mpicc -O2 -o "$out/mpi_pingpong" "$top/bench/mpi_pingpong.c" 2>/dev/null; then
	mpi=$out/mpi_pingpong
else
	echo "rdma_peers: no mpicc/mpirun: Open MPI left out" >&2
fi
mpich=
if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null &&
	mpicc.mpich -O2 -o "$out/mpich_pingpong" "$top/bench/mpi_pingpong.c" 2>/dev/null; then
	mpich=$out/mpich_pingpong
else
	echo "rdma_peers: no mpicc.mpich/mpirun.mpich: MPICH left out" >&2
fi
raw=$out/raw.csv
echo "device,size,system,round,latency_us" >"$raw"
port=$((31000 + $$ % 1000))
prov='verbs;ofi_rxm'

# run_fi SIZE: fi_pingpong, server in guest 0, client in guest 1; prints
# its usec/xfer.
run_fi() {
	local n=fi$((port += 1))
	rig_start 0 "$n.s" "export FI_UNIVERSE_SIZE=2; exec fi_pingpong -p '$prov' -e rdm -S $1 -I $iters -B $port"
	# The client retries until the server listens (its start takes
	# seconds under emulation).
	rig_start 1 "$n.c" "export FI_UNIVERSE_SIZE=2; for t in \$(seq 60); do
		fi_pingpong -p '$prov' -e rdm -S $1 -I $iters -P $port ${RIG_IP[0]} && exit 0
		sleep 1; done; exit 1"
	rig_wait 1 "$n.c" 300 || return 1
	rig_wait 0 "$n.s" 30
	awk '$1 ~ /^[0-9]/ && NF >= 7 { v = $7 } END { if (v == "") exit 1; print v }' \
		"$RIG_DIR/g1/$n.c.out"
}

# run_ps SIZE: pscomm's pingpong, rank 0 in guest 0; prints latency_us.
run_ps() {
	local n=ps$((port += 1)) env
	env="export FI_PROVIDER='$prov' PS_COMM_ROOT=${RIG_IP[0]}:$port PS_COMM_SIZE=2 PS_COMM_JOB_KEY=rdma-peers"
	rig_start 0 "$n.0" "$env PS_COMM_RANK=0; exec $build/examples/pingpong -m $1 -M $1 -i $iters -w 5 --csv"
	rig_start 1 "$n.1" "$env PS_COMM_RANK=1; exec $build/examples/pingpong -m $1 -M $1 -i $iters -w 5 --csv"
	rig_wait 0 "$n.0" 300 || return 1
	rig_wait 1 "$n.1" 30
	awk -F, '$1 ~ /^[0-9]+$/ { print $2 }' "$RIG_DIR/g0/$n.0.out"
}

# run_mpi SIZE: Open MPI (pml cm, mtl ofi on the same provider), started
# by mpirun in guest 0 with rig-rsh as its remote shell.
run_mpi() {
	local n=mpi$((port += 1))
	rig_start 0 "$n" "export OMPI_MCA_plm_rsh_agent=$top/tests/rdma/rig-rsh \
		OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0; \
		exec mpirun --allow-run-as-root -np 2 --host node0,node1 \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include '$prov' \
		-x FI_PROVIDER='$prov' -x FI_UNIVERSE_SIZE=2 $mpi -m $1 -M $1 -i $iters -w 5 --csv"
	rig_wait 0 "$n" 300 || return 1
	awk -F, '$1 ~ /^[0-9]+$/ { print $2 }' "$RIG_DIR/g0/$n.out"
}

# run_mpich SIZE: MPICH over UCX's RC transport on the device, started
# by hydra in guest 0 with rig-rsh as its remote shell.
run_mpich() {
	local n=mpich$((port += 1))
	rig_start 0 "$n" "exec mpirun.mpich -launcher rsh \
		-launcher-exec $top/tests/rdma/rig-rsh -iface eth0 \
		-hosts node0,node1 -np 2 -env UCX_NET_DEVICES ${RIG_DEV}0:1 \
		-env UCX_TLS rc,self $mpich -m $1 -M $1 -i $iters -w 5 --csv"
	rig_wait 0 "$n" 300 || return 1
	awk -F, '$1 ~ /^[0-9]+$/ { print $2 }' "$RIG_DIR/g0/$n.out"
}

for dev in $devices; do
	rig_boot "$dev" || exit 1
	systems="ps fi"
	[ -n "$mpi" ] && systems="$systems mpi"
	[ -n "$mpich" ] && [ "$dev" = rxe ] && systems="$systems mpich"
	for ((r = 1; r <= rounds; r++)); do
		for size in $sizes; do
			for s in $systems; do
				v=$("run_$s" "$size") || v=
				echo "$dev,$size,$s,$r,${v:-fail}" >>"$raw"
				echo "$dev $size $s round $r: ${v:-failed}"
			done
		done
		# Rotate the order so that no system always runs first.
		set -- $systems
		systems="${*:2} $1"
	done
	rig_shutdown
done

# Summary: median (min-max) per system, pscomm over each peer.
{
	echo "| device | size (B) | pscomm (us) | fi_pingpong (us) | Open MPI (us) | MPICH-UCX (us) | pscomm / fi_pingpong | pscomm / Open MPI | pscomm / MPICH-UCX |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for dev in $devices; do
		for size in $sizes; do
			line="| $dev | $size"
			declare -A med=()
			for s in ps fi mpi mpich; do
				vals=$(awk -F, -v d="$dev" -v z="$size" -v s="$s" \
					'$1 == d && $2 == z && $3 == s && $5 != "fail" { print $5 }' \
					"$raw" | sort -g)
				if [ -z "$vals" ]; then
					line="$line | -"
					med[$s]=
					continue
				fi
				n=$(echo "$vals" | wc -l)
				m=$(echo "$vals" | sed -n "$(((n + 1) / 2))p")
				med[$s]=$m
				line="$line | $m ($(echo "$vals" | head -1)-$(echo "$vals" | tail -1))"
			done
			for s in fi mpi mpich; do
				if [ -n "${med[ps]}" ] && [ -n "${med[$s]}" ]; then
					line="$line | $(awk -v a="${med[ps]}" -v b="${med[$s]}" 'BEGIN { printf "%.2f", a / b }')"
				else
					line="$line | -"
				fi
			done
			echo "$line |"
		done
	done
	echo
	echo "bench/rdma_peers.sh -d \"$devices\" -r $rounds -s \"$sizes\" -i $iters; latency is half a round trip (fi_pingpong's usec/xfer); bandwidth is size over it, so each system's bandwidth ratio is the inverse of its latency ratio"
} >"$out/summary.md"
rm -f "$out/mpi_pingpong" "$out/mpich_pingpong"
cat "$out/summary.md"
