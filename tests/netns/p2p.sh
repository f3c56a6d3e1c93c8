#!/bin/bash
# tests/netns/p2p.sh: pscomm point-to-point and collectives across "hosts",
# one network namespace per rank (see README.md).  Needs root; exit 77 (skip) otherwise.
#
#	sudo tests/netns/p2p.sh			# from the build directory
#	NETNS_HOSTS=4 NETNS_VERBOSE=1 tests/netns/p2p.sh
#
# Exit: 0 all passed, 1 any failure, 77 skipped (no privilege, or the pscomm
# binaries were not built so only the namespace plumbing was checked).

# Automake may run *.sh through $(SHELL): make sure this is bash.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/lib.sh" ]; then
	. "$here/lib.sh"
elif [ -n "${srcdir:-}" ] && [ -f "$srcdir/tests/netns/lib.sh" ]; then
	. "$srcdir/tests/netns/lib.sh"
else
	echo "not ok - cannot find tests/netns/lib.sh"
	exit 99
fi

top_builddir=${top_builddir:-.}
PINGPONG=$top_builddir/examples/pingpong
P2P_SUITE=$top_builddir/tests/mp/p2p_suite
ALLREDUCE=$top_builddir/examples/allreduce
COLL_SUITE=$top_builddir/tests/mp/coll_suite
HOSTS=${NETNS_HOSTS:-3}
TMO=${NETNS_TIMEOUT:-120}
export FI_PROVIDER=${FI_PROVIDER:-tcp}
case $HOSTS in '' | *[!0-9]* | 0 | 1)
	echo "not ok - NETNS_HOSTS=$HOSTS: need 2 or more"; exit 99 ;;
esac

failed=0
passed_real=0	# pscomm checks that ran and passed
skipped_real=0	# pscomm checks skipped

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
skip() { echo "ok - $* # SKIP"; }

netns_require

tmp=$(mktemp -d "${TMPDIR:-/tmp}/psc-netns.XXXXXX") || exit 99
netns_exit_hook() { rm -rf "$tmp"; }
# Whatever netns_setup traps, remove $tmp too if we die before it.
trap 'netns_exit_hook' EXIT

links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)

if netns_setup "$HOSTS"; then
	ok "setup: $HOSTS namespaces ${NETNS_NAMES[*]} + $NETNS_SWITCH"
else
	not_ok "setup: $HOSTS namespaces"
	exit 1
fi
for ((i = 0; i < NETNS_COUNT; i++)); do
	echo "# ${NETNS_NAMES[i]}: eth0 ${NETNS_IP4[i]} ${NETNS_IP6[i]:-(no IPv6)}"
done

# run NAME LOG TIMEOUT CMD...: netns_run_ranks with output kept in LOG and
# echoed; sets RC.
run() {
	local log=$tmp/$1.log tmo=$2
	shift 2
	netns_run_ranks "$tmo" "$@" >"$log" 2>&1
	RC=$?
	sed 's/^/#   /' "$log"
}

all_ranks() {	# all_ranks TEST: TEST is an arithmetic test on $r
	local i r
	for ((i = 0; i < NETNS_COUNT; i++)); do
		r=${NETNS_RANK_RC[i]:-x}
		[ "$r" = x ] && return 1
		eval "(( $1 ))" || return 1
	done
	return 0
}

# ---------------------------------------------------------------------------
# 1. Plumbing, independent of pscomm.

topo_ok=1
for ((i = 0; i < NETNS_COUNT; i++)); do
	ns=${NETNS_NAMES[i]}
	names=$(ip -n "$ns" -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort | tr '\n' ' ')
	if [ "$names" != "eth0 lo " ]; then
		echo "# $ns has links: $names"
		topo_ok=0
	fi
	addrs=$(ip -n "$ns" -o addr show dev eth0)
	for a in "${NETNS_IP4[i]}/24" ${NETNS_IP6[i]:+"${NETNS_IP6[i]}/64"}; do
		if ! grep -q "inet6\? $a " <<<"$addrs"; then
			echo "# $ns eth0 lacks $a"
			topo_ok=0
		fi
	done
	grep -q tentative <<<"$addrs" && { echo "# $ns: tentative address"; topo_ok=0; }
	ip -n "$ns" -o link show dev eth0 | grep -q 'state UP' ||
		{ echo "# $ns: eth0 not up"; topo_ok=0; }
