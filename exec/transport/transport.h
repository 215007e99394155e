// How stage workers exchange tensors: one Endpoint per worker (device). Sends never
// block on the receiver (the data is copied or queued); a receive blocks until the
// message is there, another worker reported a failure, or the deadline passes; the
// last two throw RunError naming what was awaited. Messages are matched by key
// (activation or gradient, receiving stage, micro-batch), never by arrival order.
// Replicas of a stage sum their gradients with allreduce_sum, which waits like recv.
// Implementations: ThreadHub (in-process, one thread per device) and MPI (one rank per
// device, exec/transport/mpi_runner.h, built when PIPESCOPE_WITH_MPI is on).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/op_rules.h"
#include "core/schedule.h"
#include "exec/memory/tensor.h"

namespace pipescope::exec {

using pipescope::MessageKind;  // core/op_rules.h says who sends what

struct MessageKey {
  MessageKind kind;
  int stage;       // the stage that consumes the message
  int microbatch;
  bool operator<(const MessageKey& o) const {
    return std::tie(kind, stage, microbatch) < std::tie(o.kind, o.stage, o.microbatch);
  }
  std::string describe() const;  // "activation for stage 2, micro-batch 3"
};

using Clock = std::chrono::steady_clock;

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual int device() const = 0;
  virtual int positions() const = 0;
  virtual void send(int to_device, const MessageKey& key, const Tensor& tensor) = 0;
  // Receives into a new tensor of the given shape, allocated in `ctx`.
  virtual Tensor recv(int from_device, const MessageKey& key, int64_t rows, int64_t cols,
                      Context ctx, Clock::time_point deadline) = 0;
  // All devices meet here; throws like recv.
  virtual void barrier(Clock::time_point deadline, const std::string& where) = 0;
  // Waits until every send of this endpoint has left (its buffer may be reused).
  virtual void flush(Clock::time_point deadline) = 0;
  // Sums `data` element-wise over the devices of `group` (ascending, this one among
  // them; every member calls with the same group and size) and leaves the same bits in
  // every member's `data`. Throws like recv; transports without it throw RunError.
  virtual void allreduce_sum(std::vector<float>& data, const std::vector<int>& group, Clock::time_point deadline);
  // Post-validation's global check (RunOptions::optimizer_step): every endpoint posts,
  // for check `seq`, its gradients' squared L2 norm and whether all are finite, and runs
  // on; await_validation waits until every endpoint has posted `seq` and returns the sum
  // (in device order: every endpoint gets the same bits) and the conjunction. Throws
  // like recv; transports without it throw RunError.
  struct Validation {
    double norm_sq = 0;
    bool finite = true;
  };
  virtual void post_validation(int seq, double norm_sq, bool finite);
  virtual Validation await_validation(int seq, Clock::time_point deadline);
  // Tells every other endpoint that this one failed, so that their waits stop now.
  virtual void report_failure(const std::string& message) = 0;
};

// The connected endpoints of an in-process run, one per device (one thread each).
class Hub {
 public:
  virtual ~Hub() = default;
  virtual Endpoint& endpoint(int device) = 0;
  virtual std::string failure() const = 0;  // the first failure reported, or ""
};

// The hub an in-process run of `schedule` over `backend` uses: a ThreadHub (host
// copies), or for CUDA one whose transfers are NCCL send/recv (one GPU per device) or
// device-to-device copies (SM partitions of one GPU) (registered in backend_registry.cpp).
std::unique_ptr<Hub> make_hub(const std::string& backend, const Schedule& schedule, bool spin);

// The data endpoint of one rank of a multi-process run over `backend`: nullptr when the
// control endpoint (MPI) also carries the data (cpu); for CUDA an NCCL endpoint whose
// unique ids rank 0 shares through `broadcast` (registered in backend_registry.cpp).
std::unique_ptr<Endpoint> make_rank_endpoint(const std::string& backend, Endpoint& control,
                                             const Schedule& schedule,
                                             const std::function<void(void*, std::size_t)>& broadcast);

}  // namespace pipescope::exec
