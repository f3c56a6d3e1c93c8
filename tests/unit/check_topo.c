/*
 * Unit tests for placement and topology (lib/fabric/topo.c) over saved
 * hwloc topologies of real servers (tests/data/topo/, see its README):
 * for each, the core and NUMA node every node-local rank gets with
 * PS_COMM_BIND=core and numa, no two ranks on one core while cores
 * suffice, the NUMA fallback and its warning when ranks outnumber cores,
 * the nearest NIC of every NUMA node, and the drawing. Then the mode
 * parser's errors and, on this machine, binding the test process itself.
 * Every expected value was read by hand from the XML files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fabric/topo.h"
#include "util/util.h"

#ifndef PSC_TOPO_DIR
#error "PSC_TOPO_DIR must name tests/data/topo"
#endif

/* What one rank of a placement must get. */
struct want_place {
	int core;	  /* logical index, -1 for numa */
	int numa;
	int package;
	const char *cpus; /* PU list */
};

/* The nearest NIC of one NUMA node. */
struct want_nic {
	int numa;
	const char *name;
	const char *pci;
	int distance;
};

/* One topology file and what pscomm must make of it. */
struct machine {
	const char *file;
	int cores;			/* placement cores */
	int ncore;			/* entries of core[] */
	struct want_place core[8];	/* ranks 0.. of ncore, mode core */
	int nnuma;			/* NUMA domains = entries of numa[] */
	struct want_place numa[4];	/* ranks 0.., mode numa */
	struct want_nic nic[4];		/* per NUMA node, nnuma entries */
	const char *drawn;		/* a piece of the drawing */
};

static const struct machine machines[] = {
	{
		/* 2 x 8 cores, no SMT; NICs on both packages. */
		.file = "16intel64-manyVFs.xml",
		.cores = 16,
		.ncore = 5,
		.core = {{0, 0, 0, "0"},
			 {8, 1, 1, "8"},
			 {1, 0, 0, "1"},
			 {9, 1, 1, "9"},
			 {2, 0, 0, "2"}},
		.nnuma = 2,
		.numa = {{-1, 0, 0, "0-7"}, {-1, 1, 1, "8-15"}},
		.nic = {{0, "usnic_0", "0000:0b:00.0", 0},
			{1, "usnic_2", "0000:88:00.0", 0}},
		.drawn = "Package 1\n"
			 "  NUMA 1: cores 8-15 (8 PUs: 8-15)\n"
			 "    NIC eth6, usnic_2 (0000:88:00.0): label 2\n"
			 "    NIC eth7 (0000:89:00.0)\n",
	},
	{
		/* 2 x 8 cores x 2 threads; every NIC on package 1. */
		.file = "32em64t-2n8c2t-pci-normalio.xml",
		.cores = 16,
		.ncore = 4,
		.core = {{0, 0, 0, "0,16"},
			 {8, 1, 1, "8,24"},
			 {1, 0, 0, "1,17"},
			 {9, 1, 1, "9,25"}},
		.nnuma = 2,
		.numa = {{-1, 0, 0, "0-7,16-23"}, {-1, 1, 1, "8-15,24-31"}},
		.nic = {{0, "mlx5_0", "0000:04:00.0", 2},
			{1, "mlx5_0", "0000:04:00.0", 0}},
		.drawn = "Package 0\n"
			 "  NUMA 0: cores 0-7 (16 PUs: 0-7,16-23)\n"
			 "Package 1\n"
			 "  NUMA 1: cores 8-15 (16 PUs: 8-15,24-31)\n"
			 "    NIC eth0 (0000:81:00.0)\n"
			 "    NIC eth1 (0000:81:00.1)\n"
			 "    NIC ib0, mlx5_0 (0000:04:00.0): label 2\n",
	},
	{
		/* 2 x 6 cores x 2 threads, PUs interleaved over packages. */
		.file = "24em64t-2n6c2t-pci.xml",
		.cores = 12,
		.ncore = 4,
		.core = {{0, 0, 0, "0,12"},
			 {6, 1, 1, "1,13"},
			 {1, 0, 0, "2,14"},
			 {7, 1, 1, "3,15"}},
		.nnuma = 2,
		.numa = {{-1, 0, 0, "0,2,4,6,8,10,12,14,16,18,20,22"},
			 {-1, 1, 1, "1,3,5,7,9,11,13,15,17,19,21,23"}},
		.nic = {{0, "mlx4_0", "0000:05:00.0", 0},
			{1, "mlx4_0", "0000:05:00.0", 2}},
		.drawn = "    NIC eth2, ib0, mlx4_0 (0000:05:00.0): label 3\n"
			 "Package 1\n"
			 "  NUMA 1: cores 6-11 (12 PUs: "
			 "1,3,5,7,9,11,13,15,17,19,21,23)\n",
	},
	{
		/*
		 * 4 NUMA nodes of 4 packages of 6 cores; the first package
		 * of NUMA node 0 is package 1, and its cores take every
		 * fourth PU.
		 */
		.file = "96em64t-4n4d3ca2co-pci.xml",
		.cores = 96,
		.ncore = 6,
		.core = {{0, 0, 1, "0"},
			 {24, 1, 4, "24"},
			 {48, 2, 8, "48"},
			 {72, 3, 12, "72"},
			 {1, 0, 1, "4"},
			 {25, 1, 4, "28"}},
		.nnuma = 4,
		.numa = {{-1, 0, -1, "0-23"},
			 {-1, 1, -1, "24-47"},
			 {-1, 2, -1, "48-71"},
			 {-1, 3, -1, "72-95"}},
		.nic = {{0, "eth0", "0000:02:00.0", 0},
			{1, "eth2", "0000:32:00.0", 0},
			{2, "eth4", "0000:62:00.0", 0},
			{3, "eth6", "0000:92:00.0", 0}},
		.drawn = "NUMA 3: packages 12-15, cores 72-95 (24 PUs: 72-95)\n"
			 "  NIC eth6 (0000:92:00.0)\n"
			 "  NIC eth7 (0000:92:00.1)\n",
	},
};

