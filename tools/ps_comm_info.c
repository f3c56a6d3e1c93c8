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
 * (read by lib/replay, which is no part of libpscomm). Only --open opens
 * a fabric: an endpoint on every usable provider, closed again, to say
 * which step fails and why; without it the tool is safe to run anywhere.
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
	bool open;	    /* --open[=RANKS]: try opening each provider */
	int open_ranks;	    /* RANKS, or 0: from the environment */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-p] [-v] [-h] [--replay FILE] [--topo] "
		"[--topo-xml FILE] [--open[=RANKS]]\n", progname);
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
	       "          this machine's; implies --topo\n"
	       "  --open[=RANKS]  open and close an endpoint (fabric, domain, "
	       "CQ, AV, endpoint,\n"
	       "          enable) on every usable provider, as a rank of a "
	       "job of RANKS ranks\n"
	       "          (default: PS_COMM_SIZE or the launcher's, else 1), "
	       "and say which\n"
	       "          step fails and why, and what ps_comm_init would "
	       "fall back to;\n"
	       "          not with --replay\n");
}

/* RANKS of --open=RANKS: a positive decimal number, else -1. */
static int parse_ranks(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return end == s || *end || v < 1 || v > 1 << 20 ? -1 : (int)v;
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
		{"open", optional_argument, NULL, 'o'},
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
		case 'o':
			o->open = true;
			o->open_ranks = optarg ? parse_ranks(optarg) : 0;
			if (o->open_ranks < 0) {
				fprintf(stderr, "%s: --open=%s: RANKS must be "
					"a positive number\n", progname,
					optarg);
				usage(stderr);
				return -1;
			}
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
	if (o->open && o->replay) {
		fprintf(stderr, "%s: --open cannot open the entries of "
			"--replay\n", progname);
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
		   (opt.topo ? PS_COMM_INFO_TOPO : 0) |
		   (opt.open ? PS_COMM_INFO_OPEN : 0);
	io.topo_xml = opt.topo_xml;
	io.open_ranks = opt.open_ranks;
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
