/*
 * Preflight: the environment checks that make a provider work instead of
 * failing with an opaque error later. Before the first fi_getinfo it sets
 * what providers read once at load time (fork safety, psm2/psm3/opx job
 * UUIDs, shm without cross-memory attach where that is blocked, the
 * universe size from the job's size); after an
 * entry is chosen it checks what that entry needs (RLIMIT_MEMLOCK for
 * pinned memory, /dev/shm for shm) and logs what a user debugging the
 * fabric wants to see (the RoCE GID the endpoint will use, from sysfs,
 * and the NIC's locality). Every warning
 * names its fix. The families' variables come from their profiles'
 * data, so nothing here compares provider names.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fabric/preflight.h"
#include "fabric/topo.h"
#include "net/auth.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

/* Below this, a provider that pins memory fails as soon as it scales. */
#define PSC_MEMLOCK_MIN (64ULL << 20)
/* Below this free space, shm cannot map its queues for many ranks. */
#define PSC_DEVSHM_MIN (128ULL << 20)

/*
 * libfabric's FI_UNIVERSE_SIZE when unset (1.11 and later): the peers
 * rxm sizes the completion queue of its connections for, and the first
 * size of an AV that asks for none.
 */
#define PSC_FI_UNIVERSE_DEFAULT 1024

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_done;
/* FI_UNIVERSE_SIZE as libfabric reads it, and who set it. */
static size_t universe = PSC_FI_UNIVERSE_DEFAULT;
static enum psc_universe_from universe_from = PSC_UNIVERSE_DEFAULT;
/* The chosen provider cannot survive fork(): the atfork handler warns. */
static volatile int fork_unsafe_in_use;

static void warn_fork(void)
{
	if (fork_unsafe_in_use)
		psc_log(PSC_LOG_WARN, -1, "fork() while an RDMA provider is "
			"open: the child must not use pscomm, and pages "
			"registered with the NIC are not shared with it (use "
			"posix_spawn, or fork before ps_comm_init)");
}

/* Job identity: the same text on every rank of one job, not across jobs. */
static const char *const job_vars[] = {
	"PS_COMM_ROOT",	     "MASTER_ADDR",	    "MASTER_PORT",
	"DMLC_PS_ROOT_URI",  "DMLC_PS_ROOT_PORT",   "SLURM_JOB_ID",
	"SLURM_STEP_ID",     "PMIX_NAMESPACE",	    "PBS_JOBID",
	"LSB_JOBID",	     "OMPI_MCA_ess_base_jobid",
};

void psc_preflight_job_uuid(const struct psc_params *p, char *buf,
			    size_t len)
{
	const char *key = p ? p->job_key : getenv("PS_COMM_JOB_KEY");
	struct psc_auth_key k;
	uint8_t h[16];
	char text[4096], err[128];
	size_t used = 0;

	/*
	 * A keyed hash (the key's own sub-key) of the job's identity: the
	 * UUID travels in the provider's traffic, and an offline search of
	 * it costs a stretched-key derivation per guess, as every MAC does.
	 */
	if (psc_auth_key_load(&k, key ? key : "", err, sizeof(err)) != 0)
		psc_auth_key_load(&k, "", err, sizeof(err));
	text[0] = '\0';
	for (size_t i = 0; i < PSC_ARRAY_SIZE(job_vars); i++) {
		const char *v = getenv(job_vars[i]);

		/* Name and value, so "a"+"bc" differs from "ab"+"c". */
		PSC_APPEND(text, sizeof(text), used, "%s%c%s%c", job_vars[i],
			   v ? '=' : '!', v ? v : "", 0x1f);
	}
	psc_auth_job_hash(&k, text, PSC_MIN(used, sizeof(text) - 1), h,
			  sizeof(h));
	memset(&k, 0, sizeof(k));
	snprintf(buf, len, "%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64
		 "-%04" PRIx64 "-%012" PRIx64, psc_be_get(h, 4),
		 psc_be_get(h + 4, 2), psc_be_get(h + 6, 2),
		 psc_be_get(h + 8, 2), psc_be_get(h + 10, 6));
}

