// NcclEndpoint. Invariant: on every link the i-th ncclRecv of the receiver matches the
// i-th ncclSend of the sender, because both walk the sender's op order.
#include "exec/cuda/nccl_endpoint.h"

#include "core/op_rules.h"

#include <thread>

#include "core/error.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"

#define PS_NCCL_CHECK(call)                                                                               \
  do {                                                                                                    \
    ncclResult_t ps_r_ = (call);                                                                          \
    if (ps_r_ != ncclSuccess) ::pipescope::exec::cuda::throw_cuda(#call, ncclGetErrorString(ps_r_),       \
                                                                  __FILE__, __LINE__);                    \
  } while (0)

namespace pipescope::exec::cuda {

namespace {

// The messages device `from` sends to device `to`, in from's op order.
std::deque<MessageKey> link_order(const Schedule& s, int from, int to) {
  std::deque<MessageKey> out;
  const int S = s.stages();
  for (const Op& op : s.position_ops.at(from)) {
    if (auto m = op_sends(op, S); m && s.stage_position[m->to_stage] == to) {
      out.push_back({m->kind, m->to_stage, op.microbatch});
    }
  }
  return out;
}

CudaBackend& cuda_of(Backend& be) {
  auto* cb = dynamic_cast<CudaBackend*>(&be);
  if (!cb) throw RunError("the NCCL transport needs the cuda backend, got " + be.name());
  return *cb;
}

}  // namespace

NcclEndpoint::NcclEndpoint(Endpoint& control, const Schedule& schedule, int gpu, const Broadcast& broadcast,
                           std::function<std::string()> failure)
    : control_(control), schedule_(schedule), gpu_(gpu), failure_(std::move(failure)) {
  const int K = control.positions(), me = control.device();
  // Every directed link that carries a message, numbered the same way on every rank.
  std::vector<std::pair<int, int>> links;
  for (int a = 0; a < K; ++a) {
    for (int b = 0; b < K; ++b) {
      if (a != b && !link_order(schedule, a, b).empty()) links.emplace_back(a, b);
    }
  }
  std::vector<ncclUniqueId> ids(links.size());
  if (me == 0) {
    for (ncclUniqueId& id : ids) PS_NCCL_CHECK(ncclGetUniqueId(&id));
  }
  if (!ids.empty()) broadcast(ids.data(), ids.size() * sizeof(ncclUniqueId));
  PS_CUDA_CHECK(cudaSetDevice(gpu_));
  PS_NCCL_CHECK(ncclGroupStart());
  for (std::size_t l = 0; l < links.size(); ++l) {
    const auto [a, b] = links[l];
    if (a != me && b != me) continue;
    Link& link = a == me ? to_[b] : from_[a];
    PS_NCCL_CHECK(ncclCommInitRank(&link.comm, 2, ids[l], a == me ? 0 : 1));
  }
  PS_NCCL_CHECK(ncclGroupEnd());
  for (auto* side : {&to_, &from_}) {
    for (auto& [peer, link] : *side) PS_CUDA_CHECK(cudaStreamCreateWithFlags(&link.stream, cudaStreamNonBlocking));
  }
  for (auto& [peer, link] : from_) link.order = link_order(schedule, peer, me);
}

NcclEndpoint::~NcclEndpoint() {
  for (PendingSend& p : pending_) {
    cudaEventSynchronize(p.done);
    try {
      p.owner->free_after(p.staging, p.done);
    } catch (const std::exception&) {
    }
  }
  for (auto* side : {&to_, &from_}) {
    for (auto& [peer, link] : *side) {
      if (link.comm) ncclCommDestroy(link.comm);
      if (link.stream) cudaStreamDestroy(link.stream);
    }
  }
}

void NcclEndpoint::send(int to, const MessageKey& key, const Tensor& t) {
  CudaBackend& be = cuda_of(t.buffer->backend());
  if (to == device()) {  // a stage boundary inside this device (K = 1 with chunks)
    throw RunError("the NCCL transport does not send to its own device (" + key.describe() + ")");
  }
  auto it = to_.find(to);
  if (it == to_.end()) throw RunError("no NCCL link from device " + std::to_string(device()) + " to " + std::to_string(to));
  const std::size_t bytes = static_cast<std::size_t>(t.bytes());
  PendingSend p;
  p.owner = be.shared_allocator();
  p.staging = p.owner->allocate(bytes);
  PS_CUDA_CHECK(cudaMemcpyAsync(p.staging, be.device_address(t.data()), bytes, cudaMemcpyDeviceToDevice, be.stream()));
  cudaEvent_t ready = nullptr;
  PS_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  PS_CUDA_CHECK(cudaEventRecord(ready, be.stream()));
  PS_CUDA_CHECK(cudaStreamWaitEvent(it->second.stream, ready, 0));
  PS_CUDA_CHECK(cudaEventDestroy(ready));
  PS_NCCL_CHECK(ncclSend(p.staging, bytes, ncclUint8, 1, it->second.comm, it->second.stream));
  PS_CUDA_CHECK(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming));
  PS_CUDA_CHECK(cudaEventRecord(p.done, it->second.stream));
  // Completed sends give their staging back now; the rest wait for flush().
  for (auto q = pending_.begin(); q != pending_.end();) {
    if (cudaEventQuery(q->done) == cudaSuccess) {
      q->owner->free_after(q->staging, q->done);
      q = pending_.erase(q);
    } else {
      ++q;
    }
  }
  cudaGetLastError();  // cudaErrorNotReady from the queries above is not an error
  pending_.push_back(std::move(p));
}

