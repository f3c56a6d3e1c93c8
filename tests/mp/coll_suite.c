/*
 * The multi-process collectives suite, run under ps_comm_run: every
 * collective with every algorithm (forced through the communicator's
 * parameters), every data type and operation, counts 0, 1, primes and
 * counts not divisible by the rank count, in place and not, with long and
 * tiny pipelining segments; checked element by element against a serial
 * reference computed here (integers exact, floating point within a stated
 * bound), and checked for bitwise identical results on every rank. Also:
 * nonblocking collectives interleaved with wildcard point-to-point
 * traffic, sub-communicators, a barrier that must really wait, and bad
 * arguments.
 *
 * Options:
 *   --quick     fewer data types and counts (slow providers)
 *   --large     64 MiB allreduce with every algorithm, 16 MiB bcast
 *   --det       with PS_COMM_DETERMINISTIC=1: every algorithm and segment
 *               size must give exactly the rank-order fold's bits
 *   --mismatch  ranks pass different counts / data types: every rank must
 *               fail with MISMATCH or TIMEOUT (set PS_COMM_OP_TIMEOUT low)
 *   --algo A    every collective with algorithm A only (hier, auto...),
 *               sub-communicators included; with --det, A must give the
 *               rank-order fold's bits too
 *   --expect-hier yes|no
 *               whether the hierarchical algorithms must have run on the
 *               world communicator (at least once, or never): what auto
 *               chooses for the node layout
 * Exits 0 on success, 1 on failure (a provider that fails to open
 * included: whether it exists is the caller's question).
 */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "util/param.h"
#include "util/util.h"
#include "suite.h"

static int quick;
static const char *only_algo; /* --algo */
static const char *expect_hier; /* --expect-hier yes|no, or NULL */
static ps_comm_t comm;
static uint64_t result_hash = 1469598103934665603ULL;

static const char *dtype_name[] = {"int8",    "uint8",	  "int32",
				   "uint32",  "int64",	  "uint64",
				   "float16", "bfloat16", "float32",
				   "float64"};
static const char *op_name[] = {"sum", "prod", "min", "max"};

/* ------------------------------------------------------ reference math */

/* bfloat16 rounding written apart from the library's, as a reference. */
static uint16_t ref_to_bf16(float f)
{
	uint32_t x, lo;

	memcpy(&x, &f, 4);
	if (isnan(f))
		return (uint16_t)((x >> 16) | 0x40);
	lo = x & 0xffff;
	x >>= 16;
	if (lo > 0x8000 || (lo == 0x8000 && (x & 1)))
		x++;
	return (uint16_t)x;
}

static float ref_from_bf16(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

/* Element i of dtype d in buffer b as a double (for bounds and checks). */
static double get_d(ps_comm_dtype_t d, const void *b, size_t i)
{
	switch (d) {
	case PS_COMM_INT8: return ((const int8_t *)b)[i];
	case PS_COMM_UINT8: return ((const uint8_t *)b)[i];
	case PS_COMM_INT32: return ((const int32_t *)b)[i];
	case PS_COMM_UINT32: return ((const uint32_t *)b)[i];
	case PS_COMM_INT64: return (double)((const int64_t *)b)[i];
	case PS_COMM_UINT64: return (double)((const uint64_t *)b)[i];
	case PS_COMM_FLOAT16: return (double)((const _Float16 *)b)[i];
	case PS_COMM_BFLOAT16: return ref_from_bf16(((const uint16_t *)b)[i]);
	case PS_COMM_FLOAT32: return ((const float *)b)[i];
	default: return ((const double *)b)[i];
	}
}

static bool is_float(ps_comm_dtype_t d)
{
	return d >= PS_COMM_FLOAT16;
}

/* Deterministic input: element i of rank src's buffer for test salt. */
static void gen(ps_comm_dtype_t d, ps_comm_op_t op, int src, unsigned salt,
		void *b, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t h = (uint64_t)src * 0x9e3779b97f4a7c15ULL ^
			     (uint64_t)salt * 0xbf58476d1ce4e5b9ULL ^
			     (uint64_t)i * 0x94d049bb133111ebULL;
		double f;

		h ^= h >> 31;
		h *= 0xd6e8feb86659fd39ULL;
		h ^= h >> 29;
		/* Floats in [-1, 1), or near 1 for products. */
		f = (double)(h >> 11) * 0x1p-53 * 2 - 1;
		if (op == PS_COMM_PROD)
			f = 1 + f / 4;
		switch (d) {
		case PS_COMM_INT8: ((int8_t *)b)[i] = (int8_t)h; break;
		case PS_COMM_UINT8: ((uint8_t *)b)[i] = (uint8_t)h; break;
		case PS_COMM_INT32: ((int32_t *)b)[i] = (int32_t)h; break;
		case PS_COMM_UINT32: ((uint32_t *)b)[i] = (uint32_t)h; break;
		case PS_COMM_INT64: ((int64_t *)b)[i] = (int64_t)h; break;
		case PS_COMM_UINT64: ((uint64_t *)b)[i] = h; break;
		case PS_COMM_FLOAT16: ((_Float16 *)b)[i] = (_Float16)f; break;
		case PS_COMM_BFLOAT16:
			((uint16_t *)b)[i] = ref_to_bf16((float)f);
			break;
		case PS_COMM_FLOAT32: ((float *)b)[i] = (float)f; break;
		default: ((double *)b)[i] = f; break;
		}
	}
}

