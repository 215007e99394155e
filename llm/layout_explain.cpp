// Why the search chose what it chose, in words: per dimension the chosen value (with the
// fact that decided it: the node the TP group stays in, the bubble, the exposed data-
// parallel tail, the memory) and each other value's reason (not valid, does not fit and
// by how much, slower and by how much, or its bound already above the best); per
// runner-up what differs from the best and what that cost. Only the search's own numbers.
#include <cstdio>
#include <numeric>
#include <string>

#include "llm/balanced_split.h"
#include "llm/collectives.h"
#include "llm/layout_search_internal.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

constexpr double kGB = 1e9;

std::string fmt(const char* format, double a, double b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

// The search's dimensions (llm/layout_search.cpp's kDimensionNames), in the order "why" and a
// runner-up's differences list them.
constexpr const char* kExplained[] = {"t", "sp", "tp-comm-overlap", "cp", "ep", "p", "d", "v",
                                      "schedule", "b", "recompute", "sharding"};

std::string seconds(int64_t ns) { return fmt("%.3f s", static_cast<double>(ns) / 1e9); }

std::string value_name(const std::string& dim, int value) {
  if (dim == "recompute") return to_string(static_cast<Recompute>(value));
  if (dim == "sharding") return to_string(static_cast<Sharding>(value));
  if (dim == "sp" || dim == "tp-comm-overlap") return value != 0 ? "on" : "off";
  if (dim == "schedule") return to_string(static_cast<ScheduleKind>(value));
  return std::to_string(value);
}

int value_of(const std::string& dim, const ParallelLayout& l) {
  if (dim == "t") return l.t;
  if (dim == "sp") return l.sequence_parallel ? 1 : 0;
  if (dim == "tp-comm-overlap") return l.tp_comm_overlap ? 1 : 0;
  if (dim == "cp") return l.cp;
  if (dim == "ep") return l.ep;
  if (dim == "p") return l.p;
  if (dim == "d") return l.d;
  if (dim == "v") return l.v;
  if (dim == "schedule") return static_cast<int>(layout_schedule(l));
  if (dim == "b") return l.micro_batch;
  if (dim == "recompute") return static_cast<int>(l.recompute);
  return static_cast<int>(l.sharding);
}

// The fact behind the chosen value of `dim`.
std::string chosen_reason(const std::string& dim, const LlmCandidate& c, const GpuModel& gpu, double capacity) {
  const ParallelLayout& l = c.layout;
  if (dim == "t") {
    const GroupLink tp = group_link(gpu, l, Group::Tp);
    if (l.t == 1) return "no tensor-parallel traffic";
    if (!tp.crosses_nodes) {
      return "keeps the TP all-reduces (all-gathers and reduce-scatters under SP) inside one NVLink node (" + std::to_string(gpu.gpus_per_node()) + " GPUs)";
    }
    return "its TP group spans " + std::to_string(l.t / tp.per_node) + " nodes (TP traffic on the network)";
  }
  if (dim == "tp-comm-overlap" && l.tp_comm_overlap) {
    return "the TP collectives run under the GEMMs they feed (Megatron-LM --tp-comm-overlap, torchtitan's async TP)";
  }
  if (dim == "p") return fmt("bubble %.3f of the simulated pipeline", c.bubble);
  if (dim == "schedule") {
    return fmt("bubble %.3f of the simulated pipeline, peak %.1f GB per GPU", c.bubble, c.peak_bytes / kGB) +
           (ends_with_backward_chain(layout_schedule(l)) ? "" : " (W fills the drain)");
  }
  if (dim == "d") return "exposed data-parallel tail " + seconds(c.dp_exposed_ns);
  if (dim == "recompute" || dim == "b" || dim == "sharding") {
    return fmt("peak %.1f GB of %.1f GB usable per GPU", c.peak_bytes / kGB, capacity / kGB);
  }
  return "";
}

std::string other_reason(const DimensionValue& dv, int64_t best, double capacity) {
  if (dv.valid == 0) return "not valid (" + dv.invalid + ")";
  if (dv.fitting == 0) return fmt("does not fit: %.1f GB > %.1f GB", dv.min_need / kGB, capacity / kGB);
  if (dv.best_step >= 0) {
    return "at best " + seconds(dv.best_step) +
           fmt(" (%+.1f%%)", 100.0 * static_cast<double>(dv.best_step - best) / static_cast<double>(best));
  }
  return "cannot win: its lower bound " + seconds(dv.best_bound) + " > " + seconds(best);
}

std::string runner_up_reason(const LlmCandidate& best, const LlmCandidate& c) {
  std::string out = layout_summary(c.layout) + ": " + seconds(c.step_ns) +
                    fmt(" (%+.2f%%)", 100.0 * static_cast<double>(c.step_ns - best.step_ns) /
                                          static_cast<double>(best.step_ns));
  std::string diff;
  for (const char* dim : kExplained) {
    const int a = value_of(dim, c.layout), b = value_of(dim, best.layout);
    if (a == b) continue;
    diff += diff.empty() ? ": " : ", ";
    diff += std::string(dim) + " " + value_name(dim, a) + " instead of " + value_name(dim, b);
  }
  out += diff;
  out += fmt("; bubble %.3f vs %.3f", c.bubble, best.bubble);
  out += ", data-parallel " + seconds(c.dp_exposed_ns) + " vs " + seconds(best.dp_exposed_ns);
  if (c.sharding_ns > 0 || best.sharding_ns > 0) {
    out += ", ZeRO traffic " + seconds(c.sharding_ns) + " vs " + seconds(best.sharding_ns);
  }
  out += fmt(", peak %.1f GB vs %.1f GB", c.peak_bytes / kGB, best.peak_bytes / kGB);
  return out;
}

// The best's split of layers and what the other split (balanced or even) would have taken.
std::string split_reason(const LlmCandidate& best) {
  const ParallelLayout& l = best.layout;
  if (best.other_split.empty()) return "";  // p = 1, or the balanced split is the even one
  const int layers = std::accumulate(best.other_split.begin(), best.other_split.end(), 0);
  const int chunks = l.p * l.v;
  const std::vector<int> mine = l.layers_per_chunk.empty() ? std::vector<int>(static_cast<std::size_t>(chunks), layers / chunks)
                                                           : l.layers_per_chunk;
  const int head_rank = chunk_rank(l, l.p * l.v - 1);
  std::string out = std::string("split = ") + (best.balanced ? "balanced" : "even") + ": layers per rank " +
                    split_text(mine, l) + " (embedding on rank 0, head on rank " + std::to_string(head_rank) + ")";
  const char* other = best.balanced ? "the even split " : "the balanced split ";
  out += "; " + std::string(other) + split_text(best.other_split, l);
  if (!best.other_fits) return out + " does not fit";
  if (best.other_step_ns < 0) return out + " cannot win on its lower bound";
  const double change = 100.0 * static_cast<double>(best.step_ns - best.other_step_ns) / static_cast<double>(best.other_step_ns);
  if (best.balanced) return out + " takes " + seconds(best.other_step_ns) + fmt(": %.2f%% faster balanced", -change);
  return out + " takes " + seconds(best.other_step_ns) + fmt(" (%+.2f%%)", -change);
}

}  // namespace

