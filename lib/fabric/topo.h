/*
 * The only hwloc user: this process's CPU binding and NUMA node, and the
 * distance from it to a NIC named by a fi_info entry.
 */
#ifndef PSC_TOPO_H
#define PSC_TOPO_H

#include <stddef.h>

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

#endif /* PSC_TOPO_H */
