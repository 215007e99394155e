// The discrete-event pipeline simulator: replays a Schedule with a CostModel on a
// Hardware description and predicts one training step. Each device walks its op list
// in order; an op starts when the device is free and its input (activation from the
// previous stage, or gradient from the next) has arrived. Transfers take
// latency + bytes / bandwidth and serialise on each directed link; they overlap
// compute (or block the devices: SimOptions::p2p). Time is integer nanoseconds and never
// goes backwards.
//   Schedule s = make_1f1b(4, 32);
//   StepReport p = simulate(s, costs, hardware);
#pragma once

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/offload.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/runtime_costs.h"
#include "core/schedule.h"

#include <cstdint>
#include <span>
#include <vector>

namespace pipescope {

// P2p (how transfers meet compute): core/plan.h.

// Per-op arrays below are indexed by the flat op index: device d's op i is
// op_offset(schedule, d) + i (devices in order, each device's ops in its order).
// Every field has a default, so a designated initialiser may name any subset.
struct SimOptions {
  bool record_timeline = true;  // events and memory samples (off for searches)
  std::string model{};          // copied into the report
  // Optional: each op's duration in ns, replacing op_duration_ns (the step-time
  // sampler's seam, sim/distribution.h). Empty, or one entry per op.
  std::span<const int64_t> op_durations_ns{};
  // Optional: a factor on the transfer each op sends (latency and busy time). Empty, or
  // one entry per op.
  std::span<const double> send_factors{};
  // Optional output: filled with each op's start time in ns (one entry per op) ...
  std::vector<int64_t>* op_starts_ns = nullptr;
  // ... and its end (start + duration).
  std::vector<int64_t>* op_ends_ns = nullptr;
  // A flushed schedule's step repeated `steps` times, back to back (a flush separates
  // them: each starts when the last ended); the report gets each step's end and the
  // timeline every step. Asynchronous schedules hold their steps in their op lists
  // (Schedule::steps) and ignore this.
  int steps = 1;
  // Where a flushed step ends (core/plan.h): synchronized, as above; post-validation,
  // each device steps its optimizer after its own last op of the step and runs on into
  // the next step's ops (the `steps` steps simulated as one op list, micro-batch
  // n of step t numbered t M + n in the timeline). Asynchronous schedules ignore it.
  OptimizerStep optimizer_step = OptimizerStep::Synchronized;
  P2p p2p = P2p::Overlapped;
  // Activation offload to host memory (core/offload.h; the rules: sim/offload.h). Active
  // only with the hardware's host_link (else InputError naming --offload).
  Offload offload{};
  // What the runtime spends around the ops (core/runtime_costs.h), charged on each
  // position's track as `runtime` events; null (or all zero): the ops alone. Its p2p,
  // when set, is the caller's to apply (SimOptions::p2p above is what runs).
  const RuntimeCosts* runtime = nullptr;
};

// What the input pass I of model stage `stage` frees of its stash under `runtime`
// (core/runtime_costs.h's rule on the stage's freed_at_input_bytes and loss_bytes).
int64_t input_pass_freed_bytes(const StageCost& cost, int stage, const RuntimeCosts* runtime);

// Where device d's ops begin in the per-op arrays of SimOptions.
std::size_t op_offset(const Schedule& schedule, int device);

// `schedule` must be valid (validate_schedule) and have one model stage per cost
// entry; throws InputError otherwise.
StepReport simulate(const Schedule& schedule, const CostModel& costs, const Hardware& hardware,
                    const SimOptions& options = {});

}  // namespace pipescope