#define FOLD_INT(T, U)                                                         \
	{                                                                      \
		T *o = out;                                                    \
		const T *x = in;                                               \
		for (size_t i = 0; i < n; i++)                                 \
			o[i] = op == PS_COMM_SUM    ? (T)((U)o[i] + (U)x[i])   \
			       : op == PS_COMM_PROD ? (T)((U)o[i] * (U)x[i])   \
			       : op == PS_COMM_MIN  ? (o[i] < x[i] ? o[i] : x[i]) \
						    : (o[i] > x[i] ? o[i] : x[i]); \
		break;                                                         \
	}

/* NaN-propagating min/max for the reference. */
#define FMIN(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : (a) < (b) ? (a) : (b))
#define FMAX(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : (a) > (b) ? (a) : (b))
#define FOP(a, b)                                                              \
	(op == PS_COMM_SUM    ? (a) + (b)                                      \
	 : op == PS_COMM_PROD ? (a) * (b)                                      \
	 : op == PS_COMM_MIN  ? FMIN(a, b)                                     \
			      : FMAX(a, b))

/* out = op(out, in), element-wise, computed independently of the library. */
static void ref_op(ps_comm_dtype_t d, ps_comm_op_t op, void *out,
		   const void *in, size_t n)
{
	switch (d) {
	case PS_COMM_INT8: FOLD_INT(int8_t, uint8_t)
	case PS_COMM_UINT8: FOLD_INT(uint8_t, uint8_t)
	case PS_COMM_INT32: FOLD_INT(int32_t, uint32_t)
	case PS_COMM_UINT32: FOLD_INT(uint32_t, uint32_t)
	case PS_COMM_INT64: FOLD_INT(int64_t, uint64_t)
	case PS_COMM_UINT64: FOLD_INT(uint64_t, uint64_t)
	case PS_COMM_FLOAT16:
		for (size_t i = 0; i < n; i++) {
			float a = ((_Float16 *)out)[i];
			float b = ((const _Float16 *)in)[i];

			((_Float16 *)out)[i] = (_Float16)FOP(a, b);
		}
		break;
	case PS_COMM_BFLOAT16:
		for (size_t i = 0; i < n; i++) {
			float a = ref_from_bf16(((uint16_t *)out)[i]);
			float b = ref_from_bf16(((const uint16_t *)in)[i]);

			((uint16_t *)out)[i] = ref_to_bf16(FOP(a, b));
		}
		break;
	case PS_COMM_FLOAT32:
		for (size_t i = 0; i < n; i++) {
			float a = ((float *)out)[i], b = ((const float *)in)[i];

			((float *)out)[i] = FOP(a, b);
		}
		break;
	default:
		for (size_t i = 0; i < n; i++) {
			double a = ((double *)out)[i];
			double b = ((const double *)in)[i];

			((double *)out)[i] = FOP(a, b);
		}
		break;
	}
}

/* Unit roundoff of each float type (relative error of one operation). */
static double eps_of(ps_comm_dtype_t d)
{
	return d == PS_COMM_FLOAT16	? 0x1p-11
	       : d == PS_COMM_BFLOAT16 ? 0x1p-8
	       : d == PS_COMM_FLOAT32  ? 0x1p-24
				       : 0x1p-53;
}

/*
 * Reference for ranks lo..hi-1 (members[] when not NULL): the rank-order
 * fold of everyone's input for salt, and the bound on |result - ref|
 * per element in bound[] (0 = must be exact).
 */
static void reference(ps_comm_dtype_t d, ps_comm_op_t op, unsigned salt,
		      const int *members, int n, size_t count, void *ref,
		      double *bound)
{
	size_t es = ps_comm_dtype_size(d);
	void *x = malloc(count * es + 1);

	for (int q = 0; q < n; q++) {
		int src = members ? members[q] : q;

		gen(d, op, src, salt, q ? x : ref, count);
		if (q)
			ref_op(d, op, ref, x, count);
		for (size_t i = 0; bound && i < count; i++) {
			double v = fabs(get_d(d, q ? x : ref, i));

			if (q == 0)
				bound[i] = 0;
			if (!is_float(d) || op == PS_COMM_MIN ||
			    op == PS_COMM_MAX)
				continue;
			/* Sum: n roundings of partial sums <= sum |x|. */
			bound[i] += (op == PS_COMM_SUM ? v : 1.0);
		}
	}
	for (size_t i = 0; bound && i < count; i++) {
		if (op == PS_COMM_PROD)
			bound[i] = 2.0 * n * eps_of(d) *
				   fabs(get_d(d, ref, i)) * 1.5;
		else
			bound[i] *= 2.0 * n * eps_of(d);
	}
	free(x);
}

/* Index of the first element of res off the reference, or -1. */
static long compare(ps_comm_dtype_t d, const void *res, const void *ref,
		    const double *bound, size_t count)
{
	size_t es = ps_comm_dtype_size(d);

	for (size_t i = 0; i < count; i++) {
		double a, b;

		if (!memcmp((const char *)res + i * es,
			    (const char *)ref + i * es, es))
			continue;
		if (!bound || !is_float(d))
			return (long)i;
		a = get_d(d, res, i);
		b = get_d(d, ref, i);
		if (!(fabs(a - b) <= bound[i]))
			return (long)i;
	}
	return -1;
}

static void hash_result(const void *b, size_t len)
{
	result_hash = psc_fnv1a(result_hash, b, len);
}

/*
 * Every rank's result hash must be the same: gathered by point-to-point
 * so a broken collective cannot hide its own fault.
 */