static struct psc_topo *load(const char *file)
{
	char path[512], err[256] = "";
	struct psc_topo *t = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", PSC_TOPO_DIR, file);
	rc = psc_topo_load(path, &t, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: %s", file, err);
	return t;
}

static void check_place(const struct psc_topo_place *p,
			const struct want_place *w, enum psc_bind mode,
			const char *file, int rank)
{
	ck_assert_msg(p->mode == mode && p->core == w->core &&
			      p->numa == w->numa && p->package == w->package &&
			      strcmp(p->cpus, w->cpus) == 0 && !*p->warn,
		      "%s rank %d: mode %d core %d NUMA %d package %d cpus "
		      "%s warn \"%s\"; want core %d NUMA %d package %d cpus %s",
		      file, rank, (int)p->mode, p->core, p->numa, p->package,
		      p->cpus, p->warn, w->core, w->numa, w->package, w->cpus);
}

START_TEST(test_core_placement)
{
	const struct machine *m = &machines[_i];
	struct psc_topo *t = load(m->file);
	struct psc_topo_place p;
	char err[256];

	/* The first ranks of a node filled to its last core. */
	for (int r = 0; r < m->ncore; r++) {
		ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, r, m->cores,
						&p, err, sizeof(err)),
				 0);
		check_place(&p, &m->core[r], PSC_BIND_CORE, m->file, r);
	}
	/* And for fewer ranks, the same deal. */
	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, 1, 2, &p, err,
					sizeof(err)),
			 0);
	check_place(&p, &m->core[1], PSC_BIND_CORE, m->file, 1);
	psc_topo_free(t);
}
END_TEST

