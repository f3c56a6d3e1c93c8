/*
 * allreduce: time ps_comm_allreduce on every rank for sizes from MIN to MAX
 * bytes, doubling, and report the time per call (the slowest rank's
 * average), the algorithm bandwidth (bytes / time) and the bus bandwidth
 * (algbw * 2(n-1)/n, as nccl-tests reports it). With -c the inputs are
 * small integers whose reduction is exact in every data type, and every
 * result of every call is compared bit for bit with a reference computed
 * here; wrong elements are counted over all ranks and make the program
 * exit non-zero. bench/mpi_allreduce.c measures MPI_Allreduce the same way.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps_comm.h"
#include "args.h"
#include "example.h"

#define ALGO_ENV "PS_COMM_ALLREDUCE_ALGO"
/* Ranks beyond this add zeros in floating-point sums, which stay exact. */
#define FLOAT_SUM_RANKS 64

static const char *const dtype_names[PS_COMM_DTYPE_COUNT] = {
	[PS_COMM_INT8] = "int8",	 [PS_COMM_UINT8] = "uint8",
	[PS_COMM_INT32] = "int32",	 [PS_COMM_UINT32] = "uint32",
	[PS_COMM_INT64] = "int64",	 [PS_COMM_UINT64] = "uint64",
	[PS_COMM_FLOAT16] = "float16",	 [PS_COMM_BFLOAT16] = "bfloat16",
	[PS_COMM_FLOAT32] = "float32",	 [PS_COMM_FLOAT64] = "float64",
};
static const char *const op_names[PS_COMM_OP_COUNT] = {
	[PS_COMM_SUM] = "sum",
	[PS_COMM_PROD] = "prod",
	[PS_COMM_MIN] = "min",
	[PS_COMM_MAX] = "max",
};
static const char *const algo_names[] = {"auto", "ring", "rd",
					 "rabenseifner", "hier"};

struct opts {
	size_t min, max;
	int dtype, op;
	const char *algo; /* NULL: -a not given */
	int iters;	  /* 0: scaled with the size */
	int check, csv;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: allreduce [-m MIN] [-M MAX] [-t DTYPE] [-o OP] "
		"[-a ALGO] [-i ITERS] [-c] [--csv]\n"
		"  sizes in bytes (K/M/G suffixes), default 4K to 64M\n"
		"  DTYPE: int8 uint8 int32 uint32 int64 uint64 float16 "
		"bfloat16 float32 (default) float64\n"
		"  OP: sum (default) prod min max\n"
		"  ALGO: auto (default) ring rd rabenseifner hier\n"
		"  -i ITERS: timed calls per size (default: 5 to 1000, "
		"fewer for large sizes)\n"
		"  -c: check every result\n");
}

/* ex_choice over a whole table of names. */
#define CHOICE(a, opt, v, names, what)                                         \
	ex_choice(a, opt, v, names, (int)(sizeof(names) / sizeof(names[0])),  \
		  what)

/*
 * The sweep runs the sizes from MIN, doubling up to MAX, that are 0 or
 * hold at least one element; with none of them there is nothing to time.
 */
static void check_sweep(const struct ex_args *a, const struct opts *o,
			const char *min_arg, const char *max_arg)
{
	size_t esize = ps_comm_dtype_size(o->dtype);
	char mb[32], xb[32];

	ex_size_order(a, o->min, min_arg, o->max, max_arg);
	for (size_t s = o->min; s <= o->max; s = s ? s * 2 : 1) {
		if (s == 0 || s >= esize)
			return;
		if (s > o->max / 2)
			break;
	}
	ex_usage_error(a, "no size from -m %s to -M %s holds one %s element "
		       "(%zu bytes)",
		       min_arg ? min_arg : ex_size_text(o->min, mb, sizeof(mb)),
		       max_arg ? max_arg : ex_size_text(o->max, xb, sizeof(xb)),
		       dtype_names[o->dtype], esize);
}