static void check_identical(const char *test)
{
	const int tag = 29999;

	if (rank) {
		ps_comm_send(comm, &result_hash, sizeof(result_hash), 0, tag);
	} else {
		for (int q = 1; q < size; q++) {
			uint64_t h = 0;

			ps_comm_recv(comm, &h, sizeof(h), q, tag, NULL);
			if (h != result_hash)
				fail(test, "rank %d's results differ in their "
				     "bits from rank 0's", q);
		}
	}
	ps_comm_barrier(comm);
}

/* ------------------------------------------------------ forcing algos */

static struct psc_params saved;

static void force(const char *coll, const char *algo, size_t seg)
{
	struct psc_params *p = &((struct ps_comm *)comm)->params;

	if (!strcmp(coll, "allreduce"))
		p->allreduce_algo = algo;
	else if (!strcmp(coll, "reduce"))
		p->reduce_algo = algo;
	else if (!strcmp(coll, "bcast"))
		p->bcast_algo = algo;
	else if (!strcmp(coll, "allgather"))
		p->allgather_algo = algo;
	else if (!strcmp(coll, "reduce_scatter"))
		p->reduce_scatter_algo = algo;
	else if (!strcmp(coll, "barrier"))
		p->barrier_algo = algo;
	p->coll_segment = seg ? seg : saved.coll_segment;
}

/* --algo for every collective, or nothing without it. */
static void force_all(void)
{
	static const char *colls[] = {"allreduce", "reduce", "bcast",
				      "allgather", "reduce_scatter", "barrier"};

	for (size_t i = 0; only_algo && i < PSC_ARRAY_SIZE(colls); i++)
		force(colls[i], only_algo, 0);
}

/* The algorithms a test runs: its list of n, or --algo's one. */
static size_t algos_of(const char *const *list, size_t n,
		       const char *const **out)
{
	*out = only_algo ? &only_algo : list;
	return only_algo ? 1 : n;
}

static void unforce(void)
{
	((struct ps_comm *)comm)->params = saved;
}

/* ------------------------------------------------------------- tests */

static const size_t counts_full[] = {0, 1, 2, 3, 7, 13, 61, 257, 1031, 4099};
static const size_t counts_quick[] = {0, 1, 7, 61, 1031};

#define NCOUNTS (quick ? PSC_ARRAY_SIZE(counts_quick) : PSC_ARRAY_SIZE(counts_full))
#define COUNT(i) (quick ? counts_quick[i] : counts_full[i])

static unsigned salt_next(void)
{
	static unsigned s;

	return ++s;
}

/* One allreduce, reduce or reduce_scatter checked against the reference. */
static void check_reduction(const char *coll, const char *algo,
			    ps_comm_dtype_t d, ps_comm_op_t op, size_t count,
			    bool in_place, int root, bool exact)
{
	size_t es = ps_comm_dtype_size(d), n = (size_t)size;
	bool rs = !strcmp(coll, "reduce_scatter");
	size_t total = rs ? count * n : count;
	unsigned salt = salt_next();
	char *in = malloc(total * es + 1), *out = malloc(total * es + 1);
	char *ref = malloc(total * es + 1);
	double *bound = malloc((total + 1) * sizeof(double));
	char name[160];
	const char *res;
	long bad;
	int rc;

	snprintf(name, sizeof(name), "%s/%s %s %s count %zu%s root %d", coll,
		 algo, dtype_name[d], op_name[op], count,
		 in_place ? " in place" : "", root);
	gen(d, op, rank, salt, in, total);
	memset(out, 0xa5, total * es);
	if (in_place)
		memcpy(out, in, total * es);
	if (!strcmp(coll, "allreduce"))
		rc = ps_comm_allreduce(comm, in_place ? PS_COMM_IN_PLACE : in,
				       out, count, d, op);
	else if (rs)
		rc = ps_comm_reduce_scatter(comm,
					    in_place ? PS_COMM_IN_PLACE : in,
					    out, count, d, op);
	else
		rc = ps_comm_reduce(comm,
				    in_place && rank == root ? PS_COMM_IN_PLACE
							     : in,
				    out, count, d, op, root);
	if (rc) {
		fail(name, "%s", ps_comm_strerror(rc));
		goto out;
	}
	reference(d, op, salt, NULL, size, total, ref, exact ? NULL : bound);
	res = out;
	if (rs) {
		/* This rank's block of the reference. */
		memmove(ref, ref + (size_t)rank * count * es, count * es);
		memmove(bound, bound + (size_t)rank * count,
			count * sizeof(double));
		total = count;
	}
	if (strcmp(coll, "reduce") || rank == root) {
		bad = compare(d, res, ref, exact ? NULL : bound, total);
		if (bad >= 0)
			fail(name, "element %ld is %.17g, expected %.17g", bad,
			     get_d(d, res, (size_t)bad),
			     get_d(d, ref, (size_t)bad));
		/* Only allreduce leaves the same result everywhere. */
		if (!strcmp(coll, "allreduce"))
			hash_result(res, total * es);
	}
out:
	free(in);
	free(out);
	free(ref);
	free(bound);
}

