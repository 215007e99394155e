// A stage worker runs one device's op list of the Schedule, step after step. Per op:
//   F(s,m): receive the input (stage 0: upload the data), run the layers' forward,
//           stash per the accounting rules, send the output (last stage: loss gradient);
//   R(s,m): forward again from the kept stage input, stashing this time;
//   B(s,m): receive the output gradient, backward through the layers, send the input
//           gradient, drop the micro-batch's stash;  Bi / W: the two halves of B
//           (I drops what W does not read, where the profile has weight_grad_bytes; the
//           rest of the stash is dropped at the end of W).
// Activation accounting, the same rules as core/cost_model.h: F charges the layers'
// stashes (what each layer's forward keeps, = the profile's activation_bytes), or with
// re-materialisation only the received stage input (nothing for stage 0, whose input is
// data); R charges the stashes again on a copy of that input; everything is discharged
// when the stash is dropped. Every other buffer (received and sent tensors, the loss
// gradient, output gradients kept from I to W, layers' workspace, the all-reduce's copy)
// is tracked too, in the order core/op_rules.h's stage_memory adds them up (docs/memory.md).
// Gradients accumulate over micro-batches; the optimizer steps
// once at the end of the step. Op times exclude waiting for messages.
// Asynchronous schedules (pipedream, 2bw): the op list holds every step and runs once,
// with no flush and no final optimizer step. Each stage replays core/op_rules.h's
// WeightVersions: an op runs on the version use(op) names (a kept copy's tensors are
// swapped into the layers' Parameter::value for the op, O(1) per parameter), and the op
// that frees a micro-batch ends, when finish(op) says so, with the stage's update: free
// the dropped copies, copy the current weights into a kept one (Category::Parameters),
// then the stage's optimizer steps in place on the gradient accumulated so far.
// Replicated stages (exec/runtime/replica_layout.h): a worker is one replica of one position; it
// runs the position's op list on its b/r rows of every micro-batch, and after the step's
// last op its replicas sum their gradients (Endpoint::allreduce_sum) before the optimizer
// steps, so every replica applies the full-batch gradient.
// Post-validation (RunOptions::optimizer_step): the steps run back to back from one start
// barrier; after its own last op of step t a worker awaits the global check of step t - 1,
// posts its part of step t's, keeps a copy of its parameters and optimizer state, and
// steps its optimizer. A failed check restores the copy (the update is skipped) and
// step t, which ran on the skipped update's weights, runs again.
// In model time (RunOptions::model_time) every time the worker records is its own clock
// of exec/runtime/model_clock.h, never the steady clock.
// Activation offload (RunOptions::offload): exec/runtime/stage_offload.h moves the stashes;
// a received tensor is counted from its op's start (after the offloads settled there).
//   StageWorker w(setup, hub.endpoint(d));  WorkerResult r = w.run();
#pragma once

#include <memory>
#include <vector>

#include "core/plan.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "exec/layers/model.h"
#include "exec/runtime/model_clock.h"
#include "exec/runtime/replica_layout.h"
#include "exec/runtime/run_types.h"
#include "exec/runtime/stage_offload.h"
#include "exec/transport/transport.h"

namespace pipescope::exec {

struct WorkerSetup {
  const Profile& profile;
  const Plan& plan;
  const Schedule& schedule;
  const RunOptions& options;
  int worker;  // the worker index w: replica w % r of position w / r
  ModelClock* model_clock = nullptr;  // deterministic time (shared by the run's workers); null: the steady clock
};

class StageWorker {
 public:
  StageWorker(const WorkerSetup& setup, Endpoint& endpoint);
  ~StageWorker();
  // Runs every step. On a failure it tells the other workers (Endpoint::report_failure)
  // and throws RunError naming the stage, the op and the micro-batch.
  WorkerResult run();

 private:
  struct MicroState;
  struct StageState;
  void run_steps();  // synchronous schedules: the op list once per step, then the optimizer
  void run_async();  // asynchronous schedules: the op list once, updates as WeightVersions says
  void run_post_validation();  // flushed schedules' steps back to back, checked behind the next step
  void run_step_ops(int step, StepRecord& record);  // post-validation: one step's ops, numbered t M + n
  void keep_step_gradients(int step);  // step 0's gradients for the gradient check
  Endpoint::Validation local_validation() const;  // this worker's squared gradient norm, all finite
  int64_t now();  // the steady clock's ns, or in model time the worker's clock
  void run_op(const Op& op, std::size_t index, int step, StepRecord& record);  // index: in the position's op list
  void offload_op_start(std::size_t index, Tensor& x);  // the walk's op start; then x is counted
  void swap_version(StageState& st, int version);  // the layers run on `version` (or back)
  void update_weights(const Op& op, StepRecord& record);
  bool injected_fault(const Op& op, int step) const;  // true: drop the op's output
  Tensor op_input(const Op& op);
  Tensor compute(const Op& op, Tensor x, StepRecord& record);
  void loss(int microbatch, const Tensor& y, MicroState& ms, StepRecord& record);
  Tensor upload_input(int microbatch);
  Clock::time_point deadline() const;
  void sample_memory(StepRecord& record, int64_t at = -1, int64_t activations = 0);
  void allreduce_gradients(StepRecord& record);
  std::string where(int stage) const;  // "stage 1 (device 1)", or "stage 1 replica 1 (device 3)"
  std::string replica_of() const;      // "", or " (replica 1 of position 1)"
  uint64_t parameter_hash() const;

  WorkerSetup setup_;
  ReplicaLayout layout_;
  int position_, replica_;
  Endpoint& endpoint_;
  std::unique_ptr<Backend> backend_;
  MemoryTracker tracker_;
  MemoryTracker staging_;  // offload: a received tensor until its op starts
  std::unique_ptr<StageOffload> offload_;
  int64_t microbatch_size_;
  int64_t sequence_ = 1;
  std::vector<std::unique_ptr<StageState>> stages_;  // indexed by model stage; null when not ours
  std::unique_ptr<Optimizer> optimizer_;  // synchronous schedules; asynchronous ones: per stage
  std::vector<Parameter*> parameters_;
  std::vector<float> allreduce_buffer_;  // this worker's gradients, flat, for the all-reduce
  WorkerResult result_;
  int64_t clock_ = 0;  // model time: this worker's clock
  Op current_{OpKind::Forward, -1, -1};  // the op running (for failure messages)
  int step_ = 0;
};

}  // namespace pipescope::exec
