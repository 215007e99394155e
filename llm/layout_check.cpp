// Each check is one Megatron-LM refusal, restated (the other frameworks make the same ones on
// the model); the message names the flag and the numbers so that a user can fix the command
// line. What one framework refuses and another runs is llm/framework_refusal.cpp's.
#include "llm/layout_check.h"

#include <limits>
#include <numeric>

#include "core/error.h"
#include "llm/collectives.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

[[noreturn]] void refuse(const std::string& flag, const std::string& what) { throw InputError("", flag, what); }

void require_positive(const std::string& flag, int64_t value) {
  if (value < 1) refuse(flag, "expected a positive integer, got " + str(value));
}

void check_shape(const TransformerShape& s) {
  require_positive("--num-layers", s.layers);
  require_positive("--hidden-size", s.hidden);
  require_positive("--num-attention-heads", s.heads);
  require_positive("--seq-length", s.sequence);
  require_positive("--vocab-size", s.vocabulary);
  if (s.ffn_hidden < 0) refuse("--ffn-hidden-size", "expected a positive integer, got " + str(s.ffn_hidden));
  // 0 where a field has a default (4 h, h / a, a, dense); a negative value is never "unset"
  for (auto [flag, value, lo, hi] : {std::tuple{"--num-layers", s.layers, 1, kMaxLayers},
                                     {"--hidden-size", s.hidden, 1, kMaxWidth},
                                     {"--num-attention-heads", s.heads, 1, kMaxHeads},
                                     {"--seq-length", s.sequence, 1, kMaxSequence},
                                     {"--vocab-size", s.vocabulary, 1, kMaxVocabulary},
                                     {"--ffn-hidden-size", s.ffn_hidden, 0, kMaxWidth},
                                     {"--num-query-groups", s.kv_heads, 0, kMaxHeads},
                                     {"--kv-channels", s.kv_channels, 0, kMaxWidth},
                                     {"--num-experts", s.experts, 0, kMaxHeads},
                                     {"--moe-router-topk", s.moe_topk, 0, kMaxHeads},
                                     {"--moe-ffn-hidden-size", s.moe_ffn_hidden, 0, kMaxWidth},
                                     {"--moe-layer-freq", s.moe_layer_frequency, 0, kMaxLayers},
                                     {"--moe-shared-expert-intermediate-size", s.shared_expert_ffn_hidden, 0, kMaxWidth}}) {
    check_range(flag, value, lo, hi);
  }
  if (s.kv_channels == 0 && s.hidden % s.heads != 0) {
    refuse("--hidden-size", str(s.hidden) + " is not a multiple of --num-attention-heads " + str(s.heads) +
                                " (Megatron's kv_channels default is h / a)");
  }
  const int kv = s.kv_heads == 0 ? s.heads : s.kv_heads;
  if (kv < 1 || s.heads % kv != 0) {
    refuse("--num-query-groups", "expected a divisor of --num-attention-heads " + str(s.heads) + ", got " + str(kv));
  }
  if (s.experts < 0 || (s.experts > 0 && (s.moe_topk < 1 || s.moe_topk > s.experts))) {
    refuse("--moe-router-topk", "expected 1 ..= --num-experts " + str(s.experts) + ", got " + str(s.moe_topk));
  }
  if (s.experts > 0 && s.moe_layer_frequency < 1) {
    refuse("--moe-layer-freq", "expected a positive integer, got " + str(s.moe_layer_frequency));
  }
}

void check_degrees(const ParallelLayout& l, int gpus) {
  require_positive("--tensor-model-parallel-size", l.t);
  require_positive("--context-parallel-size", l.cp);
  require_positive("--expert-model-parallel-size", l.ep);
  require_positive("data-parallel size", l.d);
  require_positive("--pipeline-model-parallel-size", l.p);
  require_positive("virtual pipeline size", l.v);
  require_positive("--micro-batch-size", l.micro_batch);
  require_positive("micro-batches", l.microbatches);
  check_range("--gpus", gpus, 1, kMaxGpus);
  for (auto [flag, value] : {std::pair{"--tensor-model-parallel-size", l.t}, {"--context-parallel-size", l.cp},
                             {"--expert-model-parallel-size", l.ep}, {"data-parallel size", l.d},
                             {"--pipeline-model-parallel-size", l.p}}) {
    check_range(flag, value, 1, kMaxGpus);
  }
  check_range("virtual pipeline size", l.v, 1, kMaxVirtualStages);
  check_range("--micro-batch-size", l.micro_batch, 1, kMaxBatch);
  check_range("micro-batches", l.microbatches, 1, kMaxBatch);
  if (static_cast<int64_t>(l.t) * l.cp * l.d * l.p != gpus) {
    refuse("--gpus", "t * cp * d * p = " + str(l.t) + " * " + str(l.cp) + " * " + str(l.d) + " * " + str(l.p) +
                         " = " + str(static_cast<int64_t>(l.t) * l.cp * l.d * l.p) + ", but the cluster has " +
                         str(gpus) + " GPUs");
  }
}