/* Whether this process holds CAP_SYS_PTRACE (bit 19 of CapEff). */
static bool has_cap_sys_ptrace(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	bool yes = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long eff;

		/* The kernel writes 16 hex digits: no overflow to detect. */
		/* NOLINTNEXTLINE(cert-err34-c) */
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			yes = (eff >> 19) & 1;
			break;
		}
	}
	fclose(f);
	return yes;
}

/* Yama's ptrace_scope, or 0 when Yama is absent. */
static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int v = 0;

	if (!f)
		return 0;
	/* A kernel file holding 0..3. */
	/* NOLINTNEXTLINE(cert-err34-c) */
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

bool psc_preflight_cma_works(void)
{
	char src[8] = "pscomm", dst[8] = "";
	struct iovec l = {dst, sizeof(dst)}, r = {src, sizeof(src)};

	/*
	 * A seccomp filter (docker's default without CAP_SYS_PTRACE) refuses
	 * the call outright, even on oneself; Yama refuses it between the
	 * sibling ranks of a job unless the process may ptrace them.
	 */
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof(src) ||
	    memcmp(src, dst, sizeof(src)) != 0)
		return false;
	return yama_scope() == 0 || has_cap_sys_ptrace();
}

/*
 * Families that copy large messages with CMA (shm) must not where it is
 * blocked: set their no_cma_env.
 */
static void no_cma(const struct psc_provider_ops *o, int rank)
{
	if (!o->no_cma_env || getenv(o->no_cma_env) ||
	    psc_preflight_cma_works())
		return;
	setenv(o->no_cma_env, "1", 0);
	psc_log(PSC_LOG_INFO, rank, "cross-memory attach is blocked "
		"here (container seccomp or Yama ptrace_scope %d), so %s "
		"copies through its own buffers (%s=1); for full speed run "
		"the container with --cap-add SYS_PTRACE or set "
		"kernel.yama.ptrace_scope=0", yama_scope(), o->name,
		o->no_cma_env);
}

/* Set name=value unless the user set it; log what was done. */
static void set_default(const char *name, const char *value,
			const char *why, int rank)
{
	if (getenv(name))
		return;
	setenv(name, value, 0);
	psc_log(PSC_LOG_DEBUG, rank, "set %s=%s (%s)", name, value, why);
}

/* The variables the family needs set (its env_default), unless set. */
static void env_defaults(const struct psc_provider_ops *o, int rank)
{
	const char *name, *why;
	char value[64];

	for (size_t i = 0; o->env_default &&
			   o->env_default(i, &name, value, sizeof(value), &why);
	     i++)
		set_default(name, value, why, rank);
}

/*
 * Size libfabric's per-peer structures for the job: FI_UNIVERSE_SIZE,
 * read once when libfabric initialises, unless the user set it. rxm
 * sizes the completion queue of its connections by it ((128 + 128) x
 * universe entries on verbs), which a device may refuse (soft-RoCE rxe
 * holds 32,767) and which costs tcp ranks about 12 MiB at the default.
 * Never above libfabric's default: rxm connects on demand, so a large
 * job keeps what it had, and the universe is only a sizing hint.
 */
static void size_universe(int ranks, int rank)
{
	const char *v = getenv("FI_UNIVERSE_SIZE");
	size_t n;
	char text[32];

	if (v) {
		if (psc_param_parse_size(v, &n) == 0 && n > 0) {
			universe = n;
			universe_from = PSC_UNIVERSE_USER;
		}
		return;
	}
	if (ranks <= 0)
		return;
	n = PSC_MIN((size_t)ranks, (size_t)PSC_FI_UNIVERSE_DEFAULT);
	snprintf(text, sizeof(text), "%zu", n);
	setenv("FI_UNIVERSE_SIZE", text, 0);
	universe = n;
	universe_from = PSC_UNIVERSE_JOB;
	psc_log(PSC_LOG_DEBUG, rank, "set FI_UNIVERSE_SIZE=%zu (the job's %d "
		"ranks, at most libfabric's default %d)", n, ranks,
		PSC_FI_UNIVERSE_DEFAULT);
}