done
[ "$topo_ok" = 1 ] && ok "topology: each namespace has only lo + eth0, addressed" ||
	not_ok "topology"

# Stand-in for a pscomm program: checks the rank's environment and
# namespace, then rank 0 echoes 256 KiB from every other rank over TCP to
# PS_COMM_ROOT.
read -r -d '' ECHO_PY <<'EOF'
import ipaddress, os, socket, struct, sys, time
env = os.environ
errs = []
def check(cond, msg):
    if not cond:
        errs.append(msg)
rank, size = int(env["PS_COMM_RANK"]), int(env["PS_COMM_SIZE"])
root, fam = env["PS_COMM_ROOT"], env["T_FAMILY"]
ips = env["T_IPS"].split()
host, port = root.rsplit(":", 1)
host = host.strip("[]")
want_root = ("[%s]:%s" if fam == "6" else "%s:%s") % (ips[0], port)
check(size == len(ips), "PS_COMM_SIZE=%d, want %d" % (size, len(ips)))
check(root == want_root, "PS_COMM_ROOT=%s, want %s" % (root, want_root))
check(env.get("FI_PROVIDER") == "tcp", "FI_PROVIDER=%r" % env.get("FI_PROVIDER"))
check(env.get("PS_COMM_T_PASS") == "ps-pass", "PS_COMM_T_PASS not passed")
check(env.get("FI_T_PASS") == "fi-pass", "FI_T_PASS not passed")
check(sorted(os.listdir("/sys/class/net")) == ["eth0", "lo"],
      "links %s" % sorted(os.listdir("/sys/class/net")))
af = socket.AF_INET6 if fam == "6" else socket.AF_INET
def same(a, b):
    return ipaddress.ip_address(a.split("%")[0]) == ipaddress.ip_address(b)
def recvn(c, n):
    b = bytearray()
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError("short read")
        b += d
    return bytes(b)
try:
    if rank == 0:
        s = socket.socket(af, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))  # fails unless we are in namespace 0
        s.listen(size)
        s.settimeout(20)
        seen = set()
        for _ in range(size - 1):
            c, peer = s.accept()
            c.settimeout(20)
            r, n = struct.unpack("!II", recvn(c, 8))
            check(0 < r < size and r not in seen, "bad/duplicate rank %d" % r)
            seen.add(r)
            if 0 < r < size:
                check(same(peer[0], ips[r]), "rank %d came from %s" % (r, peer[0]))
            c.sendall(recvn(c, n))
            c.close()
        print("rank 0 echoed ranks %s" % sorted(seen))
    else:
        deadline = time.time() + 20
        while True:
            try:
                c = socket.create_connection((host, int(port)), timeout=5)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        c.settimeout(20)
        check(same(c.getsockname()[0], ips[rank]),
              "local address %s, want %s" % (c.getsockname()[0], ips[rank]))
        data = os.urandom(256 * 1024)
        c.sendall(struct.pack("!II", rank, len(data)) + data)
        check(recvn(c, len(data)) == data, "echo mismatch")
        print("rank %d: %s -> %s echo ok" % (rank, c.getsockname()[0], root))
except Exception as e:
    errs.append("%s: %s" % (type(e).__name__, e))
for e in errs:
    print("rank %d: FAIL %s" % (rank, e))
sys.exit(1 if errs else 0)
EOF

if command -v python3 >/dev/null 2>&1; then
	export PS_COMM_T_PASS=ps-pass FI_T_PASS=fi-pass
	for fam in 4 6; do
		if [ "$fam" = 6 ] && [ "$NETNS_HAVE_IP6" != 1 ]; then
			skip "plumbing: TCP echo over IPv6 (kernel without IPv6)"
			continue
		fi
		if [ "$fam" = 6 ]; then ips=${NETNS_IP6[*]}; else ips=${NETNS_IP4[*]}; fi
		NETNS_FAMILY=$fam T_FAMILY=$fam T_IPS=$ips \
			run echo$fam 60 python3 -c "$ECHO_PY"
		[ "$RC" = 0 ] && ok "plumbing: TCP echo rank i -> rank 0 over IPv$fam, env checked" ||
			not_ok "plumbing: TCP echo over IPv$fam (status $RC)"
	done
	unset PS_COMM_T_PASS FI_T_PASS