/* A usage error ends the program here, before pscomm is started. */
static void parse_opts(int argc, char **argv, struct opts *o)
{
	const char *min_arg = NULL, *max_arg = NULL, *v;
	struct ex_args a;

	*o = (struct opts){4u << 10, 64u << 20, PS_COMM_FLOAT32, PS_COMM_SUM,
			   NULL, 0, 0, 0};
	ex_args_init(&a, "allreduce", usage, argc, argv);
	while (ex_args_next(&a)) {
		if (ex_flag(&a, "--csv"))
			o->csv = 1;
		else if (ex_flag(&a, "-c"))
			o->check = 1;
		else if ((v = ex_value(&a, "-m")))
			o->min = ex_size(&a, "-m", v), min_arg = v;
		else if ((v = ex_value(&a, "-M")))
			o->max = ex_size(&a, "-M", v), max_arg = v;
		else if ((v = ex_value(&a, "-t")))
			o->dtype = CHOICE(&a, "-t", v, dtype_names, "type");
		else if ((v = ex_value(&a, "-o")))
			o->op = CHOICE(&a, "-o", v, op_names, "operation");
		else if ((v = ex_value(&a, "-a")))
			o->algo = algo_names[CHOICE(&a, "-a", v, algo_names,
						    "algorithm")];
		else if ((v = ex_value(&a, "-i")))
			o->iters = ex_int(&a, "-i", v, 1, INT_MAX,
					  "iterations");
		else
			ex_unknown(&a);
	}
	check_sweep(&a, o, min_arg, max_arg);
}

/* ------------------------------------------------------------ the data */

static int is_signed(int dtype)
{
	return dtype != PS_COMM_UINT8 && dtype != PS_COMM_UINT32 &&
	       dtype != PS_COMM_UINT64;
}

static int is_float(int dtype)
{
	return dtype >= PS_COMM_FLOAT16;
}

/*
 * Input of rank r at element i: small integers whose reduction over the
 * ranks is exact in every type (float16 holds integers up to 2048 and
 * bfloat16 up to 256 exactly, partial sums included):
 *   sum      (i + 3r) mod 5, minus 2 for signed and floating types;
 *            floating-point sums take zeros from ranks >= FLOAT_SUM_RANKS;
 *   prod     1, except one rank gives 2, a second rank gives 2 on every
 *            third element, and for signed types a third gives -1 on odd
 *            elements: products are +-1, 2 or 4;
 *   min/max  (7i + 13r) mod 61, minus 30 for signed and floating types.
 */
static long long value(const struct opts *o, int r, int n, size_t i)
{
	size_t k = (i + (size_t)r) % (size_t)n;
	long long s;

	switch (o->op) {
	case PS_COMM_SUM:
		if (is_float(o->dtype) && r >= FLOAT_SUM_RANKS)
			return 0;
		s = (long long)((i + 3 * (size_t)r) % 5);
		return is_signed(o->dtype) ? s - 2 : s;
	case PS_COMM_PROD:
		if (k == 0 || (k == 1 && i % 3 == 0))
			return 2;
		return k == 2 && i % 2 && is_signed(o->dtype) ? -1 : 1;
	default:
		s = (long long)((7 * i + 13 * (size_t)r) % 61);
		return is_signed(o->dtype) ? s - 30 : s;
	}
}

static long long fold(int op, long long a, long long b)
{
	switch (op) {
	case PS_COMM_SUM:
		return a + b;
	case PS_COMM_PROD:
		return a * b;
	case PS_COMM_MIN:
		return a < b ? a : b;
	default:
		return a > b ? a : b;
	}
}

/* v as float16 bits; exact for the small integers used here. */
static uint16_t half_bits(float f)
{
	uint32_t b;
	int e;

	memcpy(&b, &f, sizeof(b));
	if (!(b & 0x7fffffffu))
		return (uint16_t)(b >> 16);
	e = (int)((b >> 23) & 0xff) - 127 + 15;
	return (uint16_t)((b >> 16 & 0x8000) | (uint32_t)e << 10 |
			  (b >> 13 & 0x3ff));
}

/* Store v at element i of buf in dtype; integer types wrap around. */
static void store(void *buf, int dtype, size_t i, long long v)
{
	float f = (float)v;
	uint32_t fb;

	switch (dtype) {
	case PS_COMM_INT8:
	case PS_COMM_UINT8:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case PS_COMM_INT32:
	case PS_COMM_UINT32:
		((uint32_t *)buf)[i] = (uint32_t)v;
		break;
	case PS_COMM_INT64:
	case PS_COMM_UINT64:
		((uint64_t *)buf)[i] = (uint64_t)v;
		break;
	case PS_COMM_FLOAT16:
		((uint16_t *)buf)[i] = half_bits(f);
		break;
	case PS_COMM_BFLOAT16:
		memcpy(&fb, &f, sizeof(fb));
		((uint16_t *)buf)[i] = (uint16_t)(fb >> 16);
		break;
	case PS_COMM_FLOAT32:
		((float *)buf)[i] = f;
		break;
	default:
		((double *)buf)[i] = (double)v;
	}
}

