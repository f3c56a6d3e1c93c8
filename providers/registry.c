/*
 * The registry of provider profiles. Lookup matches the family prefix of
 * a libfabric provider name ("tcp;ofi_rxm" belongs to "tcp") and falls back
 * to the generic profile, whose members also fill any a profile leaves
 * unset.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider.h"

static const struct psc_provider_ops *const profiles[] = {
	&psc_tcp_ops,
	&psc_net_ops,
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

bool psc_provider_layered(const char *prov_name)
{
	/* libfabric names every utility and hook provider "ofi_...". */
	return prov_name && strncmp(prov_name, "ofi_", 4) == 0;
}

bool psc_provider_filter_single(const char *filter)
{
	return filter && *filter && !strpbrk(filter, ",^");
}

int psc_provider_fabrics(const char *filter, const char *intra,
			 enum psc_fabrics *out, bool *shm_ignored, char *err,
			 size_t len)
{
	bool one = psc_provider_filter_single(filter);

	if (strcmp(intra, "auto") != 0 && strcmp(intra, "shm") != 0 &&
	    strcmp(intra, "net") != 0) {
		snprintf(err, len, "PS_COMM_INTRA=%s: use auto, shm or net",
			 intra);
		return -EINVAL;
	}
	*shm_ignored = one && strcmp(intra, "shm") == 0 &&
		       strcmp(filter, PSC_SHM_PROVIDER) != 0;
	*out = one			   ? PSC_FABRICS_ONE
	       : strcmp(intra, "net") == 0 ? PSC_FABRICS_NET
					   : PSC_FABRICS_NODE;
	return 0;
}

bool psc_provider_filter_hides(const char *filter, const char *name)
{
	bool negated = filter[0] == '^', found = false;
	size_t n = strlen(name);
	char copy[512], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", filter + negated);
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		/* "a;x" names a itself only in a keep list. */
		if (strcasecmp(t, name) == 0 ||
		    (!negated && strncasecmp(t, name, n) == 0 && t[n] == ';'))
			found = true;
	}
	return negated ? found : !found;
}

bool psc_provider_filter_names(const char *item, size_t len,
			       const char *name)
{
	return strlen(name) == len && strncasecmp(name, item, len) == 0;
}

/* Families without a profile that still deserve a hint when missing. */
static const struct {
	const char *family, *hint;
} unprofiled[] = {
	/* psm (PSM 1) drives the older True Scale HCAs. */
	{"psm", "no Omni-Path or True Scale HFI (hfi1 or ib_qib driver)"},
};

/*
 * Libraries loaded for provider families that install signal handlers
 * as they are loaded: libinfinipath, which Debian's libfabric loads for
 * its psm provider, and the psm libraries (libpsm_infinipath, libpsm2).
 * tests/layering.sh reads this list as provider names.
 */
static const char *const provider_libs[] = {
	"libinfinipath",
	"libpsm",
};

bool psc_provider_signal_lib(const char *path)
{
	for (size_t i = 0; path && i < sizeof(provider_libs) /
					    sizeof(provider_libs[0]);
	     i++)
		if (strstr(path, provider_libs[i]))
			return true;
	return false;
}

const char *psc_provider_missing_hint(const char *name)
{
	const char *hint = psc_provider_lookup(name)->missing_hint;

	for (size_t i = 0; !hint && i < sizeof(unprofiled) /
						 sizeof(unprofiled[0]);
	     i++)
		if (psc_provider_is(name, unprofiled[i].family))
			hint = unprofiled[i].hint;
	return hint;
}

/*
 * Between nodes, best first. Over plain IP, libfabric's native RDM over
 * TCP comes before tcp;ofi_rxm: 5-6 us against 9-18 us at 4 KiB here
 * (doc/fabrics.md). That is net up to libfabric 1.17 and the tcp
 * provider's own RDM entries ("tcp") from 1.18, where net is gone; each
 * exists only where fi_getinfo lists it. A provider not listed comes
 * last: it joins the list once the whole suite passes on it.
 */
static const char *const net_order[] = {
	"efa", "opx", "psm3", "psm2", "cxi", "verbs;ofi_rxm", "verbs",
	"verbs;ofi_rxd", "net", "tcp", "tcp;ofi_rxm", "sockets",
	"udp;ofi_rxd", "udp",
};

int psc_provider_net_rank(const char *prov_name)
{
	int k;

	/* Shared memory only: shm, and sm2 (libfabric 1.18 and later). */
	if (strcmp(prov_name, PSC_SHM_PROVIDER) == 0 ||
	    strcmp(prov_name, "sm2") == 0)
		return -1;
	for (k = 0; k < (int)(sizeof(net_order) / sizeof(net_order[0])); k++)
		if (strcmp(net_order[k], prov_name) == 0)
			break;
	return k;
}

bool psc_provider_order_optional(const char *prov_name)
{
	size_t n;
	const struct psc_provider_ops *all = psc_provider_all(&n);

	if (prov_name)
		return psc_provider_lookup(prov_name)->order_optional;
	for (size_t i = 0; i < n; i++)
		if (all[i].order_optional)
			return true;
	return false;
}

/* Every family's agree_env, each variable once. */
static const char *agree_vars[32];
static size_t agree_count;
static pthread_once_t agree_once = PTHREAD_ONCE_INIT;

static void collect_agree(void)
{
	size_t n;
	const struct psc_provider_ops *all = psc_provider_all(&n);

	for (size_t i = 0; i < n; i++)
		for (const char *const *v = all[i].agree_env; v && *v; v++) {
			size_t k = 0;

			while (k < agree_count &&
			       strcmp(agree_vars[k], *v) != 0)
				k++;
			if (k == agree_count &&
			    agree_count < sizeof(agree_vars) /
						  sizeof(agree_vars[0]))
				agree_vars[agree_count++] = *v;
		}
}

const char *const *psc_provider_agree_env(size_t *n)
{
	pthread_once(&agree_once, collect_agree);
	*n = agree_count;
	return agree_vars;
}

void psc_provider_agree_append(char *buf, size_t len)
{
	size_t n, used = strnlen(buf, len);
	const char *const *vars = psc_provider_agree_env(&n);

	for (size_t i = 0; i < n && used + 1 < len; i++) {
		const char *v = getenv(vars[i]);
		int k = snprintf(buf + used, len - used, "%s=%s;", vars[i],
				 v ? v : "");

		if (k < 0)
			break;
		used += (size_t)k;
	}
}
