// What each model stage of a plan costs on its devices: compute times in integer
// nanoseconds (profile times at the per-replica micro-batch size, divided by the
// slowest replica's speed), the bytes that cross each stage boundary, and the byte
// counts the memory rules of core/op_rules.h charge. The rules themselves (what an op
// charges, frees and costs) live in core/op_rules.h only.
//
// On the executor (exec/runtime/stage_worker.h) a layer's activation_bytes is, by construction,
// what its forward stashes for its backward (its input and the tensors it creates, never
// its output), as measured by the tracking allocator in `pipescope profile --model`.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/hardware.h"
#include "core/op_rules.h"
#include "core/plan.h"
#include "core/profile.h"

namespace pipescope {

struct StageCost {
  int first_layer = 0;
  int end_layer = 0;
  int replicas = 1;
  int64_t forward_ns = 0;
  int64_t backward_ns = 0;
  int64_t backward_input_ns = 0;   // split backward (zero-bubble schedules)
  int64_t backward_weight_ns = 0;
  int64_t recompute_ns = 0;        // one more forward
  int64_t optimizer_ns = 0;        // the optimizer step over its parameters (0: not in the profile)
  // dualpipev: what an overlapped F&B pair whose F is on this stage saves (its layers'
  // fb_overlap_ms; 0: the pair runs back to back). The simulator saves at most min(F, B).
  int64_t fb_overlap_ns = 0;
  int64_t send_bytes = 0;          // activations to stage s+1 (and gradients back), per replica
  int64_t activation_bytes = 0;    // kept for backward per micro-batch, per replica
  int64_t input_bytes = 0;         // what re-materialisation keeps instead
  // What I frees of the stash: activation_bytes - the layers' weight_grad_bytes (0 when
  // the profile has no weight_grad_bytes: the stash lives until W; core/op_rules.h).
  int64_t freed_at_input_bytes = 0;
  // Of activation_bytes, what the profile's loss layer saves (core/profile.h
  // is_loss_layer) when this stage ends with it; 0 otherwise. A runtime whose I keeps the
  // graph still drops the loss's (core/runtime_costs.h, input_pass_frees).
  int64_t loss_bytes = 0;
  // What this stage's first layer saves that the layer before it saves too (the tensor
  // between them: Profile::shared_with_next_bytes of the previous stage's last layer); 0
  // for the first stage. Held once when a runtime passes that tensor itself between two
  // stages on one device (core/runtime_costs.h, local_hop_shares_tensor).
  int64_t shared_with_previous_bytes = 0;
  int64_t parameter_bytes = 0;
  // Per op: stash and transients together (core/op_rules.h). Without the profile's
  // workspace_bytes only the stash: F charges stash_bytes, R activation_bytes.
  // Indexed by whether the schedule re-materialises.
  std::array<StageMemory, 2> memory;
};

struct CostModel {
  std::vector<StageCost> stages;       // per model stage
  std::vector<int> position_device;    // pipeline position -> first hardware device
  std::vector<std::vector<int>> position_devices;  // all replicas' hardware devices
  std::vector<int> stage_position;     // model stage -> pipeline position (plan order)
  double microbatch_size = 1;
  int64_t batch_size = 1;
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  bool split_measured = true;          // false: I and W are taken as halves of backward_ms
  std::string extrapolation_note;      // non-empty: a micro-batch size outside the profile's measured sizes
  bool transients_counted = false;     // the profile has workspace_bytes: StageCost::memory counts them
  bool weight_grad_counted = false;    // the profile has weight_grad_bytes: I frees what W does not need
};

// Bytes that cross the cut after `last_layer_of_stage` (exclusive end `cut`): the
// output of every layer before the cut with an edge to a layer at or after it,
// each counted once.
int64_t boundary_bytes(const Profile& profile, int cut, double batch);

CostModel build_cost_model(const Profile& profile, const Plan& plan, const Hardware& hardware);

inline int64_t ms_to_ns(double ms) { return static_cast<int64_t>(ms * 1e6 + 0.5); }

// Limits that keep every integer the simulator and the executor's tracker compute
// (event times, busy times, bytes held per device) inside int64_t. build_cost_model
// checks them in floating point before converting anything and throws InputError
// naming the stage when a plan exceeds them:
//   a device's static bytes + M x (activation + input bytes of its stages) <= 2^62,
//   every op, transfer and all-reduce of the step together take <= 2^62 ns (146 years).
inline constexpr double kMaxDeviceBytes = 4611686018427387904.0;  // 2^62
inline constexpr double kMaxStepNs = 4611686018427387904.0;       // 2^62

}  // namespace pipescope
