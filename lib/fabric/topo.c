/*
 * Topology: the only user of hwloc. It describes where this process runs
 * (its CPU binding and the NUMA nodes near it) for the log, so that a
 * rank's placement can be checked against the NIC it uses; it places
 * node-local ranks on cores or NUMA nodes and binds them (PS_COMM_BIND);
 * it lists the network devices near a set of CPUs, and draws a machine
 * (this one or a saved hwloc XML file) for ps_comm_info.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Load an hwloc topology of this machine (xml NULL) or of an XML file,
 * with PCI devices and their bridges (to place a NIC under a package)
 * and the important OS devices. Returns 0 or a negative errno with err.
 */
static int load_hwloc(const char *xml, hwloc_topology_t *out, char *err,
		      size_t len)
{
	hwloc_topology_t topo;
	int rc;

	if (hwloc_topology_init(&topo) != 0) {
		snprintf(err, len, "hwloc_topology_init: %s", strerror(errno));
		return -ENOMEM;
	}
	hwloc_topology_set_io_types_filter(topo,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	errno = 0;
	if (xml && hwloc_topology_set_xml(topo, xml) != 0) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, len, "%s: cannot use as an hwloc XML topology: "
			 "%s", xml, strerror(-rc));
		hwloc_topology_destroy(topo);
		return rc;
	}
	/*
	 * hwloc's PCI plugin leaves libpciaccess's device list in
	 * libpciaccess's globals and unloads both on the last destroy:
	 * LeakSanitizer would report ~1 KiB from an unknown module, which no
	 * suppression can name. Not pscomm's memory.
	 */
	topo_lsan_off();
	errno = 0;
	rc = hwloc_topology_load(topo);
	topo_lsan_on();
	if (rc != 0) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, len, "%s: hwloc cannot load it: %s",
			 xml ? xml : "this machine's topology", strerror(-rc));
		hwloc_topology_destroy(topo);
		return rc;
	}
	*out = topo;
	return 0;
}

void *psc_topo_open(void)
{
	hwloc_topology_t topo = NULL;
	char err[256];

	return load_hwloc(NULL, &topo, err, sizeof(err)) == 0 ? topo : NULL;
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

/* ------------------------------------------------ topology and placement */

struct psc_topo {
	hwloc_topology_t h;
	bool from_file; /* read from XML: binding would not act on it */
};

int psc_topo_load(const char *xml, struct psc_topo **out, char *err,
		  size_t len)
{
	struct psc_topo *t = calloc(1, sizeof(*t));
	int rc;

	if (!t) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	rc = load_hwloc(xml, &t->h, err, len);
	if (rc != 0) {
		free(t);
		return rc;
	}
	t->from_file = xml != NULL;
	*out = t;
	return 0;
}

void psc_topo_free(struct psc_topo *t)
{
	if (!t)
		return;
	hwloc_topology_destroy(t->h);
	free(t);
}

static const char *const bind_names[] = {
	[PSC_BIND_NONE] = "none",
	[PSC_BIND_CORE] = "core",
	[PSC_BIND_NUMA] = "numa",
};

int psc_topo_bind_parse(const char *s, enum psc_bind *mode, char *err,
			size_t len)
{
	if (!s || !*s) {
		*mode = PSC_BIND_NONE;
		return 0;
	}
	for (size_t k = 0; k < PSC_ARRAY_SIZE(bind_names); k++)
		if (strcmp(s, bind_names[k]) == 0) {
			*mode = (enum psc_bind)k;
			return 0;
		}
	snprintf(err, len, "unknown binding \"%s\": use none, core or numa",
		 s);
	return -EINVAL;
}

const char *psc_topo_bind_name(enum psc_bind mode)
{
	return (size_t)mode < PSC_ARRAY_SIZE(bind_names) ? bind_names[mode]
							  : "?";
}

/*
 * The cores of t grouped by NUMA domain (see struct psc_topo_place):
 * node[d] is domain d's NUMA node, core[first[d] .. first[d + 1]) its
 * cores in logical order. Cores are PUs on machines hwloc shows without
 * cores.
 */
struct domains {
	size_t n;	 /* domains */
	hwloc_obj_t *node;
	size_t *first;	 /* n + 1 entries */
	hwloc_obj_t *core;
	size_t ncores;
};

static void domains_free(struct domains *d)
{
	free(d->node);
	free(d->first);
	free(d->core);
}

/* The first NUMA node (logical order) whose CPUs hold c, or NULL. */
static hwloc_obj_t core_node(hwloc_topology_t h, hwloc_obj_t c)
{
	hwloc_obj_t n = NULL;

	while ((n = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, n)))
		if (hwloc_bitmap_intersects(n->cpuset, c->cpuset))
			return n;
	return NULL;
}