static void fill_input(const struct opts *o, void *buf, size_t count, int r,
		       int n)
{
	for (size_t i = 0; i < count; i++)
		store(buf, o->dtype, i, value(o, r, n, i));
}

/* The exact result, reduced here in rank order. */
static void fill_expected(const struct opts *o, void *buf, size_t count,
			  int n)
{
	for (size_t i = 0; i < count; i++) {
		long long acc = value(o, 0, n, i);

		for (int r = 1; r < n; r++)
			acc = fold(o->op, acc, value(o, r, n, i));
		store(buf, o->dtype, i, acc);
	}
}

/* Elements of got whose bits differ from want. */
static uint64_t count_wrong(const void *got, const void *want, size_t count,
			    size_t esize)
{
	const unsigned char *g = got, *w = want;
	uint64_t bad = 0;

	if (memcmp(got, want, count * esize) == 0)
		return 0;
	for (size_t i = 0; i < count; i++)
		bad += memcmp(g + i * esize, w + i * esize, esize) != 0;
	return bad;
}

/* Make every byte of buf differ from want, so an unwritten result shows. */
static void poison(void *buf, const void *want, size_t len)
{
	unsigned char *b = buf;
	const unsigned char *w = want;

	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)~w[i];
}

/* ---------------------------------------------------------- the timing */

/*
 * Timed calls per size unless -i is given: about 256 MiB of data, at
 * least 5 and at most 1000 calls. Warm-up: a tenth of that, 2 to 50.
 * bench/mpi_allreduce.c uses the same rule.
 */
