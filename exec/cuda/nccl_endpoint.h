// The transport between CUDA stage workers in different processes (one rank per GPU
// under mpirun, possibly on several machines): NCCL send/recv on one two-rank
// communicator per directed link a->b, each with its own stream on both sides, so that
// the two directions of a link never queue behind each other. The NCCL unique ids are
// made by rank 0 and shared through the control endpoint's broadcast (MPI), and the
// communicators are created in one NCCL group. Messages on a link travel in the order
// the sender's op list sends them (derived from the Schedule); a receiver that needs a
// later message first receives the earlier ones and keeps them, so any valid schedule
// works. A send copies the tensor into a staging block on the compute stream, which is
// returned to the allocator only after ncclSend has completed. recv() returns when the
// data is there (it polls with the deadline). Barriers and failures go through the
// control endpoint.
//   NcclEndpoint e(mpi_endpoint, schedule, rank, ranks, gpu, broadcast);
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/schedule.h"
#include "exec/cuda/caching_allocator.h"
#include "exec/transport/transport.h"

namespace pipescope::exec::cuda {

class NcclEndpoint : public Endpoint {
 public:
  using Broadcast = std::function<void(void* data, std::size_t bytes)>;
  // `failure` (optional) names another worker's failure, "" while there is none: waits stop on it.
  NcclEndpoint(Endpoint& control, const Schedule& schedule, int gpu, const Broadcast& broadcast,
               std::function<std::string()> failure = {});
  ~NcclEndpoint() override;

  int device() const override { return control_.device(); }
  int positions() const override { return control_.positions(); }
  void send(int to, const MessageKey& key, const Tensor& t) override;
  Tensor recv(int from, const MessageKey& key, int64_t rows, int64_t cols, Context ctx,
              Clock::time_point deadline) override;
  void barrier(Clock::time_point deadline, const std::string& where) override;
  void flush(Clock::time_point deadline) override;
  void report_failure(const std::string& message) override;

 private:
  struct Link {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    std::deque<MessageKey> order;  // receiving links: what the sender sends, in its order
  };
  struct PendingSend {
    cudaEvent_t done;
    void* staging;
    std::shared_ptr<CachingAllocator> owner;
  };
  void wait(cudaEvent_t e, Clock::time_point deadline, const std::string& what);
  Tensor receive_one(Link& link, int from, int64_t bytes, int64_t rows, int64_t cols, Context ctx,
                     Clock::time_point deadline, const MessageKey& key);

  Endpoint& control_;
  const Schedule& schedule_;
  int gpu_;
  std::function<std::string()> failure_;
  std::map<int, Link> to_;    // peer -> link this rank sends on
  std::map<int, Link> from_;  // peer -> link this rank receives on
  std::map<MessageKey, Tensor> early_;  // received before they were asked for
  std::vector<PendingSend> pending_;
};

}  // namespace pipescope::exec::cuda
