/*
 * The only hwloc user: this process's CPU binding and NUMA node, the
 * distance from it to a NIC named by a fi_info entry, and node-local
 * placement: which cores or NUMA node a node-local rank binds to
 * (PS_COMM_BIND), which network devices are near it, and a text drawing
 * of a machine's packages, NUMA nodes, cores and NICs. No hwloc type
 * crosses this header: CPU sets travel as lists of PU OS indexes
 * ("0-3,16-19", hwloc's list syntax, as taskset -c reads them).
 */
#ifndef PSC_TOPO_H
#define PSC_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct fi_info;

/* Describe this process's CPU binding and its NUMA node into buf. */
void psc_topo_describe(char *buf, size_t len);

/*
 * An hwloc topology with I/O devices for psc_topo_nic_distance, or NULL
 * when hwloc fails (distances are then unknown). Close with
 * psc_topo_close (NULL is fine).
 */
void *psc_topo_open(void);
void psc_topo_close(void *topo);

/*
 * psc_nic_distance_fn over the PCI address in info->nic->bus_attr and
 * this process's CPU binding; arg is from psc_topo_open.
 */
int psc_topo_nic_distance(const struct fi_info *info, void *arg);

/*
 * Describe the NIC of info and its locality ("mlx5_0 at 0000:3b:00.0,
 * NUMA node 0, local to this process's CPUs") into buf; arg as above.
 */
void psc_topo_nic_describe(const struct fi_info *info, void *arg, char *buf,
			   size_t len);

/* ------------------------------------------------ topology and placement */

/* A loaded machine topology, with its PCI and OS devices. Opaque. */
struct psc_topo;

/*
 * Load the topology of this machine (xml NULL) or of the hwloc XML file
 * xml (a saved `lstopo FILE.xml`), keeping PCI devices and the OS
 * devices hwloc deems important (network interfaces, OpenFabrics
 * devices), so that NICs are seen. On success *out is owned by the
 * caller (psc_topo_free). Returns 0, or a negative errno with the reason
 * in err (an unreadable or malformed file, hwloc failing). Blocks while
 * hwloc reads /sys or the file; safe on any thread.
 */
int psc_topo_load(const char *xml, struct psc_topo **out, char *err,
		  size_t len);

/* Free t (NULL is fine). */
void psc_topo_free(struct psc_topo *t);

/* PS_COMM_BIND's values. */
enum psc_bind {
	PSC_BIND_NONE,
	PSC_BIND_CORE, /* one core per node-local rank */
	PSC_BIND_NUMA, /* the NUMA node of a node-local rank */
};

/*
 * Parse a binding mode: "none", "core" or "numa" (exactly; NULL or ""
 * mean none). Returns 0, or -EINVAL with err naming the value and
 * listing the valid ones.
 */
int psc_topo_bind_parse(const char *s, enum psc_bind *mode, char *err,
			size_t len);

/* The name psc_topo_bind_parse reads for mode ("none", "core", "numa"). */
const char *psc_topo_bind_name(enum psc_bind mode);

/*
 * Where one node-local rank goes. The NUMA domains are the NUMA nodes
 * that hold cores (memory-only nodes, such as GPU or CXL memory, are
 * skipped), in hwloc's logical order; a core belongs to the first of
 * them that holds it.
 *
 * - core: the cores are dealt round-robin over the NUMA domains (the
 *   first core of each domain, then the second of each, skipping domains
 *   that have run out), and local rank i takes the i-th. With equal
 *   domains, rank i is on domain i mod D, so 2 ranks on a 2-socket box
 *   land on different sockets, and no two ranks share a core while the
 *   ranks are no more than the cores. With more ranks than cores, each
 *   rank is bound as for numa instead and warn says so.
 * - numa: local rank i gets all the CPUs of NUMA domain i mod D.
 * - none: nothing is bound; cpus is empty.
 */
struct psc_topo_place {
	enum psc_bind mode; /* what was done: may differ from what was asked */
	int core;	    /* the core's logical index, -1 unless mode core */
	int numa;	    /* the NUMA node's OS index, -1 with mode none */
	int package;	    /* OS index of the package holding cpus, -1 when */
			    /* none or several do */
	char cpus[256];	    /* PU OS indexes to bind to ("0,16"); "" for none */
	char warn[256];	    /* "" or what was done instead of the request */
};

/*
 * Compute into p where node-local rank local_rank of local_size goes with
 * mode, in topology t (see struct psc_topo_place). Returns 0 (p->warn set
 * when the request could not be met as asked), or -EINVAL for a rank out
 * of [0, local_size) or an unknown mode, -ENOENT when t has no core, with
 * the reason in err. Reads t only; safe on any thread.
 */
