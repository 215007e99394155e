// Group placement and collective costs (llm/collectives.h). The ring formulas are
// core/op_rules.h's (allreduce_ns, allgather_ns); this file picks the link, and the tree
// against the ring for all-reduces that span nodes.
#include "llm/collectives.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope {

namespace {

// Each group's name in an order string, by Group's value (to_string's too).
constexpr std::array<std::string_view, 5> kGroupNames = {"tp", "cp", "ep", "dp", "pp"};

int size_of(const ParallelLayout& l, Group g) {
  switch (g) {
    case Group::Tp: return l.t;
    case Group::Cp: return l.cp;
    case Group::Ep: return l.ep;
    case Group::Dp: return l.d;
    case Group::Pp: return l.p;
  }
  return 1;
}

Group group_named(std::string_view name, const std::string& order) {
  for (std::size_t g = 0; g < kGroupNames.size(); ++g) {
    if (kGroupNames[g] == name) return static_cast<Group>(g);
  }
  throw InputError("order: \"" + order + "\": unknown group \"" + std::string(name) +
                   "\" (expected a permutation of tp, cp, ep, dp, pp)");
}

// The stride of `group`: the sizes of the groups before it in the order. Dense groups
// (RankGenerator with ep = 1) skip ep; ep's stride is the expert RankGenerator's
// (tp = t, cp = 1: its ranks come out of cp x dp). The layout search asks this for every
// candidate, so the order is split in place (no stream, no allocation).
int stride_of(const ParallelLayout& l, Group group) {
  const std::string_view order = l.order;
  std::array<int, 5> seen{};
  int64_t stride = 1, found = -1;  // a product of degrees: int64 whatever the caller has bounded
  for (std::size_t from = 0; from <= order.size();) {
    const std::size_t dash = std::min(order.find('-', from), order.size());
    const std::string_view name = order.substr(from, dash - from);
    from = dash + 1;
    const Group g = group_named(name, l.order);
    if (++seen[static_cast<std::size_t>(g)] > 1) {
      throw InputError("order: \"" + l.order + "\": group \"" + std::string(name) + "\" named twice");
    }
    if (g == group) found = stride;
    const bool skipped = group == Group::Ep ? g == Group::Cp : g == Group::Ep;
    if (!skipped) {
      stride *= g == Group::Dp && group == Group::Ep ? int64_t{l.d} * l.cp / std::max(1, l.ep) : size_of(l, g);
    }
  }
  for (int n : seen) {
    if (n != 1) throw InputError("order: \"" + l.order + "\": expected a permutation of tp, cp, ep, dp, pp");
  }
  if (found > std::numeric_limits<int>::max()) {
    throw InputError("order: \"" + l.order + "\": a stride of " + std::to_string(found) + " ranks is beyond 2^31 - 1");
  }
  return static_cast<int>(found);
}

}  // namespace

void check_rank_order(const ParallelLayout& layout) { stride_of(layout, Group::Tp); }

namespace {

// NCCL's tuning model gives a tree 0.9 of the bus bandwidth of a ring on the same channels.
constexpr double kTreeBandwidthShare = 0.9;

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

Link scaled(const Link& link, double factor, double bandwidth_cap) {
  Link out = link;
  out.bandwidth_gb_per_s = std::min(link.bandwidth_gb_per_s * factor, bandwidth_cap);
  return out;
}

}  // namespace

std::string to_string(Group group) {
  const auto i = static_cast<std::size_t>(group);
  return std::string(i < kGroupNames.size() ? kGroupNames[i] : kGroupNames[0]);
}

GroupPlacement group_placement(const ParallelLayout& layout, Group group, int gpus_per_node) {
  GroupPlacement g;
  g.size = size_of(layout, group);
  g.stride = stride_of(layout, group);
  g.per_node = g.stride >= gpus_per_node ? 1 : std::min(g.size, std::max(1, gpus_per_node / g.stride));
  g.crosses_nodes = g.per_node < g.size;
  return g;
}

namespace {

GroupLink link_of(const GpuModel& gpu, const GroupPlacement& where);

}  // namespace

GroupLink group_link(const GpuModel& gpu, const ParallelLayout& layout, Group group) {
  return link_of(gpu, group_placement(layout, group, gpu.gpus_per_node()));
}

GroupLink gradient_group_link(const GpuModel& gpu, const ParallelLayout& layout) {
  if (layout.cp == 1) return group_link(gpu, layout, Group::Dp);
  const int per_node_gpus = gpu.gpus_per_node();
  GroupPlacement g;
  g.size = layout.d * layout.cp;
  g.stride = std::min(stride_of(layout, Group::Dp), stride_of(layout, Group::Cp));
  g.per_node = g.stride >= per_node_gpus ? 1 : std::min(g.size, std::max(1, per_node_gpus / g.stride));
  g.crosses_nodes = g.per_node < g.size;
  return link_of(gpu, g);
}

