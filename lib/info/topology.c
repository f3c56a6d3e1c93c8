/*
 * The topology section of the fabric report: the drawing of this machine
 * (or of a saved hwloc XML file) that lib/fabric/topo.c makes, with each
 * NIC labelled by the libfabric providers whose entries sit on it. An
 * entry sits on a NIC when its fi_nic PCI address is the NIC's, or when
 * its domain is named after one of the NIC's OS devices (verbs names the
 * domain after the RDMA device, mlx5_0; the IP providers after the
 * interface, eth0; some add a suffix, efa_0-rdm). Entries on no NIC drawn
 * (loopback, shared memory) are listed after the drawing.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

#include "fabric/fabric.h"
#include "fabric/select.h"
#include "fabric/topo.h"
#include "info/info_int.h"

/* The entries to match and which of them some NIC has claimed. */
struct labels {
	const struct fi_info *list;
	bool *claimed; /* one per entry of list, or NULL */
};

/* Whether domain is name, or name followed by '-' and a suffix. */
static bool domain_is(const char *domain, const char *name)
{
	size_t n = strlen(name);

	return *name && strncmp(domain, name, n) == 0 &&
	       (domain[n] == '\0' || domain[n] == '-');
}

/* Whether entry i sits on the NIC whose OS devices are devs[0..n). */
static bool on_nic(const struct fi_info *i, const struct psc_topo_nic *devs,
		   size_t n)
{
	const char *domain = i->domain_attr ? i->domain_attr->name : NULL;

	if (*devs[0].pci && i->nic && i->nic->bus_attr &&
	    i->nic->bus_attr->bus_type == FI_BUS_PCI) {
		const struct fi_pci_attr *p = &i->nic->bus_attr->attr.pci;
		char pci[16];

		snprintf(pci, sizeof(pci), "%04x:%02x:%02x.%x", p->domain_id,
			 p->bus_id, p->device_id, p->function_id);
		if (strcmp(pci, devs[0].pci) == 0)
			return true;
	}
	for (size_t k = 0; domain && k < n; k++)
		if (domain_is(domain, devs[k].name))
			return true;
	return false;
}

/* psc_topo_label_fn: the providers of the entries on devs. */
static void label(const struct psc_topo_nic *devs, size_t n, void *arg,
		  char *buf, size_t len)
{
	struct labels *l = arg;
	size_t k = 0;

	for (const struct fi_info *i = l->list; i; i = i->next, k++)
		if (on_nic(i, devs, n)) {
			psc_info_list_add(buf, len, i->fabric_attr->prov_name);
			if (l->claimed)
				l->claimed[k] = true;
		}
	if (!*buf)
		snprintf(buf, len, "no libfabric entry");
}

/* The entries no NIC claimed, with their domains, after the drawing. */
static void print_unclaimed(FILE *out, const struct labels *l)
{
	char names[512] = "";
	size_t k = 0;

	if (!l->claimed)
		return;
	for (const struct fi_info *i = l->list; i; i = i->next, k++) {
		char one[128];

		if (l->claimed[k])
			continue;
		snprintf(one, sizeof(one), "%s (%s)", i->fabric_attr->prov_name,
			 psc_info_nz(i->domain_attr ? i->domain_attr->name
						    : NULL));
		psc_info_list_add(names, sizeof(names), one);
	}
	if (*names)
		fprintf(out, "  On no NIC drawn (loopback, shared memory, or "
			"a device hwloc does not list): %s\n", names);
}

void psc_info_topology(const struct psc_info *cx)
{
	struct labels l = {.list = cx->replayed, .claimed = NULL};
	struct fi_info *queried = NULL;
	struct psc_topo *t;
	char err[512];
	bool relaxed, matched = !cx->topo_xml || cx->replayed;
	size_t n = 0;

	fprintf(cx->out, "\nTopology (%s%s):\n",
		cx->topo_xml ? "from " : "this machine",
		cx->topo_xml ? cx->topo_xml : "");
	if (psc_topo_load(cx->topo_xml, &t, err, sizeof(err)) != 0) {
		fprintf(cx->out, "  none: %s\n", err);
		return;
	}
	/* The entries ps_comm_init could consider, as in the providers. */
	if (matched && !l.list && psc_fab_query(cx->gi, NULL, &queried,
					       &relaxed) == 0)
		l.list = queried;
	for (const struct fi_info *i = l.list; i; i = i->next)
		n++;
	l.claimed = n ? calloc(n, sizeof(bool)) : NULL;
	psc_topo_draw(t, cx->out, 2, matched ? label : NULL, &l);
	if (!matched)
		fprintf(cx->out, "  (NICs not matched to providers: this "
			"machine's libfabric does not describe %s; add "
			"--replay with its fi_info -v)\n", cx->topo_xml);
	else if (!l.list)
		fprintf(cx->out, "  (no libfabric entry to match NICs with)\n");
	else
		print_unclaimed(cx->out, &l);
	free(l.claimed);
	psc_fab_freeinfo(queried);
	psc_topo_free(t);
}