static void test_reductions(void)
{
	static const char *all_ar[] = {"rd", "rabenseifner", "ring"};
	static const char *all_red[] = {"binomial", "rs_gather"};
	static const char *all_rs[] = {"ring"};
	/* Segments: the default, and 64 bytes to force many. */
	const size_t segs[] = {0, 64};
	const char *const *ar_algos, *const *red_algos, *const *rs_algos;
	size_t nar = algos_of(all_ar, PSC_ARRAY_SIZE(all_ar), &ar_algos);
	size_t nred = algos_of(all_red, PSC_ARRAY_SIZE(all_red), &red_algos);
	size_t nrs = algos_of(all_rs, PSC_ARRAY_SIZE(all_rs), &rs_algos);

	for (size_t a = 0; a < nar; a++)
		for (size_t sg = 0; sg < 2; sg++) {
			force("allreduce", ar_algos[a], segs[sg]);
			for (int d = 0; d < PS_COMM_DTYPE_COUNT; d++) {
				if (quick && d % 3)
					continue;
				for (int op = 0; op < PS_COMM_OP_COUNT; op++)
					for (size_t c = 0; c < NCOUNTS; c++)
						check_reduction(
							"allreduce", ar_algos[a],
							d, op, COUNT(c),
							(c + op) % 2, 0, false);
			}
			unforce();
			check_identical("allreduce");
		}
	for (size_t a = 0; a < nred; a++) {
		force("reduce", red_algos[a], 64);
		for (int d = 0; d < PS_COMM_DTYPE_COUNT; d += quick ? 4 : 1)
			for (int op = 0; op < PS_COMM_OP_COUNT; op++)
				for (size_t c = 0; c < NCOUNTS; c++)
					check_reduction("reduce", red_algos[a],
							d, op, COUNT(c),
							c % 2,
							(int)(c % (size_t)size),
							false);
		unforce();
	}
	for (size_t a = 0; a < nrs; a++) {
		force("reduce_scatter", rs_algos[a], 64);
		for (int d = 0; d < PS_COMM_DTYPE_COUNT; d += quick ? 4 : 1)
			for (int op = 0; op < PS_COMM_OP_COUNT; op++)
				for (size_t c = 0; c < NCOUNTS; c++)
					check_reduction("reduce_scatter",
							rs_algos[a], d, op,
							COUNT(c), c % 2, 0,
							false);
		unforce();
	}
	check_identical("reduce and reduce_scatter");
}

static void test_allgather_bcast(void)
{
	static const char *all_ag[] = {"ring", "rd"};
	static const char *all_bc[] = {"binomial", "scatter_ring"};
	static const ps_comm_dtype_t types[] = {PS_COMM_UINT8, PS_COMM_FLOAT16,
						PS_COMM_INT64};
	const char *const *ag_algos, *const *bc_algos;
	size_t nag = algos_of(all_ag, PSC_ARRAY_SIZE(all_ag), &ag_algos);
	size_t nbc = algos_of(all_bc, PSC_ARRAY_SIZE(all_bc), &bc_algos);

	for (size_t a = 0; a < nag; a++)
		for (size_t t = 0; t < PSC_ARRAY_SIZE(types); t++)
			for (size_t c = 0; c < NCOUNTS; c++) {
				size_t es = ps_comm_dtype_size(types[t]);
				size_t cnt = COUNT(c), bytes = cnt * es;
				unsigned salt = salt_next();
				unsigned char *in = malloc(bytes + 1);
				unsigned char *out = malloc(bytes * size + 1);
				bool inp = c % 2;
				char name[128];
				int rc;

				snprintf(name, sizeof(name),
					 "allgather/%s %s count %zu%s",
					 ag_algos[a], dtype_name[types[t]], cnt,
					 inp ? " in place" : "");
				for (size_t i = 0; i < bytes; i++)
					in[i] = pat(rank, salt, i);
				memset(out, 0x5a, bytes * size);
				if (inp)
					memcpy(out + rank * bytes, in, bytes);
				force("allgather", ag_algos[a], 64);
				rc = ps_comm_allgather(comm,
						       inp ? PS_COMM_IN_PLACE
							   : in,
						       out, cnt, types[t]);
				unforce();
				if (rc)
					fail(name, "%s", ps_comm_strerror(rc));
				for (int q = 0; !rc && q < size; q++)
					for (size_t i = 0; i < bytes; i++)
						if (out[q * bytes + i] !=
						    pat(q, salt, i)) {
							fail(name, "byte %zu of "
							     "rank %d's block",
							     i, q);
							q = size;
							break;
						}
				free(in);
				free(out);
			}
	for (size_t a = 0; a < nbc; a++)
		for (int root = 0; root < size; root += size > 2 ? size - 1 : 1)
			for (size_t c = 0; c < NCOUNTS; c++) {
				size_t cnt = COUNT(c) * 3 + 1;
				unsigned salt = salt_next();
				uint32_t *buf = malloc(cnt * 4);
				char name[128];
				int rc;

				snprintf(name, sizeof(name),
					 "bcast/%s root %d count %zu",
					 bc_algos[a], root, cnt);
				for (size_t i = 0; i < cnt; i++)
					buf[i] = rank == root
							 ? pat(root, salt, i) *
								   7919u + (uint32_t)i
							 : 0xdeadbeef;
				force("bcast", bc_algos[a], 64);
				rc = ps_comm_bcast(comm, buf, cnt,
						   PS_COMM_UINT32, root);
				unforce();
				if (rc)
					fail(name, "%s", ps_comm_strerror(rc));
				for (size_t i = 0; !rc && i < cnt; i++)
					if (buf[i] != pat(root, salt, i) * 7919u +
							      (uint32_t)i) {
						fail(name, "element %zu", i);
						break;
					}
				free(buf);
			}
}

