#!/bin/sh
# tests/layering.sh: pscomm's layering rules, checked on the sources of
# lib/, providers/ and tools/ and on their compiled objects, against one
# table, tests/layering.table (its header says what each column means):
#
#  rows      every source lies in a folder with a row;
#  includes  every quoted include resolves, and every header a file
#            reaches, directly or through other headers (the transitive
#            closure), lies in its own folder or one its row grants;
#  private   a *_int.h header is reached from its own folder only;
#  system    <rdma/...>, <hwloc...> and <sodium...>, reached directly or
#            through headers, only where the system column grants them;
#  fabric    fi_* functions named (called, or taken as a value) only
#            where the fi column says yes: in the code, and as undefined
#            symbols of the folder's objects;
#  calls     every undefined symbol of a folder's objects (nm) that another
#            folder's objects define lies in a folder its row grants, so
#            a call through a local prototype is caught too;
#  names     provider names, as the registry (providers/registry.c) and
#            the profiles give them, in string literals (adjacent
#            literals joined as the compiler joins them), whole, inside
#            longer text, or as a library name (libpsm2); and provider
#            variables (FI_TCP_IFACE), in literals and in code; only
#            where the names column allows;
#  cycles    the folders, linked by the includes and calls in use, form
#            no cycle;
#  ratchet   every grant of the table is in use: a granted folder that
#            no file reaches or calls, a system group, a names item or
#            fi=yes that nothing uses is an error, so the table shrinks
#            with the code.
#
# Nothing is waived: a violation is fixed, or the table changes in
# review.
#
#	srcdir=. top_builddir=. tests/layering.sh	# from the source top
#
# The objects are looked for under LAYERING_OBJDIRS (default
# $top_builddir): FOLDER/*.o and FOLDER/.libs/*.o, named
# [target-]BASE.o for the source FOLDER/BASE.c. LAYERING_TABLE and
# LAYERING_PENDING override the table and the waivers.
#
# Exit: 0 no violation, 1 violations (one line each, file:line first),
# 77 skipped (a tool, the objects or nm missing).

top=${srcdir:-.}
here=$(pwd)
objdirs=
for d in ${LAYERING_OBJDIRS:-${top_builddir:-$top}}; do
	case $d in /*) ;; *) d=$here/$d ;; esac
	objdirs="$objdirs $d"
done
table=${LAYERING_TABLE:-tests/layering.table}
cd "$top" || exit 1
for tool in awk find sort xargs mktemp sed; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "layering: SKIP, no $tool"; exit 77; }
done
command -v "${NM:-nm}" >/dev/null 2>&1 ||
	{ echo "layering: SKIP, no ${NM:-nm} for the symbol checks"; exit 77; }
[ -f "$table" ] || { echo "layering: FAIL, no $top/$table"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Split sources into facts, tab-separated with file and line:
#   I file line name     #include "name"
#   Y file line name     #include <name>
#   S file line text     a string literal; adjacent literals (with only
#                        blanks, newlines or comments between) joined
#   C file line code     the line without comments and literals
scan() {
	cat >"$tmp/scan.awk" <<'AWK'
BEGIN { OFS = "\t" }
function flush() {
	if (have)
		print "S", pfile, pline, pend
	have = 0; pend = ""
}
FNR == 1 { flush(); incom = 0; joinable = 0 }
{
	s = $0; out = ""
	if (!incom && s ~ /^[ \t]*#[ \t]*include[ \t]*["<]/) {
		flush(); joinable = 0
		t = s; sub(/^[ \t]*#[ \t]*include[ \t]*/, "", t)
		q = substr(t, 1, 1); t = substr(t, 2)
		if (q == "<")
			sub(/>.*$/, "", t)
		else
			sub(/".*$/, "", t)
		print (q == "<" ? "Y" : "I"), FILENAME, FNR, t
		gsub(/\t/, " ", s)
		print "C", FILENAME, FNR, s
		next
	}
	while (s != "") {
		if (incom) {
			if (!(i = index(s, "*/")))
				break
			s = substr(s, i + 2); incom = 0; out = out " "
			continue
		}
		if (!match(s, /\/\*|\/\/|["']/)) {
			rest = s; q = ""; s = ""
		} else {
			rest = substr(s, 1, RSTART - 1)
			q = substr(s, RSTART, RLENGTH)
			s = substr(s, RSTART + RLENGTH)
		}
		out = out rest
		# Code between two literals keeps them apart.
		if (rest ~ /[^ \t]/) {
			flush(); joinable = 0
		}
		if (q == "" || q == "//")
			break
		if (q == "/*") {
			incom = 1
			continue
		}
		# A literal ends at its first unescaped quote, or at line end.
		lit_re = "^([^\\\\" q "]|\\\\.)*" q
		e = match(s, lit_re) ? RLENGTH : length(s) + 1
		if (q == "\"") {
			t = substr(s, 1, e - 1)
			if (joinable && have)
				pend = pend t
			else {
				flush(); have = 1; pend = t
				pfile = FILENAME; pline = FNR
			}
			joinable = 1
		} else {
			flush(); joinable = 0
		}
		s = substr(s, e + 1); out = out q q
	}
	# A preprocessor line ends any joining: its literal stands alone.
	if ($0 ~ /^[ \t]*#/) {
		flush(); joinable = 0
	}
	gsub(/\t/, " ", out)
	print "C", FILENAME, FNR, out
}
END { flush() }
AWK
	xargs awk -f "$tmp/scan.awk"
}

