// Which link each parallel group's collectives really use, and what they cost on it.
// Invariant: ranks are laid out in ParallelLayout::order (Megatron's "tp-cp-ep-dp-pp":
// the first group varies fastest), as Megatron-Core's RankGenerator numbers them, so a
// group's stride is the product of the sizes of the groups before it and a node of G
// GPUs holds min(size, G / stride) of its ranks. ep is carved out of cp x dp as
// Megatron's expert RankGenerator does (tp = expert tp = t, cp = 1, dp = cp d / ep):
// the dense groups see ep as size 1, and ep's own stride counts t but not cp. A group inside
// one node rings over NVLink; one that spans nodes rings through the per-GPU network
// ports of the k ranks it has per node (NCCL runs one channel per rail): bandwidth
// min(NVLink, k x port). Collectives run at collective_efficiency of that bandwidth;
// point-to-point sends at the raw link. A ring's latency is NCCL's tuning model's: the
// steps one pass needs to cross the nodes (nodes - 1) pay the network's latency, the rest
// NVLink's. An all-reduce over a group that spans nodes runs
// as NCCL's tuner would pick, the faster of its ring and its (double binary) tree:
//   ring  2 (n-1)/n of the bytes, 2 (n-1) latencies (2 (nodes-1) of them the network's)
//   tree  2 x the bytes at 0.9 of the ring's bandwidth (NCCL's tuning model discounts its
//         trees' bus bandwidth by a tenth, src/graph/tuning.cc), up and down a chain of the
//         node's k ranks over NVLink and a binary tree of the N nodes:
//         2 ((k - 1) NVLink latencies + ceil(log2 N) network latencies).
// Inside one node, and for all-gather, reduce-scatter and all-to-all, only the ring (NCCL
// runs trees for all-reduce alone; NVLink SHARP (NVLS) and CollNet are not modelled).
//   GroupLink tp = group_link(gpu, layout, Group::Tp);
//   int64_t ns = allreduce_group_ns(tp, bytes);
#pragma once

#include <cstdint>
#include <string>

#include "core/hardware.h"
#include "llm/gpu_model.h"
#include "llm/layout.h"

namespace pipescope {

enum class Group : uint8_t { Tp, Cp, Ep, Dp, Pp };
std::string to_string(Group group);  // "tp", "cp", "ep", "dp", "pp"

// Where a group's ranks sit on nodes of `gpus_per_node` GPUs. The group holding global
// rank 0 is ranks 0, stride, 2 stride, ... (RankGenerator.get_ranks(name)[0]).
struct GroupPlacement {
  int size = 1;
  int stride = 1;
  int per_node = 1;         // the group's ranks on one node
  bool crosses_nodes = false;
};
// Throws InputError naming "order" when it is not a permutation of tp, cp, ep, dp, pp.
GroupPlacement group_placement(const ParallelLayout& layout, Group group, int gpus_per_node);

struct GroupLink {
  int size = 1;
  int stride = 1;          // rank distance between neighbours of the group
  int per_node = 1;        // the group's ranks on one node
  bool crosses_nodes = false;
  int nodes = 1;           // nodes the group spans: ceil(size / per_node)
  Link ring;               // what a ring collective over the group runs at
  Link in_node;            // one hop inside a node (NVLink): the tree's chain
  Link p2p;                // what one send between neighbours runs at (pp)
};

// Throws InputError naming "order" when it is not a permutation of tp, cp, ep, dp, pp
// (validate_layout's check of every layout's order).
void check_rank_order(const ParallelLayout& layout);

// Throws InputError naming "order" when it is not a permutation of tp, cp, ep, dp, pp.
GroupLink group_link(const GpuModel& gpu, const ParallelLayout& layout, Group group);
// The d x cp ranks a dense gradient is reduced over and the optimizer state and ZeRO-2 / 3
// shards are spread over: the context-parallel ranks hold the same weights (Megatron-Core's
// data-parallel group with context parallel; torchtitan's dp_shard x cp FSDP mesh). Its
// stride is the smaller of dp's and cp's; d x cp = d when cp = 1.
GroupLink gradient_group_link(const GpuModel& gpu, const ParallelLayout& layout);

enum class CollectiveAlgorithm : uint8_t { Ring, Tree };
std::string to_string(CollectiveAlgorithm algorithm);  // "ring", "tree"

// Collectives over the group of `bytes` (the whole buffer, as NCCL counts it).
int64_t ring_allreduce_group_ns(const GroupLink& g, int64_t bytes);
// -1 when the group does not span nodes (no tree is run).
int64_t tree_allreduce_group_ns(const GroupLink& g, int64_t bytes);
// The faster of the two (the ring on a tie, and inside a node).
CollectiveAlgorithm allreduce_algorithm(const GroupLink& g, int64_t bytes);
int64_t allreduce_group_ns(const GroupLink& g, int64_t bytes);
int64_t allgather_group_ns(const GroupLink& g, int64_t bytes);       // also reduce-scatter
int64_t reduce_scatter_group_ns(const GroupLink& g, int64_t bytes);
// All-to-all of `bytes` per rank: (n - 1) / n of it leaves each rank, n - 1 latencies.
int64_t alltoall_group_ns(const GroupLink& g, int64_t bytes);
// One send of `bytes` to the next rank of the group.
int64_t p2p_group_ns(const GroupLink& g, int64_t bytes);

// The hardware the pipeline simulation runs on: one device per pipeline rank, linked
// as the pp group's neighbours are (NVLink inside a node, the network across).
Hardware pipeline_hardware(const GpuModel& gpu, const ParallelLayout& layout);

}  // namespace pipescope
