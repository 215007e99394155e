// What a candidate stage [i, j) would cost at pipeline position s of one plan, from
// prefix sums, in O(#memory terms): the partitioners' view of the simulator.
//   time_ns(s, i, j)  = forward + backward (+ recompute) at the per-replica micro-batch
//                       size, divided by the slowest replica's speed, + sending the
//                       activations across cut j and the gradients across cut i
//                       (latency + bytes / bandwidth each), + the ring all-reduce of
//                       the stage's gradients divided over the M micro-batches.
//   memory_bytes(...) = the simulator's peak for the stage's device, byte for byte:
//                       static (parameters x (2 + optimizer factor)) + the largest
//                       a x stash + c x activations over the schedule's op order, where
//                       (a, c) counts stashed and re-materialised micro-batches held at
//                       each op start (core/cost_model.h's rules), less what I freed
//                       (weight_grad_bytes) for those past their I; with the profile's
//                       workspace_bytes, the held F / R / I bytes and the starting op's
//                       transients of core/op_rules.h's stage_memory. What I frees is
//                       what the runtime's I frees (StageModelSpec::runtime; the
//                       simulator's input_pass_freed_bytes). Exact for one stage per
//                       device; under interleaving it is the stage's own share only, so
//                       the optimal partition ignores memory there and the search's
//                       simulation decides what fits.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/hardware.h"
#include "core/op_rules.h"
#include "core/profile.h"
#include "core/runtime_costs.h"
#include "core/schedule.h"
#include "planner/partition.h"

namespace pipescope {

struct StageModelSpec {
  double microbatch_size = 1;   // samples per micro-batch, before replication
  int replicas = 1;             // r: every pipeline position runs on r devices
  double optimizer_state_factor = 2.0;
  bool constrain_memory = true; // false: every stage fits (time-only partition)
  // The runtime the plan runs on (null: the profile's rules): its I may keep the stash
  // until W (torch 2.13) or run nothing on the first stage, so frees less. Must outlive
  // the StageModel.
  const RuntimeCosts* runtime = nullptr;
};

class StageModel {
 public:
  // `profile` must list its layers in a topological order; `schedule` fixes K, M, v and
  // re-materialisation. Position p uses hardware devices [p r, (p + 1) r).
  StageModel(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
             const StageModelSpec& spec);

  int layers() const { return L_; }
  int positions() const { return K_; }
  int stage_position(int s) const { return stage_device_[s]; }  // the schedule's stage -> position
  int stages() const { return S_; }
  int64_t memory_limit() const { return limit_; }
  bool memory_exact() const { return S_ == K_; }
  bool constrains_memory() const { return constrain_ && limit_ > 0; }

  int64_t compute_ns(int s, int i, int j) const;
  int64_t allreduce_ns(int s, int i, int j) const;  // one step's ring all-reduce (0 if r = 1)
  int64_t time_ns(int s, int i, int j) const;
  int64_t memory_bytes(int s, int i, int j) const;
  // Lower bounds that never decrease as the stage grows leftwards (partition.h).
  int64_t time_bound_ns(int s, int i, int j) const;
  int64_t memory_bound_bytes(int s, int i, int j) const;
  bool fits(int s, int i, int j) const {
    return !constrain_ || limit_ == 0 || memory_bytes(s, i, j) <= limit_;
  }

  // The busiest device's time per micro-batch (its chunks summed under interleaving)
  // and each stage's memory, for a given partition.
  int64_t bottleneck_ns(const LayerRanges& ranges) const;
  std::vector<int64_t> stage_memory(const LayerRanges& ranges) const;
  // Stage s's (stashed, re-materialised) micro-batch counts at its memory peaks.
  const std::vector<std::pair<int64_t, int64_t>>& stage_memory_terms(int s) const { return terms_[s]; }

 private:
  int L_, S_, K_, M_, chunks_, replicas_;
  bool r_ops_, constrain_;  // r_ops_: the schedule holds R ops (Schedule::r_ops)
  int64_t limit_;
  double optimizer_factor_;
  std::vector<double> forward_ms_, backward_ms_;  // prefix sums at the per-replica size
  // Prefix sums over layers of activation_bytes and of what I frees (activation -
  // weight_grad_bytes), each less the layer's shared_with_next_bytes (shared_): a stage
  // [i, j) adds back its last layer's, which it keeps (Profile::stash_bytes).
  std::vector<int64_t> activation_, parameters_, cut_;
  std::vector<int64_t> freed_;
  std::vector<int64_t> shared_;
  int64_t stash(int i, int j) const { return activation_[j] - activation_[i] + shared_[j - 1]; }
  int64_t freed(int i, int j) const { return std::max<int64_t>(0, freed_[j] - freed_[i] + shared_[j - 1]); }
  // What stage s = [i, j)'s I frees under the runtime (sim/simulator.h input_pass_freed_bytes).
  int64_t input_freed(int s, int i, int j) const;
  const RuntimeCosts* runtime_;  // StageModelSpec::runtime (null: the profile's rules)
  int64_t loss_bytes_ = 0;       // Profile::loss_bytes
  std::vector<double> speed_;                     // per model stage
  std::vector<int> stage_device_;                 // the schedule's stage -> position map
  // Transfer time (latency + bytes / bandwidth) of each cut's tensors over each distinct
  // link; next_/prev_ name a stage's table, -1 when the neighbour shares its device.
  std::vector<std::vector<int64_t>> transfer_ns_;
  std::vector<int> next_table_, prev_table_;
  std::vector<int64_t> bound_factor_;             // per stage: max over terms of (a [no recompute] + c)
  std::vector<Link> ring_link_;                   // per model stage: its replicas' ring
  std::vector<std::vector<std::pair<int64_t, int64_t>>> terms_;  // per model stage: (a, c)
  // Under split backward with weight_grad_bytes: per model stage, (a, c, past I) triples
  // (stage_model.cpp's release_terms); empty otherwise.
  std::vector<std::vector<std::array<int64_t, 3>>> release_terms_;
  // With the profile's workspace_bytes: each layer's bytes, and per model stage the
  // (F, R, I held counts, op kind) at each op start (stage_model.cpp's op_start_terms).
  std::vector<LayerBytes> layer_bytes_;
  std::vector<std::vector<std::array<int64_t, 4>>> op_terms_;
  int64_t transient_peak(int s, int i, int j) const;
};

// The exact optimum of time_ns over stages whose memory fits; empty when none fits.
MinMaxResult optimal_partition(const StageModel& model);
// The partition with the smallest largest stage memory (what a candidate needs at least).
MinMaxResult min_memory_partition(const StageModel& model);
// Several stages per device (interleaved, V-shapes): optimal_partition balances each
// stage, but a device runs the sum of its stages. Moves one layer at a time across a
// stage boundary while that lowers the devices' times (largest first, compared as a
// sorted list, so that ties make progress) and both stages still fit; returns `ranges`
// itself with one stage per device. Deterministic; at most 8 L S moves.
LayerRanges balance_devices(const StageModel& model, LayerRanges ranges);

}  // namespace pipescope