size_t psc_preflight_universe(enum psc_universe_from *from)
{
	size_t n;

	pthread_mutex_lock(&env_lock);
	n = universe;
	if (from)
		*from = universe_from;
	pthread_mutex_unlock(&env_lock);
	return n;
}

void psc_preflight_env(const struct psc_params *p, int rank, int ranks)
{
	size_t n;
	const struct psc_provider_ops *all = psc_provider_all(&n);
	char uuid[40];

	/*
	 * Once per process: providers read these when libfabric loads them,
	 * at the first fi_getinfo. setenv is not safe against concurrent
	 * getenv, which is why this runs inside ps_comm_init only.
	 */
	pthread_mutex_lock(&env_lock);
	if (env_done) {
		pthread_mutex_unlock(&env_lock);
		return;
	}
	env_done = true;
	size_universe(ranks, rank);
	psc_preflight_job_uuid(p, uuid, sizeof(uuid));
	for (size_t i = 0; i < n; i++) {
		if (all[i].fork_env)
			set_default(all[i].fork_env, "1", "fork safety must "
				    "be set before the device is opened",
				    rank);
		if (all[i].uuid_env)
			set_default(all[i].uuid_env, uuid, "one UUID per "
				    "job, derived from the job's identity",
				    rank);
		no_cma(&all[i], rank);
		env_defaults(&all[i], rank);
	}
	pthread_atfork(warn_fork, NULL, NULL);
	pthread_mutex_unlock(&env_lock);
}

/* Human size: "8 MiB". */
static void fmt_mib(unsigned long long v, char *buf, size_t len)
{
	if (v >= (1ULL << 20))
		snprintf(buf, len, "%llu MiB", v >> 20);
	else
		snprintf(buf, len, "%llu KiB", v >> 10);
}

static void check_memlock(const struct fi_info *info, int rank)
{
	struct rlimit rl;
	char have[32];

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= PSC_MEMLOCK_MIN)
		return;
	/* Raising the soft limit to the hard one needs no privilege. */
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
		    (rl.rlim_cur == RLIM_INFINITY ||
		     rl.rlim_cur >= PSC_MEMLOCK_MIN))
			return;
	}
	fmt_mib(rl.rlim_cur, have, sizeof(have));
	psc_log(PSC_LOG_WARN, rank, "RLIMIT_MEMLOCK is %s, but %s pins "
		"registered memory; registrations will fail once it is "
		"used up. Fix: `ulimit -l unlimited` before the launch, "
		"\"* - memlock unlimited\" in /etc/security/limits.conf, "
		"`docker run --ulimit memlock=-1`, or LimitMEMLOCK=infinity "
		"for systemd-started daemons (Slurm: "
		"PropagateResourceLimitsExcept=MEMLOCK)", have,
		info->fabric_attr->prov_name);
}

static void check_devshm(int rank)
{
	struct statvfs st;
	unsigned long long avail;
	char have[32];

	if (statvfs("/dev/shm", &st) != 0) {
		psc_log(PSC_LOG_WARN, rank, "/dev/shm is missing (%s): the "
			"shm provider needs it. Fix: mount a tmpfs there, or "
			"FI_PROVIDER=tcp", strerror(errno));
		return;
	}
	avail = (unsigned long long)st.f_bavail * st.f_frsize;
	if (avail >= PSC_DEVSHM_MIN)
		return;
	fmt_mib(avail, have, sizeof(have));
	psc_log(PSC_LOG_WARN, rank, "/dev/shm has only %s free; shm maps "
		"its queues there and fails with several ranks. Fix: `docker "
		"run --shm-size=1g` (Kubernetes: an emptyDir with medium "
		"Memory), or `mount -o remount,size=1G /dev/shm`", have);
}

/* Read one line of a sysfs file into buf, without its newline. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* One GID of a port, as sysfs lists it. */
struct gid_entry {
	int index;
	uint8_t raw[16];
	char text[48];
	char type[16];	/* "RoCE v2", "IB/RoCE v1" or "" */
	char ndev[32];
};

