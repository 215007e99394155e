// One candidate's evaluation as a short pipeline of named steps, each a function a
// test can call; the search (search.cpp) runs evaluate_candidate for every candidate:
//   place_by_speed -> order_layers -> first_cut -> simulate -> balance_device_sums ->
//   recut_for_memory -> replicate_positions -> order_zero_bubble -> consider_offload ->
//   record_report
// Invariant: a step that changes the cut keeps its cut only when its simulated step is
// better (as each step says), and leaves c.plan holding the cut kept; order and cut are
// partitioner.h's, the path `simulate` takes through make_plan.
//   CandidateEvaluation e(q, listed, c);
//   place_by_speed(e); order_layers(e, lattices); first_cut(e); e.report = e.run(e.ranges);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/hardware.h"
#include "core/profile.h"
#include "core/report.h"
#include "core/schedule.h"
#include "planner/partitioner.h"
#include "planner/search.h"
#include "planner/stage_model.h"

namespace pipescope {

struct GraphLattices;

// What the steps share for candidate c: its plan's shape, the schedule it is cut with
// (zb-auto: the unit-time order until order_zero_bubble), the cut so far and its report.
struct CandidateEvaluation {
  CandidateEvaluation(const SearchRequest& request, const Profile& listed, Candidate& candidate);

  const SearchRequest& q;
  const Profile& listed;       // the search's profile, in topological order
  Candidate& c;
  PartitionKind kind;
  Schedule schedule;
  StageModelSpec spec;
  Hardware placed;             // the hardware as the partitioners see c's placement
  Profile reordered;           // listed in c.layer_order, when that is not empty
  std::optional<StageModel> model;  // of profile() on `placed`, from first_cut on
  std::vector<int> replicas;   // per position
  LayerRanges ranges;          // the cut kept so far
  StepReport report;           // its simulation

  const Profile& profile() const { return c.layer_order.empty() ? listed : reordered; }
  bool optimal() const { return kind == PartitionKind::Optimal; }
  void assign(const LayerRanges& cut);      // c.plan's stages: cut, placed with `replicas`
  StepReport run(const LayerRanges& cut);   // assign, then simulate (no timeline)
  // `cut` as a runtime can run it: a profile's loss layer kept with the layer that
  // produces it (planner/partition.h keep_loss_with_producer). Every cut kept goes through it.
  LayerRanges runnable(LayerRanges cut) const;
};

// Placement: heterogeneous devices (optimal, K >= 2): the device order whose optimal
// contiguous cut has the fastest slowest stage (ties keep the listed order).
void place_by_speed(CandidateEvaluation& e);
// Order: a graph profile's downset order (graph_layer_order), kept in c.layer_order.
void order_layers(CandidateEvaluation& e, const GraphLattices* lattices);
// Cut: cut_in_order on profile(); builds e.model and sets e.ranges.
void first_cut(CandidateEvaluation& e);
// Several stages per device: balance_devices' cut, kept when its simulated step is
// shorter and it fits whenever the first cut fits.
void balance_device_sums(CandidateEvaluation& e);
// Several stages per device, the cut does not fit: the least-memory cut, then the
// memory-aware cuts (interleaved_fit), each kept when better. Sets c.slowest_stage_ns.
void recut_for_memory(CandidateEvaluation& e);
// r >= 2, one chunk: a different replica count per position, kept when it fits and
// its simulated step is faster.
void replicate_positions(CandidateEvaluation& e);
// zb-auto: the order searched on the final cut's costs, simulated.
void order_zero_bubble(CandidateEvaluation& e);
// Memory binds (the report does not fit), offload none, a host_link: the final cut again
// with selective and with all offload (the simulator's rule, sim/offload.h); the plan
// takes selective when it fits (it delays nothing), else all when it fits, else none.
// Every run is kept in c.offload_trials for the explanation.
void consider_offload(CandidateEvaluation& e);
// The report into c: ranked step, throughput, bubble, peaks, fit; samples under jitter.
void record_report(CandidateEvaluation& e);
// zb-auto's lower bound of its step over the cut and, when replicated, the per-position
// replicated cut (what Depth::BoundOnly evaluates instead of searching the order).
int64_t zero_bubble_bound_ns(CandidateEvaluation& e);

// How much of a zb-auto candidate to evaluate: all of it, or its cut and a lower bound
// of its step only (the order search is what costs).
enum class Depth { Full, BoundOnly };

// The steps above, in order, for one candidate with c.max_inflight set.
void evaluate_candidate(const SearchRequest& q, const Profile& listed, const GraphLattices* lattices, Candidate& c,
                        Depth depth = Depth::Full);

}  // namespace pipescope