namespace {

GroupLink link_of(const GpuModel& gpu, const GroupPlacement& where) {
  GroupLink g;
  g.size = where.size;
  g.stride = where.stride;
  g.per_node = where.per_node;
  g.crosses_nodes = where.crosses_nodes;
  g.nodes = (g.size + g.per_node - 1) / g.per_node;
  g.in_node = gpu.node.link;
  const double eff = gpu.collective_efficiency;
  const Link& nvlink = gpu.node.link;
  const double in_node = gpu.collective_gb_per_s > 0 ? gpu.collective_gb_per_s : nvlink.bandwidth_gb_per_s;
  if (!g.crosses_nodes) {
    Link ring = nvlink;
    ring.bandwidth_gb_per_s = in_node;
    g.ring = scaled(ring, eff, in_node * eff);
    g.p2p = nvlink;
  } else {
    const Link& port = gpu.node.inter_node;
    g.ring = scaled(port, g.per_node * eff, in_node * eff);
    g.p2p = port;
  }
  return g;
}

}  // namespace

std::string to_string(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::Tree ? "tree" : "ring";
}

namespace {

// A ring's latency as NCCL's tuning model counts it (src/graph/tuning.cc, ncclTopoTuneModel:
// nInterSteps = nNodes - 1 per pass, 2 (nNodes - 1) for an all-reduce): of its steps, those
// a pass needs to cross the nodes pay the network's latency, the rest NVLink's.
int64_t ring_latency_ns(const GroupLink& g, int64_t steps, int passes) {
  if (!g.crosses_nodes) return steps * g.ring.latency_ns();
  const int64_t inter = std::min<int64_t>(steps, static_cast<int64_t>(passes) * (g.nodes - 1));
  return (steps - inter) * g.in_node.latency_ns() + inter * g.ring.latency_ns();
}

}  // namespace

int64_t ring_allreduce_group_ns(const GroupLink& g, int64_t bytes) {
  if (g.size < 2) return 0;
  return g.ring.busy_ns(ring_allreduce_bytes(bytes, g.size)) + ring_latency_ns(g, ring_allreduce_hops(g.size), 2);
}

int64_t tree_allreduce_group_ns(const GroupLink& g, int64_t bytes) {
  if (!g.crosses_nodes || g.size < 2) return -1;
  Link tree = g.ring;
  tree.bandwidth_gb_per_s *= kTreeBandwidthShare;
  const int64_t hops = static_cast<int64_t>(g.per_node - 1) * g.in_node.latency_ns() +
                       static_cast<int64_t>(ceil_log2(g.nodes)) * g.ring.latency_ns();
  return tree.busy_ns(2 * bytes) + 2 * hops;
}

CollectiveAlgorithm allreduce_algorithm(const GroupLink& g, int64_t bytes) {
  const int64_t tree = tree_allreduce_group_ns(g, bytes);
  return tree >= 0 && tree < ring_allreduce_group_ns(g, bytes) ? CollectiveAlgorithm::Tree : CollectiveAlgorithm::Ring;
}

int64_t allreduce_group_ns(const GroupLink& g, int64_t bytes) {
  const int64_t ring = ring_allreduce_group_ns(g, bytes), tree = tree_allreduce_group_ns(g, bytes);
  return tree >= 0 ? std::min(ring, tree) : ring;
}

int64_t allgather_group_ns(const GroupLink& g, int64_t bytes) {
  if (g.size < 2) return 0;
  return g.ring.busy_ns(ring_allgather_bytes(bytes, g.size)) + ring_latency_ns(g, ring_allgather_hops(g.size), 1);
}

int64_t reduce_scatter_group_ns(const GroupLink& g, int64_t bytes) { return allgather_group_ns(g, bytes); }

int64_t alltoall_group_ns(const GroupLink& g, int64_t bytes) { return allgather_group_ns(g, bytes); }

int64_t p2p_group_ns(const GroupLink& g, int64_t bytes) {
  if (g.size < 2 || bytes <= 0) return 0;
  return g.p2p.busy_ns(bytes) + g.p2p.latency_ns();
}

Hardware pipeline_hardware(const GpuModel& gpu, const ParallelLayout& layout) {
  const GroupLink pp = group_link(gpu, layout, Group::Pp);
  Hardware h;
  h.name = gpu.node.name + " (pipeline ranks)";
  h.devices = layout.p;
  h.memory_bytes = 0;  // time only: llm/ leaves memory to its memory model
  h.link = gpu.node.link;
  h.devices_per_node = pp.crosses_nodes ? pp.per_node : 0;
  h.inter_node = gpu.node.inter_node;
  h.p2p = P2p::Blocking;  // Megatron-LM waits on its batched isend/irecv
  h.source = gpu.node.source;
  return h;
}

}  // namespace pipescope