// megatron/core/transformer/transformer_config.py: heads % t == 0, and the query groups
// a multiple of t or a divisor of it (KV heads are then replicated t / groups times);
// ColumnParallelLinear divides the FFN width and the vocabulary t ways.
void check_tensor_parallel(const TransformerShape& s, const ParallelLayout& l) {
  const int kv = s.kv_heads == 0 ? s.heads : s.kv_heads;
  if (s.heads % l.t != 0) {
    refuse("--tensor-model-parallel-size", "t = " + str(l.t) + " does not divide --num-attention-heads " +
                                               str(s.heads));
  }
  if (kv % l.t != 0 && l.t % kv != 0) {
    refuse("--tensor-model-parallel-size", "t = " + str(l.t) + " neither divides nor is a multiple of "
                                               "--num-query-groups " + str(kv));
  }
  const int ffn = s.ffn_hidden == 0 ? default_ffn_hidden(s.hidden, s.swiglu) : s.ffn_hidden;
  if (ffn % l.t != 0) {
    refuse("--tensor-model-parallel-size", "t = " + str(l.t) + " does not divide --ffn-hidden-size " + str(ffn));
  }
  if (s.vocabulary % l.t != 0) {
    refuse("--vocab-size", "the padded vocabulary " + str(s.vocabulary) + " is not a multiple of t = " + str(l.t) +
                               " (pad it with padded_vocabulary)");
  }
}

// arguments.py: --num-experts % ep == 0; parallel_state: the expert data-parallel group
// is (t cp d) / (etp ep) ranks with etp = t, so ep divides d * cp; s % (2 cp) == 0.
void check_experts_and_context(const TransformerShape& s, const ParallelLayout& l) {
  if (l.ep > 1 && s.experts == 0) {
    refuse("--expert-model-parallel-size", "ep = " + str(l.ep) + " needs --num-experts (the model is dense)");
  }
  if (s.experts > 0 && s.experts % l.ep != 0) {
    refuse("--expert-model-parallel-size", "ep = " + str(l.ep) + " does not divide --num-experts " + str(s.experts));
  }
  if ((static_cast<int64_t>(l.d) * l.cp) % l.ep != 0) {
    refuse("--expert-model-parallel-size", "ep = " + str(l.ep) + " does not divide d * cp = " + str(l.d) + " * " +
                                               str(l.cp) + " = " + str(static_cast<int64_t>(l.d) * l.cp));
  }
  if (l.cp > 1 && s.sequence % (2 * l.cp) != 0) {
    refuse("--context-parallel-size", "--seq-length " + str(s.sequence) + " is not a multiple of 2 * cp = " +
                                          str(2 * l.cp) + " (each rank takes two of the 2 cp chunks)");
  }
}

void check_chunks(const TransformerShape& s, const ParallelLayout& l) {
  const int chunks = l.p * l.v;
  if (l.v > 1 && l.p < 2) {
    refuse("--num-layers-per-virtual-pipeline-stage", "interleaving (v = " + str(l.v) +
                                                          ") needs --pipeline-model-parallel-size > 1");
  }
  if (l.layers_per_chunk.empty()) {
    if (s.layers < chunks) {
      refuse("--num-layers", str(s.layers) + " layers cannot give each of p * v = " + str(l.p) + " * " + str(l.v) +
                                 " = " + str(chunks) + " chunks a layer (expected p * v <= " + str(s.layers) + ")");
    }
    if (s.layers % chunks != 0) {
      refuse("--num-layers", str(s.layers) + " layers do not fill p * v = " + str(l.p) + " * " + str(l.v) + " = " +
                                 str(chunks) + " chunks evenly");
    }
    return;
  }
  if (static_cast<int>(l.layers_per_chunk.size()) != chunks) {
    refuse("layers_per_chunk", "expected p * v = " + str(chunks) + " entries, got " +
                                   str(static_cast<int64_t>(l.layers_per_chunk.size())));
  }
  for (std::size_t c = 0; c < l.layers_per_chunk.size(); ++c) {
    if (l.layers_per_chunk[c] < 1) refuse("layers_per_chunk[" + str(static_cast<int64_t>(c)) + "]", "expected >= 1");
  }
  const int64_t sum = std::accumulate(l.layers_per_chunk.begin(), l.layers_per_chunk.end(), int64_t{0});
  if (sum != s.layers) {
    refuse("layers_per_chunk", "the entries sum to " + str(sum) + ", but --num-layers is " + str(s.layers));
  }
}

}  // namespace

