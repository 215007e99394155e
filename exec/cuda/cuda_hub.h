// In-process transport between CUDA stage workers (one thread per device). With one GPU
// per device the endpoints are NcclEndpoints (exec/cuda/nccl_endpoint.h), created on the
// workers' threads (ids shared through the hub). With SM partitions of one GPU, send() copies the tensor, on the sender's compute
// stream, into a staging block of the sender's allocator and posts it with a "ready"
// event; recv() waits on the host for the post (deadline and failures as in ThreadHub),
// then copies staging -> a fresh tensor on the receiver's transfer stream after the
// ready event, and makes the receiver's compute stream wait for the copy: the link
// transfer overlaps the receiver's compute, as the simulator assumes. Invariant: a
// staging block returns to its allocator (shared_ptr: it outlives the sender's backend)
// only after the copy that reads it has completed. Barriers and failure notices go
// through a ThreadHub.
//   CudaHub hub(K);  StageWorker w(setup, hub.endpoint(d));
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "exec/cuda/caching_allocator.h"
#include "core/schedule.h"
#include "exec/transport/thread_transport.h"

namespace pipescope::exec::cuda {

class CudaHub : public Hub {
 public:
  explicit CudaHub(const Schedule& schedule);
  ~CudaHub() override;
  Endpoint& endpoint(int device) override;
  std::string failure() const override { return control_.failure(); }

 private:
  friend class CudaEndpoint;
  struct Message {
    int64_t rows = 0, cols = 0, bytes = 0;
    void* staging = nullptr;
    std::shared_ptr<CachingAllocator> owner;
    cudaEvent_t ready = nullptr;
  };
  ThreadHub control_;
  const int devices_;
  const Schedule& schedule_;
  bool nccl_ = false;                          // one GPU per device
  std::vector<std::unique_ptr<Endpoint>> nccl_endpoints_;
  std::vector<char> nccl_failed_;
  std::vector<char> shared_ids_;               // rank 0's NCCL ids, read after a barrier
  std::mutex mu_;  // guards boxes_
  std::condition_variable cv_;
  std::vector<std::map<MessageKey, std::deque<Message>>> boxes_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

}  // namespace pipescope::exec::cuda
