/*
 * Topology: the only user of hwloc. It describes where this process runs
 * (its CPU binding and the NUMA nodes near it) for the log, so that a
 * rank's placement can be checked against the NIC it uses.
 */
#include <stdio.h>

#include <hwloc.h>

#include "psc.h"

void psc_topo_describe(char *buf, size_t len)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t set, nodes;
	char cpus[256] = "?", numa[128] = "?";

	snprintf(buf, len, "unknown (hwloc failed)");
	if (hwloc_topology_init(&topo) != 0)
		return;
	if (hwloc_topology_load(topo) != 0) {
		hwloc_topology_destroy(topo);
		return;
	}
	set = hwloc_bitmap_alloc();
	nodes = hwloc_bitmap_alloc();
	if (set && nodes &&
	    hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
		hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), set);
		hwloc_cpuset_to_nodeset(topo, set, nodes);
		hwloc_bitmap_list_snprintf(numa, sizeof(numa), nodes);
	}
	snprintf(buf, len, "bound to cpus %s (NUMA nodes %s) of %d cores",
		 cpus, numa,
		 hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
	hwloc_bitmap_free(set);
	hwloc_bitmap_free(nodes);
	hwloc_topology_destroy(topo);
}