/* Fill d from h. Returns 0, -ENOMEM, or -ENOENT when h has no core. */
static int domains_build(hwloc_topology_t h, struct domains *d)
{
	hwloc_obj_type_t ct = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) > 0
				      ? HWLOC_OBJ_CORE
				      : HWLOC_OBJ_PU;
	int nn = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
	int nc = hwloc_get_nbobjs_by_type(h, ct);
	hwloc_obj_t n = NULL;

	memset(d, 0, sizeof(*d));
	if (nc <= 0 || nn <= 0)
		return -ENOENT;
	d->node = calloc((size_t)nn, sizeof(hwloc_obj_t));
	d->first = calloc((size_t)nn + 1, sizeof(size_t));
	d->core = calloc((size_t)nc, sizeof(hwloc_obj_t));
	if (!d->node || !d->first || !d->core) {
		domains_free(d);
		return -ENOMEM;
	}
	while ((n = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, n))) {
		size_t before = d->ncores;
		hwloc_obj_t c = NULL;

		while ((c = hwloc_get_next_obj_by_type(h, ct, c)))
			if (core_node(h, c) == n)
				d->core[d->ncores++] = c;
		if (d->ncores == before)
			continue; /* memory only */
		d->node[d->n] = n;
		d->first[d->n++] = before;
	}
	d->first[d->n] = d->ncores;
	if (d->ncores == 0) {
		domains_free(d);
		return -ENOENT;
	}
	return 0;
}

/* The core rank i gets: the i-th dealt round-robin over the domains. */
static hwloc_obj_t deal_core(const struct domains *d, size_t i,
			     size_t *domain)
{
	for (size_t round = 0;; round++)
		for (size_t k = 0; k < d->n; k++) {
			if (d->first[k] + round >= d->first[k + 1])
				continue;
			if (i-- == 0) {
				*domain = k;
				return d->core[d->first[k] + round];
			}
		}
}

/* OS index of the package holding o, or -1 when none does. */
static int package_of(hwloc_topology_t h, hwloc_obj_t o)
{
	hwloc_obj_t p = o->type == HWLOC_OBJ_PACKAGE
				? o
				: hwloc_get_ancestor_obj_by_type(
					  h, HWLOC_OBJ_PACKAGE, o);

	return p ? (int)p->os_index : -1;
}

/* Bind p to domain k's NUMA node. */
static void place_numa(hwloc_topology_t h, const struct domains *d, size_t k,
		       struct psc_topo_place *p)
{
	hwloc_obj_t n = d->node[k];

	p->mode = PSC_BIND_NUMA;
	p->numa = (int)n->os_index;
	p->package = package_of(h, n);
	hwloc_bitmap_list_snprintf(p->cpus, sizeof(p->cpus), n->cpuset);
}

