// Validation of a (shape, layout) against a cluster, with the checks Megatron-LM's
// arguments.py and TransformerConfig make on the model and the degrees, which every framework
// makes too (what one framework refuses and another runs is llm/framework.h's
// framework_refusal; llm/job.h's validate_job makes both). Invariant: validate_layout either
// returns a layout that llm/layout.h's invariant holds for, or throws InputError naming the
// field (by its Megatron flag) and the numbers, or the schedule's (llm/pipeline_schedule.h);
// a returned note says what it changed.
//   ParallelLayout ok = validate_layout(shape, layout, 64, &notes);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/limits.h"
#include "llm/layout.h"

namespace pipescope {

// Which training framework runs the layout: decides what it offers (llm/framework.h).
enum class Framework : uint8_t { Megatron, Torch, DeepSpeed };
std::string to_string(Framework framework);  // "megatron", "torch", "deepspeed"
std::optional<Framework> framework_from_name(const std::string& name);
// How the framework runs selective recompute (llm/layout.h's SelectivePolicy): torch's
// per-op policy (torchtitan), Megatron-LM's attention core elsewhere.
inline SelectivePolicy selective_policy(Framework framework) {
  return framework == Framework::Torch ? SelectivePolicy::EveryOtherMatmul : SelectivePolicy::CoreAttention;
}

// The limits of a job (docs/reliability.md, Limits), checked where a job or a search
// request is validated and nowhere else. Within them the degree and batch products (t cp d p,
// b d, b M d) fit int64; byte counts are doubles (llm/memory.h) and a pipeline's tensor
// or total beyond 2^62 bytes is refused where it becomes an integer (build_cost_model).
// kMaxGpus (the GPUs and each of t, cp, ep, d, p) and kMaxBatch (sequences per step, b and
// M) are core/limits.h's, shared with the profile search.
constexpr int kMaxVirtualStages = 64;      // v, chunks per pipeline rank (make_plan's limit)
constexpr int kMaxLayers = 1000000;        // L (profiles' layer limit)
constexpr int kMaxWidth = 1 << 24;         // h, f, head dimension, expert widths
constexpr int kMaxHeads = 1 << 16;         // a, KV heads, experts, top-k
constexpr int kMaxSequence = 1 << 24;      // s
constexpr int kMaxVocabulary = 1 << 30;    // V before and after padding; --make-vocab-size-divisible-by <= 2^16

// Megatron's --ffn-hidden-size default: 4 h, or int(8 h / 3 / 64) * 64 with --swiglu.
int default_ffn_hidden(int hidden, bool swiglu);
// Megatron's padded vocabulary: the next multiple of divisible_by x t
// (--make-vocab-size-divisible-by, default 128).
int padded_vocabulary(int vocabulary, int t, int divisible_by = 128);

// Layers of each of the p * v chunks, in model order (chunk c runs on rank chunk_rank(layout,
// c) of llm/pipeline_schedule.h: c % p, or the V's c < p ? c : 2p-1-c).
// Throws InputError when they do not cut the layers into p * v chunks (a layout that
// skipped validate_layout: llm/step_time.h's callers).
std::vector<int> chunk_layers(const TransformerShape& shape, const ParallelLayout& layout);

// Throws InputError naming the flag and the numbers. `notes` (optional) receives what
// was changed the way Megatron changes it: --sequence-parallel with t = 1 is turned off
// (arguments.py warns "Disabling sequence parallelism because tensor model parallelism
// is disabled" and carries on).
// validate_layout's checks of the model against the layout's degrees, the part that needs
// no cut and no framework: the shape's own fields, t dividing the heads, KV groups, FFN
// width and vocabulary, ep the experts (and no ep on a dense model) and d cp, cp the
// sequence (2 cp). Throws InputError naming the flag and the numbers.
void check_model_against_layout(const TransformerShape& shape, const ParallelLayout& layout);

ParallelLayout validate_layout(const TransformerShape& shape, const ParallelLayout& layout, int gpus,
                               std::vector<std::string>* notes = nullptr);

}  // namespace pipescope
