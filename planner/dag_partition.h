// The exact min-max partition of a layer *graph* (not of one layer order): stages are
// the differences of a chain of downsets {} = D0 < D1 < ... < DS = all layers, so every
// edge goes to the same or a later stage. Every tensor is charged at each cut it
// crosses (a skip edge once per crossed boundary), as for contiguous cuts.
//   DagStageCosts costs(profile, hardware, schedule, spec, model);
//   DagPartition best = dag_optimal_partition(costs, 1 << 20);
//   Profile reordered = reorder_layers(profile, best.order);  // stages contiguous again
// Invariant: `order` lists each stage's layers together (stage by stage, each stage in
// the profile's order), so it is a topological order and `ranges` cut it contiguously.
// The search is exact whenever the downset lattice has at most the cap of ideals
// (`exact`); otherwise the result is the contiguous optimum of the profile's own order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/hardware.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "planner/ideal_lattice.h"
#include "planner/model_graph.h"  // reorder_layers
#include "planner/partition.h"
#include "planner/stage_model.h"

namespace pipescope {

// Stage costs of StageModel's rules (time: compute / slowest replica speed + the ring
// all-reduce over M + transfers across the stage's two cuts; memory: static + the
// schedule's (stashed, re-materialised) terms), per layer so that every sum over a
// downset is exact in integers. Differs from StageModel only by per-layer rounding (ns).
class DagStageCosts {
 public:
  // `profile` lists layers in a topological order (edges go forward).
  DagStageCosts(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                const StageModelSpec& spec, const StageModel& model);

  int layers() const { return L_; }
  int stages() const { return S_; }
  const std::vector<std::pair<int, int>>& edges() const { return edges_; }
  int64_t memory_limit() const { return constrain_ ? limit_ : 0; }

  // Stage s holds `stage` (the layers of D \ D'): the brute-force reference. `member`
  // marks D' (before) and D (through) per layer.
  int64_t time_ns(int s, const std::vector<uint8_t>& before, const std::vector<uint8_t>& through) const;
  int64_t memory_bytes(int s, const std::vector<uint8_t>& before, const std::vector<uint8_t>& through) const;
  int64_t cut_bytes(const std::vector<uint8_t>& through) const;

  // Per-layer pieces the lattice search sums (public for it; stage s).
  int64_t compute_ns(int s, int layer) const;
  int64_t static_bytes(int layer) const { return static_[layer]; }
  int64_t activation_bytes(int layer) const { return activation_[layer]; }
  int64_t output_bytes(int layer) const { return has_consumer_[layer] ? output_[layer] : 0; }
  int64_t stage_constant_ns(int s) const { return allreduce_latency_ns_[s]; }
  int64_t send_next_ns(int s, int64_t bytes) const;  // 0 when s + 1 shares s's device or s is last
  int64_t receive_prev_ns(int s, int64_t bytes) const;
  bool r_ops() const { return r_ops_; }  // the schedule's R ops (Schedule::r_ops)
  // Every stage time is a multiple of this (the gcd of layer times when links are free
  // and all-reduces absent; else 1): a lower bound rounds up to it.
  int64_t granularity() const;
  const std::vector<std::pair<int64_t, int64_t>>& terms(int s) const { return terms_[s]; }

 private:
  int L_, S_;
  bool r_ops_, constrain_;  // r_ops_: the schedule holds R ops (Schedule::r_ops)
  int64_t limit_;
  std::vector<std::pair<int, int>> edges_;
  std::vector<double> forward_ms_, backward_ms_;
  std::vector<int64_t> static_, activation_, output_;
  std::vector<int64_t> allreduce_busy_;  // per stage x layer: its gradients' share over M
  std::vector<uint8_t> has_consumer_;
  std::vector<double> speed_;
  std::vector<int64_t> allreduce_latency_ns_;
  std::vector<Link> next_link_, prev_link_;
  std::vector<uint8_t> sends_next_, receives_prev_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> terms_;
};

inline constexpr std::size_t kDefaultMaxIdeals = std::size_t{1} << 18;
inline constexpr std::size_t kWindowIdeals = std::size_t{1} << 15;
inline constexpr std::size_t kSearchMaxIdeals = std::size_t{1} << 15;  // the plan search's cap

struct DagPartition {
  int64_t value = kInfeasible;  // the slowest stage's time (ns); kInfeasible: nothing fits
  std::vector<int> order;       // layer indices, stage by stage
  LayerRanges ranges;           // stages as [first, end) of `order`
  bool exact = false;           // proved optimal over all downset chains
  int64_t lower_bound = 0;      // no chain's slowest stage is faster (ns)
  int ideals = 0;               // downsets searched (0: over the cap)
  int window = 0;               // the window of the last lattice searched (0: all downsets)
};

// Exact min-max over the lattice's downset chains whose stages fit in memory, by
// bisection on the slowest stage's time with a sweep of the lattice per stage
// (docs/planner.md). `exact` when the lattice holds every downset or the value meets
// the lower bound (layer times over stages, rounded up to the granularity).
// `known`, when given, is a chain already found (its value bounds the bisection; it is
// returned when the lattice holds nothing better).
DagPartition dag_optimal_partition(const DagStageCosts& costs, const IdealLattice& lattice,
                                   const DagPartition* known = nullptr);

// The planner's entry: the lattice search over windows of downsets near the listed
// order's prefixes (w = 8, 16, 32, ... while at most kWindowIdeals), stopping when the
// lower bound is met; then over every downset when there are at most `max_ideals`;
// else the best found (exact = false). `profile` lists its layers in a topological order.
DagPartition graph_optimal_partition(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                                     const StageModelSpec& spec, std::size_t max_ideals = kDefaultMaxIdeals);

// The lattices graph_optimal_partition walks, built once per graph (the search shares
// them between candidates): windows w = 8, 16, ... while at most kWindowIdeals ideals,
// then every downset when at most `max_ideals`.
struct GraphLattices {
  std::vector<std::pair<int, IdealLattice>> windows;  // (window, lattice); 0 = every downset
};
GraphLattices build_graph_lattices(int layers, const std::vector<std::pair<int, int>>& edges,
                                   std::size_t max_ideals = kDefaultMaxIdeals);
DagPartition graph_optimal_partition(const GraphLattices& lattices, const Profile& profile, const Hardware& hardware,
                                     const Schedule& schedule, const StageModelSpec& spec);

// The brute force the property test holds it to: every monotone labelling of the
// layers with stage numbers (S^L of them; small graphs only).
int64_t brute_force_dag_optimum(const DagStageCosts& costs);

}  // namespace pipescope
