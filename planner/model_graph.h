// The model as a graph: layers are vertices, `edges` (or the chain i -> i+1) are
// arcs. A pipeline cuts the layers in a topological order into contiguous stages;
// the tensor of layer u crosses every cut c with u < c <= last consumer of u, so a
// skip connection spanning several stages is charged once per crossed boundary.
//   std::vector<int> order = topological_order(n, edges, "model.json");  // throws on a cycle
//   std::vector<int64_t> bytes = cut_bytes(profile, 4.0);  // bytes[c] for c in [0, L]
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/profile.h"

namespace pipescope {

// A topological order of `layers` vertices under `edges` (Boost.Graph), ties broken by
// the smallest index first so that an already-sorted list maps to itself. Throws
// InputError "<source>: edges: the model graph has a cycle: 3 -> 5 -> 3" on a cycle.
std::vector<int> topological_order(int layers, const std::vector<std::pair<int, int>>& edges,
                                   const std::string& source);

// The profile with its layers permuted into a topological order and its edges
// renumbered (unchanged when they already are); throws on a cycle.
Profile in_topological_order(const Profile& profile);
// The profile with layer order[i] at position i, its edges renumbered (order must be a
// permutation; the planner's downset partitions use it to make stages contiguous).
Profile reorder_layers(const Profile& profile, const std::vector<int>& order);

// bytes[c] = what crosses the cut before layer c at micro-batch size `batch`:
// the output of every layer u < c that feeds a layer at or after c, once each.
// bytes[0] = bytes[L] = 0. Equals core's boundary_bytes(profile, c, batch) for every c.
std::vector<int64_t> cut_bytes(const Profile& profile, double batch);

}  // namespace pipescope