/* Nobody may leave a barrier before everyone has entered it. */
static void test_barrier(void)
{
	char path[256];
	int fd, rounds = quick ? 10 : 40;

	/*
	 * One file per job: ranks share PS_COMM_ROOT (else their parent). It
	 * lives in PSC_TEST_SHARED_DIR, a directory every rank sees (ranks
	 * on several hosts: tests/rdma), else in /tmp.
	 */
	{
		const char *root = getenv("PS_COMM_ROOT");
		const char *dir = getenv("PSC_TEST_SHARED_DIR");
		uint64_t h = psc_fnv1a(PSC_FNV_INIT, root ? root : "", root ? strlen(root) : 0);

		snprintf(path, sizeof(path), "%s/pscomm-barrier-%llx-%d",
			 dir && *dir ? dir : "/tmp", (unsigned long long)h,
			 root ? 0 : (int)getppid());
	}
	if (rank == 0)
		unlink(path);
	ps_comm_barrier(comm);
	fd = open(path, O_CREAT | O_WRONLY | O_APPEND, 0600);
	if (fd < 0) {
		fail("barrier", "cannot open %s", path);
		return;
	}
	for (int k = 0; k < rounds; k++) {
		struct stat st;
		int rc;

		usleep((unsigned)((rank * 7 + k * 3) % 5) * 300);
		if (write(fd, "x", 1) != 1)
			fail("barrier", "write");
		rc = ps_comm_barrier(comm);
		if (rc)
			fail("barrier", "%s", ps_comm_strerror(rc));
		if (stat(path, &st) != 0 ||
		    st.st_size < (off_t)size * (k + 1)) {
			fail("barrier", "round %d: left before all entered "
			     "(%lld of %d marks)", k, (long long)st.st_size,
			     size * (k + 1));
			break;
		}
	}
	close(fd);
	ps_comm_barrier(comm);
	if (rank == 0)
		unlink(path);
}

/*
 * Nonblocking collectives in flight together, with wildcard user
 * receives that must only ever see the user's messages.
 */
static void test_nonblocking(void)
{
	const size_t n1 = 100003, n2 = 5000, n3 = 777, pp = 1 << 20;
	float *a1 = malloc(n1 * 4), *r1 = malloc(n1 * 4);
	int32_t *b2 = malloc(n2 * 4);
	uint8_t *g3 = malloc(n3 * (size_t)size), *in3 = malloc(n3);
	uint8_t *ps = malloc(pp), *pr = malloc(pp);
	unsigned s1 = salt_next(), s3 = salt_next();
	ps_comm_request_t rq[6] = {0};
	ps_comm_status_t st;
	double *bound = malloc(n1 * sizeof(double));
	int rc = 0, right = (rank + 1) % size, root = size - 1;

	gen(PS_COMM_FLOAT32, PS_COMM_SUM, rank, s1, a1, n1);
	for (size_t i = 0; i < n2; i++)
		b2[i] = rank == root ? (int32_t)(i * 3 + 1) : -1;
	for (size_t i = 0; i < n3; i++)
		in3[i] = pat(rank, s3, i);
	for (size_t i = 0; i < pp; i++)
		ps[i] = pat(rank, 99, i);
	force("allreduce", only_algo ? only_algo : "ring", 4096);
	rc = ps_comm_iallreduce(comm, a1, r1, n1, PS_COMM_FLOAT32, PS_COMM_SUM,
				&rq[0]);
	unforce();
	if (!rc)
		rc = ps_comm_irecv(comm, pr, pp, PS_COMM_ANY_SOURCE,
				   PS_COMM_ANY_TAG, &rq[3]);
	if (!rc)
		rc = ps_comm_ibcast(comm, b2, n2, PS_COMM_INT32, root, &rq[1]);
	if (!rc)
		rc = ps_comm_isend(comm, ps, pp, right, 7, &rq[4]);
	if (!rc)
		rc = ps_comm_iallgather(comm, in3, g3, n3, PS_COMM_UINT8,
					&rq[2]);
	if (rc) {
		fail("nonblocking", "start: %s", ps_comm_strerror(rc));
		return;
	}
	/* Complete in reverse order, the user's messages first. */
	rc = ps_comm_wait(&rq[3], &st);
	if (rc || st.source != (rank - 1 + size) % size || st.tag != 7 ||
	    st.len != pp)
		fail("nonblocking", "wildcard receive got source %d tag %d "
		     "len %zu (%s)", st.source, st.tag, st.len,
		     ps_comm_strerror(rc));
	for (size_t i = 0; i < pp; i++)
		if (pr[i] != pat((rank - 1 + size) % size, 99, i)) {
			fail("nonblocking", "user message byte %zu", i);
			break;
		}
	for (int i = 4; i >= 0; i--)
		if (i != 3 && (rc = ps_comm_wait(&rq[i], NULL)))
			fail("nonblocking", "request %d: %s", i,
			     ps_comm_strerror(rc));
	reference(PS_COMM_FLOAT32, PS_COMM_SUM, s1, NULL, size, n1, a1, bound);
	if (compare(PS_COMM_FLOAT32, r1, a1, bound, n1) >= 0)
		fail("nonblocking", "iallreduce result");
	hash_result(r1, n1 * 4);
	for (size_t i = 0; i < n2; i++)
		if (b2[i] != (int32_t)(i * 3 + 1)) {
			fail("nonblocking", "ibcast element %zu", i);
			break;
		}
	for (int q = 0; q < size; q++)
		for (size_t i = 0; i < n3; i++)
			if (g3[q * n3 + i] != pat(q, s3, i)) {
				fail("nonblocking", "iallgather block %d", q);
				q = size;
				break;
			}
	/* Many small ones in flight, completed by test in any order. */
	{
		enum { K = 16 };
		ps_comm_request_t r[K];
		int64_t v[K], left = K;

		/* One that failed to start is not waited for: a peer that
		 * died fails every start, and the loop below must end. */
		for (int k = 0; k < K; k++) {
			v[k] = rank + k;
			r[k] = NULL;
			if (ps_comm_iallreduce(comm, PS_COMM_IN_PLACE, &v[k], 1,
					       PS_COMM_INT64, PS_COMM_SUM,
					       &r[k])) {
				fail("nonblocking", "start %d", k);
				r[k] = NULL;
				left--;
			}
		}
		while (left > 0)
			for (int k = K - 1; k >= 0; k--) {
				int done = 0;

				if (!r[k])
					continue;
				ps_comm_test(&r[k], &done, NULL);
				left -= done;
			}
		for (int k = 0; k < K; k++)
			if (v[k] != (int64_t)size * (size - 1) / 2 +
					    (int64_t)size * k)
				fail("nonblocking", "small allreduce %d = %lld",
				     k, (long long)v[k]);
	}
	free(a1), free(r1), free(b2), free(g3), free(in3), free(ps), free(pr);
	free(bound);
	check_identical("nonblocking");
}

