// The longest path through a schedule's op dependency graph, built with Boost.Graph:
// same-device order edges and data edges (F(s-1,m) -> F(s,m), B/I(s+1,m) -> B/I(s,m),
// F -> R -> B/I and I -> W of one stage) carrying the link latency between devices.
// An oracle written apart from core/op_rules.h on purpose: the simulator must agree
// with it. Links are taken as bandwidth-free (no contention), so the path is exact.
//   int64_t t = pipescope::testing::longest_path(schedule, costs, hardware);
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dag_shortest_paths.hpp>

#include <map>
#include <tuple>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/schedule.h"

namespace pipescope::testing {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                    boost::property<boost::edge_weight_t, double>>;

inline int64_t op_duration(const Op& op, const CostModel& c) {
  const StageCost& s = c.stages[op.stage];
  switch (op.kind) {
    case OpKind::Forward: return s.forward_ns;
    case OpKind::Backward: return s.backward_ns;
    case OpKind::BackwardInput: return s.backward_input_ns;
    case OpKind::BackwardWeight: return s.backward_weight_ns;
    case OpKind::Recompute: return s.recompute_ns;
  }
  return 0;
}

inline int64_t longest_path(const Schedule& s, const CostModel& c, const Hardware& h) {
  std::map<std::tuple<int, int, int>, int> node;  // (kind, stage, mb) -> vertex
  std::vector<int64_t> dur;
  std::vector<int> dev;
  for (int d = 0; d < s.positions(); ++d) {
    for (const Op& op : s.position_ops[d]) {
      node[{static_cast<int>(op.kind), op.stage, op.microbatch}] = static_cast<int>(dur.size());
      dur.push_back(op_duration(op, c));
      dev.push_back(d);
    }
  }
  const int source = static_cast<int>(dur.size());
  Graph g(dur.size() + 1);
  // Longest path = shortest path with negated weights (the graph is a DAG).
  auto edge = [&](int from, int to, int64_t extra) {
    boost::add_edge(from, to, -static_cast<double>(dur[from] + extra), g);
  };
  auto find = [&](OpKind k, int st, int m) {
    auto it = node.find({static_cast<int>(k), st, m});
    return it == node.end() ? -1 : it->second;
  };
  for (int d = 0; d < s.positions(); ++d) {
    const auto& ops = s.position_ops[d];
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      int v = find(op.kind, op.stage, op.microbatch);
      boost::add_edge(source, v, 0.0, g);
      if (i > 0) edge(find(ops[i - 1].kind, ops[i - 1].stage, ops[i - 1].microbatch), v, 0);
      auto data_edge = [&](int from) {
        if (from < 0) return;
        int64_t lat = dev[from] == d ? 0
                                     : h.link_between(c.position_device[dev[from]], c.position_device[d]).latency_ns();
        edge(from, v, lat);
      };
      if (op.kind == OpKind::Forward && op.stage > 0) data_edge(find(OpKind::Forward, op.stage - 1, op.microbatch));
      if ((op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) && op.stage + 1 < s.stages()) {
        data_edge(find(OpKind::Backward, op.stage + 1, op.microbatch));
        data_edge(find(OpKind::BackwardInput, op.stage + 1, op.microbatch));
      }
    }
  }
  std::vector<double> dist(boost::num_vertices(g));
  boost::dag_shortest_paths(g, source, boost::distance_map(dist.data()));
  int64_t best = 0;
  for (int v = 0; v < source; ++v) best = std::max(best, static_cast<int64_t>(-dist[v]) + dur[v]);
  return best;
}

}  // namespace pipescope::testing