int psc_topo_place(const struct psc_topo *t, enum psc_bind mode,
		   int local_rank, int local_size, struct psc_topo_place *p,
		   char *err, size_t len)
{
	struct domains d;
	size_t k, i = (size_t)local_rank;
	hwloc_obj_t c;
	int rc;

	memset(p, 0, sizeof(*p));
	p->core = p->numa = p->package = -1;
	if (local_rank < 0 || local_rank >= local_size) {
		snprintf(err, len, "node-local rank %d is not in [0, %d)",
			 local_rank, local_size);
		return -EINVAL;
	}
	if (mode == PSC_BIND_NONE)
		return 0;
	if (mode != PSC_BIND_CORE && mode != PSC_BIND_NUMA) {
		snprintf(err, len, "unknown binding mode %d", (int)mode);
		return -EINVAL;
	}
	rc = domains_build(t->h, &d);
	if (rc != 0) {
		snprintf(err, len, "%s", rc == -ENOENT ? "the topology has no "
			 "core in a NUMA node" : "out of memory");
		return rc;
	}
	if (mode == PSC_BIND_NUMA) {
		place_numa(t->h, &d, i % d.n, p);
	} else if ((size_t)local_size > d.ncores) {
		place_numa(t->h, &d, i % d.n, p);
		snprintf(p->warn, sizeof(p->warn), "core binding: %d node-local "
			 "ranks but %zu cores; bound to NUMA nodes instead, "
			 "local rank %d to NUMA node %d, shared with other "
			 "ranks", local_size, d.ncores, local_rank, p->numa);
	} else {
		c = deal_core(&d, i, &k);
		p->mode = PSC_BIND_CORE;
		p->core = (int)c->logical_index;
		p->numa = (int)d.node[k]->os_index;
		p->package = package_of(t->h, c);
		hwloc_bitmap_list_snprintf(p->cpus, sizeof(p->cpus),
					   c->cpuset);
	}
	domains_free(&d);
	return 0;
}

int psc_topo_bind(const struct psc_topo *t, const struct psc_topo_place *p,
		  char *err, size_t len)
{
	hwloc_bitmap_t set;
	int rc = 0;

	if (p->mode == PSC_BIND_NONE)
		return 0;
	if (t->from_file) {
		snprintf(err, len, "cannot bind to a topology read from a file");
		return -EINVAL;
	}
	set = hwloc_bitmap_alloc();
	if (!set) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	if (hwloc_bitmap_list_sscanf(set, p->cpus) != 0 ||
	    hwloc_bitmap_iszero(set)) {
		snprintf(err, len, "\"%s\" is not a list of CPUs", p->cpus);
		rc = -EINVAL;
	} else if (hwloc_set_cpubind(t->h, set, HWLOC_CPUBIND_PROCESS) != 0) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, len, "binding this process to CPUs %s failed: %s",
			 p->cpus, strerror(-rc));
	}
	hwloc_bitmap_free(set);
	return rc;
}

/* ------------------------------------------------------------ NICs */

/* Whether o is a network interface or an OpenFabrics device. */
static bool is_nic(hwloc_obj_t o)
{
	return o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
	       o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

/* Describe the OS device o into nic, with its distance to set. */
static void nic_fill(hwloc_topology_t h, hwloc_obj_t o,
		     hwloc_const_cpuset_t set, struct psc_topo_nic *nic)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(h, o);
	hwloc_const_cpuset_t near = anc && anc->cpuset
					    ? anc->cpuset
					    : hwloc_topology_get_topology_cpuset(h);
	hwloc_obj_t pci = o->parent;

	memset(nic, 0, sizeof(*nic));
	snprintf(nic->name, sizeof(nic->name), "%s", o->name ? o->name : "?");
	nic->rdma = o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
	if (pci && pci->type == HWLOC_OBJ_PCI_DEVICE)
		snprintf(nic->pci, sizeof(nic->pci), "%04x:%02x:%02x.%x",
			 pci->attr->pcidev.domain, pci->attr->pcidev.bus,
			 pci->attr->pcidev.dev, pci->attr->pcidev.func);
	hwloc_bitmap_list_snprintf(nic->near, sizeof(nic->near), near);
	nic->numa = anc && anc->nodeset &&
				    hwloc_bitmap_weight(anc->nodeset) == 1
			    ? hwloc_bitmap_first(anc->nodeset)
			    : -1;
	nic->package = anc ? package_of(h, anc) : -1;
	nic->distance = hwloc_bitmap_isincluded(set, near)    ? 0
			: hwloc_bitmap_intersects(set, near) ? 1
							     : 2;
}

/* Nearest first; ties keep hwloc's order (the sort key's last field). */
struct nic_key {
	struct psc_topo_nic nic;
	size_t order;
};