static void test_split(void)
{
	ps_comm_t sub = NULL, sub2 = NULL, none = NULL;
	int srank = -1, ssize = 0, members[16], n = 0;
	int rc = ps_comm_split(comm, rank % 2, -rank, &sub);
	int64_t v, want = 0;

	if (rc || !sub) {
		fail("split", "%s", ps_comm_strerror(rc));
		return;
	}
	ps_comm_rank(sub, &srank);
	ps_comm_size(sub, &ssize);
	/* key = -rank: members in decreasing parent rank. */
	for (int q = size - 1; q >= 0; q--)
		if (q % 2 == rank % 2)
			members[n++] = q;
	if (ssize != n || members[srank] != rank)
		fail("split", "rank %d of %d, expected %d members with this "
		     "rank at their position", srank, ssize, n);
	v = rank;
	for (int i = 0; i < n; i++)
		want += members[i];
	rc = ps_comm_allreduce(sub, PS_COMM_IN_PLACE, &v, 1, PS_COMM_INT64,
			       PS_COMM_SUM);
	if (rc || v != want)
		fail("split", "allreduce on the sub-communicator: %lld, "
		     "expected %lld (%s)", (long long)v, (long long)want,
		     ps_comm_strerror(rc));
	/* A reduction over the members, against the reference. */
	{
		size_t cnt = 1031;
		float *x = malloc(cnt * 4), *ref = malloc(cnt * 4);
		double *bound = malloc(cnt * sizeof(double));
		unsigned salt = salt_next();

		gen(PS_COMM_FLOAT32, PS_COMM_SUM, rank, salt, x, cnt);
		rc = ps_comm_allreduce(sub, PS_COMM_IN_PLACE, x, cnt,
				       PS_COMM_FLOAT32, PS_COMM_SUM);
		reference(PS_COMM_FLOAT32, PS_COMM_SUM, salt, members, n, cnt,
			  ref, bound);
		if (rc || compare(PS_COMM_FLOAT32, x, ref, bound, cnt) >= 0)
			fail("split", "float allreduce on the sub-communicator");
		free(x), free(ref), free(bound);
	}
	/* A nested split, and a rank that joins nothing. */
	rc = ps_comm_split(sub, 0, srank, &sub2);
	if (rc || !sub2 || ps_comm_barrier(sub2))
		fail("split", "nested split: %s", ps_comm_strerror(rc));
	rc = ps_comm_split(comm, rank == 0 ? PS_COMM_UNDEFINED : 1, 0, &none);
	if (rc || (rank == 0) != (none == NULL))
		fail("split", "UNDEFINED color: %s", ps_comm_strerror(rc));
	if (none) {
		v = 1;
		rc = ps_comm_allreduce(none, PS_COMM_IN_PLACE, &v, 1,
				       PS_COMM_INT64, PS_COMM_SUM);
		if (rc || v != size - 1)
			fail("split", "communicator without rank 0: %lld",
			     (long long)v);
		ps_comm_finalize(none);
	}
	/* The world still works beside its sub-communicators. */
	v = 1;
	if (ps_comm_allreduce(comm, PS_COMM_IN_PLACE, &v, 1, PS_COMM_INT64,
			      PS_COMM_SUM) || v != size)
		fail("split", "world allreduce after split");
	ps_comm_finalize(sub2);
	ps_comm_finalize(sub);
}

static void expect(const char *what, int got, int want)
{
	if (got != want)
		fail("bad input", "%s: got %s, expected %s", what,
		     ps_comm_strerror(got), ps_comm_strerror(want));
}

