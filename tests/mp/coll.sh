#!/bin/sh
# The collectives suite: the full matrix on tcp, net and shm over 1 to 8
# ranks (3, 5, 6 and 7 included), a 64 MiB run, deterministic mode and
# mismatched arguments, a short rxm receive queue; a quick subset on
# sockets (3 ranks) and udp (2).
. "${srcdir:-.}/tests/mp/common.sh"
SUITE="$top_builddir/tests/mp/coll_suite"
providers=${PSC_TEST_PROVIDERS:-tcp net shm udp sockets}
want() { case " $providers " in *" $1 "*) return 0 ;; esac; return 1; }

for prov in tcp net shm; do
	want "$prov" || continue
	for n in 1 2 3 4 5 6 7 8; do
		q=
		# 7 and 8 ranks on 2 cores: the quick matrix.
		[ "$n" -ge 7 ] && q=--quick
		run_ranks "collectives" "$n" "$prov" 400 "$SUITE" $q
	done
	run_ranks "collectives, 64 MiB" 4 "$prov" 400 "$SUITE" --large
	PS_COMM_DETERMINISTIC=1 \
		run_ranks "collectives, deterministic" 3 "$prov" 400 "$SUITE" --det
	PS_COMM_OP_TIMEOUT=3 \
		run_ranks "collectives, mismatched arguments" 3 "$prov" 120 \
		"$SUITE" --mismatch
	PS_COMM_MAX_MSG_SIZE=4096 \
		run_ranks "collectives, max_msg_size 4 KiB" 3 "$prov" 400 \
		"$SUITE" --quick
done
# A short receive queue: software matching must leave room on it for a
# large message's chunks (64 bounce buffers on 64 slots hung this job).
if want tcp; then
	FI_OFI_RXM_RX_SIZE=64 \
		run_ranks "allreduce 32 KiB, rxm receive queue of 64" 2 tcp 60 \
		"$top_builddir/examples/allreduce" -m 32768 -M 32768 -i 20 -c
fi
# net with a short receive queue and 4 KiB chunks: a chunk receive that
# waits for a free slot stops its connection, and go-ahead messages queued
# behind chunks hung all 3 ranks every time until pscomm stopped holding
# receives back on net (its receives are not limited by rx_size).
if want net; then
	FI_NET_RX_SIZE=64 PS_COMM_MAX_MSG_SIZE=4096 \
		run_ranks "collectives (quick), net receive queue of 64, 4 KiB" \
		3 net 120 "$SUITE" --quick
fi
# udp on 2 ranks: with 3 on 2 cores libfabric 1.17's rxd can loop inside
# fi_cq_read for good (doc/fabrics.md, "udp and sockets").
want sockets && run_ranks "collectives (quick)" 3 sockets 400 "$SUITE" --quick
want udp && run_ranks "collectives (quick)" 2 udp 400 "$SUITE" --quick
finish
