// The balanced split of a decoder's L layers over a layout's p * v chunks: the layers per
// chunk that minimise the bottleneck rank's time per micro-batch (the sum over its chunks
// of F + I + W, recompute included, with the embedding on chunk 0 and the head + loss on
// the last chunk), where the even split (L / (p v), or layout_chunks' fixed rule) ignores
// that the head of a 128k vocabulary costs two decoder layers. Invariant: the split sums to
// exactly L, every chunk holds >= 1 layer, no rank holds more than its cap, and its
// bottleneck is the least any such split reaches when the decoder layers are identical
// (the mean layer stands for each where MoE and dense layers alternate; the simulation
// then times the real ones).
//   SplitCosts c = split_costs(shape, dense, moe, embedding, head);
//   std::vector<int> chunks = balanced_chunks(shape.layers, layout, c);   // p * v entries
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm/layer_time.h"
#include "llm/layout.h"

namespace pipescope {

// One micro-batch's compute (F + I + W, recompute included: LayerTime::total_ns).
struct SplitCosts {
  int64_t layer_ns = 0;  // a decoder layer (the mean over the model's dense and MoE layers)
  int64_t first_ns = 0;  // what chunk 0 holds besides its layers: the embedding
  int64_t last_ns = 0;   // what the last chunk holds besides its layers: the head and the loss
};
SplitCosts split_costs(const TransformerShape& shape, const LayerTime& dense, const LayerTime& moe,
                       const LayerTime& embedding, const LayerTime& head);

// The balanced split, p * v entries in model order (chunk c on chunk_rank(layout, c)).
// First the ranks: rank r gets n_r >= v layers, n_r <= max_rank_layers[r] (empty: no cap),
// sum L, minimising max_r (n_r layer_ns + its extras); then each rank's n_r over its v
// chunks the same way (so a chunk beside the head holds fewer layers). Each is a water fill:
// start every bin at its least, add the L - sum layers one at a time to the bin whose time
// grows least (ties: the later bin, which keeps fewer micro-batches in flight), optimal for
// a min-max with equal increments by the exchange argument; O(L p) for the ranks, O(n_r v)
// within rank r. Empty when no split exists (L < p v, or the caps leave less than L).
std::vector<int> balanced_chunks(int layers, const ParallelLayout& layout, const SplitCosts& costs,
                                 const std::vector<int>& max_rank_layers = {});

// Per pipeline rank: one micro-batch's compute of the split `chunks` (the quantity
// balanced_chunks minimises the largest of).
std::vector<int64_t> rank_loads(const std::vector<int>& chunks, const ParallelLayout& layout, const SplitCosts& costs);
int64_t bottleneck_ns(const std::vector<int>& chunks, const ParallelLayout& layout, const SplitCosts& costs);

// The layers per pipeline rank of a split ("19,20,20,21"), summed over each rank's chunks.
std::vector<int> rank_layer_counts(const std::vector<int>& chunks, const ParallelLayout& layout);
std::string split_text(const std::vector<int>& chunks, const ParallelLayout& layout);

}  // namespace pipescope