START_TEST(test_core_distinct)
{
	const struct machine *m = &machines[_i];
	struct psc_topo *t = load(m->file);
	int *seen = calloc((size_t)m->cores, sizeof(int));
	struct psc_topo_place p;
	char err[256];

	ck_assert_ptr_nonnull(seen);
	for (int r = 0; r < m->cores; r++) {
		ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, r, m->cores,
						&p, err, sizeof(err)),
				 0);
		ck_assert_int_eq(p.mode, PSC_BIND_CORE);
		ck_assert_str_eq(p.warn, "");
		ck_assert(p.core >= 0 && p.core < m->cores);
		ck_assert_msg(!seen[p.core], "%s: core %d given twice",
			      m->file, p.core);
		seen[p.core] = 1;
	}
	free(seen);
	psc_topo_free(t);
}
END_TEST

START_TEST(test_core_fallback)
{
	const struct machine *m = &machines[_i];
	struct psc_topo *t = load(m->file);
	struct psc_topo_place p;
	char err[256];
	int n = m->cores + 1;

	/* One rank more than cores: each rank gets a NUMA node instead. */
	for (int r = 0; r < m->nnuma; r++) {
		ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, r, n, &p, err,
						sizeof(err)),
				 0);
		ck_assert_int_eq(p.mode, PSC_BIND_NUMA);
		ck_assert_int_eq(p.numa, m->numa[r].numa);
		ck_assert_str_eq(p.cpus, m->numa[r].cpus);
		ck_assert_msg(strstr(p.warn, "cores; bound to NUMA nodes"),
			      "warn \"%s\"", p.warn);
	}
	psc_topo_free(t);
}
END_TEST

START_TEST(test_numa_placement)
{
	const struct machine *m = &machines[_i];
	struct psc_topo *t = load(m->file);
	struct psc_topo_place p;
	char err[256];
	int n = 2 * m->nnuma + 1;

	/* Rank r on NUMA domain r mod D, whatever the rank count. */
	for (int r = 0; r < n; r++) {
		ck_assert_int_eq(psc_topo_place(t, PSC_BIND_NUMA, r, n, &p, err,
						sizeof(err)),
				 0);
		check_place(&p, &m->numa[r % m->nnuma], PSC_BIND_NUMA, m->file,
			    r);
	}
	psc_topo_free(t);
}
END_TEST

START_TEST(test_nearest_nic)
{
	const struct machine *m = &machines[_i];
	struct psc_topo *t = load(m->file);
	struct psc_topo_nic nic[32];
	char cpus[256];

	for (int k = 0; k < m->nnuma; k++) {
		const struct want_nic *w = &m->nic[k];
		size_t n;

		ck_assert_int_eq(psc_topo_numa_cpus(t, w->numa, cpus,
						    sizeof(cpus)),
				 0);
		n = psc_topo_nics(t, cpus, nic, PSC_ARRAY_SIZE(nic));
		ck_assert(n > 0 && n <= PSC_ARRAY_SIZE(nic));
		ck_assert_msg(strcmp(nic[0].name, w->name) == 0 &&
				      strcmp(nic[0].pci, w->pci) == 0 &&
				      nic[0].distance == w->distance,
			      "%s NUMA %d: nearest %s (%s) at %d; want %s (%s) "
			      "at %d", m->file, w->numa, nic[0].name,
			      nic[0].pci, nic[0].distance, w->name, w->pci,
			      w->distance);
		for (size_t j = 1; j < n; j++)
			ck_assert(nic[j].distance >= nic[j - 1].distance);
	}
	ck_assert_int_eq(psc_topo_numa_cpus(t, 99, cpus, sizeof(cpus)),
			 -ENOENT);
	psc_topo_free(t);
}
END_TEST