int psc_topo_place(const struct psc_topo *t, enum psc_bind mode,
		   int local_rank, int local_size, struct psc_topo_place *p,
		   char *err, size_t len);

/*
 * Bind the whole current process (every thread) to p->cpus; nothing for
 * mode none. t must be this machine's (psc_topo_load with xml NULL).
 * Returns 0, or a negative errno (-EINVAL for a topology read from a
 * file or a malformed cpus, hwloc_set_cpubind's errno otherwise: -EPERM,
 * -EXDEV when the CPUs are outside this process's cgroup...) with err
 * naming the CPUs and the reason.
 */
int psc_topo_bind(const struct psc_topo *t, const struct psc_topo_place *p,
		  char *err, size_t len);

/* A network device of a topology, as hwloc's OS device shows it. */
struct psc_topo_nic {
	char name[64];	 /* OS device name: mlx5_0, ib0, eth0, hfi1_0, efa_0 */
	bool rdma;	 /* an OpenFabrics (RDMA) device, not a netdev */
	char pci[16];	 /* its PCI function "0000:3b:00.0", "" when none */
	char near[128];	 /* the PUs hwloc says it is local to */
	int numa;	 /* OS index of the one NUMA node it is local to, */
			 /* -1 when several or none */
	int package;	 /* OS index of its package, -1 when several or none */
	int distance;	 /* to the CPUs asked about: 0 local (they are all */
			 /* near it), 1 partly, 2 remote */
};

/*
 * The network and OpenFabrics OS devices of t, nearest first to the PUs
 * in cpus (a PU list; NULL: the whole machine): by distance, then RDMA
 * devices before netdevs, then hwloc's order (PCI order). Fills out with
 * at most max of them and returns how many t has (more than max: call
 * again with a larger out). Reads t only; never fails (a malformed cpus
 * counts as the whole machine).
 */
size_t psc_topo_nics(const struct psc_topo *t, const char *cpus,
		     struct psc_topo_nic *out, size_t max);

/*
 * The PU list of the NUMA node with OS index numa into buf. Returns 0,
 * or -ENOENT when t has no such node.
 */
int psc_topo_numa_cpus(const struct psc_topo *t, int numa, char *buf,
		       size_t len);

/*
 * Describe p for the log into buf: "bound to cores 0-3 (PUs 0-3,16-19;
 * NUMA node 0, package 0), nearest NIC mlx5_0", or "not bound" with the
 * current binding for mode none.
 */
void psc_topo_place_describe(const struct psc_topo *t,
			     const struct psc_topo_place *p, char *buf,
			     size_t len);

/*
 * Label one NIC of a drawing: devs[0..n) are the OS devices of one PCI
 * function (or one device without PCI); write what uses them (the
 * libfabric providers) into buf, or leave buf empty. Called by
 * psc_topo_draw on its thread.
 */
typedef void (*psc_topo_label_fn)(const struct psc_topo_nic *devs, size_t n,
				  void *arg, char *buf, size_t len);

/*
 * Draw t to out as a text tree indented by indent spaces: each package,
 * its NUMA nodes with their cores and PUs, and under each NUMA node the
 * NICs local to it (OS devices grouped by PCI function, with the PCI
 * address and label's text when label is not NULL); NICs local to
 * several NUMA nodes come last, and a machine without network devices
 * says so. Never fails.
 */
void psc_topo_draw(const struct psc_topo *t, FILE *out, int indent,
		   psc_topo_label_fn label, void *arg);

/*
 * The library's binding at init (PS_COMM_BIND): parse mode, load this
 * machine's topology, compute the placement of node-local rank
 * local_rank of local_size and bind the whole process to it. Call once,
 * when the node-local rank and count are known, before starting
 * threads that should inherit the binding (threads started earlier are
 * bound too: the binding is per process). mode NULL or "" is none.
 *
 * Returns 0 when done as asked (mode none included: nothing is bound),
 * with msg describing the binding for an info log line;
 * PSC_TOPO_BIND_FALLBACK (positive) when bound otherwise than asked
 * (more ranks than cores with core), with msg as a warning to log;
 * or a negative errno with msg as the error: -EINVAL for an unknown
 * mode (msg lists the valid values) or a rank out of [0, local_size),
 * hwloc's errno when the topology cannot be read or the binding fails.
 */
#define PSC_TOPO_BIND_FALLBACK 1
int psc_topo_bind_self(const char *mode, int local_rank, int local_size,
		       char *msg, size_t len);

#endif /* PSC_TOPO_H */
