#!/bin/sh
# tests/layering.sh: pscomm's layering rules, checked on the sources of
# lib/, providers/ and tools/ against one table, tests/layering.table:
# which folders each folder may include, which may call libfabric, include
# hwloc or name providers, and no include cycle between folders.
#
#	srcdir=. tests/layering.sh	# from the top of the source tree
#
# Exit: 0 no violation, 1 violations (one line each, file:line first),
# 77 skipped (a tool missing).

top=${srcdir:-.}
table=tests/layering.table
cd "$top" || exit 1
for tool in awk find sort xargs mktemp; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "layering: SKIP, no $tool"; exit 77; }
done
[ -f "$table" ] || { echo "layering: FAIL, no $top/$table"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Functions shared by the checks: the table, and the row a folder is in.
prelude='
BEGIN {
	FS = OFS = "\t"
	while ((getline l < table) > 0) {
		if (l ~ /^[ \t]*(#|$)/)
			continue
		n = split(l, f, /[ \t]+/)
		fi[f[1]] = f[2]; hwloc[f[1]] = f[3]; names[f[1]] = f[4]
		may[f[1]] = ""
		for (i = 5; i <= n; i++)
			may[f[1]] = may[f[1]] " " f[i]
	}
}
function dirof(p) { return sub(/\/[^\/]*$/, "", p) ? p : "." }
function under(d, r) { return d == r || index(d, r "/") == 1 }
function rowof(d,   r, best) {
	if (d in row)
		return row[d]
	best = ""
	for (r in fi)
		if (under(d, r) && length(r) > length(best))
			best = r
	return row[d] = best
}
function node(d,   r) { return (r = rowof(d)) == "" ? d : r }
'

# Split the sources into code without comments or literals (C), string
# literals (S) and quoted includes (I): tab-separated, with file and line.
scan() {
	cat >"$tmp/scan.awk" <<'AWK'
BEGIN { OFS = "\t" }
FNR == 1 { incom = 0 }
{
	s = $0; out = ""; n = 0
	while (s != "") {
		if (incom) {
			if (!(i = index(s, "*/")))
				break
			s = substr(s, i + 2); incom = 0; out = out " "
			continue
		}
		if (!match(s, /\/\*|\/\/|["']/)) {
			out = out s
			break
		}
		out = out substr(s, 1, RSTART - 1)
		q = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
		if (q == "/*") {
			incom = 1
			continue
		}
		if (q == "//")
			break
		# A literal ends at its first unescaped quote, or at line end.
		lit_re = "^([^\\\\" q "]|\\\\.)*" q
		e = match(s, lit_re) ? RLENGTH : length(s) + 1
		if (q == "\"")
			lit[++n] = substr(s, 1, e - 1)
		s = substr(s, e + 1); out = out q q
	}
	gsub(/\t/, " ", out)
	if (out ~ /^ *# *include *""/)
		print "I", FILENAME, FNR, lit[1]
	else
		for (i = 1; i <= n; i++)
			print "S", FILENAME, FNR, lit[i]
	print "C", FILENAME, FNR, out
}
AWK
	xargs awk -f "$tmp/scan.awk"
}

# The -I folders of AM_CPPFLAGS, in order; the build tree counts as the top.
search_path() {
	cat Makefile.am ./*/Makefile.include 2>/dev/null | awk '
	/^AM_CPPFLAGS[ \t]*\+?=/ { on = 1 }
	on {
		for (i = 1; i <= NF; i++)
			if (sub(/^-I\$\((top_)?(src|build)dir\)\/?/, "", $i)) {
				printf "%s ", ($i == "" ? "." : $i)
				found = 1
			}
		on = /\\$/
	}
	END { if (!found) printf "lib providers include ." }'
}

# The headers that configure generates (AC_CONFIG_HEADERS).
generated() {
	sed -n 's/.*AC_CONFIG_HEADERS(\[*\([^])]*\).*/\1/p' \
	    configure.ac 2>/dev/null | sed 's/:[^ ]*//g'
}

# Resolve each quoted include as the preprocessor does: the including
# file's folder, then the -I folders (E: resolved, U: not found). The
# headers configure generates (AC_CONFIG_HEADERS) are at the top.
resolve() {
	awk -v path="$1" -v gen="$2" 'BEGIN {
		FS = OFS = "\t"
		split(gen, g, " ")
		for (i in g)
			generated[g[i]]
	}
	function norm(p,   n, i, s, k, out) {
		n = split(p, s, "/"); k = 0
		for (i = 1; i <= n; i++)
			if (s[i] == "..") {
				if (k-- == 0)
					return ""
			} else if (s[i] != "." && s[i] != "")
				s[++k] = s[i]
		out = s[1]
		for (i = 2; i <= k; i++)
			out = out "/" s[i]
		return k ? out : ""
	}
	function exists(p,   x, r) {
		r = (getline x < p) >= 0
		close(p)
		return r
	}
	$1 == "I" {
		d = $2
		sub(/\/[^\/]*$/, "", d)
		n = split(d " " path, dirs, " ")
		for (i = 1; i <= n; i++) {
			p = norm(dirs[i] "/" $4)
			if (p != "" && (exists(p) || p in generated)) {
				print "E", $2, $3, $4, p
				next
			}
		}
		print "U", $2, $3, $4
	}' "$tmp/facts"
}

# 1. Every quoted include resolves, into a folder the includer's row allows.
check_includes() {
	awk -v table="$table" -v list="$tmp/files" "$prelude"'
	FILENAME == list {
		if (rowof(dirof($1)) == "")
			print $1 ": folder " dirof($1) " has no row in " table
		next
	}
	$1 == "U" { print $2 ":" $3 ": \"" $4 "\" resolves to no file" }
	$1 == "E" {
		r = rowof(dirof($2)); d = dirof($5)
		if (r == "" || under(d, r))
			next
		n = split(may[r], ok, " ")
		for (i = 1; i <= n; i++)
			if (under(d, ok[i]))
				next
		print $2 ":" $3 ": includes \"" $4 "\" (" $5 "), but " r \
		    " may not include " d
	}' "$tmp/files" "$tmp/includes"
}

# 2. Only the files the hwloc column names include <hwloc...>.
check_hwloc() {
	awk -v table="$table" "$prelude"'
	BEGIN {
		for (r in hwloc)
			if (hwloc[r] != "-")
				where = where " " r "/" hwloc[r]
	}
	$1 == "C" && $4 ~ /^ *# *include *<hwloc/ {
		r = rowof(dirof($2)); rel = substr($2, length(r) + 2)
		n = split(r == "" ? "-" : hwloc[r], g, ",")
		for (i = 1; i <= n; i++) {
			gsub(/\./, "\\.", g[i]); gsub(/\*/, "[^/]*", g[i])
			gsub(/\?/, "[^/]", g[i])
			if (g[i] != "-" && rel ~ ("^" g[i] "$"))
				next
		}
		print $2 ":" $3 ": includes hwloc, which only" where " may"
	}' "$tmp/facts"
}

# 2b. Only lib/net/auth.c includes <sodium...>: cryptography stays in the
# one handshake module, and every other file goes through net/auth.h.
check_sodium() {
	awk -F '\t' '$1 == "C" && $4 ~ /^ *# *include *<sodium/ && $2 != "lib/net/auth.c" {
		print $2 ":" $3 ": includes libsodium, which only lib/net/auth.c may"
	}' "$tmp/facts"
}

# 3. Only folders whose fi column says yes call libfabric functions.
check_libfabric() {
	awk -v table="$table" "$prelude"'
	$1 == "C" && match($4, /(^|[^A-Za-z0-9_])fi_[a-z_0-9]+ *\(/) {
		r = rowof(dirof($2))
		if (fi[r] == "yes")
			next
		call = substr($4, RSTART, RLENGTH)
		sub(/^[^f]*/, "", call); sub(/ *\($/, "", call)
		print $2 ":" $3 ": calls " call "(), but " \
		    (r == "" ? dirof($2) : r) " may not call libfabric"
	}' "$tmp/facts"
}

# 4. Only folders whose names column says yes name providers or their
# variables; other folders only the literals that column lists.
check_provider_names() {
	awk -v table="$table" "$prelude"'
	BEGIN {
		prov = "^;?((tcp|shm|sockets|udp|verbs|psm2|psm3|opx|efa|" \
		    "ofi_rxm|ofi_rxd)(;|$)|ofi_)"
		var = "(^|[^A-Za-z0-9_])FI_(TCP|SHM|SOCKETS|UDP|VERBS|PSM2|" \
		    "PSM3|OPX|EFA|OFI_RXM|OFI_RXD)_[A-Z_]*"
	}
	{ r = names[rowof(dirof($2))] }
	$1 !~ /^[SC]$/ || r == "yes" { next }
	$1 == "S" && $4 ~ prov && index("," r ",", "," $4 ",") == 0 {
		print $2 ":" $3 ": names provider \"" $4 "\"" \
		    " (provider names belong in providers/)"
	}
	match($4, var) {
		v = substr($4, RSTART, RLENGTH); sub(/^[^F]*/, "", v)
		print $2 ":" $3 ": names provider variable " v \
		    " (provider variables belong in providers/)"
	}' "$tmp/facts"
}

# 5. The folders, linked by their includes, form no cycle.
check_cycles() {
	awk -v table="$table" "$prelude"'
	function dfs(u,   n, vs, i, v, k, cyc) {
		state[u] = 1; stack[++depth] = u
		n = split(adj[u], vs, " ")
		for (i = 1; i <= n; i++) {
			v = vs[i]
			if (state[v] == 1) {
				for (k = depth; stack[k] != v; k--)
					;
				cyc = v
				for (; k < depth; k++)
					cyc = cyc " -> " stack[k + 1] \
					    " (" ex[stack[k], stack[k + 1]] ")"
				cyc = cyc " -> " v " (" ex[u, v] ")"
				print ex[u, v] ": include cycle: " cyc
			} else if (!state[v])
				dfs(v)
		}
		depth--; state[u] = 2
	}
	$1 == "E" {
		a = node(dirof($2)); b = node(dirof($5))
		if (a != b && !((a, b) in ex)) {
			ex[a, b] = $2 ":" $3
			adj[a] = adj[a] " " b
			if (!(a in seen)) {
				seen[a]; order[++nodes] = a
			}
		}
	}
	END {
		for (i = 1; i <= nodes; i++)
			if (!state[order[i]])
				dfs(order[i])
	}' "$tmp/includes"
}

find lib providers tools -name '*.[ch]' -type f 2>/dev/null | sort \
    >"$tmp/files"
scan <"$tmp/files" >"$tmp/facts"
resolve "$(search_path)" "$(generated)" >"$tmp/includes"

# Print a check's violations, if any, under its name.
status=0
report() {
	[ -s "$tmp/out" ] || return 0
	status=1
	echo "layering: FAIL $1: $(wc -l <"$tmp/out") violation(s)"
	cat "$tmp/out"
}
check_includes >"$tmp/out" && report check_includes
check_hwloc >"$tmp/out" && report check_hwloc
check_sodium >"$tmp/out" && report check_sodium
check_libfabric >"$tmp/out" && report check_libfabric
check_provider_names >"$tmp/out" && report check_provider_names
check_cycles >"$tmp/out" && report check_cycles
[ "$status" = 0 ] && echo "layering: PASS"
exit "$status"