Tensor NcclEndpoint::receive_one(Link& link, int from, int64_t bytes, int64_t rows, int64_t cols, Context ctx,
                                 Clock::time_point deadline, const MessageKey& key) {
  CudaBackend& be = cuda_of(ctx.backend);
  Tensor t = Tensor::empty(ctx, rows, cols);
  if (t.bytes() != bytes) throw RunError("NCCL receive: size mismatch for the " + key.describe());
  cudaEvent_t compute_done = nullptr, done = nullptr;
  PS_CUDA_CHECK(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming));
  PS_CUDA_CHECK(cudaEventRecord(compute_done, be.stream()));
  PS_CUDA_CHECK(cudaStreamWaitEvent(link.stream, compute_done, 0));
  PS_CUDA_CHECK(cudaEventDestroy(compute_done));
  PS_NCCL_CHECK(ncclRecv(be.device_address(t.data()), static_cast<std::size_t>(bytes), ncclUint8, 0, link.comm,
                         link.stream));
  PS_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  PS_CUDA_CHECK(cudaEventRecord(done, link.stream));
  PS_CUDA_CHECK(cudaStreamWaitEvent(be.stream(), done, 0));
  try {
    wait(done, deadline, "the " + key.describe() + " from device " + std::to_string(from));
  } catch (...) {
    cudaEventDestroy(done);
    throw;
  }
  PS_CUDA_CHECK(cudaEventDestroy(done));
  return t;
}

Tensor NcclEndpoint::recv(int from, const MessageKey& key, int64_t rows, int64_t cols, Context ctx,
                          Clock::time_point deadline) {
  if (auto e = early_.find(key); e != early_.end()) {
    Tensor t = std::move(e->second);
    early_.erase(e);
    if (t.rows != rows || t.cols != cols) throw RunError("NCCL receive: shape mismatch for the " + key.describe());
    return t;
  }
  auto it = from_.find(from);
  if (it == from_.end()) throw RunError("no NCCL link to device " + std::to_string(device()) + " from " + std::to_string(from));
  Link& link = it->second;
  const int64_t bytes = rows * cols * ctx.backend.element_bytes();
  while (!link.order.empty()) {
    const MessageKey next = link.order.front();
    link.order.pop_front();
    if (!(next < key) && !(key < next)) return receive_one(link, from, bytes, rows, cols, ctx, deadline, key);
    // A message the sender sent before the one asked for: receive it now (with this
    // boundary's shape; recv checks it when that message is asked for) and keep it.
    early_.emplace(next, receive_one(link, from, bytes, rows, cols, ctx, deadline, next));
  }
  throw RunError("device " + std::to_string(device()) + " expected no more messages from device " +
                 std::to_string(from) + " but waits for the " + key.describe());
}

void NcclEndpoint::wait(cudaEvent_t e, Clock::time_point deadline, const std::string& what) {
  for (;;) {
    const cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return;
    if (r != cudaErrorNotReady) PS_CUDA_CHECK(r);
    const std::string failed = failure_ ? failure_() : "";
    if (Clock::now() > deadline || !failed.empty()) {
      for (auto* side : {&to_, &from_}) {
        for (auto& [peer, link] : *side) {
          if (link.comm) ncclCommAbort(link.comm);
          link.comm = nullptr;
        }
      }
      if (!failed.empty()) {
        throw RunError("device " + std::to_string(device()) + " stopped while waiting for " + what + " because " +
                       failed);
      }
      throw RunError("device " + std::to_string(device()) + " timed out waiting for " + what +
                     " (NCCL; a stage may have died)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclEndpoint::barrier(Clock::time_point deadline, const std::string& where) { control_.barrier(deadline, where); }

void NcclEndpoint::flush(Clock::time_point deadline) {
  for (PendingSend& p : pending_) {
    wait(p.done, deadline, "a send to complete");
    p.owner->free_after(p.staging, p.done);
  }
  pending_.clear();
}

void NcclEndpoint::report_failure(const std::string& message) { control_.report_failure(message); }

}  // namespace pipescope::exec::cuda
