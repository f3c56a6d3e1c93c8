/*
 * A ps::Van for ps-lite that moves its messages through pscomm's van
 * (ps_comm/van.h), and so over any libfabric provider.
 *
 * Header-only C++: include it in ps-lite's src/van.cc and return a
 * ps::PSCommVan from Van::Create for the type "pscomm"; link ps-lite's
 * programs with -lpscomm. See doc/pslite.md. It only translates between
 * ps-lite's Node and Message and the C calls: ids, roles, ADD_NODE,
 * BARRIER and TERMINATE stay in ps-lite's Van base class.
 *
 * Two ps-lites: dmlc/ps-lite (master) as it is, and BytePS's fork
 * (bytedance/ps-lite, branch byteps) when PS_COMM_PSLITE_BYTEPS is
 * defined, which <ps_comm/pslite_van_byteps.h> does. The fork's Van
 * takes its Postoffice, starts with (customer_id, standalone), sends a
 * non-const Message, binds a non-const Node and names its type; its
 * workers may skip copying pulled values, so the van puts them where
 * the worker wants them (LandPull).
 *
 * Mapping: Bind serves the fabric address on the node's host:port;
 * Connect fetches a peer's (and this node's own, for self-sends) and
 * tells the van this node's current id; SendMsg packs the meta with the
 * base class and hands meta plus data segments over without copying,
 * holding references until the van is done with them; RecvMsg wraps the
 * received buffers in SArrays whose deleter gives them back.
 *
 * Failures: a node the van finds dead (doc/pslite.md) makes SendMsg and
 * RecvMsg log which one and return -1, on which ps-lite ends the process
 * (it cannot go on without a node); a receive that ps_comm_van_stop
 * interrupts becomes a TERMINATE, so ps-lite's receiving thread ends.
 */
#ifndef PS_COMM_PSLITE_VAN_H
#define PS_COMM_PSLITE_VAN_H

#include <ps_comm/van.h>

#include <string.h>

#include <string>
#include <vector>

#ifdef PS_COMM_PSLITE_BYTEPS
#include <mutex>
#include <unordered_map>
#endif

#include "ps/internal/van.h"

namespace ps {

class PSCommVan : public Van {
 public:
#ifdef PS_COMM_PSLITE_BYTEPS
  explicit PSCommVan(Postoffice* postoffice)
      : Van(postoffice), zero_copy_pull_(WorkerSkipsPullCopy()) {}
  std::string GetType() const override { return "pscomm"; }

  // Server side: pushes of this key from this worker land in msg.data[1]
  // (copied there, as the fork's ZeroMQ van does).
  void RegisterRecvBuffer(Message& msg) override {
    CHECK_EQ(msg.data.size(), 3u);
    Key key = *reinterpret_cast<Key*>(msg.data[0].data());
    std::lock_guard<std::mutex> lk(recv_bufs_mu_);
    recv_bufs_[msg.meta.sender][key] = msg.data[1];
  }

  // A hint to register memory ahead: pscomm registers (and caches) what
  // it sends by itself, so host memory needs nothing here.
  void PinMemory(void* addr, size_t length, bool gpu) override {
    CHECK(!gpu) << "pscomm van: GPU memory is not supported";
  }

  void SetNode(const Node& node) override {
    Van::SetNode(node);
    if (van_) ps_comm_van_set_id(van_, WireId(node.id));
  }
#else
  PSCommVan() {}
#endif
  ~PSCommVan() override { ps_comm_van_destroy(van_); }

 protected:
#ifdef PS_COMM_PSLITE_BYTEPS
  // Standalone (as MultiVan starts its vans), the base class does not
  // start: the owner binds, connects and receives, as with the fork's
  // other vans.
  void Start(int customer_id, bool standalone) override {
    Open();
    standalone_ = standalone;
    if (!standalone) Van::Start(customer_id, false);
  }
  int Bind(Node& node, int max_retry) override {
    int port = BindNode(node, max_retry);
    if (port != -1 && node.num_ports >= 1) node.ports[0] = port;
    return port;
  }
  int SendMsg(Message& msg) override { return Post(msg); }
#else
  void Start(int customer_id) override {
    Open();
    Van::Start(customer_id);
  }
  int Bind(const Node& node, int max_retry) override {
    return BindNode(node, max_retry);
  }
  int SendMsg(const Message& msg) override { return Post(msg); }
#endif

  void Stop() override {
    // The base class sends TERMINATE to this node and joins the receiver.
    if (!standalone_) Van::Stop();
    int rc = ps_comm_van_stop(van_);
    if (rc) LOG(WARNING) << "pscomm van: stop: " << ps_comm_strerror(rc);
  }

