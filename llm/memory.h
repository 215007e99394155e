// Memory per GPU of each pipeline rank, as Megatron-LM keeps it: parameters, gradients,
// optimizer state and activations, apart. Parameters follow theoretical_memory_usage.py's
// split (tensor-parallel / replicated / expert); bytes follow the Precision, sharded over
// the data-parallel group (d cp ranks; d cp / ep for experts) as the Sharding says;
// activations per layer are Korthikanti et al. 2022 Table 2 (with Megatron's 18 + 4 f / h
// for the 34), times the micro-batches Megatron's 1F1B / interleaved schedule keeps in
// flight on that rank (its closed form). Other schedules (gpipe, looped-bfs,
// interleaved-zb, zb-v, dualpipev): rank r's peak bytes on the schedule's own op order
// (llm/pipeline_schedule.h's peak_bytes, core/op_rules.h's rule): a chunk-micro-batch
// holds its chunk's activation bytes from the start of F to the end of B or I, and under
// split backward its weight-gradient bytes (what W reads: the weighted layers' inputs)
// from I's end to W's end; the embedding's and the head's ride with chunk 0 and the
// last chunk. That is the stash of a split backward that keeps only what W reads
// (Qi et al.'s and DualPipe's weight-gradient stores, pipescope's executor); torch 2.13's
// stage_backward_input keeps the whole graph to W (retain_graph; docs/torch-run.md
// measured it), which the counts' rule (I frees nothing) describes. Closed forms the tests
// hold (chunk-micro-batches on rank r, InFlight's counts): gpipe M, 1f1b
// min(p - r, M), looped-bfs M v, interleaved-zb (v - 1) R + p with R = M / max(1, M / p),
// zb-v 2p, dualpipev 2p + 1 (tests/llm/llm_schedule_test.cpp). Invariant: the (shape,
// layout) passed validate_layout.
//   LlmMemory m = llm_memory(shape, validate_layout(shape, layout, 64));
//   double peak = m.stages[0].total();
#pragma once

#include <string>
#include <vector>

#include "llm/layout.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

// The one parameter count of a transformer (layer_parameters, embedding_parameters,
// head_parameters, model_parameters): theoretical_memory_usage.py's terms with the biases,
// norms, position table and experts the shape states. Everyone counts here: llm_memory,
// llm/layer_time.h's LayerTime::parameters (llm-time, llm-plan), `profile synth`'s
// parameter_bytes (interop/). Held to Megatron's formula (tests/memory/), to
// transformers' own counts of the Hugging Face configs (python/tests/test_oracle_hf.py)
// and to the published sizes (tests/interop/interop_hf_test.cpp).
// A piece of the model's parameters, by how each GPU holds them.
struct LayerParameters {
  double tp_sharded = 0;  // attention, dense MLP or shared expert (+ their column biases), word embedding: / t
  double replicated = 0;  // norms, router, row-parallel biases, position table: whole on every GPU
  double expert = 0;      // routed experts: / (t ep) (expert tensor parallel = t, Megatron's default)
  double total() const { return tp_sharded + replicated + expert; }
  // What one GPU of a layout with tensor-parallel size t and expert-parallel size ep holds.
  double per_gpu(int t, int ep) const { return tp_sharded / t + replicated + expert / (static_cast<double>(t) * ep); }
};
LayerParameters layer_parameters(const TransformerShape& shape, bool moe);
bool is_moe_layer(const TransformerShape& shape, int layer);  // layer % --moe-layer-freq == 0
// The word embedding V h (vocabulary-parallel) and, with learned positions, the s x h table.
LayerParameters embedding_parameters(const TransformerShape& shape);
// The final norm (h with RMSNorm, 2 h with LayerNorm) and, when `output_layer`, the output
// layer's own V h (absent where it is the tied word embedding on the same GPU).
LayerParameters head_parameters(const TransformerShape& shape, bool output_layer);
// The whole model, each matrix once (a tied output layer is the embedding).
struct ModelParameters {
  double embedding = 0;      // embedding_parameters
  double layers = 0;         // the L transformer layers
  double active_layers = 0;  // of them, what one token multiplies: top-k of the routed experts
  double head = 0;           // head_parameters: the final norm, + V h when untied
  double total() const { return embedding + layers + head; }
  double active() const { return embedding + active_layers + head; }
};
ModelParameters model_parameters(const TransformerShape& shape);

