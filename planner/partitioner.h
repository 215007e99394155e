// The one partition path: `plan` (every candidate), `simulate`, `run` and the GUI
// (through make_plan) cut a profile's layers here, so that a partitioner's name means
// one cut everywhere. Invariant: a Cut's ranges index the profile's layers permuted
// into `layer_order` (empty: as listed); only the optimal partitioner on a graph
// profile (one with `edges`) reorders, and only when the contiguous optimum of the new
// order beats that of the listed one.
//   const Cut cut = cut_layers(profile, hardware, schedule, spec, PartitionKind::Optimal);
//   const Profile cut_profile = profile_of(profile, cut);   // what cut.ranges index
#pragma once

#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "planner/partition.h"
#include "planner/stage_model.h"

namespace pipescope {

struct GraphLattices;

enum class PartitionKind { Uniform, GPipe, Optimal };
// uniform | gpipe | optimal, and balanced, optimal's old name (the one place the alias
// lives); throws InputError naming --partition otherwise.
PartitionKind parse_partition_kind(const std::string& name);
std::string to_string(PartitionKind kind);

struct Cut {
  LayerRanges ranges;           // stages as [first, end) of the layers in layer_order
  std::vector<int> layer_order; // empty: the profile's listed order
};

// Step "order": the layer order in which the downset partitioner's stages are
// contiguous, when the contiguous optimum of that order beats the listed order's
// (StageModel's rules on both sides, so per-layer rounding cannot tip it); empty for a
// chain or when nothing is gained. `lattices`: the graph's downset lattices, shared by
// the search's candidates; null: built here with the search's cap (kSearchMaxIdeals),
// so that a single plan gets the search's cut.
std::vector<int> graph_layer_order(const Profile& listed, const Hardware& hardware, const Schedule& schedule,
                                   const StageModelSpec& spec, const GraphLattices* lattices = nullptr);

// Step "cut" for optimal: the contiguous optimum of the model's stage times over the
// cuts whose memory fits; when none fits, the cut that needs the least memory (so the
// caller can still simulate the plan and report by how much it misses).
LayerRanges optimal_cut(const StageModel& model);

// Step "cut" in the profile's own order: uniform, gpipe (at the per-replica micro-batch
// size, with the schedule's re-materialisation) or optimal_cut.
LayerRanges cut_in_order(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                         const StageModelSpec& spec, PartitionKind kind);

// order, then cut: the whole path for one plan shape. `profile` lists its layers in a
// topological order; `schedule` fixes K, M, v and re-materialisation.
Cut cut_layers(const Profile& profile, const Hardware& hardware, const Schedule& schedule, const StageModelSpec& spec,
               PartitionKind kind, const GraphLattices* lattices = nullptr);

// The profile a cut's ranges index: `profile` itself, or its layers in cut.layer_order.
Profile profile_of(const Profile& profile, const Cut& cut);

}  // namespace pipescope
