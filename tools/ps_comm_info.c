/*
 * ps_comm_info: the fabric explainer. It answers "why does pscomm (not)
 * run here?" without starting a job, by printing the library's report
 * (<ps_comm/info.h>): the pscomm and libfabric versions, the interface
 * and CPU placement a rank would get, and for every installed libfabric
 * provider whether pscomm can use it, with the attributes that decide its
 * behaviour or the reason it cannot. -p adds the parameter table, -v one
 * line per fi_info entry, --topo a drawing of the machine (packages, NUMA
 * nodes, cores and the NICs near each, with the providers on them),
 * --topo-xml FILE the same drawing of a saved hwloc topology, and
 * --replay judges a recorded `fi_info -v` instead of this machine's
 * (read by lib/replay, which is no part of libpscomm). It never opens a
 * fabric, so it is safe to run anywhere.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps_comm.h"
#include "ps_comm/info.h"
#include "replay/replay.h"

enum { EXIT_USAGE = 2 };

static const char progname[] = "ps_comm_info";

struct options {
	bool params;	    /* -p: parameter table */
	bool verbose;	    /* -v: one line per fi_info entry */
	const char *replay; /* --replay FILE: judge a recorded fi_info -v */
	bool topo;	    /* --topo: draw the topology */
	const char *topo_xml; /* --topo-xml FILE: draw that one instead */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-p] [-v] [-h] [--replay FILE] [--topo] "
		"[--topo-xml FILE]\n", progname);
}

static void help(void)
{
	usage(stdout);
	printf("Explain which libfabric providers pscomm can use here.\n"
	       "  -p  add the parameter table (PS_COMM_* variables)\n"
	       "  -v  add fabric, domain and address of every entry, and "
	       "each provider's tunables\n"
	       "  -h  print this help\n"
	       "  --replay FILE  judge the entries of a recorded `fi_info -v` "
	       "instead of this machine's\n"
	       "  --topo  add the topology: packages, NUMA nodes, cores and "
	       "the NICs near\n"
	       "          each, with the libfabric providers that use them\n"
	       "  --topo-xml FILE  draw a saved hwloc topology (lstopo "
	       "FILE.xml) instead of\n"
	       "          this machine's; implies --topo\n");
}

/*
 * Parse the command line into o. Returns 0 to run, 1 when help was
 * printed, or -1 on bad usage (usage line already on stderr).
 */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"replay", required_argument, NULL, 'r'},
		{"topo", no_argument, NULL, 't'},
		{"topo-xml", required_argument, NULL, 'x'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	opterr = 0; /* our own message, in the usual one-line form */
	while ((c = getopt_long(argc, argv, "pvh", longs, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->replay = optarg;
			break;
		case 't':
			o->topo = true;
			break;
		case 'x':
			o->topo = true;
			o->topo_xml = optarg;
			break;
		case 'p':
			o->params = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			help();
			return 1;
		default:
			if (optopt)
				fprintf(stderr, "%s: unknown option -%c\n",
					progname, optopt);
			else
				fprintf(stderr, "%s: unknown option %s\n",
					progname, argv[optind - 1]);
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\"\n", progname,
			argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

/*
 * --replay: load path and make the report judge its entries through
 * lib/replay's fi_getinfo. Returns 0, or -1 with the error on stderr.
 * The caller frees *list with psc_replay_free.
 */
static int use_replay(const char *path, struct fi_info **list,
		      ps_comm_info_opts_t *io)
{
	char err[256];

	if (psc_replay_load(path, list, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: --replay: %s\n", progname, err);
		return -1;
	}
	psc_replay_use(*list);
	io->getinfo = psc_replay_getinfo;
	io->entries = *list;
	io->entries_name = path;
	return 0;
}

int main(int argc, char **argv)
{
	struct fi_info *replayed = NULL;
	ps_comm_info_opts_t io;
	struct options opt;
	int rc;

	rc = parse_args(argc, argv, &opt);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	ps_comm_info_opts_init(&io);
	io.flags = (opt.params ? PS_COMM_INFO_PARAMS : 0) |
		   (opt.verbose ? PS_COMM_INFO_VERBOSE : 0) |
		   (opt.topo ? PS_COMM_INFO_TOPO : 0);
	io.topo_xml = opt.topo_xml;
	if (opt.topo_xml && access(opt.topo_xml, R_OK) != 0) {
		fprintf(stderr, "%s: --topo-xml: %s: %s\n", progname,
			opt.topo_xml, strerror(errno));
		return EXIT_FAILURE;
	}
	if (opt.replay && use_replay(opt.replay, &replayed, &io) != 0)
		return EXIT_FAILURE;
	rc = ps_comm_info_print(stdout, &io);
	psc_replay_free(replayed);
	if (rc) {
		fprintf(stderr, "%s: %s\n", progname, ps_comm_strerror(rc));
		return EXIT_FAILURE;
	}
	return 0;
}
