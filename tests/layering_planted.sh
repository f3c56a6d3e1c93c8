#!/bin/sh
# tests/layering_planted.sh: tests/layering.sh must catch each of the
# six violations of issue 30, planted one at a time in a scratch copy of
# the sources (the tree itself is never touched):
#
#  1 core/ep_int.h included from lib/p2p              (private)
#  2 <rdma/fi_tagged.h> and fi_tsend, not called, in lib/coll
#                                                     (system, fabric)
#  3 lib/util calling a lib/comm function through its own prototype,
#    compiled, so only the symbol check can see it    (calls)
#  4 strncmp(p, "psm", 3) in lib/van                  (names)
#  5 getenv("FI_" "TCP_IFACE") in lib/net, split in two literals
#                                                     (names)
#  6 provider.h included from lib/util                (includes, system)
#
# The unplanted copy must pass first, so that each failure comes from its
# plant; each plant must make layering.sh exit 1 with the expected line
# under the expected check. Runs from make check (srcdir, top_builddir);
# the objects are the build's, plus the one object plant 3 compiles.
#
# Exit: 0 all caught, 1 a plant passed or the copy failed, 77 skipped
# (layering.sh skips, or no C compiler for plant 3).

top=${srcdir:-.}
case $top in /*) ;; *) top=$(pwd)/$top ;; esac
build=${top_builddir:-$top}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || cc=gcc
command -v "$cc" >/dev/null 2>&1 ||
	{ echo "planted: SKIP, no C compiler for plant 3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The sources layering.sh reads, without build products.
(cd "$top" && find lib providers tools include -type f \
    \( -name '*.[ch]' -o -name '*.def' -o -name Makefile.include \) &&
    ls Makefile.am configure.ac tests/layering.sh tests/layering.table) \
    >"$tmp/list" || exit 1
mkdir "$tmp/clean" && (cd "$top" && tar cf - -T "$tmp/list") |
    (cd "$tmp/clean" && tar xf -) || exit 1

# Run the check on copy $1 with the extra objects of $2; its output in
# $tmp/out, its exit status returned.
check() {
	(cd "$1" && srcdir=. top_builddir="$build" \
	    LAYERING_OBJDIRS="$build $2" sh tests/layering.sh) >"$tmp/out" 2>&1
}

check "$tmp/clean" "$tmp/none"
rc=$?
if [ "$rc" = 77 ]; then
	echo "planted: SKIP, layering.sh skips:"; cat "$tmp/out"; exit 77
fi
if [ "$rc" != 0 ]; then
	echo "planted: FAIL, the unplanted copy does not pass:"
	cat "$tmp/out"
	exit 1
fi
echo "planted: the unplanted copy passes: $(tail -1 "$tmp/out")"

# A lib/comm function to call from lib/util: the first global function
# the build's lib/comm objects define.
comm_fn=$(find "$build/lib/comm" -name '*.o' | head -1 |
    xargs "${NM:-nm}" -g --defined-only 2>/dev/null |
    awk '$2 == "T" { print $3; exit }')
[ -n "$comm_fn" ] || { echo "planted: FAIL, no lib/comm function"; exit 1; }

# plant N: copy the clean tree to $tmp/N, where the plant's commands run.
fresh() {
	rm -rf "$tmp/$1" "$tmp/obj$1"
	cp -R "$tmp/clean" "$tmp/$1" && mkdir -p "$tmp/obj$1"
}

plant() {
	case $1 in
	1)
		printf '#include "core/ep_int.h"\n' >>lib/p2p/p2p.c ;;
	2)
		printf '%s\n' '#include <rdma/fi_tagged.h>' \
		    'void *psc_planted_fn(void);' \
		    'void *psc_planted_fn(void) { return (void *)fi_tsend; }' \
		    >>lib/coll/barrier_dissemination.c ;;
	3)
		printf '%s\n' '/* A call up, through a prototype of its own. */' \
		    "int $comm_fn();" \
		    'int psc_util_planted(void);' \
		    "int psc_util_planted(void) { return $comm_fn(); }" \
		    >lib/util/planted.c &&
		    mkdir -p "$tmp/obj3/lib/util" &&
		    "$cc" -c -o "$tmp/obj3/lib/util/planted.o" \
		    lib/util/planted.c ;;
	4)
		printf '%s\n' '#include <string.h>' \
		    'int psc_planted(const char *p);' \
		    'int psc_planted(const char *p)' \
		    '{' '	return strncmp(p, "psm", 3);' '}' \
		    >>lib/van/buf.c ;;
	5)
		printf '%s\n' '#include <stdlib.h>' \
		    'const char *psc_planted(void);' \
		    'const char *psc_planted(void)' \
		    '{' '	return getenv("FI_"' '		      "TCP_IFACE");' '}' \
		    >>lib/net/net.c ;;
	6)
		printf '#include "provider.h"\n' >>lib/util/log.c ;;
	esac
}

# What each plant must produce: the check's name, then an extended
# regular expression for its line.
expect() {
	case $1 in
	1) echo 'private lib/p2p/p2p\.c:[0-9]+: reaches lib/core/ep_int\.h' ;;
	2) echo 'system lib/coll/barrier_dissemination\.c:[0-9]+: reaches <rdma/fi_tagged\.h>'
	   echo 'fabric lib/coll/barrier_dissemination\.c:[0-9]+: names fi_tsend,' ;;
	3) echo "calls lib/util/planted\\.c: calls $comm_fn\\(\\), defined in lib/comm" ;;
	4) echo 'names lib/van/buf\.c:[0-9]+: names provider psm in "psm"' ;;
	5) echo 'names lib/net/net\.c:[0-9]+: names provider variable FI_TCP_IFACE' ;;
	6) echo 'includes lib/util/log\.c:[0-9]+: reaches providers/provider\.h, but lib/util may not use providers'
	   echo 'system lib/util/log\.c:[0-9]+: reaches <rdma/fabric\.h> through providers/provider\.h' ;;
	esac
}

status=0
for n in 1 2 3 4 5 6; do
	fresh "$n" || exit 1
	(cd "$tmp/$n" && plant "$n") ||
		{ echo "planted $n: FAIL, could not plant"; status=1; continue; }
	check "$tmp/$n" "$tmp/obj$n"
	rc=$?
	if [ "$rc" != 1 ]; then
		echo "planted $n: FAIL, layering.sh exited $rc:"
		cat "$tmp/out"
		status=1
		continue
	fi
	expect "$n" >"$tmp/expect"
	while read -r name re; do
		# The line must sit under its check's "FAIL name:" heading.
		line=$(awk -v c="$name" '
		/^layering: / { on = $0 ~ ("^layering: FAIL " c ":") ; next }
		on' "$tmp/out" | grep -E "^$re" | head -1)
		if [ -n "$line" ]; then
			echo "planted $n: caught by $name: $line"
		else
			echo "planted $n: FAIL, no $name line matching: $re"
			cat "$tmp/out"
			status=1
		fi
	done <"$tmp/expect"
done
[ "$status" = 0 ] && echo "planted: PASS, all six caught"
exit "$status"
