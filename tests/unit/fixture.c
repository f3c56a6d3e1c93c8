/*
 * Endpoints for unit suites that talk to themselves (fixture.h).
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rdma/fabric.h>

#include "fixture.h"

bool fx_listed(const char *name)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	bool listed;

	if (!hints)
		return false;
	hints->fabric_attr->prov_name = strdup(name);
	listed = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info) == 0;
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return listed;
}

void fx_open(struct fx_ep *f, enum psc_fab_role role, int rank, int size)
{
	struct psc_fab_config cfg = {.params = &f->params, .rank = rank,
				     .role = role};
	char err[512];

	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(psc_params_load(&f->params, err, sizeof(err)), 0);
	ck_assert_msg(psc_ep_acquire_exclusive(&f->ep, &cfg, err,
					       sizeof(err)) == 0,
		      "opening an endpoint: %s", err);
	psc_ep_set_spin(f->ep, 0);
	psc_chan_bind(&f->ch, f->ep, NULL);
	f->ch.rank = rank;
	f->ch.size = size;
	f->ch.peers = f->peers;
}

void fx_connect(struct fx_ep *from, const struct fx_ep *to, int peer)
{
	size_t len;
	const void *name = psc_ep_name(to->ep, &len);

	ck_assert_int_eq(psc_ep_av_insert(from->ep, name, &from->peers[peer]),
			 0);
}

void fx_close(struct fx_ep *f)
{
	psc_ep_release(f->ep);
	f->ep = NULL;
}

struct fx_ep fx_one;

static void one_setup(void)
{
	fx_open(&fx_one, PSC_ROLE_ANY, 0, 1);
	fx_connect(&fx_one, &fx_one, 0);
}

static void one_teardown(void)
{
	fx_close(&fx_one);
}

TCase *fx_tcase(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, one_setup, one_teardown);
	tcase_set_timeout(tc, 60);
	return tc;
}

int fx_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