  void Connect(const Node& node) override {
    CHECK_NE(node.id, Node::kEmpty);
    CHECK_NE(node.port, Node::kEmpty);
    CHECK(node.hostname.size());
    ps_comm_van_set_id(van_, WireId(my_node_.id));
    int rc = ps_comm_van_connect(van_, node.id, node.hostname.c_str(),
                                 node.port);
    if (rc)
      LOG(FATAL) << "pscomm van: connect to node " << node.id << " at "
                 << node.hostname << ":" << node.port
                 << " failed: " << ps_comm_strerror(rc);
  }

  int RecvMsg(Message* msg) override {
    ps_comm_van_msg_t m;
    msg->data.clear();
    int rc = ps_comm_van_recv(van_, &m);
    if (rc == PS_COMM_ERR_CANCELED) {
      // The van is stopping (Stop, or the process is ending): end
      // ps-lite's receiving thread as its own TERMINATE would.
      msg->meta.control.cmd = Control::TERMINATE;
      msg->meta.sender = my_node_.id;
      msg->meta.recver = my_node_.id;
      return 0;
    }
    if (rc == PS_COMM_ERR_PEER || rc == PS_COMM_ERR_TIMEOUT) {
      // ps-lite has no way to go on without a node: it ends the process
      // when RecvMsg returns -1 ("Check failed: (recv_bytes) != (-1)").
      LOG(ERROR) << "pscomm van: node " << m.sender
                 << (rc == PS_COMM_ERR_PEER ? " died or cannot be reached"
                                            : " stayed silent past "
                                              "PS_COMM_OP_TIMEOUT")
                 << "; ps-lite cannot continue without it";
      return -1;
    }
    if (rc) {
      LOG(ERROR) << "pscomm van: receive failed: " << ps_comm_strerror(rc);
      return -1;
    }
    msg->meta.sender = m.sender == PS_COMM_VAN_NO_ID ? Meta::kEmpty
                                                     : m.sender;
    msg->meta.recver = my_node_.id;
    UnpackMeta(static_cast<char*>(m.meta), static_cast<int>(m.meta_len),
               &msg->meta);
    size_t bytes = m.meta_len;
    ps_comm_van_free(m.meta);
    for (size_t i = 0; i < m.nseg; ++i) {
      SArray<char> data;
      Wrap(&data, static_cast<char*>(m.segs[i].data), m.segs[i].len,
           [](char* buf) { ps_comm_van_free(buf); }, msg->meta);
      msg->data.push_back(data);
      bytes += m.segs[i].len;
    }
    ps_comm_van_free(m.segs);
#ifdef PS_COMM_PSLITE_BYTEPS
    if (LandPull(msg) || LandPush(msg)) return -1;
#endif
    return static_cast<int>(bytes);
  }

 private:
  // What a send holds until the fabric is done with it.
  struct Pending {
    char* meta = nullptr;
    std::vector<SArray<char>> data;
    ~Pending() { delete[] meta; }
    static void Done(void* arg, int err) {
      if (err)
        LOG(WARNING) << "pscomm van: a send failed: " << ps_comm_strerror(err);
      delete static_cast<Pending*>(arg);
    }
  };

  static int WireId(int id) {
    return id == Node::kEmpty ? PS_COMM_VAN_NO_ID : id;
  }

  // Creates the C van on the first Start; later Starts (after Stop) bind
  // the same one again.
  void Open() {
    start_mu_.lock();
    if (!van_) {
      int rc = ps_comm_van_create(&van_);
      CHECK_EQ(rc, 0) << "pscomm van: " << ps_comm_strerror(rc);
    }
    start_mu_.unlock();
  }

  // The port served, or -1 (logged) when the bind fails.
  int BindNode(const Node& node, int max_retry) {
    int port = -1;
    int rc = ps_comm_van_bind(van_, node.hostname.c_str(), node.port,
                              max_retry, &port);
    if (rc) {
      LOG(WARNING) << "pscomm van: bind to " << node.hostname << ":"
                   << node.port << " failed: " << ps_comm_strerror(rc);
      return -1;
    }
    return port;
  }

  // Hands msg to the van without copying its data; the bytes sent, or -1
  // (logged) when the node cannot be reached.
  int Post(const Message& msg) {
    int id = msg.meta.recver;
    CHECK_NE(id, Meta::kEmpty);
    Pending* p = new Pending;
    int meta_size = 0;
    PackMeta(msg.meta, &p->meta, &meta_size);
    p->data = msg.data;
    std::vector<ps_comm_van_seg_t> segs(p->data.size());
    int bytes = meta_size;
    for (size_t i = 0; i < segs.size(); ++i) {
      segs[i].data = p->data[i].data();
      segs[i].len = p->data[i].size();
      bytes += static_cast<int>(segs[i].len);
    }
    int rc = ps_comm_van_send(van_, id, p->meta,
                              static_cast<size_t>(meta_size), segs.data(),
                              segs.size(), &Pending::Done, p);
    if (rc == PS_COMM_ERR_ARG) delete p;  // the only case without Done
    if (rc) {
      // ps-lite's Van::Send checks for -1 and ends the process.
      LOG(ERROR) << "pscomm van: send to node " << id
                 << " failed: " << ps_comm_strerror(rc)
                 << (rc == PS_COMM_ERR_PEER ? " (the node died or cannot "
                                              "be reached)" : "");
      return -1;
    }
    return bytes;
  }

