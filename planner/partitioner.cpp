#include "planner/partitioner.h"

#include <optional>

#include "core/error.h"
#include "planner/dag_partition.h"
#include "planner/model_graph.h"

namespace pipescope {

PartitionKind parse_partition_kind(const std::string& name) {
  if (name == "uniform") return PartitionKind::Uniform;
  if (name == "gpipe") return PartitionKind::GPipe;
  if (name == "optimal" || name == "balanced") return PartitionKind::Optimal;
  throw InputError("--partition: expected uniform, gpipe or optimal (balanced = optimal), got \"" + name + "\"");
}

std::string to_string(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::Uniform: return "uniform";
    case PartitionKind::GPipe: return "gpipe";
    case PartitionKind::Optimal: return "optimal";
  }
  return "optimal";
}

std::vector<int> graph_layer_order(const Profile& listed, const Hardware& hardware, const Schedule& schedule,
                                   const StageModelSpec& spec, const GraphLattices* lattices) {
  if (listed.is_chain()) return {};
  // The search's lattices, built here when not shared (graph_optimal_partition's lazy
  // overload may stop at another window, so it would not give the search's cut).
  std::optional<GraphLattices> built;
  if (!lattices) lattices = &built.emplace(build_graph_lattices(listed.num_layers(), listed.graph_edges(), kSearchMaxIdeals));
  DagPartition best = graph_optimal_partition(*lattices, listed, hardware, schedule, spec);
  bool identity = true;
  for (std::size_t i = 0; i < best.order.size(); ++i) identity = identity && best.order[i] == static_cast<int>(i);
  if (best.value == kInfeasible || identity) return {};
  const int64_t before = optimal_partition(StageModel(listed, hardware, schedule, spec)).value;
  const int64_t after = optimal_partition(StageModel(reorder_layers(listed, best.order), hardware, schedule, spec)).value;
  if (after < before) return std::move(best.order);
  return {};
}

LayerRanges optimal_cut(const StageModel& model) {
  LayerRanges ranges = optimal_partition(model).ranges;
  if (ranges.empty()) ranges = min_memory_partition(model).ranges;  // the least it needs
  return ranges;
}

LayerRanges cut_in_order(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                         const StageModelSpec& spec, PartitionKind kind) {
  const int S = schedule.stages();
  switch (kind) {
    case PartitionKind::Uniform: return uniform_partition(profile.num_layers(), S);
    case PartitionKind::GPipe:
      return gpipe_partition(profile, S, spec.microbatch_size / spec.replicas, schedule.r_ops);
    case PartitionKind::Optimal: break;
  }
  return optimal_cut(StageModel(profile, hardware, schedule, spec));
}

Cut cut_layers(const Profile& profile, const Hardware& hardware, const Schedule& schedule, const StageModelSpec& spec,
               PartitionKind kind, const GraphLattices* lattices) {
  Cut cut;
  if (kind == PartitionKind::Optimal) cut.layer_order = graph_layer_order(profile, hardware, schedule, spec, lattices);
  cut.ranges = cut.layer_order.empty()
                   ? cut_in_order(profile, hardware, schedule, spec, kind)
                   : cut_in_order(reorder_layers(profile, cut.layer_order), hardware, schedule, spec, kind);
  return cut;
}

Profile profile_of(const Profile& profile, const Cut& cut) {
  return cut.layer_order.empty() ? profile : reorder_layers(profile, cut.layer_order);
}

}  // namespace pipescope