/* The type sysfs gives RoCE v2 GIDs (the other is "IB/RoCE v1"). */
#define ROCE_V2 "RoCE v2"

/* fe80::/10: a link-local GID, which is not routed. */
static bool gid_link_local(const uint8_t *raw)
{
	return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

/*
 * The non-zero GIDs of dev's port 1 under fsroot, in index order, into
 * a malloc'd array (*n of them); NULL when there is none.
 */
static struct gid_entry *read_gids(const char *fsroot, const char *dev,
				   size_t *n)
{
	struct gid_entry *all = NULL, g;
	char dir[512], path[640];
	struct dirent *d;
	size_t cap = 0;
	DIR *dp;

	*n = 0;
	snprintf(dir, sizeof(dir), "%s/sys/class/infiniband/%s/ports/1",
		 fsroot, dev);
	snprintf(path, sizeof(path), "%s/gids", dir);
	dp = opendir(path);
	while (dp && (d = readdir(dp)) != NULL) {
		static const uint8_t zero[16];

		if (psc_param_parse_int(d->d_name, &g.index) != 0 ||
		    g.index < 0)
			continue;
		snprintf(path, sizeof(path), "%s/gids/%d", dir, g.index);
		if (!read_line(path, g.text, sizeof(g.text)) ||
		    inet_pton(AF_INET6, g.text, g.raw) != 1 ||
		    memcmp(g.raw, zero, sizeof(zero)) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/gid_attrs/types/%d", dir,
			 g.index);
		if (!read_line(path, g.type, sizeof(g.type)))
			g.type[0] = '\0';
		snprintf(path, sizeof(path), "%s/gid_attrs/ndevs/%d", dir,
			 g.index);
		if (!read_line(path, g.ndev, sizeof(g.ndev)))
			snprintf(g.ndev, sizeof(g.ndev), "?");
		if (*n == cap) {
			struct gid_entry *more;

			cap = cap ? 2 * cap : 16;
			more = realloc(all, cap * sizeof(*all));
			if (!more)
				break;
			all = more;
		}
		all[(*n)++] = g;
	}
	if (dp)
		closedir(dp);
	/* readdir's order is the directory's: sort by index. */
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && all[j - 1].index > all[j].index;
		     j--) {
			g = all[j];
			all[j] = all[j - 1];
			all[j - 1] = g;
		}
	return all;
}

/* The GID rdma_cm derives from an IP address: ::ffff:a.b.c.d for IPv4. */
static bool addr_gid(const struct sockaddr *sa, uint8_t *raw, char *text,
		     size_t len)
{
	memset(raw, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		raw[10] = raw[11] = 0xff;
		memcpy(raw + 12, &in->sin_addr, 4);
		inet_ntop(AF_INET, &in->sin_addr, text, (socklen_t)len);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		memcpy(raw, &in6->sin6_addr, 16);
		inet_ntop(AF_INET6, &in6->sin6_addr, text, (socklen_t)len);
		return true;
	}
	return false;
}

/*
 * The RoCE type rdma_cm asks for on dev's port 1: its configfs
 * default_roce_mode when someone set one, else RoCE v2 when the port has
 * v2 GIDs (the kernel's preference), else v1.
 */
static void cm_gid_type(const char *fsroot, const char *dev,
			const struct gid_entry *g, size_t n, char *type,
			size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/sys/kernel/config/rdma_cm/%s/ports/"
		 "1/default_roce_mode", fsroot, dev);
	if (read_line(path, type, len) && *type)
		return;
	snprintf(type, len, "IB/RoCE v1");
	for (size_t i = 0; i < n; i++)
		if (strcmp(g[i].type, ROCE_V2) == 0)
			snprintf(type, len, ROCE_V2);
}

/* The first routable RoCE v2 GID, IPv4-mapped first; NULL if none. */
static const struct gid_entry *routable_v2(const struct gid_entry *g,
					   size_t n)
{
	const struct gid_entry *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(g[i].type, ROCE_V2) != 0 ||
		    gid_link_local(g[i].raw))
			continue;
		if (g[i].raw[10] == 0xff && g[i].raw[11] == 0xff)
			return &g[i];
		if (!best)
			best = &g[i];
	}
	return best;
}

