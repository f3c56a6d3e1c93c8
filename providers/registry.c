/*
 * The registry of provider profiles. Lookup matches the family prefix of
 * a libfabric provider name ("tcp;ofi_rxm" belongs to "tcp") and falls back
 * to the generic profile, whose members also fill any a profile leaves
 * unset.
 */
#include <pthread.h>
#include <string.h>

#include "provider.h"

static const struct psc_provider_ops *const profiles[] = {
	&psc_tcp_ops,
	&psc_shm_ops,
	&psc_sockets_ops,
	&psc_udp_ops,
	&psc_verbs_ops,
	&psc_psm2_ops,
	&psc_psm3_ops,
	&psc_opx_ops,
	&psc_efa_ops,
};

/* Completed copies of the profiles: NULL members taken from generic. */
static struct psc_provider_ops filled[sizeof(profiles) / sizeof(profiles[0])];
static pthread_once_t fill_once = PTHREAD_ONCE_INIT;

static void fill_profiles(void)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		struct psc_provider_ops *o = &filled[i];

		*o = *profiles[i];
		if (!o->fixup_hints)
			o->fixup_hints = psc_generic_ops.fixup_hints;
		if (!o->accept)
			o->accept = psc_generic_ops.accept;
		if (!o->derive_caps)
			o->derive_caps = psc_generic_ops.derive_caps;
		if (!o->describe_cq_error)
			o->describe_cq_error =
				psc_generic_ops.describe_cq_error;
	}
}

bool psc_provider_is(const char *prov_name, const char *family)
{
	size_t n = strlen(family);

	if (!prov_name || strncmp(prov_name, family, n) != 0)
		return false;
	return prov_name[n] == '\0' || prov_name[n] == ';';
}

const struct psc_provider_ops *psc_provider_lookup(const char *prov_name)
{
	pthread_once(&fill_once, fill_profiles);
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (psc_provider_is(prov_name, filled[i].name))
			return &filled[i];
	return &psc_generic_ops;
}

const struct psc_provider_ops *psc_provider_all(size_t *n)
{
	pthread_once(&fill_once, fill_profiles);
	*n = sizeof(profiles) / sizeof(profiles[0]);
	return filled;
}
