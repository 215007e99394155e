// Pieces of llm/layout_search.h shared by its .cpp files (not for other callers): the
// per-layer times a layout's bound needs, the per-rank sums the bound is made of, and the
// explanation of a finished search.
#pragma once

#include <cstdint>
#include <vector>

#include "llm/layer_time.h"
#include "llm/layout_search.h"

namespace pipescope {

// Depends on (t, sp, cp, ep, recompute, b) and the shape only: the search caches it.
struct LayerTimes {
  LayerTime dense, moe, embedding, head;
};
LayerTimes layer_times(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu);

struct RankCosts {
  std::vector<int64_t> stage_f, stage_b;         // per stage (chunk), one micro-batch
  std::vector<int64_t> fwd, bwd, busy, params, opt;  // per pipeline rank
  std::vector<int> layers;                           // transformer layers per pipeline rank
};
RankCosts rank_costs(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                     const LayerTimes& times);
int64_t bound_from_costs(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                         const StepOptions& options, const RankCosts& costs);

// Fills result.why and result.lost from result.best and result.dimensions.
void explain_search(LlmSearchResult& result, const GpuModel& gpu);

}  // namespace pipescope
