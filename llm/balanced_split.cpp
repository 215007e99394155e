// llm/balanced_split.h's water fills: ranks first, then each rank's chunks. Integer
// nanoseconds throughout, ties broken by bin index, so the same costs give the same split.
#include "llm/balanced_split.h"

#include <algorithm>
#include <numeric>

#include "llm/memory.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

// Bin i holds n_i in [lo_i, hi_i] units, sum `total`, its time n_i * unit + extra_i; the
// fill minimises the largest time. Empty when the bounds leave no solution.
std::vector<int> water_fill(int total, int64_t unit, const std::vector<int64_t>& extra, const std::vector<int>& lo,
                            const std::vector<int>& hi) {
  std::vector<int> n = lo;
  const int64_t least = std::accumulate(lo.begin(), lo.end(), int64_t{0});
  const int64_t most = std::accumulate(hi.begin(), hi.end(), int64_t{0});
  if (least > total || most < total) return {};
  for (int64_t left = total - least; left > 0; --left) {
    std::size_t pick = n.size();
    int64_t pick_time = 0;
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (n[i] >= hi[i]) continue;
      const int64_t time = (n[i] + 1) * unit + extra[i];
      if (pick == n.size() || time <= pick_time) pick = i, pick_time = time;  // <=: the later bin on a tie
    }
    ++n[pick];
  }
  return n;
}

std::vector<int64_t> chunk_extras(const ParallelLayout& l, const SplitCosts& costs) {
  std::vector<int64_t> out(static_cast<std::size_t>(l.p) * l.v, 0);
  out.front() += costs.first_ns;
  out.back() += costs.last_ns;
  return out;
}

// Rank r's chunks in model order.
std::vector<std::vector<int>> chunks_by_rank(const ParallelLayout& l) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(l.p));
  for (int c = 0; c < l.p * l.v; ++c) out[static_cast<std::size_t>(chunk_rank(l, c))].push_back(c);
  return out;
}

}  // namespace

SplitCosts split_costs(const TransformerShape& shape, const LayerTime& dense, const LayerTime& moe,
                       const LayerTime& embedding, const LayerTime& head) {
  int64_t sum = 0;
  for (int i = 0; i < shape.layers; ++i) sum += (shape.experts > 0 && is_moe_layer(shape, i) ? moe : dense).total_ns();
  return {shape.layers > 0 ? sum / shape.layers : 0, embedding.total_ns(), head.total_ns()};
}

std::vector<int> balanced_chunks(int layers, const ParallelLayout& l, const SplitCosts& costs,
                                 const std::vector<int>& max_rank_layers) {
  if (l.p < 1 || l.v < 1 || layers < l.p * l.v) return {};
  const std::vector<int64_t> extra = chunk_extras(l, costs);
  const std::vector<std::vector<int>> mine = chunks_by_rank(l);
  std::vector<int64_t> rank_extra(static_cast<std::size_t>(l.p), 0);
  std::vector<int> lo(static_cast<std::size_t>(l.p), l.v), hi(lo.size(), layers);
  for (std::size_t r = 0; r < mine.size(); ++r) {
    for (int c : mine[r]) rank_extra[r] += extra[static_cast<std::size_t>(c)];
    if (r < max_rank_layers.size()) hi[r] = std::max(max_rank_layers[r], l.v);
  }
  const std::vector<int> ranks = water_fill(layers, costs.layer_ns, rank_extra, lo, hi);
  if (ranks.empty()) return {};
  std::vector<int> out(extra.size(), 0);
  for (std::size_t r = 0; r < mine.size(); ++r) {
    std::vector<int64_t> e;
    for (int c : mine[r]) e.push_back(extra[static_cast<std::size_t>(c)]);
    const std::vector<int> each = water_fill(ranks[r], costs.layer_ns, e, std::vector<int>(e.size(), 1),
                                             std::vector<int>(e.size(), ranks[r]));
    for (std::size_t i = 0; i < each.size(); ++i) out[static_cast<std::size_t>(mine[r][i])] = each[i];
  }
  return out;
}

std::vector<int64_t> rank_loads(const std::vector<int>& chunks, const ParallelLayout& l, const SplitCosts& costs) {
  const std::vector<int64_t> extra = chunk_extras(l, costs);
  std::vector<int64_t> out(static_cast<std::size_t>(l.p), 0);
  for (std::size_t c = 0; c < chunks.size() && c < extra.size(); ++c) {
    out[static_cast<std::size_t>(chunk_rank(l, static_cast<int>(c)))] += chunks[c] * costs.layer_ns + extra[c];
  }
  return out;
}

int64_t bottleneck_ns(const std::vector<int>& chunks, const ParallelLayout& l, const SplitCosts& costs) {
  const std::vector<int64_t> loads = rank_loads(chunks, l, costs);
  return loads.empty() ? 0 : *std::max_element(loads.begin(), loads.end());
}

std::vector<int> rank_layer_counts(const std::vector<int>& chunks, const ParallelLayout& l) {
  std::vector<int> out(static_cast<std::size_t>(l.p), 0);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    out[static_cast<std::size_t>(chunk_rank(l, static_cast<int>(c)))] += chunks[c];
  }
  return out;
}

std::string split_text(const std::vector<int>& chunks, const ParallelLayout& l) {
  auto join = [](const std::vector<int>& v, char sep) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += sep;
      out += std::to_string(v[i]);
    }
    return out;
  };
  std::string out = join(rank_layer_counts(chunks, l), ',');
  if (l.v == 1) return out;
  out += " (chunks ";
  const std::vector<std::vector<int>> mine = chunks_by_rank(l);
  for (std::size_t r = 0; r < mine.size(); ++r) {
    std::vector<int> n;
    for (int c : mine[r]) n.push_back(chunks[static_cast<std::size_t>(c)]);
    if (r) out += ", ";
    out += join(n, '+');
  }
  out += ")";
  return out;
}

}  // namespace pipescope