static void describe(char *buf, size_t len, const struct gid_entry *e)
{
	snprintf(buf, len, "GID index %d, %s (%s, netdev %s)", e->index,
		 e->text, e->type[0] ? e->type : "type unknown", e->ndev);
}

/* Connections: rdma_cm takes the GID of the endpoint's address. */
static void gid_by_cm(const char *fsroot, const char *dev,
		      const struct sockaddr *addr,
		      const struct psc_provider_ops *prov,
		      const struct gid_entry *g, size_t n,
		      struct psc_roce_gid *out)
{
	const char *var = prov->gid_env;
	const char *env = var ? getenv(var) : NULL;
	const struct gid_entry *use = NULL, *other = NULL;
	char ip[INET6_ADDRSTRLEN] = "?", type[16], what[160];
	uint8_t want[16];

	if (!addr_gid(addr, want, ip, sizeof(ip))) {
		snprintf(out->line, sizeof(out->line), "RoCE device %s port 1: "
			 "rdma_cm picks the GID of the endpoint's address, "
			 "which is not an IP address here", dev);
		return;
	}
	cm_gid_type(fsroot, dev, g, n, type, sizeof(type));
	for (size_t i = 0; i < n; i++) {
		if (memcmp(g[i].raw, want, 16) != 0)
			continue;
		if (!use && strcmp(g[i].type, type) == 0)
			use = &g[i];
		else if (!other)
			other = &g[i];
	}
	if (use) {
		out->index = use->index;
		describe(what, sizeof(what), use);
		snprintf(out->line, sizeof(out->line), "RoCE device %s port 1: "
			 "rdma_cm connects from %s with %s%s%s%s", dev, ip,
			 what, env ? "; " : "", env ? var : "",
			 env ? " does not choose it (it indexes the GID of "
			       "datagram endpoints)" : "");
		return;
	}
	out->level = PSC_GID_PROBLEM;
	snprintf(out->line, sizeof(out->line), "RoCE device %s port 1: no %s "
		 "GID of %s among its %zu GIDs", dev, type, ip, n);
	if (other)
		snprintf(out->why, sizeof(out->why), "RoCE device %s has %s "
			 "only as a %s GID (index %d), and rdma_cm asks for "
			 "%s, its default for the port: connections from %s "
			 "will fail. Give every rank the same RoCE mode "
			 "(configfs rdma_cm default_roce_mode, or the NIC's "
			 "settings)", dev, ip, other->type, other->index, type,
			 ip);
	else
		snprintf(out->why, sizeof(out->why), "RoCE device %s has no "
			 "GID of %s, the address pscomm's endpoint uses, so "
			 "rdma_cm cannot connect from it. Check that %s is on "
			 "the device's netdev (`rdma link`)%s%s", dev, ip, ip,
			 prov->iface_env ? ", or choose the netdev with " : "",
			 prov->iface_env ? prov->iface_env : "");
}

/* Datagrams: the GID var indexes, 0 by default. */
static void gid_by_index(const char *dev, const char *var,
			 const struct gid_entry *g, size_t n,
			 struct psc_roce_gid *out)
{
	const char *env = getenv(var);
	const struct gid_entry *use = NULL, *v2 = routable_v2(g, n);
	char what[160], alt[160] = "";
	int idx = 0;