static void test_bad_input(void)
{
	float buf[64] = {0}, out[64];
	ps_comm_request_t r = NULL;

	expect("invalid dtype",
	       ps_comm_allreduce(comm, buf, out, 4, (ps_comm_dtype_t)99,
				 PS_COMM_SUM),
	       PS_COMM_ERR_ARG);
	expect("invalid op",
	       ps_comm_allreduce(comm, buf, out, 4, PS_COMM_FLOAT32,
				 (ps_comm_op_t)-1),
	       PS_COMM_ERR_ARG);
	expect("NULL send buffer",
	       ps_comm_allreduce(comm, NULL, out, 4, PS_COMM_FLOAT32,
				 PS_COMM_SUM),
	       PS_COMM_ERR_ARG);
	expect("NULL receive buffer",
	       ps_comm_allgather(comm, buf, NULL, 4, PS_COMM_FLOAT32),
	       PS_COMM_ERR_ARG);
	expect("aliased buffers",
	       ps_comm_allreduce(comm, buf, buf + 2, 8, PS_COMM_FLOAT32,
				 PS_COMM_SUM),
	       PS_COMM_ERR_ARG);
	expect("bad root",
	       ps_comm_bcast(comm, buf, 4, PS_COMM_FLOAT32, size),
	       PS_COMM_ERR_ARG);
	expect("in place off the root",
	       rank ? ps_comm_reduce(comm, PS_COMM_IN_PLACE, buf, 4,
				     PS_COMM_FLOAT32, PS_COMM_SUM, 0)
		    : PS_COMM_ERR_ARG,
	       PS_COMM_ERR_ARG);
	expect("NULL request",
	       ps_comm_ibarrier(comm, NULL), PS_COMM_ERR_ARG);
	expect("NULL communicator", ps_comm_barrier(NULL), PS_COMM_ERR_ARG);
	expect("count 0 with NULL buffers",
	       ps_comm_allreduce(comm, NULL, NULL, 0, PS_COMM_FLOAT32,
				 PS_COMM_SUM),
	       0);
	expect("huge count",
	       ps_comm_iallgather(comm, buf, out, SIZE_MAX / 2, PS_COMM_INT64,
				  &r),
	       PS_COMM_ERR_ARG);
	/* Nothing above consumed a sequence number: this still matches. */
	buf[0] = 1;
	if (ps_comm_allreduce(comm, PS_COMM_IN_PLACE, buf, 1, PS_COMM_FLOAT32,
			      PS_COMM_SUM) || buf[0] != (float)size)
		fail("bad input", "allreduce after rejected calls");
}

static void test_mismatch(void)
{
	float buf[4096];
	int rc;

	memset(buf, 0, sizeof(buf));
	/* Rank 0 passes more elements than the others. */
	rc = ps_comm_allreduce(comm, PS_COMM_IN_PLACE, buf,
			       rank == 0 ? 4000 : 3000, PS_COMM_FLOAT32,
			       PS_COMM_SUM);
	if (rc != PS_COMM_ERR_MISMATCH && rc != PS_COMM_ERR_TIMEOUT)
		fail("mismatch", "different counts: %s", ps_comm_strerror(rc));
	/* Same element size, different types: never matches, times out. */
	rc = ps_comm_allreduce(comm, PS_COMM_IN_PLACE, buf, 16,
			       rank == 0 ? PS_COMM_INT32 : PS_COMM_FLOAT32,
			       PS_COMM_SUM);
	if (rc != PS_COMM_ERR_TIMEOUT && rc != PS_COMM_ERR_MISMATCH)
		fail("mismatch", "different types: %s", ps_comm_strerror(rc));
	/*
	 * The communicator still works afterwards. Ranks failed at different
	 * times (a mismatch is seen at once, a timeout later): wait longer.
	 */
	((struct ps_comm *)comm)->op_timeout = 60;
	buf[0] = 1;
	rc = ps_comm_allreduce(comm, PS_COMM_IN_PLACE, buf, 1, PS_COMM_FLOAT32,
			       PS_COMM_SUM);
	if (rc || buf[0] != (float)size)
		fail("mismatch", "allreduce afterwards: %s (%g)",
		     ps_comm_strerror(rc), (double)buf[0]);
}

/* 64 MiB with every algorithm: integer-valued floats sum exactly. */
static void test_large(void)
{
	static const char *all[] = {"rd", "rabenseifner", "ring"};
	const char *const *algos;
	size_t cnt = (64u << 20) / 4, nal = algos_of(all, 3, &algos);
	float *x = malloc(cnt * 4);

	for (size_t a = 0; a < nal; a++) {
		int rc;

		for (size_t i = 0; i < cnt; i++)
			x[i] = (float)((i % 1021) + (size_t)rank);
		force("allreduce", algos[a], 0);
		rc = ps_comm_allreduce(comm, PS_COMM_IN_PLACE, x, cnt,
				       PS_COMM_FLOAT32, PS_COMM_SUM);
		unforce();
		if (rc)
			fail("large", "%s: %s", algos[a], ps_comm_strerror(rc));
		for (size_t i = 0; !rc && i < cnt; i++)
			if (x[i] != (float)((i % 1021) * (size_t)size +
					    (size_t)size * (size - 1) / 2)) {
				fail("large", "%s: element %zu = %g", algos[a],
				     i, (double)x[i]);
				break;
			}
	}
	free(x);
	cnt = (16u << 20) / 4;
	{
		uint32_t *b = malloc(cnt * 4);
		int rc;

		for (size_t i = 0; i < cnt; i++)
			b[i] = rank == 1 % size ? (uint32_t)(i * 2654435761u)
						: 0;
		rc = ps_comm_bcast(comm, b, cnt, PS_COMM_UINT32, 1 % size);
		for (size_t i = 0; !rc && i < cnt; i++)
			if (b[i] != (uint32_t)(i * 2654435761u)) {
				fail("large", "bcast element %zu", i);
				break;
			}
		if (rc)
			fail("large", "bcast: %s", ps_comm_strerror(rc));
		free(b);
	}
}

/*
 * The inputs make the order matter: folding them in reverse rank order
 * gives other bits than the rank-order fold, so an algorithm that
 * reduced in another order (per node, say) could not pass.
 */