else
	skip "plumbing: TCP echo (no python3)"
fi

# Failure of one rank is reported and returned.
run fail 30 sh -c 'exit $((PS_COMM_RANK == 1 ? 3 : 0))'
want="0 3"
for ((i = 2; i < NETNS_COUNT; i++)); do want+=" 0"; done
[ "$RC" = 3 ] && [ "${NETNS_RANK_RC[*]}" = "$want" ] &&
	grep -q 'rank 1 .* status 3' "$tmp/fail.log" &&
	ok "plumbing: a failing rank is reported (statuses ${NETNS_RANK_RC[*]})" ||
	not_ok "plumbing: failing rank (status $RC, ranks ${NETNS_RANK_RC[*]})"

# A hung rank is killed at the timeout and nothing is left running.
t0=$SECONDS
run hang 2 sh -c 'sleep 60 & sleep 60'
dt=$((SECONDS - t0))
left=
for ns in "${NETNS_NAMES[@]}"; do left+=$(ip netns pids "$ns"); done
[ "$RC" = 124 ] && [ "$dt" -le 10 ] && [ -z "$left" ] &&
	ok "plumbing: hung ranks killed after the timeout (${dt}s, status 124)" ||
	not_ok "plumbing: timeout (status $RC after ${dt}s, left: $left)"

# ---------------------------------------------------------------------------
# 2. pscomm across the namespaces.