std::string to_string(Framework framework) {
  switch (framework) {
    case Framework::Megatron: return "megatron";
    case Framework::Torch: return "torch";
    case Framework::DeepSpeed: return "deepspeed";
  }
  return "megatron";
}

std::optional<Framework> framework_from_name(const std::string& name) {
  if (name == "megatron") return Framework::Megatron;
  if (name == "torch") return Framework::Torch;
  if (name == "deepspeed") return Framework::DeepSpeed;
  return std::nullopt;
}

int default_ffn_hidden(int hidden, bool swiglu) {
  // 4 h overflows an int past h = 2^29: such a shape is refused here, before any count uses it.
  const int64_t ffn = swiglu ? static_cast<int64_t>((4.0 * hidden * 2 / 3) / 64) * 64 : int64_t{4} * hidden;
  if (ffn > std::numeric_limits<int>::max())
    throw InputError("hidden size " + std::to_string(hidden) + ": the default FFN width (" + std::to_string(ffn) +
                     ") exceeds 2^31 - 1; give the FFN width or a smaller hidden size");
  return static_cast<int>(ffn);
}

int padded_vocabulary(int vocabulary, int t, int divisible_by) {
  check_range("--make-vocab-size-divisible-by", divisible_by, 1, 1 << 16);
  check_range("--tensor-model-parallel-size", t, 1, kMaxGpus);
  const int64_t multiple = static_cast<int64_t>(divisible_by) * t;
  const int64_t padded = (vocabulary + multiple - 1) / multiple * multiple;
  if (padded > kMaxVocabulary) {
    refuse("--make-vocab-size-divisible-by", "the vocabulary " + str(vocabulary) + " padded to a multiple of " +
                                                 str(divisible_by) + " x t = " + str(multiple) + " is " + str(padded) +
                                                 ", beyond " + str(kMaxVocabulary));
  }
  return static_cast<int>(padded);
}

std::vector<int> chunk_layers(const TransformerShape& shape, const ParallelLayout& l) {
  const int chunks = l.p * l.v;
  if (!l.layers_per_chunk.empty()) {
    const int64_t sum = std::accumulate(l.layers_per_chunk.begin(), l.layers_per_chunk.end(), int64_t{0});
    if (static_cast<int>(l.layers_per_chunk.size()) != chunks || sum != shape.layers) {
      throw InputError("layers_per_chunk: expected " + str(chunks) + " entries adding up to --num-layers " +
                       str(shape.layers));
    }
    return l.layers_per_chunk;
  }
  if (chunks < 1 || shape.layers % chunks != 0) {
    throw InputError("--num-layers " + str(shape.layers) + " is not a multiple of p x v = " + str(chunks) +
                     " (--pipeline-model-parallel-size x virtual stages)");
  }
  return std::vector<int>(static_cast<std::size_t>(chunks), shape.layers / chunks);
}

void check_model_against_layout(const TransformerShape& shape, const ParallelLayout& layout) {
  check_shape(shape);
  check_degrees(layout, layout.gpus());
  check_tensor_parallel(shape, layout);
  check_experts_and_context(shape, layout);
}

ParallelLayout validate_layout(const TransformerShape& shape, const ParallelLayout& layout, int gpus,
                               std::vector<std::string>* notes) {
  check_shape(shape);
  check_degrees(layout, gpus);
  check_tensor_parallel(shape, layout);
  check_experts_and_context(shape, layout);
  check_chunks(shape, layout);
  if (const std::string why = schedule_refusal(layout); !why.empty()) throw InputError(why);
  check_rank_order(layout);  // a permutation of tp, cp, ep, dp, pp, whichever command built the layout
  if (layout.tp_comm_overlap && !(layout.t > 1 && layout.sequence_parallel)) {
    refuse("--tp-comm-overlap", "overlaps tensor-parallel collectives with GEMMs only under --sequence-parallel with "
                                "t > 1 (Megatron-LM's arguments.py asserts it; torchtitan's async TP needs SP too), got t = " +
                                    str(layout.t) + (layout.sequence_parallel ? " with SP" : " without SP"));
  }
  ParallelLayout out = layout;
  if (implied_fp8(out.precision, out.fp8) != out.fp8) {
    out.fp8 = implied_fp8(out.precision, out.fp8);
    if (notes != nullptr) {
      notes->push_back("fp8-params (--fp8-param-gather) runs fp8 GEMMs: --fp8-format hybrid --fp8-recipe delayed "
                       "assumed (Megatron-LM's arguments.py requires an fp8 format for it)");
    }
  }
  if (out.t == 1 && out.sequence_parallel) {
    out.sequence_parallel = false;
    if (notes != nullptr) {
      notes->push_back("--sequence-parallel with t = 1 turned off, as Megatron-LM does (\"Disabling sequence "
                       "parallelism because tensor model parallelism is disabled\")");
    }
  }
  return out;
}

}  // namespace pipescope