# The provider names of the registry, one a line, from the facts of
# providers/: each profile registered in registry.c's profiles[] (its
# .name), the families registry.c knows without a profile (the first
# literal of each unprofiled[] entry), the providers of net_order[]
# (split at ';'), the prefix of layered providers (the literal in
# psc_provider_layered), and the libraries of provider_libs[].
provider_names() {
	awk -F '\t' '
	$1 == "C" && $2 ~ /^providers\/registry\.c$/ {
		if ($4 ~ /^[ ]*}/)
			area = ""
		if ($4 ~ /profiles\[\][ ]*=/)
			area = "profiles"
		else if ($4 ~ /unprofiled\[\][ ]*=/)
			area = "unprofiled"
		else if ($4 ~ /net_order\[\][ ]*=/)
			area = "order"
		else if ($4 ~ /provider_libs\[\][ ]*=/)
			area = "libs"
		else if ($4 ~ /psc_provider_layered\(/ && $4 !~ /;[ ]*$/)
			area = "layered"
		if (area == "profiles" && match($4, /&psc_[a-z0-9_]+_ops/))
			want[substr($4, RSTART + 1, RLENGTH - 1)]
		at[$2, $3] = area
		next
	}
	$1 == "C" && match($4, /psc_[a-z0-9_]+_ops[ ]*=/) {
		cur = substr($4, RSTART, RLENGTH); sub(/[ ]*=$/, "", cur)
		next
	}
	$1 == "C" && $4 ~ /^[ ]*\.name[ ]*=/ { nameline[$2, $3] = cur }
	$1 == "S" { ns++; sf[ns] = $2; sl[ns] = $3; st[ns] = $4 }
	END {
		for (k = 1; k <= ns; k++) {
			f = sf[k]; l = sl[k]; t = st[k]
			if ((f, l) in nameline)
				pname[nameline[f, l]] = t
			if (at[f, l] == "unprofiled" && !((f, l) in fam)) {
				fam[f, l]; out[t]
			}
			if (at[f, l] == "order") {
				n = split(t, p, ";")
				for (i = 1; i <= n; i++)
					out[p[i]]
			}
			if (at[f, l] == "layered")
				out[t]
			if (at[f, l] == "libs")
				out[t]
		}
		for (o in want)
			if (o in pname)
				out[pname[o]]
			else
				print "? profile " o " has no .name"
		for (o in out)
			if (o != "")
				print o
	}' "$tmp/facts"
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

# The symbols of the objects built from the sources: "N folder-file type
# symbol", where the object FOLDER/[.libs/][target-]BASE.o belongs to
# the source FOLDER/BASE.c (objects of no source, stale ones, are left
# out).
symbols() {
	for od in $objdirs; do
		for f in lib providers tools; do
			[ -d "$od/$f" ] && find "$od/$f" -name '*.o' -type f
		done
	done | sort -u >"$tmp/objects.raw"
	awk -v list="$tmp/files" -v objd="$objdirs" '
	BEGIN { nd = split(objd, dirs, " ") }
	FILENAME == list { src[$1]; next }
	{
		o = $0
		for (i = 1; i <= nd; i++)
			if (index(o, dirs[i] "/") == 1) {
				rel = substr(o, length(dirs[i]) + 2)
				break
			}
		d = rel; sub(/\/[^\/]*$/, "", d); sub(/\/\.libs$/, "", d)
		b = rel; sub(/^.*\//, "", b); sub(/^.*-/, "", b)
		sub(/\.o$/, ".c", b)
		if ((d "/" b) in src)
			print o "\t" d "/" b
	}' "$tmp/files" - <"$tmp/objects.raw" \
	    >"$tmp/objects" 2>/dev/null || true
	[ -s "$tmp/objects" ] || return 1
	cut -f 1 "$tmp/objects" | xargs "${NM:-nm}" -A 2>/dev/null |
	    awk -v objects="$tmp/objects" '
	BEGIN {
		FS = "\t"
		while ((getline l < objects) > 0) {
			split(l, x, "\t"); src[x[1]] = x[2]
		}
		FS = " "
	}
	{
		k = index($0, ":"); o = substr($0, 1, k - 1)
		n = split(substr($0, k + 1), f, " ")
		if ((o in src) && n >= 2)
			print "N\t" src[o] "\t" f[n - 1] "\t" f[n]
	}'
}

find lib providers tools -name '*.[ch]' -type f 2>/dev/null | sort \
    >"$tmp/files"
scan <"$tmp/files" >"$tmp/facts"
provider_names >"$tmp/names"
resolve "$(search_path)" "$(generated)" >"$tmp/includes"
if ! symbols >"$tmp/symbols"; then
	echo "layering: SKIP, no objects of lib/ under$objdirs (build first)"
	exit 77
fi
[ -s "$tmp/symbols" ] ||
	{ echo "layering: FAIL, ${NM:-nm} read no symbol from the objects"; exit 1; }

# All the checks, in one pass over the table, the facts, the includes and
# the symbols. Prints "check<TAB>file:line: message" per violation.
awk -v table="$table" -v names_file="$tmp/names" '
BEGIN {
	FS = OFS = "\t"
	while ((getline l < table) > 0) {
		if (l ~ /^[ \t]*(#|$)/)
			continue
		n = split(l, col, /[ \t]+/)
		if (n < 4) {
			print "table", table ": row \"" l "\" has fewer than 4 columns"
			continue
		}
		r = col[1]; rows[r]; fi[r] = col[2]
		nsys[r] = split(col[3] == "-" ? "" : col[3], part, ",")
		for (i = 1; i <= nsys[r]; i++)
			sysg[r, i] = part[i]
		names[r] = col[4]
		nnames[r] = col[4] == "yes" || col[4] == "-" ? 0 : split(col[4], part, ",")
		for (i = 1; i <= nnames[r]; i++)
			nameok[r, i] = part[i]
		nmay[r] = 0
		for (i = 5; i <= n; i++)
			if (col[i] != "-")
				may[r, ++nmay[r]] = col[i]
	}
	while ((getline l < names_file) > 0) {
		if (l ~ /^\?/) {
			print "names", "providers/registry.c: " substr(l, 3)
			continue
		}
		prov[++nprov] = l
		v = toupper(l); sub(/_$/, "_[A-Z0-9]+", v)
		varre = varre (varre == "" ? "" : "|") v
	}
	if (nprov < 5)
		print "names", "providers/registry.c: only " nprov \
		    " provider name(s) read from the registry"
	varre = "(^|[^A-Za-z0-9_])FI_(" varre ")_[A-Z0-9_]*"
}
function dirof(p) { return sub(/\/[^\/]*$/, "", p) ? p : "." }
function under(d, r) { return r == "." ? d == "." : d == r || index(d, r "/") == 1 }
function rowof(d,   r, best) {
	if (d in rowc)
		return rowc[d]
	best = ""
	for (r in rows)
		if (under(d, r) && length(r) > length(best))
			best = r
	return rowc[d] = best
}
function node(d,   r) { return (r = rowof(d)) == "" ? d : r }
# Whether row r may use folder-node x; marks the grant used.
function grants(r, x,   i) {
	if (x == r)
		return 1
	for (i = 1; i <= nmay[r]; i++)
		if (under(x, may[r, i])) {
			used[r, "may", i] = 1
			return 1
		}
	return 0
}
function glob_ok(g, rel) {
	gsub(/\./, "\\.", g); gsub(/\*/, "[^/]*", g); gsub(/\?/, "[^/]", g)
	return rel ~ ("^" g "$")
}
# Whether file f (of row r) may reach system group grp; marks it used.
function sys_ok(r, f, grp,   i, g, rel) {
	rel = substr(f, length(r) + 2)
	for (i = 1; i <= nsys[r]; i++) {
		g = sysg[r, i]
		if (g == grp || (index(g, grp ":") == 1 &&
		    glob_ok(substr(g, length(grp) + 2), rel))) {
			used[r, "sys", i] = 1
			return 1
		}
	}
	return 0
}
function sysgroup(h) {
	if (h ~ /^rdma\//) return "rdma"
	if (h ~ /^hwloc/) return "hwloc"
	if (h ~ /^sodium/) return "sodium"
	return ""
}
# The first provider name in literal t, as a word, a prefix ("ofi_") or
# a library name (libpsm2), without case; "" if none.
function provider_in(t,   i, s, k, nm, b, a, off) {
	t = tolower(t)
	for (i = 1; i <= nprov; i++) {
		nm = prov[i]; s = t; off = 0
		while ((k = index(s, nm)) > 0) {
			k += off
			b = k > 1 ? substr(t, k - 1, 1) : ""
			a = substr(t, k + length(nm), 1)
			if ((b !~ /[a-z0-9]/ || (k > 3 &&
			    substr(t, k - 3, 3) == "lib")) &&
			    (nm ~ /_$/ || a !~ /[a-z]/))
				return nm
			off = k; s = substr(t, k + 1)
		}
	}
	return ""
}
# Whether row r allows literal t naming provider p: "=literal" allows
# that exact literal, a bare name allows it as a word of prose (a literal
# with a blank).
function name_ok(r, t, p,   i, a) {
	for (i = 1; i <= nnames[r]; i++) {
		a = nameok[r, i]
		if ((a == "=" t) || (a == p && t ~ / /)) {
			used[r, "names", i] = 1
			return 1
		}
	}
	return 0
}
function bad(check, where, msg) { print check, where ": " msg }
FILENAME ~ /\/files$/ {
	isfile[$1]
	if ((r = rowof(dirof($1))) == "")
		bad("rows", $1, "folder " dirof($1) " has no row in " table)
	nfiles_of[r]++
	next
}
$1 == "U" { bad("includes", $2 ":" $3, "\"" $4 "\" resolves to no file"); next }
$1 == "E" {
	ne[$2]++; edst[$2, ne[$2]] = $5; eline[$2, ne[$2]] = $3
	a = node(dirof($2)); b = node(dirof($5))
	if (a != b && !((a, b) in ex)) {
		ex[a, b] = $2 ":" $3 " includes " $4
		adj[a] = adj[a] " " b
	}
	next
}
$1 == "Y" { ny[$2]++; ysys[$2, ny[$2]] = $4; yline[$2, ny[$2]] = $3; next }
$1 == "N" {
	r = rowof(dirof($2))
	if ($3 == "U") {
		nu++; usym[nu] = $4; urow[nu] = r; ufile[nu] = $2
	} else if ($3 ~ /^[A-TV-Z]$/ && !($4 in defrow))
		defrow[$4] = r
	next
}
$1 == "C" {
	r = rowof(dirof($2))
	line = $4
	# An include line names a header, which the system check judges.
	if (line ~ /^ *# *include/)
		line = ""
	if (fi[r] != "yes") {
		while (match(line, /(^|[^A-Za-z0-9_])(struct +|union +|enum +)?fi_[a-z0-9_]+/)) {
			id = substr(line, RSTART, RLENGTH)
			line = substr(line, RSTART + RLENGTH)
			if (id ~ /(struct|union|enum) /)
				continue
			sub(/^[^f]*/, "", id)
			if (id ~ /_t$/)
				continue
			bad("fabric", $2 ":" $3, "names " id ", but " r \
			    " may not call libfabric")
		}
	} else if ($4 ~ /(^|[^A-Za-z0-9_])fi_[a-z0-9_]+[ ]*\(/)
		fiused[r] = 1
	if (names[r] != "yes" && match($4, varre))
		bad("names", $2 ":" $3, "names provider variable " \
		    substr($4, RSTART + (substr($4, RSTART, 1) != "F"), \
		    RLENGTH - (substr($4, RSTART, 1) != "F")) \
		    " (provider variables belong in providers/)")
	next
}
$1 == "S" {
	r = rowof(dirof($2))
	if (names[r] == "yes")
		next
	if (match($4, varre))
		bad("names", $2 ":" $3, "names provider variable " \
		    substr($4, RSTART + (substr($4, RSTART, 1) != "F"), \
		    RLENGTH - (substr($4, RSTART, 1) != "F")) \
		    " in \"" $4 "\" (provider variables belong in providers/)")
	else if ((p = provider_in($4)) != "" && !name_ok(r, $4, p))
		bad("names", $2 ":" $3, "names provider " p " in \"" $4 "\"" \
		    " (provider names belong in providers/)")
	next
}
# The headers f reaches, breadth first, each with the chain that reached
# it first: reach[k], via[k], and the line of f that starts it.
function closure(f,   q, h, i, j, n, d, seen) {
	n = 0; h = 0
	for (i = 1; i <= ne[f]; i++)
		if (!(edst[f, i] in seen)) {
			seen[edst[f, i]]; reach[++n] = edst[f, i]
			via[n] = ""; from[n] = eline[f, i]
		}
	while (++h <= n)
		for (j = 1; j <= ne[reach[h]]; j++) {
			d = edst[reach[h], j]
			if (d in seen || d == f)
				continue
			seen[d]; reach[++n] = d; from[n] = from[h]
			via[n] = via[h] (via[h] == "" ? "" : " -> ") reach[h]
		}
	return n
}
function chain(k) { return via[k] == "" ? "" : " (through " via[k] ")" }
END {
	for (f in isfile) {
		r = rowof(dirof(f))
		if (r == "")
			continue
		n = closure(f)
		delete said
		for (k = 1; k <= n; k++) {
			h = reach[k]; x = node(dirof(h))
			if (!grants(r, x) && !((x) in said)) {
				said[x]
				bad("includes", f ":" from[k], "reaches " h \
				    chain(k) ", but " r " may not use " x)
			}
			if (h ~ /_int\.h$/ && rowof(dirof(h)) != r)
				bad("private", f ":" from[k], "reaches " h \
				    chain(k) ", private to " dirof(h))
		}
		# System headers: those of f, then those of what it reaches.
		for (k = 0; k <= n; k++) {
			h = k ? reach[k] : f
			for (i = 1; i <= ny[h]; i++) {
				g = sysgroup(ysys[h, i])
				if (g == "" || ((g, f) in sysdone))
					continue
				sysdone[g, f]
				if (!sys_ok(r, f, g))
					bad("system", f ":" (k ? from[k] : yline[h, i]),
					    "reaches <" ysys[h, i] ">" \
					    (k ? " through " via[k] \
					    (via[k] == "" ? "" : " -> ") h : "") \
					    ", but " \
					    r " may not use " g)
			}
		}
	}
	for (i = 1; i <= nu; i++) {
		s = usym[i]; r = urow[i]
		if (r == "")
			continue
		if (s in defrow) {
			x = defrow[s]
			if (x == "" || x == r)
				continue
			if (!((r, x) in cex)) {
				cex[r, x] = ufile[i] " calls " s
				cadj[r] = cadj[r] " " x
			}
			if (!grants(r, x))
				bad("calls", ufile[i], "calls " s "(), defined in " \
				    x ", but " r " may not use " x)
		} else if (s ~ /^fi_/) {
			if (fi[r] == "yes")
				fiused[r] = 1
			else
				bad("fabric", ufile[i], "object calls " s "(), but " \
				    r " may not call libfabric")
		} else if (s ~ /^hwloc_/ && !sys_ok(r, ufile[i], "hwloc"))
			bad("system", ufile[i], "object calls " s "(), but " r \
			    " may not use hwloc")
		else if (s ~ /^(sodium_|crypto_|randombytes)/ &&
		    !sys_ok(r, ufile[i], "sodium"))
			bad("system", ufile[i], "object calls " s "(), but " r \
			    " may not use sodium")
	}
	# Cycles among the folders, over the includes and calls in use.
	for (r in rows) {
		for (j = split(adj[r], nb, " "); j > 0; j--)
			if (!((r, nb[j]) in both)) {
				both[r, nb[j]] = ex[r, nb[j]]
				gadj[r] = gadj[r] " " nb[j]
			}
		for (j = split(cadj[r], nb, " "); j > 0; j--)
			if (!((r, nb[j]) in both)) {
				both[r, nb[j]] = cex[r, nb[j]]
				gadj[r] = gadj[r] " " nb[j]
			}
	}
	for (r in rows)
		if (!state[r])
			dfs(r)
	# The ratchet: every grant in use.
	for (r in rows) {
		for (i = 1; i <= nmay[r]; i++)
			if (!used[r, "may", i])
				bad("ratchet", table, r " grants " may[r, i] \
				    ", which no file of " r " reaches or calls")
		for (i = 1; i <= nsys[r]; i++)
			if (!used[r, "sys", i])
				bad("ratchet", table, r " grants system " \
				    sysg[r, i] ", which no file of " r " uses")
		for (i = 1; i <= nnames[r]; i++)
			if (!used[r, "names", i])
				bad("ratchet", table, r " allows name " \
				    nameok[r, i] ", which no literal of " r \
				    " needs")
		if (fi[r] == "yes" && !fiused[r])
			bad("ratchet", table, r " may call libfabric, and " \
			    "none of its files does")
	}
}
function dfs(u,   n, vs, i, w, k, cyc) {
	state[u] = 1; stack[++depth] = u
	n = split(gadj[u], vs, " ")
	for (i = 1; i <= n; i++) {
		w = vs[i]
		if (state[w] == 1) {
			for (k = depth; stack[k] != w; k--)
				;
			cyc = w
			for (; k < depth; k++)
				cyc = cyc " -> " stack[k + 1] " (" \
				    both[stack[k], stack[k + 1]] ")"
			cyc = cyc " -> " w " (" both[u, w] ")"
			bad("cycles", u, "cycle: " cyc)
		} else if (!state[w])
			dfs(w)
	}
	depth--; state[u] = 2
}
' "$tmp/files" "$tmp/facts" "$tmp/includes" "$tmp/symbols" \
    >"$tmp/all.raw" || { echo "layering: FAIL, the checks did not run"; exit 1; }
sort -u "$tmp/all.raw" >"$tmp/all"

awk -F '\t' '{ print "F\t" $1 "\t" $2 }' "$tmp/all" >"$tmp/result"

status=0
for check in rows includes private system fabric calls names cycles \
    ratchet table; do
	awk -F '\t' -v c="$check" '$1 == "F" && $2 == c { print $3 }' \
	    "$tmp/result" >"$tmp/out"
	[ -s "$tmp/out" ] || continue
	status=1
	echo "layering: FAIL $check: $(wc -l <"$tmp/out") violation(s)"
	cat "$tmp/out"
done
[ "$status" = 0 ] && echo "layering: PASS ($(wc -l <"$tmp/files") files," \
    "$(wc -l <"$tmp/objects") objects, $(wc -l <"$tmp/names") provider" \
    "names)"
exit "$status"