static int nic_cmp(const void *a, const void *b)
{
	const struct nic_key *x = a, *y = b;

	if (x->nic.distance != y->nic.distance)
		return x->nic.distance - y->nic.distance;
	if (x->nic.rdma != y->nic.rdma)
		return x->nic.rdma ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * All NICs of h into *out (malloc'ed, caller frees), distances to set,
 * sorted nearest first when sort is set. Returns how many; 0 with *out
 * NULL when there is none or memory ran out.
 */
static size_t nics_all(hwloc_topology_t h, hwloc_const_cpuset_t set,
		       bool sort, struct nic_key **out)
{
	hwloc_obj_t o = NULL;
	size_t n = 0;

	*out = NULL;
	while ((o = hwloc_get_next_osdev(h, o)))
		n += is_nic(o);
	if (n == 0 || !(*out = calloc(n, sizeof(**out))))
		return 0;
	n = 0;
	while ((o = hwloc_get_next_osdev(h, o)))
		if (is_nic(o)) {
			nic_fill(h, o, set, &(*out)[n].nic);
			(*out)[n].order = n;
			n++;
		}
	if (sort)
		qsort(*out, n, sizeof(**out), nic_cmp);
	return n;
}

size_t psc_topo_nics(const struct psc_topo *t, const char *cpus,
		     struct psc_topo_nic *out, size_t max)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	struct nic_key *all;
	size_t n;

	if (!set)
		return 0;
	if (!cpus || hwloc_bitmap_list_sscanf(set, cpus) != 0 ||
	    hwloc_bitmap_iszero(set))
		hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(t->h));
	n = nics_all(t->h, set, true, &all);
	for (size_t k = 0; k < n && k < max; k++)
		out[k] = all[k].nic;
	free(all);
	hwloc_bitmap_free(set);
	return n;
}

int psc_topo_numa_cpus(const struct psc_topo *t, int numa, char *buf,
		       size_t len)
{
	hwloc_obj_t n = NULL;

	if (numa >= 0)
		while ((n = hwloc_get_next_obj_by_type(t->h, HWLOC_OBJ_NUMANODE,
						       n)))
			if (n->os_index == (unsigned)numa) {
				hwloc_bitmap_list_snprintf(buf, len, n->cpuset);
				return 0;
			}
	snprintf(buf, len, "%s", "");
	return -ENOENT;
}

/* ------------------------------------------------------- describe */

/* The type placement counts as cores (PUs when hwloc shows no core). */
static hwloc_obj_type_t core_type(hwloc_topology_t h)
{
	return hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
							       : HWLOC_OBJ_PU;
}

/*
 * The logical indexes of the cores wholly inside set (node NULL) or
 * belonging to NUMA node node, as a list into buf. Returns their count.
 */
static int cores_list(hwloc_topology_t h, hwloc_const_cpuset_t set,
		      hwloc_obj_t node, char *buf, size_t len)
{
	hwloc_bitmap_t l = hwloc_bitmap_alloc();
	hwloc_obj_type_t ct = core_type(h);
	hwloc_obj_t c = NULL;
	int n;

	snprintf(buf, len, "?");
	if (!l)
		return 0;
	while ((c = hwloc_get_next_obj_by_type(h, ct, c)))
		if (node ? core_node(h, c) == node
			 : hwloc_bitmap_isincluded(c->cpuset, set))
			hwloc_bitmap_set(l, c->logical_index);
	n = hwloc_bitmap_weight(l);
	hwloc_bitmap_list_snprintf(buf, len, l);
	hwloc_bitmap_free(l);
	return n;
}

/* "nearest NIC mlx5_0" (or why there is none) for cpus into buf. */
static void nearest_nic(const struct psc_topo *t, const char *cpus, char *buf,
			size_t len)
{
	struct psc_topo_nic nic;

	if (psc_topo_nics(t, cpus, &nic, 1) == 0)
		snprintf(buf, len, "no NIC in hwloc's view");
	else if (nic.distance == 0)
		snprintf(buf, len, "nearest NIC %s", nic.name);
	else if (nic.numa >= 0)
		snprintf(buf, len, "nearest NIC %s (remote, on NUMA node %d)",
			 nic.name, nic.numa);
	else
		snprintf(buf, len, "nearest NIC %s (remote, near PUs %s)",
			 nic.name, nic.near);
}

