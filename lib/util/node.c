/*
 * The identity of the kernel this process runs in, and of one of its
 * namespaces: which ranks share memory (the network namespace, for
 * bootstrap) and which can watch each other's processes (the pid
 * namespace, for the liveness monitor). Read once per caller; the one
 * place pscomm reads the boot id.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

void psc_node_id(const char *override, const char *ns, char *buf, size_t len)
{
	char boot[64] = "", path[64];
	struct stat st;
	FILE *f;

	if (override && override[0]) {
		snprintf(buf, len, "%s", override);
		return;
	}
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		fclose(f);
		boot[strcspn(boot, "\n")] = '\0';
	}
	if (!boot[0])
		gethostname(boot, sizeof(boot) - 1);
	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &st) != 0)
		st.st_ino = 0;
	snprintf(buf, len, "%s/%s:%llu", boot, ns,
		 (unsigned long long)st.st_ino);
}