/* The whole order for one NUMA node: near first, RDMA, then PCI order. */
START_TEST(test_nic_order)
{
	static const char *const want[] = {
		"usnic_2", "eth6", "eth7", "usnic_0", "usnic_1",
		"eth0",	   "eth1", "eth4", "eth5",
	};
	struct psc_topo *t = load("16intel64-manyVFs.xml");
	struct psc_topo_nic nic[16];
	size_t n = psc_topo_nics(t, "8-15", nic, PSC_ARRAY_SIZE(nic));

	ck_assert_uint_eq(n, PSC_ARRAY_SIZE(want));
	for (size_t k = 0; k < n; k++)
		ck_assert_str_eq(nic[k].name, want[k]);
	ck_assert(nic[0].rdma && !nic[1].rdma);
	ck_assert_int_eq(nic[0].numa, 1);
	ck_assert_int_eq(nic[0].package, 1);
	ck_assert_int_eq(nic[3].distance, 2);
	/* Asking for more than max still counts them all. */
	ck_assert_uint_eq(psc_topo_nics(t, "8-15", nic, 1), n);
	psc_topo_free(t);
}
END_TEST

/* A label naming how many OS devices share the PCI function. */
static void label(const struct psc_topo_nic *devs, size_t n, void *arg,
		  char *buf, size_t len)
{
	(void)devs;
	(void)arg;
	if (n > 1)
		snprintf(buf, len, "label %zu", n);
}

START_TEST(test_draw)
{
	const struct machine *m = &machines[_i];
	struct psc_topo *t = load(m->file);
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	ck_assert_ptr_nonnull(f);
	psc_topo_draw(t, f, 0, label, NULL);
	fclose(f);
	ck_assert_msg(strstr(text, m->drawn), "%s: drawing lacks\n%s\nin\n%s",
		      m->file, m->drawn, text);
	ck_assert(strncmp(text, "Machine: ", 9) == 0);
	free(text);
	psc_topo_free(t);
}
END_TEST

START_TEST(test_describe)
{
	struct psc_topo *t = load("32em64t-2n8c2t-pci-normalio.xml");
	struct psc_topo_place p;
	char err[256], d[512];

	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_NUMA, 1, 2, &p, err,
					sizeof(err)),
			 0);
	psc_topo_place_describe(t, &p, d, sizeof(d));
	ck_assert_str_eq(d, "bound to cores 8-15 (PUs 8-15,24-31; NUMA node 1, "
			    "package 1), nearest NIC mlx5_0");
	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, 0, 2, &p, err,
					sizeof(err)),
			 0);
	psc_topo_place_describe(t, &p, d, sizeof(d));
	ck_assert_str_eq(d, "bound to core 0 (PUs 0,16; NUMA node 0, package "
			    "0), nearest NIC mlx5_0 (remote, on NUMA node 1)");
	psc_topo_free(t);
}
END_TEST

