// Boost.Graph builds the model graph; a depth-first search reports the first back
// edge as a cycle (walked back through the DFS tree), and a Kahn-style pass with a
// min-heap gives the deterministic topological order.
#include "planner/model_graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <sstream>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

#include "core/error.h"

namespace pipescope {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

struct CycleFound {
  std::vector<int> cycle;  // v0 -> v1 -> ... -> v0
};

class CycleVisitor : public boost::default_dfs_visitor {
 public:
  explicit CycleVisitor(std::vector<int>* parent) : parent_(parent) {}
  void tree_edge(Edge e, const Graph& g) const {
    (*parent_)[boost::target(e, g)] = static_cast<int>(boost::source(e, g));
  }
  void back_edge(Edge e, const Graph& g) const {
    const int from = static_cast<int>(boost::source(e, g));
    const int to = static_cast<int>(boost::target(e, g));
    std::vector<int> path = {from};
    for (int v = from; v != to; v = (*parent_)[v]) path.push_back((*parent_)[v]);
    std::reverse(path.begin(), path.end());  // to -> ... -> from
    path.push_back(to);
    throw CycleFound{path};
  }

 private:
  std::vector<int>* parent_;
};

}  // namespace

std::vector<int> topological_order(int layers, const std::vector<std::pair<int, int>>& edges,
                                   const std::string& source) {
  Graph g(static_cast<std::size_t>(layers));
  for (auto [from, to] : edges) {
    if (from < 0 || to < 0 || from >= layers || to >= layers) {
      throw InputError(source, "edges", "edge " + std::to_string(from) + " -> " + std::to_string(to) +
                                            " names a layer outside [0, " + std::to_string(layers) + ")");
    }
    boost::add_edge(static_cast<Vertex>(from), static_cast<Vertex>(to), g);
  }
  std::vector<int> parent(static_cast<std::size_t>(layers), -1);
  try {
    boost::depth_first_search(g, boost::visitor(CycleVisitor(&parent)));
  } catch (const CycleFound& c) {
    std::ostringstream msg;
    msg << "the model graph has a cycle: ";
    for (std::size_t i = 0; i < c.cycle.size(); ++i) msg << (i ? " -> " : "") << c.cycle[i];
    throw InputError(source, "edges", msg.str());
  }
  std::vector<int> indegree(static_cast<std::size_t>(layers), 0);
  for (auto [from, to] : edges) ++indegree[to];
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int v = 0; v < layers; ++v) {
    if (indegree[v] == 0) ready.push(v);
  }
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(layers));
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(static_cast<Vertex>(v), g); e != end; ++e) {
      const int w = static_cast<int>(boost::target(*e, g));
      if (--indegree[w] == 0) ready.push(w);
    }
  }
  return order;  // complete: the DFS proved the graph acyclic
}

Profile in_topological_order(const Profile& profile) {
  if (profile.is_chain()) return profile;
  const std::vector<int> order = topological_order(profile.num_layers(), profile.edges, profile.source);
  bool identity = true;
  for (int i = 0; i < profile.num_layers(); ++i) identity = identity && order[i] == i;
  return identity ? profile : reorder_layers(profile, order);
}

Profile reorder_layers(const Profile& profile, const std::vector<int>& order) {
  std::vector<int> position(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  Profile out = profile;
  for (std::size_t i = 0; i < order.size(); ++i) out.layers[i] = profile.layers[order[i]];
  for (auto& [from, to] : out.edges) {
    from = position[from];
    to = position[to];
  }
  std::sort(out.edges.begin(), out.edges.end());
  return out;
}

std::vector<int64_t> cut_bytes(const Profile& profile, double batch) {
  const int L = profile.num_layers();
  std::vector<int64_t> diff(static_cast<std::size_t>(L) + 2, 0);
  std::vector<int> last_consumer(static_cast<std::size_t>(L), -1);
  for (auto [from, to] : profile.graph_edges()) last_consumer[from] = std::max(last_consumer[from], to);
  for (int u = 0; u < L; ++u) {
    if (last_consumer[u] <= u) continue;
    const int64_t b = profile.output_bytes(u, batch);
    diff[u + 1] += b;                   // crosses cuts u+1 .. last_consumer[u]
    diff[last_consumer[u] + 1] -= b;
  }
  std::vector<int64_t> bytes(static_cast<std::size_t>(L) + 1, 0);
  int64_t running = 0;
  for (int c = 0; c <= L; ++c) {
    running += diff[c];
    bytes[c] = (c == 0 || c == L) ? 0 : running;
  }
  return bytes;
}

}  // namespace pipescope
