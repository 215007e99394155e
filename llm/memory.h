// Memory per GPU of each pipeline rank, as Megatron-LM keeps it: parameters, gradients,
// optimizer state and activations, apart. Parameters follow theoretical_memory_usage.py's
// split (tensor-parallel / replicated / expert); bytes follow the Precision, sharded over
// the data-parallel group (d cp ranks; d cp / ep for experts) as the Sharding says;
// activations per layer are Korthikanti et al. 2022 Table 2 (with Megatron's 18 + 4 f / h
// for the 34), times the micro-batches Megatron's 1F1B / interleaved schedule keeps in
// flight on that rank (its closed form). Other schedules (gpipe, looped-bfs,
// interleaved-zb, zb-v, dualpipev): rank r keeps the largest number of chunk-micro-batches
// alive at once on the schedule's own op order (llm/pipeline_schedule.h's InFlight: from
// the start of F to the end of B, or of W under split backward, since llm/ states no
// weight_grad_bytes and core/op_rules.h then frees the stash at W), times the per-chunk
// bytes; the embedding counts chunk 0's peak, the head the last chunk's (GPipe: M of
// each). Closed forms the tests hold (chunk-micro-batches on rank r): gpipe M, 1f1b
// min(p - r, M), looped-bfs M v, interleaved-zb (v - 1) R + p with R = M / max(1, M / p),
// zb-v 2p, dualpipev 2p + 1 (tests/llm/llm_schedule_test.cpp). Invariant: the (shape,
// layout) passed validate_layout.
//   LlmMemory m = llm_memory(shape, validate_layout(shape, layout, 64));
//   double peak = m.stages[0].total();
#pragma once

#include <vector>

#include "llm/layout.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

// One transformer layer's parameters, by how each GPU holds them.
struct LayerParameters {
  double tp_sharded = 0;  // attention, dense MLP or shared expert (+ their column biases): / t
  double replicated = 0;  // norms, router, row-parallel biases: whole on every GPU
  double expert = 0;      // routed experts: / (t ep) (expert tensor parallel = t, Megatron's default)
  double total() const { return tp_sharded + replicated + expert; }
};
LayerParameters layer_parameters(const TransformerShape& shape, bool moe);
bool is_moe_layer(const TransformerShape& shape, int layer);  // layer % --moe-layer-freq == 0

// Activation bytes one layer keeps for its backward, per micro-batch, on one GPU
// (Table 2's row for the layout's t, SP and recompute; sequence s / cp).
double layer_activation_bytes(const TransformerShape& shape, const ParallelLayout& layout);
// The embedding's (token ids 8 s b + dropout mask s b h) and the head's (fp32 logits
// 4 s b V / t + final norm output 4 s b h) per micro-batch, / t where SP splits them.
double embedding_activation_bytes(const TransformerShape& shape, const ParallelLayout& layout);
double head_activation_bytes(const TransformerShape& shape, const ParallelLayout& layout);

// What each GPU of one pipeline rank keeps (not core/op_rules.h's StageMemory, which is
// one op's bytes over a stage's layers).
struct RankMemory {
  int rank = 0;                 // pipeline rank 0 .. p - 1
  int layers = 0;               // over its v chunks
  bool embedding = false, head = false;
  double parameters = 0;        // per GPU, all kinds
  double expert_parameters = 0; // of them, routed experts
  double in_flight = 0;         // micro-batches of its layers at the peak (chunk-micro-batches / v)
  double parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, activation_bytes = 0;
  double static_bytes() const { return parameter_bytes + gradient_bytes + optimizer_bytes; }
  double total() const { return static_bytes() + activation_bytes; }
};

struct LlmMemory {
  std::vector<RankMemory> stages;  // one per pipeline rank
  double layer_activation_bytes = 0;
  double peak() const;              // the largest stage total
};
// `walked`: schedule_in_flight of the layout's (schedule, p, v, M), when the caller has it
// (the search caches it); ignored for Megatron's schedules; nullptr: walked here.
LlmMemory llm_memory(const TransformerShape& shape, const ParallelLayout& layout, const InFlight* walked = nullptr);

// Chunk-micro-batches rank k keeps at its peak: Megatron's warm-up forwards + 1
// (1F1B: p - k - 1; interleaved: 2 (p - k - 1) + (v - 1) p), at most M v; other
// schedules: schedule_in_flight's walked count.
int in_flight_chunks(const ParallelLayout& layout, int rank);

}  // namespace pipescope
