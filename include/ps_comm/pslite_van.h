/*
 * A ps::Van for dmlc/ps-lite that moves its messages through pscomm's van
 * (ps_comm/van.h), and so over any libfabric provider.
 *
 * Header-only C++: include it in ps-lite's src/van.cc and return a
 * ps::PSCommVan from Van::Create for the type "pscomm"
 * (DMLC_PS_VAN_TYPE=pscomm); link ps-lite's programs with -lpscomm. See
 * doc/pslite.md. It only translates between ps-lite's Node and Message
 * and the C calls: ids, roles, ADD_NODE, BARRIER and TERMINATE stay in
 * ps-lite's Van base class.
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

#include <string>
#include <vector>

#include "ps/internal/van.h"

namespace ps {

class PSCommVan : public Van {
 public:
  PSCommVan() {}
  ~PSCommVan() override { ps_comm_van_destroy(van_); }

 protected:
  void Start(int customer_id) override {
    start_mu_.lock();
    if (!van_) {
      int rc = ps_comm_van_create(&van_);
      CHECK_EQ(rc, 0) << "pscomm van: " << ps_comm_strerror(rc);
    }
    start_mu_.unlock();
    Van::Start(customer_id);
  }

  void Stop() override {
    // The base class sends TERMINATE to this node and joins the receiver.
    Van::Stop();
    int rc = ps_comm_van_stop(van_);
    if (rc) LOG(WARNING) << "pscomm van: stop: " << ps_comm_strerror(rc);
  }

  int Bind(const Node& node, int max_retry) override {
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

  int SendMsg(const Message& msg) override {
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
      data.reset(static_cast<char*>(m.segs[i].data), m.segs[i].len,
                 [](char* buf) { ps_comm_van_free(buf); });
      msg->data.push_back(data);
      bytes += m.segs[i].len;
    }
    ps_comm_van_free(m.segs);
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

  ps_comm_van_t van_ = nullptr;
};

}  // namespace ps

#endif  // PS_COMM_PSLITE_VAN_H