START_TEST(test_bind_parse)
{
	enum psc_bind m = PSC_BIND_CORE;
	char err[256] = "";

	ck_assert_int_eq(psc_topo_bind_parse("numa", &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m, PSC_BIND_NUMA);
	ck_assert_int_eq(psc_topo_bind_parse("core", &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m, PSC_BIND_CORE);
	ck_assert_int_eq(psc_topo_bind_parse(NULL, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(m, PSC_BIND_NONE);
	ck_assert_int_eq(psc_topo_bind_parse("socket", &m, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "unknown binding \"socket\": use none, core or "
			      "numa");
	ck_assert_int_eq(psc_topo_bind_parse("Core", &m, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(psc_topo_bind_name(PSC_BIND_NUMA), "numa");
}
END_TEST

START_TEST(test_place_errors)
{
	struct psc_topo *t = load("16intel64-manyVFs.xml");
	struct psc_topo_place p;
	char err[256] = "";

	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, 2, 2, &p, err,
					sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "node-local rank 2 is not in [0, 2)");
	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, -1, 2, &p, err,
					sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(psc_topo_place(t, (enum psc_bind)7, 0, 2, &p, err,
					sizeof(err)),
			 -EINVAL);
	/* none binds nothing. */
	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_NONE, 0, 2, &p, err,
					sizeof(err)),
			 0);
	ck_assert_str_eq(p.cpus, "");
	ck_assert_int_eq(psc_topo_bind(t, &p, err, sizeof(err)), 0);
	/* A file's topology is not this machine's. */
	ck_assert_int_eq(psc_topo_place(t, PSC_BIND_CORE, 0, 2, &p, err,
					sizeof(err)),
			 0);
	ck_assert_int_eq(psc_topo_bind(t, &p, err, sizeof(err)), -EINVAL);
	psc_topo_free(t);
}
END_TEST

START_TEST(test_load_errors)
{
	struct psc_topo *t = NULL;
	char err[256] = "";

	ck_assert_int_lt(psc_topo_load(PSC_TOPO_DIR "/README.md", &t, err,
				       sizeof(err)),
			 0);
	ck_assert_ptr_null(t);
	ck_assert(strstr(err, "README.md") != NULL);
	ck_assert_int_lt(psc_topo_load(PSC_TOPO_DIR "/absent.xml", &t, err,
				       sizeof(err)),
			 0);
}
END_TEST

/* ------------------------------------------------ this machine */

START_TEST(test_bind_self_core)
{
	char msg[512];
	const char *pus;
	cpu_set_t set;
	int rc = psc_topo_bind_self("core", 0, 1, msg, sizeof(msg));

	ck_assert_msg(rc == 0, "rc %d: %s", rc, msg);
	ck_assert_msg(strstr(msg, "PS_COMM_BIND=core: node-local rank 0 of 1 "
				  "bound to core 0 (PUs "),
		      "%s", msg);
	/* The process now runs on core 0's PUs only: the first named. */
	pus = strstr(msg, "(PUs ") + 5;
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	ck_assert(CPU_ISSET((int)strtol(pus, NULL, 10), &set));
	ck_assert_int_le(CPU_COUNT(&set), 8);
}
END_TEST

START_TEST(test_bind_self_fallback)
{
	char msg[512];
	int rc = psc_topo_bind_self("core", 0, 1 << 20, msg, sizeof(msg));

	ck_assert_msg(rc == PSC_TOPO_BIND_FALLBACK, "rc %d: %s", rc, msg);
	ck_assert_msg(strstr(msg, "1048576 node-local ranks but "), "%s", msg);
	ck_assert_msg(strstr(msg, "bound to "), "%s", msg);
}
END_TEST

START_TEST(test_bind_self_errors)
{
	char msg[512];

	ck_assert_int_eq(psc_topo_bind_self("sockets", 0, 1, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_str_eq(msg, "PS_COMM_BIND: unknown binding \"sockets\": use "
			      "none, core or numa");
	ck_assert_int_eq(psc_topo_bind_self("numa", 1, 1, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_int_eq(psc_topo_bind_self("none", 0, 1, msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "not bound (PS_COMM_BIND=none)");
	ck_assert_int_eq(psc_topo_bind_self(NULL, 0, 1, msg, sizeof(msg)), 0);
}
END_TEST

static Suite *topo_suite(void)
{
	Suite *s = suite_create("topo");
	int n = (int)PSC_ARRAY_SIZE(machines);
	TCase *tc;

	tc = tcase_create("placement");
	tcase_add_loop_test(tc, test_core_placement, 0, n);
	tcase_add_loop_test(tc, test_core_distinct, 0, n);
	tcase_add_loop_test(tc, test_core_fallback, 0, n);
	tcase_add_loop_test(tc, test_numa_placement, 0, n);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_place_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("nics");
	tcase_add_loop_test(tc, test_nearest_nic, 0, n);
	tcase_add_test(tc, test_nic_order);
	tcase_add_loop_test(tc, test_draw, 0, n);
	suite_add_tcase(s, tc);

	tc = tcase_create("modes");
	tcase_add_test(tc, test_bind_parse);
	tcase_add_test(tc, test_load_errors);
	suite_add_tcase(s, tc);

	/* Each test runs in its own forked process: binding stays there. */
	tc = tcase_create("this machine");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_bind_self_core);
	tcase_add_test(tc, test_bind_self_fallback);
	tcase_add_test(tc, test_bind_self_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(topo_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