void psc_topo_place_describe(const struct psc_topo *t,
			     const struct psc_topo_place *p, char *buf,
			     size_t len)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	char cores[128], where[64] = "", nic[160], cpus[256] = "?";
	int n;

	if (!set) {
		snprintf(buf, len, "?");
		return;
	}
	if (p->mode == PSC_BIND_NONE) {
		if (!t->from_file &&
		    hwloc_get_cpubind(t->h, set, HWLOC_CPUBIND_PROCESS) == 0)
			hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), set);
		snprintf(buf, len, "not bound (runs on PUs %s)", cpus);
		hwloc_bitmap_free(set);
		return;
	}
	hwloc_bitmap_list_sscanf(set, p->cpus);
	n = cores_list(t->h, set, NULL, cores, sizeof(cores));
	if (p->package >= 0)
		snprintf(where, sizeof(where), ", package %d", p->package);
	nearest_nic(t, p->cpus, nic, sizeof(nic));
	snprintf(buf, len, "bound to %s %s (PUs %s; NUMA node %d%s), %s",
		 n == 1 ? "core" : "cores", cores, p->cpus, p->numa, where,
		 nic);
	hwloc_bitmap_free(set);
}

/* ------------------------------------------------------------- draw */

/* What psc_topo_draw passes around. */
struct draw {
	hwloc_topology_t h;
	FILE *out;
	psc_topo_label_fn label;
	void *arg;
	struct nic_key *nics; /* in hwloc's order */
	size_t n;
};

/*
 * Draw, at indent, the NICs whose NUMA node is numa (-1: several or
 * none), one line per PCI function (its OS devices run together in
 * hwloc's order).
 */
static void draw_nics(const struct draw *d, int numa, int indent)
{
	for (size_t k = 0, end; k < d->n; k = end) {
		const struct psc_topo_nic *g = &d->nics[k].nic;
		struct psc_topo_nic devs[16];
		char text[512] = "";
		size_t m = 0;

		for (end = k; end < d->n && m < PSC_ARRAY_SIZE(devs) &&
			      (end == k || (*g->pci && strcmp(d->nics[end].nic.pci,
							      g->pci) == 0));
		     end++)
			devs[m++] = d->nics[end].nic;
		if (g->numa != numa)
			continue;
		fprintf(d->out, "%*sNIC ", indent, "");
		for (size_t j = 0; j < m; j++)
			fprintf(d->out, "%s%s", j ? ", " : "", devs[j].name);
		if (*g->pci)
			fprintf(d->out, " (%s)", g->pci);
		else
			fprintf(d->out, " (no PCI address)");
		if (numa < 0)
			fprintf(d->out, " near PUs %s", g->near);
		if (d->label)
			d->label(devs, m, d->arg, text, sizeof(text));
		fprintf(d->out, "%s%s\n", *text ? ": " : "", text);
	}
}

/* One NUMA node's line and its NICs, at indent. */
static void draw_numa(const struct draw *d, hwloc_obj_t n, int indent)
{
	char cores[256], pus[256], pkgs[64] = "";
	int nc = cores_list(d->h, NULL, n, cores, sizeof(cores));

	hwloc_bitmap_list_snprintf(pus, sizeof(pus), n->cpuset);
	if (package_of(d->h, n) < 0) {
		hwloc_bitmap_t p = hwloc_bitmap_alloc();
		hwloc_obj_t o = NULL;

		while (p && (o = hwloc_get_next_obj_by_type(
				     d->h, HWLOC_OBJ_PACKAGE, o)))
			if (hwloc_bitmap_isincluded(o->cpuset, n->cpuset))
				hwloc_bitmap_set(p, o->os_index);
		if (p && !hwloc_bitmap_iszero(p)) {
			char l[48];

			hwloc_bitmap_list_snprintf(l, sizeof(l), p);
			snprintf(pkgs, sizeof(pkgs), "packages %s, ", l);
		}
		hwloc_bitmap_free(p);
	}
	if (nc == 0)
		fprintf(d->out, "%*sNUMA %u: no cores (memory only)\n", indent,
			"", n->os_index);
	else
		fprintf(d->out, "%*sNUMA %u: %s%s %s (%d PU%s: %s)\n", indent,
			"", n->os_index, pkgs, nc == 1 ? "core" : "cores",
			cores, hwloc_bitmap_weight(n->cpuset),
			hwloc_bitmap_weight(n->cpuset) == 1 ? "" : "s", pus);
	draw_nics(d, (int)n->os_index, indent + 2);
}

