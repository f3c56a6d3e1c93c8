/*
 * The file rendezvous store: a directory on a file system every rank can
 * see. A key published by rank r is the file "r.key", written to a
 * temporary name and renamed so readers never see it half written.
 * Readers poll for it with backoff until the deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "boot/store.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/util.h"

struct file_store {
	char dir[4096];
};

static int file_path(struct psc_store *s, int rank, const char *key,
		     char *buf, size_t len)
{
	struct file_store *f = s->priv;
	int n = snprintf(buf, len, "%s/%d.%s", f->dir, rank, key);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int file_put(struct psc_store *s, const char *key, const void *val,
		    size_t len)
{
	char path[4200], tmp[4300];
	int fd, rc = 0;

	if (file_path(s, s->rank, key, path, sizeof(path)))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, val, len) != (ssize_t)len || fsync(fd) != 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		snprintf(s->err, sizeof(s->err), "cannot write %s: %s", path,
			 strerror(-rc));
	}
	return rc;
}

static int file_commit(struct psc_store *s)
{
	return 0;
}

/* Read the whole file at path into a malloc'd buffer. */
static int file_slurp(const char *path, void **val, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || st.st_size > PSC_WIRE_MAX_PAYLOAD) {
		close(fd);
		return -EPROTO;
	}
	*val = malloc((size_t)st.st_size + 1);
	if (!*val)
		rc = -ENOMEM;
	else if (read(fd, *val, (size_t)st.st_size) != st.st_size)
		rc = -EIO;
	close(fd);
	if (rc) {
		free(*val);
		*val = NULL;
	}
	*len = (size_t)st.st_size;
	return rc;
}

static int file_get(struct psc_store *s, int rank, const char *key,
		    void **val, size_t *len)
{
	char path[4200];
	long ns = 1000000;
	int rc;

	if (file_path(s, rank, key, path, sizeof(path)))
		return -ENAMETOOLONG;
	while ((rc = file_slurp(path, val, len)) == -ENOENT) {
		struct timespec ts = {0, ns};

		if (psc_now() > s->deadline) {
			snprintf(s->err, sizeof(s->err), "rank %d did not "
				 "publish %s within PS_COMM_TIMEOUT (is it "
				 "running?)", rank, path);
			return -ETIMEDOUT;
		}
		nanosleep(&ts, NULL);
		ns = PSC_MIN(ns * 2, 50000000L);
	}
	if (rc)
		snprintf(s->err, sizeof(s->err), "cannot read %s: %s", path,
			 strerror(-rc));
	return rc;
}

static int file_finish(struct psc_store *s)
{
	return 0;
}

static void file_close(struct psc_store *s)
{
	free(s->priv);
	s->priv = NULL;
}

static const struct psc_store_ops file_ops = {
	.size = sizeof(struct psc_store_ops),
	.name = "file",
	.put = file_put,
	.commit = file_commit,
	.get = file_get,
	.finish = file_finish,
	.close = file_close,
};

int psc_store_file_open(struct psc_store *s, const char *dir)
{
	struct file_store *f = calloc(1, sizeof(*f));
	struct stat st;

	if (!f)
		return -ENOMEM;
	s->ops = &file_ops;
	s->priv = f;
	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	if (!*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(s->err, sizeof(s->err), "PS_COMM_BOOTSTRAP=file:%s: "
			 "not a directory", dir);
		return -ENOTDIR;
	}
	return 0;
}
