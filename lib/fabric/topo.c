/*
 * Topology: the only user of hwloc. It describes where this process runs
 * (its CPU binding and the NUMA nodes near it) for the log, so that a
 * rank's placement can be checked against the NIC it uses.
 */
#include <stdio.h>

#include <hwloc.h>

#include <rdma/fabric.h>

#include "fabric/topo.h"
#include "util/util.h"

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

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define topo_lsan_off() __lsan_disable()
#define topo_lsan_on() __lsan_enable()
#else
#define topo_lsan_off() ((void)0)
#define topo_lsan_on() ((void)0)
#endif

void *psc_topo_open(void)
{
	hwloc_topology_t topo;
	int rc;

	if (hwloc_topology_init(&topo) != 0)
		return NULL;
	/* PCI devices and their bridges, to place a NIC under a package. */
	hwloc_topology_set_io_types_filter(topo,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/*
	 * hwloc's PCI plugin leaves libpciaccess's device list in
	 * libpciaccess's globals and unloads both on the last destroy:
	 * LeakSanitizer would report ~1 KiB from an unknown module, which no
	 * suppression can name. Not pscomm's memory.
	 */
	topo_lsan_off();
	rc = hwloc_topology_load(topo);
	topo_lsan_on();
	if (rc != 0) {
		hwloc_topology_destroy(topo);
		return NULL;
	}
	return topo;
}

void psc_topo_close(void *topo)
{
	if (topo)
		hwloc_topology_destroy((hwloc_topology_t)topo);
}

/* The cpuset near info's PCI NIC, or NULL when it is not in topo. */
static hwloc_const_cpuset_t nic_cpuset(hwloc_topology_t topo,
				       const struct fi_info *info)
{
	const struct fi_pci_attr *pci;
	hwloc_obj_t dev, anc;

	if (!topo || !info->nic || !info->nic->bus_attr ||
	    info->nic->bus_attr->bus_type != FI_BUS_PCI)
		return NULL;
	pci = &info->nic->bus_attr->attr.pci;
	dev = hwloc_get_pcidev_by_busid(topo, pci->domain_id, pci->bus_id,
					pci->device_id, pci->function_id);
	if (!dev)
		return NULL;
	anc = hwloc_get_non_io_ancestor_obj(topo, dev);
	return anc ? anc->cpuset : NULL;
}

int psc_topo_nic_distance(const struct fi_info *info, void *arg)
{
	hwloc_topology_t topo = arg;
	hwloc_const_cpuset_t near = nic_cpuset(topo, info);
	hwloc_bitmap_t bind;
	int d = -1;

	if (!near || !(bind = hwloc_bitmap_alloc()))
		return -1;
	if (hwloc_get_cpubind(topo, bind, HWLOC_CPUBIND_PROCESS) == 0 &&
	    !hwloc_bitmap_iszero(bind))
		d = hwloc_bitmap_isincluded(bind, near)	   ? 0
		    : hwloc_bitmap_intersects(bind, near) ? 1
							  : 2;
	hwloc_bitmap_free(bind);
	return d;
}

void psc_topo_nic_describe(const struct fi_info *info, void *arg, char *buf,
			   size_t len)
{
	static const char *const where[] = {
		"local to this process's CPUs",
		"partly local to this process's CPUs",
		"remote from this process's CPUs",
	};
	hwloc_topology_t topo = arg;
	const char *name = info->nic && info->nic->device_attr &&
					   info->nic->device_attr->name
				   ? info->nic->device_attr->name
				   : info->domain_attr->name;
	hwloc_const_cpuset_t near = nic_cpuset(topo, info);
	const struct fi_pci_attr *pci;
	char cpus[128] = "?";
	int d = psc_topo_nic_distance(info, arg);

	if (!info->nic || !info->nic->bus_attr ||
	    info->nic->bus_attr->bus_type != FI_BUS_PCI) {
		snprintf(buf, len, "%s (no PCI address)", name ? name : "?");
		return;
	}
	pci = &info->nic->bus_attr->attr.pci;
	if (near)
		hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), near);
	snprintf(buf, len, "%s at %04x:%02x:%02x.%x, near cpus %s, %s",
		 name ? name : "?", pci->domain_id, pci->bus_id, pci->device_id,
		 pci->function_id, cpus,
		 d >= 0 ? where[d] : "locality unknown (not in hwloc's view)");
}