static void check_order_matters(void)
{
	const size_t cnt = 30011;
	float *ref = malloc(cnt * 4), *rev = malloc(cnt * 4);
	float *x = malloc(cnt * 4);
	unsigned salt = 4242;

	reference(PS_COMM_FLOAT32, PS_COMM_SUM, salt, NULL, size, cnt, ref,
		  NULL);
	gen(PS_COMM_FLOAT32, PS_COMM_SUM, size - 1, salt, rev, cnt);
	for (int q = size - 2; q >= 0; q--) {
		gen(PS_COMM_FLOAT32, PS_COMM_SUM, q, salt, x, cnt);
		ref_op(PS_COMM_FLOAT32, PS_COMM_SUM, rev, x, cnt);
	}
	if (size >= 3 && !memcmp(ref, rev, cnt * 4))
		fail("deterministic", "the inputs sum to the same bits in any "
		     "order: the test could not see a wrong order");
	free(ref), free(rev), free(x);
}

/*
 * PS_COMM_DETERMINISTIC=1: the bits equal the rank-order fold computed
 * here, for every algorithm, segment size and message size.
 */
static void test_deterministic(void)
{
	static const char *all[] = {"rd", "rabenseifner", "ring"};
	const char *const *algos;
	size_t nal = algos_of(all, 3, &algos);
	static const ps_comm_dtype_t types[] = {PS_COMM_FLOAT32, PS_COMM_FLOAT64,
						PS_COMM_FLOAT16,
						PS_COMM_BFLOAT16};
	static const size_t segs[] = {128, 4096, 1 << 20};
	static const size_t cnts[] = {1, 5, 1000, 30011};

	if (((struct ps_comm *)comm)->params.deterministic != 1) {
		fail("deterministic", "run with PS_COMM_DETERMINISTIC=1");
		return;
	}
	check_order_matters();
	for (size_t t = 0; t < PSC_ARRAY_SIZE(types); t++)
		for (size_t a = 0; a < nal; a++)
			for (size_t s = 0; s < 3; s++)
				for (size_t c = 0; c < 4; c++) {
					const char *red = only_algo ? only_algo
								    : "binomial";
					const char *rs = only_algo ? only_algo
								   : "ring";

					force("allreduce", algos[a], segs[s]);
					force("reduce", red, segs[s]);
					force("reduce_scatter", rs, segs[s]);
					check_reduction("allreduce", algos[a],
							types[t], PS_COMM_SUM,
							cnts[c], c % 2, 0, true);
					check_reduction("reduce", red,
							types[t], PS_COMM_SUM,
							cnts[c], false, 1 % size,
							true);
					check_reduction("reduce_scatter", rs,
							types[t], PS_COMM_SUM,
							cnts[c] / 4 + 1, false, 0,
							true);
					unforce();
				}
	check_identical("deterministic");
}

/*
 * --expect-hier: the world communicator's count of collectives that ran
 * hierarchically (what the dispatcher chose, not what a log says).
 */
static void check_hier_runs(void)
{
	unsigned runs = __atomic_load_n(&((struct ps_comm *)comm)->hier_runs,
					__ATOMIC_RELAXED);
	bool want = !strcmp(expect_hier, "yes");

	if (want ? runs == 0 : runs != 0)
		fail("hierarchical collectives", "%u ran hierarchically, "
		     "expected %s", runs, want ? "some" : "none");
	else
		printf("ok - rank %d: %u collectives ran hierarchically "
		       "(expected %s)\n", rank, runs, want ? "some" : "none");
}

/* begin: say which group of tests this rank enters, at once (a rank
 * that hangs shows where). */
static void begin(const char *what)
{
	printf("# rank %d: %s\n", rank, what);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int large = 0, det = 0, mismatch = 0, rc;

	for (int i = 1; i < argc; i++) {
		quick |= !strcmp(argv[i], "--quick");
		large |= !strcmp(argv[i], "--large");
		det |= !strcmp(argv[i], "--det");
		mismatch |= !strcmp(argv[i], "--mismatch");
		if (!strcmp(argv[i], "--algo") && i + 1 < argc)
			only_algo = argv[++i];
		if (!strcmp(argv[i], "--expect-hier") && i + 1 < argc)
			expect_hier = argv[++i];
	}
	/* Whether the provider exists was decided before (run_ranks). */
	rc = ps_comm_init(&comm, NULL);
	if (rc) {
		fprintf(stderr, "ps_comm_init: %s\n", ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(comm, &rank);
	ps_comm_size(comm, &size);
	{
		const char *prov = "?";

		/* What the ranks run on, for scripts that check the choice. */
		ps_comm_provider_name(comm, &prov);
		printf("# rank %d of %d: provider %s\n", rank, size, prov);
		fflush(stdout);
	}
	saved = ((struct ps_comm *)comm)->params;
	/* Forced for good: unforce() returns to it, splits inherit it. */
	force_all();
	saved = ((struct ps_comm *)comm)->params;
	if (mismatch) {
		test_mismatch();
	} else if (det) {
		test_deterministic();
	} else if (large) {
		test_large();
	} else {
		begin("bad input");
		test_bad_input();
		begin("barrier");
		test_barrier();
		begin("reductions");
		test_reductions();
		begin("allgather and bcast");
		test_allgather_bcast();
		begin("nonblocking");
		test_nonblocking();
		begin("split");
		test_split();
		check_identical("all");
	}
	if (expect_hier)
		check_hier_runs();
	rc = ps_comm_finalize(comm);
	if (rc && !mismatch)
		fail("finalize", "%s", ps_comm_strerror(rc));
	if (rank == 0 || failures)
		printf("%s - rank %d: %d failures\n",
		       failures ? "not ok" : "ok", rank, failures);
	return failures ? 1 : 0;
}
