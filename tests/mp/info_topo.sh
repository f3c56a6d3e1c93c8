#!/bin/sh
# Test of `ps_comm_info --topo` and `--topo-xml FILE`: the drawing of
# this machine, of saved hwloc topologies (tests/data/topo), NICs matched
# to a recorded fi_info (tests/data/fi_info) by PCI address and domain
# name, and the errors for a file that is missing or not a topology.
# One "ok" or "not ok" line per check; exit 1 if any check failed.

builddir=${top_builddir:-.}
srcdir=${srcdir:-$(dirname "$0")/../..}
INFO=$builddir/tools/ps_comm_info
DATA=$srcdir/tests/data

. "$srcdir/tests/mp/common.sh"
launcher_scratch info_topo
need_programs "$INFO"

# info ARGS...: run ps_comm_info, keeping $rc, $tmp/out and $tmp/err.
info() {
	"$INFO" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

has() { grep -qF -- "$1" "$tmp/out"; }

info --topo
check "--topo: status 0" [ "$rc" -eq 0 ]
check "--topo: the section and the machine line" \
	grep -Eq '^  Machine: [0-9]+ packages?, [0-9]+ NUMA nodes?, ' "$tmp/out"
check "--topo: every NUMA node's line" \
	grep -Eq '^ +NUMA [0-9]+: ' "$tmp/out"
info
check "without --topo, no drawing" sh -c "! grep -q '^Topology' '$tmp/out'"

info --topo-xml "$DATA/topo/16intel64-manyVFs.xml"
check "--topo-xml: status 0" [ "$rc" -eq 0 ]
check "--topo-xml: the file's machine" \
	has "  Machine: 2 packages, 2 NUMA nodes, 16 cores, 16 PUs"
check "--topo-xml: package 1's NUMA node and its NICs" \
	sh -c "grep -A3 '^  Package 1' '$tmp/out' | tr '\n' '|' |
		grep -qF '  Package 1|    NUMA 1: cores 8-15 (8 PUs: 8-15)|      NIC eth6, usnic_2 (0000:88:00.0)|      NIC eth7 (0000:89:00.0)|'"
check "--topo-xml without --replay: NICs not matched, and why" \
	has "NICs not matched to providers"

info --replay "$DATA/fi_info/verbs-ib-mlx5.txt" \
	--topo-xml "$DATA/topo/32em64t-2n8c2t-pci-normalio.xml"
check "--replay and --topo-xml: status 0" [ "$rc" -eq 0 ]
check "the recorded verbs domain mlx5_0 sits on the mlx5_0 NIC" \
	has "      NIC ib0, mlx5_0 (0000:04:00.0): verbs;ofi_rxd"
check "a NIC no entry uses says so" \
	has "      NIC eth0 (0000:81:00.0): no libfabric entry"

info --topo-xml "$tmp/absent.xml"
check "a missing --topo-xml file: status 1" [ "$rc" -eq 1 ]
check "a missing --topo-xml file is named" grep -q 'absent.xml' "$tmp/err"
info --topo-xml "$DATA/topo/README.md"
check "a file that is no topology: reported in the section" \
	has "  none: $DATA/topo/README.md: cannot use as an hwloc XML topology"

exit $failed