static int iters_for(size_t bytes)
{
	size_t n = bytes ? (256u << 20) / bytes : 1000;

	return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

static int warmup_for(int iters)
{
	int w = iters / 10;

	return w < 2 ? 2 : w > 50 ? 50 : w;
}

struct ctx {
	ps_comm_t comm;
	int rank, nranks;
	void *send, *recv, *expect;
	const char *what;
};

struct result {
	double time_us;	 /* slowest rank's average */
	uint64_t errors; /* over all ranks */
};

/* One call, timed; checked with -c. Adds its time to *us. */
static int one_call(struct ctx *c, const struct opts *o, size_t count,
		    double *us, uint64_t *errors)
{
	size_t esize = ps_comm_dtype_size(o->dtype);
	double t0;

	if (o->check)
		poison(c->recv, c->expect, count * esize);
	t0 = now_us();
	TRY(ps_comm_allreduce(c->comm, c->send, c->recv, count, o->dtype,
			      o->op), c, "allreduce");
	*us += now_us() - t0;
	if (o->check)
		*errors += count_wrong(c->recv, c->expect, count, esize);
	return 0;
}

static int run_size(struct ctx *c, const struct opts *o, size_t count,
		    struct result *res)
{
	size_t bytes = count * ps_comm_dtype_size(o->dtype);
	int iters = o->iters ? o->iters : iters_for(bytes);
	int warm = warmup_for(iters);
	double us = 0, avg;
	uint64_t errors = 0;
	int rc;

	fill_input(o, c->send, count, c->rank, c->nranks);
	if (o->check)
		fill_expected(o, c->expect, count, c->nranks);
	for (int i = 0; i < warm; i++)
		if ((rc = one_call(c, o, count, &us, &errors)) != 0)
			return rc;
	TRY(ps_comm_barrier(c->comm), c, "barrier");
	us = 0;
	for (int i = 0; i < iters; i++)
		if ((rc = one_call(c, o, count, &us, &errors)) != 0)
			return rc;
	avg = us / iters;
	TRY(ps_comm_allreduce(c->comm, &avg, &res->time_us, 1,
			      PS_COMM_FLOAT64, PS_COMM_MAX), c,
	    "allreduce of the timings");
	TRY(ps_comm_allreduce(c->comm, &errors, &res->errors, 1,
			      PS_COMM_UINT64, PS_COMM_SUM), c,
	    "allreduce of the error counts");
	return 0;
}

static void print_header(const struct ctx *c, const struct opts *o,
			 const char *algo)
{
	const char *prov = "?";

	if (o->csv) {
		printf("size_bytes,count,dtype,op,algo,time_us,algbw_GBps,"
		       "busbw_GBps,errors\n");
		return;
	}
	ps_comm_provider_name(c->comm, &prov);
	printf("# allreduce: %d ranks, provider %s, %s %s, algorithm %s%s\n",
	       c->nranks, prov, dtype_names[o->dtype], op_names[o->op], algo,
	       o->check ? ", checked" : "");
	printf("%12s %12s %12s %12s %12s %8s\n", "size(B)", "count",
	       "time(us)", "algbw(GB/s)", "busbw(GB/s)", "errors");
}

static void print_row(const struct ctx *c, const struct opts *o,
		      const char *algo, size_t count, const struct result *r)
{
	size_t bytes = count * ps_comm_dtype_size(o->dtype);
	double algbw = r->time_us > 0 ? (double)bytes / r->time_us / 1e3 : 0;
	double busbw = algbw * 2 * (c->nranks - 1) / c->nranks;

	if (o->csv)
		printf("%zu,%zu,%s,%s,%s,%.3f,%.4f,%.4f,%llu\n", bytes, count,
		       dtype_names[o->dtype], op_names[o->op], algo, r->time_us,
		       algbw, busbw, (unsigned long long)r->errors);
	else
		printf("%12zu %12zu %12.3f %12.4f %12.4f %8llu\n", bytes,
		       count, r->time_us, algbw, busbw,
		       (unsigned long long)r->errors);
	fflush(stdout);
}

/* Sizes smaller than one element (other than 0) are skipped. */
static int sweep(struct ctx *c, const struct opts *o, const char *algo,
		 uint64_t *errors)
{
	size_t esize = ps_comm_dtype_size(o->dtype);

	if (c->rank == 0)
		print_header(c, o, algo);
	for (size_t s = o->min; s <= o->max; s = s ? s * 2 : 1) {
		struct result r;
		int rc;

		if (s && s < esize)
			continue;
		rc = run_size(c, o, s / esize, &r);
		if (rc)
			return rc;
		*errors += r.errors;
		if (c->rank == 0)
			print_row(c, o, algo, s / esize, &r);
		if (s > o->max / 2)
			break;
	}
	return 0;
}

/*
 * -a is passed to the library through its environment variable, which it
 * reads at init; -a wins over a value already set. The name to report.
 */
static const char *apply_algo(const struct opts *o)
{
	const char *env;

	if (o->algo) {
		setenv(ALGO_ENV, o->algo, 1);
		return o->algo;
	}
	env = getenv(ALGO_ENV);
	return env && env[0] ? env : "auto";
}

static int alloc_buffers(struct ctx *c, const struct opts *o)
{
	size_t len = o->max ? o->max : 1;

	c->send = malloc(len);
	c->recv = malloc(len);
	c->expect = o->check ? malloc(len) : NULL;
	return c->send && c->recv && (c->expect || !o->check) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ctx c = {0};
	const char *algo;
	uint64_t errors = 0;
	int rc;

	parse_opts(argc, argv, &o);
	algo = apply_algo(&o);
	rc = ps_comm_init(&c.comm, NULL);
	if (rc) {
		fprintf(stderr, "allreduce: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(c.comm, &c.rank);
	ps_comm_size(c.comm, &c.nranks);
	if (alloc_buffers(&c, &o) != 0) {
		fprintf(stderr, "allreduce: rank %d: out of memory\n", c.rank);
		return 1;
	}
	rc = sweep(&c, &o, algo, &errors);
	if (rc) {
		char detail[512];

		ps_comm_last_error(c.comm, detail, sizeof(detail));
		fprintf(stderr, "allreduce: rank %d: %s failed: %s%s%s\n",
			c.rank, c.what, ps_comm_strerror(rc),
			detail[0] ? ": " : "", detail);
		/*
		 * A failure of this rank's own (not a dead peer's, which
		 * every rank learns): the others may wait for it, so tell
		 * them rather than leave them waiting.
		 */
		if (rc != PS_COMM_ERR_PEER && rc != PS_COMM_ERR_ABORTED)
			ps_comm_abort(c.comm, rc);
	} else if (errors && c.rank == 0) {
		fprintf(stderr, "allreduce: %llu wrong elements\n",
			(unsigned long long)errors);
	}
	free(c.send);
	free(c.recv);
	free(c.expect);
	if (ps_comm_finalize(c.comm) && !rc)
		rc = 1;
	return rc || errors ? 1 : 0;
}
