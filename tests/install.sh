#!/bin/sh
# Install into a scratch prefix, then build a program against it twice:
# with `pkg-config --cflags --libs pscomm` and with CMake's
# find_package(pscomm). Run from a configured build tree (CI does).
set -eu
build=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s install prefix="$work/inst" >/dev/null
cat >"$work/app.c" <<'APP'
#include <ps_comm.h>
#include <stdio.h>
int main(void)
{
	ps_comm_t c;
	int rank, rc = ps_comm_init(&c, NULL);

	if (rc) {
		fprintf(stderr, "app: %s\n", ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(c, &rank);
	printf("rank %d pscomm %s\n", rank, ps_comm_version());
	return ps_comm_finalize(c) ? 1 : 0;
}
APP
export PKG_CONFIG_PATH="$work/inst/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$work/app.c" -o "$work/app-pc" \
	$(pkg-config --define-prefix --cflags --libs pscomm) \
	-Wl,-rpath,"$work/inst/lib"
"$work/app-pc"
echo "ok - compiled and ran against pkg-config --libs pscomm"
if command -v cmake >/dev/null 2>&1; then
	cat >"$work/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.13)
project(app C)
find_package(pscomm 0.1 REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE pscomm::pscomm)
CM
	cmake -S "$work" -B "$work/cm" -DCMAKE_PREFIX_PATH="$work/inst" >/dev/null
	cmake --build "$work/cm" >/dev/null
	LD_LIBRARY_PATH="$work/inst/lib" "$work/cm/app"
	echo "ok - compiled and ran with find_package(pscomm)"
fi
cd "$build"