if [ -x "$PINGPONG" ]; then
	run pingpong 60 "$PINGPONG" -m 1 -M 65536 -i 50 -w 5 --csv
	log=$tmp/pingpong.log
	hdr='size_bytes,latency_us,bandwidth_MBps'
	who=$(grep -E "^\[[0-9]+\] $hdr\$" "$log" | sed 's/^\[\([0-9]*\)\].*/\1/' | sort -u)
	if [ "$RC" != 0 ]; then
		not_ok "pingpong: exit status $RC (ranks ${NETNS_RANK_RC[*]})"
	elif [ "$(wc -w <<<"$who")" != 1 ]; then
		not_ok "pingpong: header '$hdr' printed by ranks '$who', want one"
	else
		sizes=$(awk -v p="[$who] " -v h="$hdr" '
			index($0, p) != 1 { next }
			{ l = substr($0, length(p) + 1) }
			l == h { on = 1; next }
			on && l ~ /^[0-9]+,[0-9.eE+-]+,[0-9.eE+-]+$/ { split(l, f, ","); print f[1] }
		' "$log" | tr '\n' ' ')
		n=$(wc -w <<<"$sizes")
		first=${sizes%% *}
		last=$(echo $sizes)
		last=${last##* }
		if [ "$n" = 17 ] && [ "$first" = 1 ] && [ "$last" = 65536 ]; then
			ok "pingpong: CSV from rank $who, header + 17 rows (1..65536 B)"
			passed_real=$((passed_real + 1))
		else
			not_ok "pingpong: $n data rows ($sizes), want 17 from 1 to 65536"
		fi
	fi
else
	skip "pingpong: $PINGPONG not built"
	skipped_real=$((skipped_real + 1))
fi

if [ -x "$P2P_SUITE" ]; then
	for fam in 4 6; do
		if [ "$fam" = 6 ] && [ "$NETNS_HAVE_IP6" != 1 ]; then
			skip "p2p_suite over IPv6 (kernel without IPv6)"
			skipped_real=$((skipped_real + 1))
			continue
		fi
		NETNS_FAMILY=$fam run p2p_suite$fam "$TMO" "$P2P_SUITE"
		root=$NETNS_LAST_ROOT
		if [ "$RC" = 0 ]; then
			ok "p2p_suite: $NETNS_COUNT ranks, root $root"
			passed_real=$((passed_real + 1))
		else
			not_ok "p2p_suite: root $root: status $RC (ranks ${NETNS_RANK_RC[*]})"
		fi
	done
else
	skip "p2p_suite: $P2P_SUITE not built (IPv4 and IPv6 root)"
	skipped_real=$((skipped_real + 2))
fi

# Collectives across hosts: the allreduce example checking every element,
# once clean and once with 2% of the packets into one host dropped (the
# tcp provider retransmits; results must stay exact), then the quick
# collectives suite.
# allreduce_ok LOG: exit 0 and every CSV row with 0 errors, 12 rows.
allreduce_ok() {
	[ "$RC" = 0 ] || return 1
	awk -F, 'NF == 9 && $1 ~ /^\[[0-9]+\] [0-9]+$/ {
			rows++; if ($9 != 0) bad++ }
		END { exit !(rows == 12 && bad == 0) }' "$1"
}
if [ -x "$ALLREDUCE" ]; then
	run allreduce "$TMO" "$ALLREDUCE" -m 4 -M 8192 -c --csv
	if allreduce_ok "$tmp/allreduce.log"; then
		ok "allreduce -c: $NETNS_COUNT hosts, 4 B to 8 KiB, 0 wrong elements"
		passed_real=$((passed_real + 1))
	else
		not_ok "allreduce -c: status $RC (ranks ${NETNS_RANK_RC[*]})"
	fi
	netns_loss 1 2
	run allreduce_loss "$TMO" "$ALLREDUCE" -m 4 -M 8192 -c --csv
	netns_loss 1 0
	if allreduce_ok "$tmp/allreduce_loss.log"; then
		ok "allreduce -c with 2% packet loss into host 1: exact"
		passed_real=$((passed_real + 1))
	else
		not_ok "allreduce -c with 2% loss: status $RC (ranks ${NETNS_RANK_RC[*]})"
	fi
else
	skip "allreduce: $ALLREDUCE not built"
	skipped_real=$((skipped_real + 2))
fi
if [ -x "$COLL_SUITE" ]; then
	run coll_suite "$TMO" "$COLL_SUITE" --quick
	if [ "$RC" = 0 ]; then
		ok "coll_suite --quick: $NETNS_COUNT hosts"
		passed_real=$((passed_real + 1))
	else
		not_ok "coll_suite --quick: status $RC (ranks ${NETNS_RANK_RC[*]})"
	fi
else
	skip "coll_suite: $COLL_SUITE not built"
	skipped_real=$((skipped_real + 1))
fi

# Negative: a missing interface must fail every rank quickly, not hang.
neg=
if [ -x "$PINGPONG" ]; then
	neg=("$PINGPONG" -m 1 -M 1 -i 1 -w 0)
elif [ -x "$P2P_SUITE" ]; then
	neg=("$P2P_SUITE")
fi
if [ -n "$neg" ]; then
	NEG_TMO=${NETNS_NEG_TIMEOUT:-30}
	t0=$SECONDS
	PS_COMM_IFNAME=nosuchif run ifname "$NEG_TMO" "${neg[@]}"
	dt=$((SECONDS - t0))
	if all_ranks 'r != 0 && r != 124 && r != 137 && r != 77' && [ "$dt" -lt "$NEG_TMO" ]; then
		ok "PS_COMM_IFNAME=nosuchif: every rank failed in ${dt}s (${NETNS_RANK_RC[*]})"
		passed_real=$((passed_real + 1))
	else
		not_ok "PS_COMM_IFNAME=nosuchif: ranks ${NETNS_RANK_RC[*]} after ${dt}s (want all non-zero, no hang)"
	fi
else
	skip "PS_COMM_IFNAME=nosuchif: no pscomm binary built"
	skipped_real=$((skipped_real + 1))
fi

# ---------------------------------------------------------------------------
# 3. Teardown leaves the machine as it was.

netns_teardown
links_after=$(ip -o link show | awk -F': ' '{print $2}' | sort)
ns_after=$(ip netns list | awk '{print $1}' | sort)
ours=$(grep -F "$NETNS_PREFIX" <<<"$ns_after")
if [ -z "$ours" ] && [ "$links_before" = "$links_after" ]; then
	ok "teardown: no namespace or root-namespace link left behind"
else
	not_ok "teardown: left namespaces '$ours'; root links before/after differ:"
	diff <(echo "$links_before") <(echo "$links_after") | sed 's/^/# /'
fi

echo "# $passed_real pscomm checks passed, $skipped_real skipped, $failed failed"
[ "$failed" -gt 0 ] && exit 1
[ "$passed_real" -eq 0 ] && exit 77
exit 0