  // Points *a at n bytes at p, freed with del; the fork's SArrays also
  // carry the message's devices, as its other vans set them.
  template <typename Deleter>
  static void Wrap(SArray<char>* a, char* p, size_t n, Deleter del,
                   const Meta& meta) {
#ifdef PS_COMM_PSLITE_BYTEPS
    a->reset(p, n, del, meta.src_dev_type, meta.src_dev_id,
             meta.dst_dev_type, meta.dst_dev_id);
#else
    (void)meta;
    a->reset(p, n, del);
#endif
  }

#ifdef PS_COMM_PSLITE_BYTEPS
  // KVWorker's rule (kv_app.h): with DMLC_ENABLE_UCX=1, or
  // DMLC_ENABLE_RDMA set to anything but zmq or 0 (as it is to pick this
  // van), a worker does not copy pulled values into its buffer.
  static bool WorkerSkipsPullCopy() {
    const char* ucx = Environment::Get()->find("DMLC_ENABLE_UCX");
    if (ucx && std::string(ucx) == "1") return true;
    const char* rdma = Environment::Get()->find("DMLC_ENABLE_RDMA");
    return rdma && std::string(rdma) != "zmq" && std::string(rdma) != "0";
  }

  // A pull reply goes where the worker's request said: its meta.addr,
  // val_len bytes (the fork's zero-copy vans count val_len in bytes, so
  // this serves KVWorker<char>, as BytePS uses it). pscomm's van receives
  // into its own buffers, so this is one copy of the value. 0, or -1
  // (logged) for a reply larger than the buffer.
  int LandPull(Message* msg) {
    const Meta& meta = msg->meta;
    if (!zero_copy_pull_ || !IsValidPushpull(*msg) || meta.push ||
        meta.request || !meta.addr || msg->data.size() < 2)
      return 0;
    SArray<char>* vals = &msg->data[1];
    if (meta.val_len < 0 ||
        vals->size() > static_cast<size_t>(meta.val_len)) {
      LOG(ERROR) << "pscomm van: a pull reply of " << vals->size()
                 << " bytes from node " << meta.sender
                 << " does not fit the worker's buffer of " << meta.val_len
                 << " bytes";
      return -1;
    }
    char* dst = reinterpret_cast<char*>(meta.addr);
    if (vals->size()) memcpy(dst, vals->data(), vals->size());
    Wrap(vals, dst, vals->size(), [](char*) {}, meta);  // frees pscomm's
    return 0;
  }

  // A push whose key has a registered buffer (RegisterRecvBuffer) goes
  // there. 0, or -1 (logged) when the sizes differ.
  int LandPush(Message* msg) {
    const Meta& meta = msg->meta;
    if (!IsValidPushpull(*msg) || !meta.push || !meta.request ||
        msg->data.size() < 2 || msg->data[0].size() < sizeof(Key) ||
        msg->data[1].empty())
      return 0;
    Key key = *reinterpret_cast<Key*>(msg->data[0].data());
    SArray<char> buf;
    {
      std::lock_guard<std::mutex> lk(recv_bufs_mu_);
      auto by_sender = recv_bufs_.find(meta.sender);
      if (by_sender == recv_bufs_.end()) return 0;
      auto it = by_sender->second.find(key);
      if (it == by_sender->second.end()) return 0;
      buf = it->second;
    }
    if (buf.size() != msg->data[1].size()) {
      LOG(ERROR) << "pscomm van: a push of " << msg->data[1].size()
                 << " bytes from node " << meta.sender << " for key " << key
                 << " does not match its registered buffer of "
                 << buf.size() << " bytes";
      return -1;
    }
    if (buf.size()) memcpy(buf.data(), msg->data[1].data(), buf.size());
    msg->data[1] = buf;  // frees pscomm's
    return 0;
  }

  const bool zero_copy_pull_;
  std::mutex recv_bufs_mu_;
  // sender id -> key -> the buffer its pushes land in
  std::unordered_map<int, std::unordered_map<Key, SArray<char>>> recv_bufs_;
#endif

  ps_comm_van_t van_ = nullptr;
  bool standalone_ = false;  // only the fork starts a van standalone
};

}  // namespace ps

#endif  // PS_COMM_PSLITE_VAN_H