// Activation bytes one layer keeps for its backward, per micro-batch, on one GPU
// (Table 2's row for the layout's t, SP and recompute; sequence s / cp).
double layer_activation_bytes(const TransformerShape& shape, const ParallelLayout& layout);
// The embedding's (token ids 8 s b + dropout mask s b h when shape.embedding_dropout) and
// the head's (fp32 logits 4 s b V / t + final norm output 4 s b h) per micro-batch, / t
// where SP splits them.
double embedding_activation_bytes(const TransformerShape& shape, const ParallelLayout& layout);
double head_activation_bytes(const TransformerShape& shape, const ParallelLayout& layout);

// What the weight gradient W still needs of those bytes once the input gradient I has run
// (split backward; core/op_rules.h frees the rest at I's end), from the same Table-2 terms:
// the inputs of the layers that carry weights. Per layer: the two norm inputs 4 s b h,
// QKV's input (the first norm's output) 2 s b h and fc1's (the second's) 2 s b h, whole
// per rank without SP and / t under SP (Megatron all-gathers them again for W); the
// output projection's input 2 s b h / t and fc2's (the activation's output, 2 s b f / t,
// the 2 s b f layer_activation_bytes counts for it, SwiGLU too). Selective recompute
// keeps all of them; full recompute keeps the layer input only (torch's per-op selective
// recompute, its saved matmul outputs: both rebuild W's inputs outside the stash), which W needs whole
// (I frees nothing: the recomputed linear inputs I leaves for W are outside the stash, as
// the one recomputed layer memory.cpp adds is). MoE layers are counted as
// layer_activation_bytes counts them, as a dense MLP of f. Not here: the output gradients
// I leaves held for W (core/op_rules.h's held_for_weight transients; llm/ counts no
// transients; Qi et al.'s M_W = 32 h per token adds them to 18 h of inputs). The
// embedding's W needs its token ids (8 s b), the head's its input (the 4 s b h term, not
// the fp32 logits). Each is at most the matching *_activation_bytes.
double layer_weight_grad_bytes(const TransformerShape& shape, const ParallelLayout& layout);
double embedding_weight_grad_bytes(const TransformerShape& shape, const ParallelLayout& layout);
double head_weight_grad_bytes(const TransformerShape& shape, const ParallelLayout& layout);

// What one micro-batch of chunk c (model order) keeps on one GPU: `held` from the start of
// its F to the end of its I (or B), `for_weight` from I's end to W's end: its layers'
// layer_activation_bytes / layer_weight_grad_bytes, plus the embedding's on chunk 0 and
// the head's on the last chunk. What llm_memory walks for the non-Megatron schedules and
// what llm/step_time.h's Profile states (activation_bytes, weight_grad_bytes).
struct StashBytes {
  double held = 0, for_weight = 0;
};
std::vector<StashBytes> chunk_stash_bytes(const TransformerShape& shape, const ParallelLayout& layout);

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
// Which pipeline rank binds memory first (the first with the highest total), its bytes by
// kind, and the margin to `usable` bytes per GPU, as one line:
//   "memory: rank 0 binds first at 68.69 GB (9.08 weights + 18.17 gradients + 13.63
//    optimizer + 27.82 activations), 5.31 GB left of 74.00 GB usable (80.00 GB less 6.00 GB
//    headroom)"
// "" for no ranks.
std::string binding_rank_line(const std::vector<RankMemory>& ranks, double capacity, double headroom);
int binding_rank(const std::vector<RankMemory>& ranks);  // -1 for none
// `walked`: schedule_in_flight of the layout's (schedule, p, v, M), when the caller has it
// (the search caches it); ignored for Megatron's schedules; nullptr: walked here.
LlmMemory llm_memory(const TransformerShape& shape, const ParallelLayout& layout, const InFlight* walked = nullptr);

// Chunk-micro-batches rank k keeps at its peak: Megatron's warm-up forwards + 1
// (1F1B: p - k - 1; interleaved: 2 (p - k - 1) + (v - 1) p), at most M v, the closed
// forms of core/schedule_kinds.h's records; other schedules: schedule_in_flight's walked
// count.
int in_flight_chunks(const ParallelLayout& layout, int rank);

}  // namespace pipescope