	/* atoi would read "x" or "1x" as an index; show such a value as 0. */
	if (env && (psc_param_parse_int(env, &idx) != 0 || idx < 0))
		idx = 0;
	for (size_t i = 0; i < n; i++)
		if (g[i].index == idx)
			use = &g[i];
	if (v2)
		snprintf(alt, sizeof(alt), "%d (%s, RoCE v2)", v2->index,
			 v2->text);
	out->suggest = v2 ? v2->index : -1;
	if (!use) {
		out->level = PSC_GID_PROBLEM;
		snprintf(out->line, sizeof(out->line), "RoCE device %s port 1: "
			 "GID index %d is empty", dev, idx);
		snprintf(out->why, sizeof(out->why), "RoCE device %s has no "
			 "GID at index %d (%s%s%s), which its datagram "
			 "endpoints would use: set %s to a RoCE v2 index on "
			 "every rank%s%s", dev, idx, env ? var : "the default",
			 env ? "=" : "", env ? env : "", var,
			 v2 ? ", e.g. " : "", alt);
		return;
	}
	out->index = use->index;
	describe(what, sizeof(what), use);
	snprintf(out->line, sizeof(out->line), "RoCE device %s port 1: "
		 "datagram endpoints use %s%s%s", dev, what,
		 env ? ", from " : "", env ? var : "");
	if (env || !v2 || v2 == use ||
	    (strcmp(use->type, ROCE_V2) == 0 && !gid_link_local(use->raw)))
		return;
	out->level = PSC_GID_ADVICE;
	snprintf(out->why, sizeof(out->why), "datagram endpoints on RoCE "
		 "device %s use %s by default, which reaches only peers on "
		 "the same Ethernet segment; to route over IP, set %s=%s on "
		 "every rank", dev, what, var, alt);
}

void psc_preflight_roce_gid(const char *fsroot, const char *dev,
			    const struct sockaddr *addr, bool from_addr,
			    const struct psc_provider_ops *prov,
			    struct psc_roce_gid *out)
{
	struct gid_entry *g;
	size_t n;

	memset(out, 0, sizeof(*out));
	out->index = -1;
	out->suggest = -1;
	g = read_gids(fsroot, dev, &n);
	if (!n)
		snprintf(out->line, sizeof(out->line), "RoCE device %s port "
			 "1: its GIDs are not readable in sysfs", dev);
	else if (from_addr)
		gid_by_cm(fsroot, dev, addr, prov, g, n, out);
	else if (prov->gid_env)
		gid_by_index(dev, prov->gid_env, g, n, out);
	free(g);
}

/*
 * Log the GID a RoCE endpoint uses at info level, and warn when there is
 * something to do: on every rank for a problem, once (rank 0) for advice.
 */
static void log_roce_gid(const struct fi_info *info,
			 const struct psc_caps *caps,
			 const struct psc_provider_ops *prov, int rank)
{
	const char *dev = info->nic && info->nic->device_attr &&
					  info->nic->device_attr->name
				  ? info->nic->device_attr->name
				  : info->domain_attr->name;
	struct psc_roce_gid g;

	if (!dev)
		return;
	psc_preflight_roce_gid("", dev, info->src_addr, caps->gid_from_addr,
			       prov, &g);
	psc_log(PSC_LOG_INFO, rank, "%s", g.line);
	if (g.level == PSC_GID_PROBLEM || (g.level == PSC_GID_ADVICE &&
					   rank <= 0))
		psc_log(PSC_LOG_WARN, rank, "%s", g.why);
	else if (g.level == PSC_GID_ADVICE)
		psc_log(PSC_LOG_INFO, rank, "%s", g.why);
}

int psc_preflight_check(const struct fi_info *info,
			const struct psc_caps *caps, int nic_distance,
			int rank, char *err, size_t len)
{
	const struct psc_provider_ops *prov =
		psc_provider_lookup(info->fabric_attr->prov_name);

	(void)err;
	(void)len;
	if (caps->needs_memlock || caps->mr_local)
		check_memlock(info, rank);
	if (caps->link == PSC_LINK_SHM)
		check_devshm(rank);
	if (caps->link == PSC_LINK_ROCE && prov->gid_env)
		log_roce_gid(info, caps, prov, rank);
	if (caps->fork_unsafe)
		fork_unsafe_in_use = 1;
	if (caps->nic_local && psc_log_enabled(PSC_LOG_INFO)) {
		char nic[256];
		void *topo = psc_topo_open();

		psc_topo_nic_describe(info, topo, nic, sizeof(nic));
		psc_topo_close(topo);
		psc_log(PSC_LOG_INFO, rank, "NIC %s%s", nic,
			nic_distance == 2 ? "; far from this process's CPUs: "
			"bind ranks near their NIC (--bind-to numa)" : "");
	}
	return 0;
}