/* " 2 packages" and then sep, for the machine's summary line. */
static void draw_count(const struct draw *d, hwloc_obj_type_t type,
		       const char *what, const char *sep)
{
	int n = hwloc_get_nbobjs_by_type(d->h, type);

	fprintf(d->out, " %d %s%s%s", n, what, n == 1 ? "" : "s", sep);
}

void psc_topo_draw(const struct psc_topo *t, FILE *out, int indent,
		   psc_topo_label_fn label, void *arg)
{
	struct draw d = {.h = t->h, .out = out, .label = label, .arg = arg};
	hwloc_obj_t n = NULL;
	int pkg = -2;
	bool several = false;

	d.n = nics_all(t->h, hwloc_topology_get_topology_cpuset(t->h), false,
		       &d.nics);
	fprintf(out, "%*sMachine:", indent, "");
	draw_count(&d, HWLOC_OBJ_PACKAGE, "package", ",");
	draw_count(&d, HWLOC_OBJ_NUMANODE, "NUMA node", ",");
	draw_count(&d, core_type(t->h), "core", ",");
	draw_count(&d, HWLOC_OBJ_PU, "PU", "\n");
	while ((n = hwloc_get_next_obj_by_type(t->h, HWLOC_OBJ_NUMANODE, n))) {
		int p = package_of(t->h, n);

		if (p >= 0 && p != pkg)
			fprintf(out, "%*sPackage %d\n", indent, "", p);
		pkg = p;
		draw_numa(&d, n, indent + (p >= 0 ? 2 : 0));
	}
	for (size_t k = 0; k < d.n; k++)
		several |= d.nics[k].nic.numa < 0;
	if (several) {
		fprintf(out, "%*sNot local to one NUMA node:\n", indent, "");
		draw_nics(&d, -1, indent + 2);
	}
	if (d.n == 0)
		fprintf(out, "%*sNo network device in hwloc's view (no PCI "
			"NIC here, or only virtual ones hwloc does not list)\n",
			indent, "");
	free(d.nics);
}

/* -------------------------------------------------- bind at init */

int psc_topo_bind_self(const char *mode, int local_rank, int local_size,
		       char *msg, size_t len)
{
	struct psc_topo_place p;
	struct psc_topo *t;
	enum psc_bind m;
	char err[256], where[512];
	int rc;

	if (psc_topo_bind_parse(mode, &m, err, sizeof(err)) != 0) {
		snprintf(msg, len, "PS_COMM_BIND: %s", err);
		return -EINVAL;
	}
	if (local_rank < 0 || local_rank >= local_size) {
		snprintf(msg, len, "PS_COMM_BIND=%s: node-local rank %d is "
			 "not in [0, %d)", psc_topo_bind_name(m), local_rank,
			 local_size);
		return -EINVAL;
	}
	if (m == PSC_BIND_NONE) {
		snprintf(msg, len, "not bound (PS_COMM_BIND=none)");
		return 0;
	}
	rc = psc_topo_load(NULL, &t, err, sizeof(err));
	if (rc == 0) {
		rc = psc_topo_place(t, m, local_rank, local_size, &p, err,
				    sizeof(err));
		if (rc == 0)
			rc = psc_topo_bind(t, &p, err, sizeof(err));
		if (rc == 0)
			psc_topo_place_describe(t, &p, where, sizeof(where));
		psc_topo_free(t);
	}
	if (rc != 0)
		snprintf(msg, len, "PS_COMM_BIND=%s: %s", psc_topo_bind_name(m),
			 err);
	else if (*p.warn)
		snprintf(msg, len, "PS_COMM_BIND=%s: %s; %s",
			 psc_topo_bind_name(m), p.warn, where);
	else
		snprintf(msg, len, "PS_COMM_BIND=%s: node-local rank %d of %d "
			 "%s", psc_topo_bind_name(m), local_rank, local_size,
			 where);
	return rc != 0 ? rc : *p.warn ? PSC_TOPO_BIND_FALLBACK : 0;
}
