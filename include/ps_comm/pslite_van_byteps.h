/*
 * ps::PSCommVan for BytePS's ps-lite (bytedance/ps-lite, branch byteps):
 * the van of <ps_comm/pslite_van.h> built against that fork's Van
 * (Van(Postoffice*), Start(customer_id, standalone), SendMsg(Message&),
 * Bind(Node&, int), GetType, RegisterRecvBuffer, PinMemory). Include it
 * in the fork's src/van.cc instead of <ps_comm/pslite_van.h> and return
 * new PSCommVan(postoffice) from Van::Create for the type "pscomm"
 * (DMLC_ENABLE_RDMA=pscomm). A worker of that fork does not copy pulled
 * values (zero-copy pull); the van copies each pull reply into the
 * worker's buffer, at the address its request carried.
 */
#ifndef PS_COMM_PSLITE_VAN_BYTEPS_H
#define PS_COMM_PSLITE_VAN_BYTEPS_H

#if defined(PS_COMM_PSLITE_VAN_H) && !defined(PS_COMM_PSLITE_BYTEPS)
#error "<ps_comm/pslite_van.h> was included first, for dmlc/ps-lite"
#endif

#ifndef PS_COMM_PSLITE_BYTEPS
#define PS_COMM_PSLITE_BYTEPS 1
#endif
#include <ps_comm/pslite_van.h>

#endif  // PS_COMM_PSLITE_VAN_BYTEPS_H
