/*
 * pslite_sized: ps-lite's zero-copy calls on one key of a given size,
 * timed, with the result checked exactly. Written against ps-lite's
 * public API (ps/ps.h), so it runs over any van; bench/pslite_sized.sh
 * builds it from a ps-lite tree and runs it over ZeroMQ and pscomm.
 *
 *   pslite_sized BYTES OPS MODE      MODE: push, pull or pushpull
 *
 * Started like any ps-lite program (DMLC_ROLE and the rest; the servers
 * and workers all get the same arguments). The key's value is BYTES / 4
 * floats on one server (ps-lite keeps a key on one). Each worker w pushes the
 * array v_w[i] = (w + 1) + i % 7 (push, pushpull) and pulls the sum
 * (pull, pushpull). After a barrier, every worker pulls once more and
 * checks that element i is OPS * (sum of v_w[i]) exactly, as for push
 * and pushpull (pull alone: 0). Integer sums stay below 2^24, so floats
 * hold them exactly; larger counts are refused.
 *
 * Each worker prints one line:
 *   pslite_sized: worker W: BYTES B MODE x OPS: T s, U us/op, M MB/s, check ok
 * where MB/s counts the bytes the worker sent and received. The exit
 * status is non-zero on a wrong value or a bad argument.
 */
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

namespace {

enum Mode { kPush, kPull, kPushPull };

/*
 * A server's store: each key's float array, added to on push. ps-lite
 * calls the handle from the server's one receiving thread.
 */
struct Store {
  std::unordered_map<ps::Key, std::vector<float>> vals;

  void operator()(const ps::KVMeta &req, const ps::KVPairs<float> &data,
                  ps::KVServer<float> *server) {
    ps::KVPairs<float> res;
    size_t n = data.keys.size();
    size_t off = 0;

    for (size_t k = 0; k < n; k++) {
      size_t len = data.lens.empty()
                       ? (req.push ? data.vals.size() / n : 0)
                       : static_cast<size_t>(data.lens[k]);
      std::vector<float> &v = vals[data.keys[k]];

      if (req.push) {
        if (v.size() < len)
          v.resize(len, 0.0f);
        for (size_t i = 0; i < len; i++)
          v[i] += data.vals[off + i];
        off += len;
      }
      if (req.pull) {
        res.keys.push_back(data.keys[k]);
        res.lens.push_back(static_cast<int>(v.size()));
        /* One copy per key, as a server would make it. Growing the reply
         * one push_back at a time took about 200 us of the server's
         * thread per 1 MiB pull, whatever the van. */
        res.vals.append(ps::SArray<float>(v.data(), v.size(), false));
      }
    }
    server->Response(req, res);
  }
};

void usage() {
  std::fprintf(stderr, "usage: pslite_sized BYTES OPS push|pull|pushpull\n");
  std::exit(2);
}

/* Element i of worker w's array. */
float value(int w, size_t i) { return static_cast<float>((w + 1) + i % 7); }

int run_worker(size_t n, long ops, Mode mode, size_t bytes,
               const char *mode_name) {
  ps::KVWorker<float> kv(0, 0);
  int w = ps::MyRank(), workers = ps::NumWorkers();
  ps::SArray<ps::Key> keys(1, 0);
  ps::SArray<float> vals(n), outs(n);
  ps::SArray<int> lens(1, static_cast<int>(n));

  for (size_t i = 0; i < n; i++)
    vals[i] = value(w, i);
  /* The servers' handles exist before any request (ps-lite's start race). */
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);
  if (mode == kPull) /* the key must exist before it is pulled */
    kv.Wait(kv.ZPush(keys, ps::SArray<float>(n, 0.0f), lens));
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);

  auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < ops; k++) {
    if (mode == kPush)
      kv.Wait(kv.ZPush(keys, vals, lens));
    else if (mode == kPull)
      kv.Wait(kv.ZPull(keys, &outs, &lens));
    else
      kv.Wait(kv.ZPushPull(keys, vals, &outs, &lens));
  }
  double sec = std::chrono::duration<double>(
                   std::chrono::steady_clock::now() - t0).count();

  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);
  ps::SArray<float> got(n);
  kv.Wait(kv.ZPull(keys, &got, &lens));
  long bad = 0;
  size_t first = 0;
  for (size_t i = 0; i < n; i++) {
    double want = 0;
    if (mode != kPull)
      for (int v = 0; v < workers; v++)
        want += static_cast<double>(ops) * value(v, i);
    if (got.size() != n || static_cast<double>(got[i]) != want) {
      if (!bad)
        first = i;
      bad++;
    }
  }
  double moved = static_cast<double>(bytes) * ops * (mode == kPushPull ? 2 : 1);
  if (bad) {
    std::printf("pslite_sized: worker %d: %zu B %s x %ld: %ld wrong "
                "elements, the first at %zu (got %zu elements)\n",
                w, bytes, mode_name, ops, bad, first, got.size());
  } else {
    std::printf("pslite_sized: worker %d: %zu B %s x %ld: %.6f s, %.2f "
                "us/op, %.1f MB/s, check ok\n",
                w, bytes, mode_name, ops, sec, sec * 1e6 / ops,
                moved / sec / 1e6);
  }
  std::fflush(stdout);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char *argv[]) {
  if (argc != 4)
    usage();
  char *end;
  unsigned long long bytes = std::strtoull(argv[1], &end, 10);
  if (*end || bytes < 4 || bytes % 4)
    usage();
  long ops = std::strtol(argv[2], &end, 10);
  if (*end || ops < 1)
    usage();
  Mode mode;
  if (!std::strcmp(argv[3], "push"))
    mode = kPush;
  else if (!std::strcmp(argv[3], "pull"))
    mode = kPull;
  else if (!std::strcmp(argv[3], "pushpull"))
    mode = kPushPull;
  else
    usage();

  ps::Start(0);
  /* OPS * sum over workers of (w + 1 + 6) must stay below 2^24. */
  int workers = ps::NumWorkers();
  double top = static_cast<double>(ops) *
               (workers * (workers + 1) / 2.0 + 6.0 * workers);
  if (top >= 16777216.0) {
    std::fprintf(stderr, "pslite_sized: OPS %ld with %d workers sums past "
                 "2^24, which floats do not hold exactly\n", ops, workers);
    return 2;
  }
  ps::KVServer<float> *server = nullptr;
  if (ps::IsServer()) {
    server = new ps::KVServer<float>(0);
    server->set_request_handle(Store());
    ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);
  }
  int rc = 0;
  if (ps::IsWorker())
    rc = run_worker(bytes / 4, ops, mode, bytes, argv[3]);
  ps::Finalize(0, true);
  delete server;
  return rc;
}