void explain_search(LlmSearchResult& r, const GpuModel& gpu) {
  r.why.clear();
  r.lost.clear();
  if (r.best.empty()) return;
  const LlmCandidate& best = r.best.front();
  for (const char* dim : kExplained) {
    const auto it = r.dimensions.find(dim);
    if (it == r.dimensions.end() || it->second.size() < 2) continue;
    const int chosen = value_of(dim, best.layout);
    std::string line = std::string(dim) + " = " + value_name(dim, chosen);
    const std::string because = chosen_reason(dim, best, gpu, r.usable());
    if (!because.empty()) line += ": " + because;
    std::string invalid_values, invalid_reason;  // refused values in one clause: "t = 256, 512 not valid (...)"
    for (const auto& [value, dv] : it->second) {
      if (value == chosen) continue;
      if (dv.valid == 0) {
        invalid_values += (invalid_values.empty() ? "" : ", ") + value_name(dim, value);
        if (invalid_reason.empty()) invalid_reason = dv.invalid;
        continue;
      }
      line += "; " + std::string(dim) + " = " + value_name(dim, value) + " " + other_reason(dv, best.step_ns, r.usable());
    }
    if (!invalid_values.empty()) {
      line += "; " + std::string(dim) + " = " + invalid_values + " not valid (" + invalid_reason + ")";
    }
    r.why.push_back(line);
  }
  if (const std::string split = split_reason(best); !split.empty()) r.why.push_back(split);
  for (std::size_t i = 1; i < r.best.size(); ++i) r.lost.push_back(runner_up_reason(best, r.best[i]));
}

}  // namespace pipescope
