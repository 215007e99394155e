// The closed forms of llm/memory.h. Counts are doubles: Megatron's (6 + 12 / d) bytes
// per parameter are not whole numbers, and the totals stay exact below 2^53.
#include "llm/memory.h"

#include <algorithm>
#include <cstdio>

#include "llm/layout_check.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

int kv_heads(const TransformerShape& s) { return s.kv_heads == 0 ? s.heads : s.kv_heads; }
int ffn(const TransformerShape& s) { return s.ffn_hidden == 0 ? default_ffn_hidden(s.hidden, s.swiglu) : s.ffn_hidden; }
int moe_ffn(const TransformerShape& s) { return s.moe_ffn_hidden == 0 ? ffn(s) : s.moe_ffn_hidden; }

// Two (gelu) or three (SwiGLU) h x f matrices; fc1's bias f (2 f) splits t ways, fc2's h does not.
void add_mlp(LayerParameters& out, const TransformerShape& s, double f) {
  const double h = s.hidden, gated = s.swiglu ? 1.5 : 1.0;
  out.tp_sharded += 2 * h * f * gated;
  if (s.bias_linear || s.mlp_bias) {
    out.tp_sharded += f * (s.swiglu ? 2 : 1);
    out.replicated += h;
  }
}

struct Bytes {
  double parameter = 0, gradient = 0, optimizer = 0;
};

// `params` held by every GPU of a data-parallel group of `group` ranks, sharded as `sharding` says.
Bytes bytes_of(double params, const Precision& pr, Sharding sharding, double group) {
  const bool grads = sharding == Sharding::Zero2 || sharding == Sharding::Zero3;
  Bytes b;
  b.parameter = params * pr.parameter_bytes / (sharding == Sharding::Zero3 ? group : 1);
  b.gradient = params * pr.gradient_bytes / (grads ? group : 1);
  b.optimizer = params * pr.optimizer_bytes / (sharding == Sharding::None ? 1 : group);
  return b;
}

// A pipeline rank's transformer layers: how many, and their parameters summed in model
// order. Every layer is one of two kinds (dense or MoE), each counted once per call.
struct RankLayers {
  int count = 0;
  LayerParameters sum;
};

void add_to(LayerParameters& sum, const LayerParameters& lp) {
  sum.tp_sharded += lp.tp_sharded, sum.replicated += lp.replicated, sum.expert += lp.expert;
}

// The layers each pipeline rank holds, over its v chunks (chunk c on rank chunk_rank(c)).
std::vector<RankLayers> layers_of_ranks(const TransformerShape& shape, const ParallelLayout& layout) {
  std::vector<RankLayers> out(static_cast<std::size_t>(layout.p));
  const std::vector<int> chunks = chunk_layers(shape, layout);
  const LayerParameters dense = layer_parameters(shape, false);
  const LayerParameters moe = shape.experts > 0 ? layer_parameters(shape, true) : dense;
  int next = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    RankLayers& rank = out[static_cast<std::size_t>(chunk_rank(layout, static_cast<int>(c)))];
    for (int i = 0; i < chunks[c]; ++i, ++next, ++rank.count) add_to(rank.sum, is_moe_layer(shape, next) ? moe : dense);
  }
  return out;
}

// Megatron's closed forms hold for its own schedules (and p = 1: no pipeline).
bool megatron_schedule(const ParallelLayout& l) {
  const ScheduleKind k = layout_schedule(l);
  return l.p == 1 || k == ScheduleKind::OneFOneB || k == ScheduleKind::Interleaved;
}

// Parameters per GPU of rank k: its layers, the embedding (rank 0), the final norm and
// the output layer (the last chunk's rank: p - 1, or 0 for a V; Megatron keeps a copy of
// tied word embeddings there too when that is not rank 0).
void add_parameters(RankMemory& st, const TransformerShape& shape, const ParallelLayout& l, const RankLayers& layers) {
  LayerParameters sum = layers.sum;
  if (st.embedding) add_to(sum, embedding_parameters(shape));
  if (st.head) add_to(sum, head_parameters(shape, !st.embedding || !shape.tied_embeddings));
  st.expert_parameters = LayerParameters{0, 0, sum.expert}.per_gpu(l.t, l.ep);
  st.parameters = sum.per_gpu(l.t, l.ep);
  const Precision pr = precision_of(l.precision);
  const double group = static_cast<double>(l.d) * l.cp;
  const Bytes dense = bytes_of(st.parameters - st.expert_parameters, pr, l.sharding, group);
  const Bytes expert = bytes_of(st.expert_parameters, pr, l.sharding, group / l.ep);
  st.parameter_bytes = dense.parameter + expert.parameter;
  st.gradient_bytes = dense.gradient + expert.gradient;
  st.optimizer_bytes = dense.optimizer + expert.optimizer;
}

// The activation bytes of one micro-batch llm_memory adds up per rank, each counted once per call.
struct ActivationBytes {
  double layer = 0, embedding = 0, head = 0;
  double recomputed = 0;  // full recompute: the one layer being recomputed keeps its whole stash
};

ActivationBytes activation_bytes_of(const TransformerShape& shape, const ParallelLayout& l) {
  ActivationBytes out;
  out.layer = layer_activation_bytes(shape, l);
  out.embedding = embedding_activation_bytes(shape, l);
  out.head = head_activation_bytes(shape, l);
  if (l.recompute == Recompute::Full) {
    ParallelLayout kept = l;
    kept.recompute = Recompute::None;
    out.recomputed = layer_activation_bytes(shape, kept);
  }
  return out;
}

// Rank k's activations under Megatron's schedules: its in-flight chunk-micro-batches x
// its mean layers per chunk (exact for even chunks), the embedding's micro-batches on
// rank 0 (1F1B: min(p, M); interleaved: chunk 0 holds min(M, 2 p) at the peak, two rounds
// of p forwards before its first backward), one micro-batch of the head on rank p - 1.
// Other schedules: the byte peak of llm/pipeline_schedule.h's walk, each chunk holding its
// layers' (and the embedding's or head's) activation bytes from F to I and their
// weight-gradient bytes from I to W (peak_bytes). Both add, under full recompute, the one
// layer being recomputed.
void add_activations(RankMemory& st, const ParallelLayout& l, const ActivationBytes& bytes, const InFlight* walked,
                     const std::vector<double>& walked_bytes) {
  const bool megatron = walked == nullptr;
  const int chunks = megatron ? in_flight_chunks(l, st.rank) : walked->rank_chunks[static_cast<std::size_t>(st.rank)];
  st.in_flight = static_cast<double>(chunks) / l.v;
  if (megatron) {
    st.activation_bytes = st.in_flight * st.layers * bytes.layer;
    if (st.embedding) {
      const int held = l.v == 1 ? std::min(l.p, l.microbatches) : std::min(l.microbatches, 2 * l.p);
      st.activation_bytes += held * bytes.embedding;
    }
    if (st.head) st.activation_bytes += bytes.head;
  } else {
    st.activation_bytes = walked_bytes[static_cast<std::size_t>(st.rank)];
  }
  if (l.recompute == Recompute::Full && st.layers > 0) st.activation_bytes += bytes.recomputed;
}

}  // namespace

bool is_moe_layer(const TransformerShape& shape, int layer) {
  return shape.experts > 0 && layer % shape.moe_layer_frequency == 0;
}

// Attention 2 h c (a + kv) = 2 h^2 (1 + kv / a) at c = h / a; norms 2 x (1 or 2) h;
// MoE: experts x MLP(moe_ffn) + router h E (+ E bias) + a shared expert.
LayerParameters layer_parameters(const TransformerShape& s, bool moe) {
  const double h = s.hidden, a = s.heads, kv = kv_heads(s);
  const double c = s.kv_channels == 0 ? h / a : s.kv_channels;  // head dimension
  LayerParameters out;
  out.tp_sharded = 2 * h * c * (a + kv);  // q and o: h x a c; k and v: h x kv c
  if (s.bias_linear || s.qkv_bias) out.tp_sharded += c * (a + 2 * kv);
  if (s.bias_linear || s.output_bias) out.replicated += h;  // o_proj's bias
  out.replicated += 2 * (s.rms_norm ? 1.0 : 2.0) * h;
  if (!moe) {
    add_mlp(out, s, ffn(s));
    return out;
  }
  if (s.shared_expert_ffn_hidden > 0) add_mlp(out, s, s.shared_expert_ffn_hidden);
  out.expert = static_cast<double>(s.experts) * 2 * h * moe_ffn(s) * (s.swiglu ? 1.5 : 1.0);
  out.replicated += h * s.experts + (s.bias_linear ? s.experts : 0);
  return out;
}

LayerParameters embedding_parameters(const TransformerShape& s) {
  LayerParameters out;
  out.tp_sharded = static_cast<double>(s.vocabulary) * s.hidden;
  if (s.learned_positions) out.replicated = static_cast<double>(s.sequence) * s.hidden;
  return out;
}

LayerParameters head_parameters(const TransformerShape& s, bool output_layer) {
  LayerParameters out;
  out.replicated = (s.rms_norm ? 1.0 : 2.0) * s.hidden;
  if (output_layer) out.tp_sharded = static_cast<double>(s.vocabulary) * s.hidden;
  return out;
}

ModelParameters model_parameters(const TransformerShape& s) {
  ModelParameters out;
  out.embedding = embedding_parameters(s).total();
  out.head = head_parameters(s, !s.tied_embeddings).total();
  for (int i = 0; i < s.layers; ++i) {
    const bool moe = is_moe_layer(s, i);
    const LayerParameters lp = layer_parameters(s, moe);
    out.layers += lp.total();
    const double routed = moe ? static_cast<double>(std::max(s.moe_topk, 1)) / s.experts : 1.0;
    out.active_layers += lp.tp_sharded + lp.replicated + lp.expert * routed;
  }
  return out;
}

// Table 2 of Korthikanti et al. with f for the MLP's 4 h (Megatron's 18 + 4 f / h):
// 10 s b h stay whole without SP (two norm inputs, QKV and MLP inputs, two dropout
// masks), the rest (8 + 4 f / h) s b h splits t ways; the attention scores 5 a s^2 b
// split over heads; full recompute keeps the layer input 2 s b h.
double layer_activation_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const double s = static_cast<double>(shape.sequence) / l.cp, b = l.micro_batch, h = shape.hidden;
  const double t = l.t, sbh = s * b * h;
  const bool sp = l.sequence_parallel && l.t > 1;
  if (l.recompute == Recompute::Full) return 2 * sbh / (sp ? t : 1);
  if (l.recompute == Recompute::Selective && l.selective == SelectivePolicy::EveryOtherMatmul) {
    // torchtitan's per-op policy saves the block input and the outputs of the 1st, 3rd, 5th
    // and 7th matmul (wq, wv, w1, w2; w2's is whole before its reduce-scatter) and of SDPA
    // (its output and log-sum-exp); the rest is recomputed.
    const double hd = shape.kv_channels > 0 ? shape.kv_channels : h / shape.heads;
    const double q = shape.heads * hd, kv = (shape.kv_heads > 0 ? shape.kv_heads : shape.heads) * hd;
    return 2 * sbh / (sp ? t : 1) + s * b * (2 * q + 2 * kv + 2 * q + 2 * ffn(shape)) / t + 2 * sbh +
           4.0 * shape.heads * s * b / t;
  }
  const double split = (8 + 4.0 * ffn(shape) / h) * sbh / t;
  double bytes = sp ? 10 * sbh / t + split : 10 * sbh + split;
  // Unfused attention keeps its s x s scores (softmax output 2, dropout mask 1, dropout
  // output 2 bytes each: Table 2's 5 a s^2 b); a fused kernel keeps only the softmax
  // statistics, one fp32 log-sum-exp per head and query (Q, K, V and the output are in the
  // 34 s b h already), and selective recompute drops either.
  if (l.recompute == Recompute::None) {
    bytes += l.attention == AttentionKernel::Unfused ? 5.0 * shape.heads * s * s * b / t : 4.0 * shape.heads * s * b / t;
  }
  return bytes;
}

double layer_weight_grad_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const double s = static_cast<double>(shape.sequence) / l.cp, b = l.micro_batch, h = shape.hidden;
  const double t = l.t, sbh = s * b * h;
  const bool sp = l.sequence_parallel && l.t > 1;
  // Full recompute and torch's per-op selective recompute keep less than W's inputs: the
  // inputs W needs are rebuilt by the recompute, outside the stash, so I frees nothing.
  if (l.recompute == Recompute::Full ||
      (l.recompute == Recompute::Selective && l.selective == SelectivePolicy::EveryOtherMatmul)) {
    return layer_activation_bytes(shape, l);
  }
  const double whole = 4 * sbh + 2 * sbh + 2 * sbh;          // norm inputs, QKV's and fc1's inputs
  const double split = 2 * sbh + 2 * s * b * ffn(shape);     // the output projection's and fc2's inputs
  return (sp ? whole / t : whole) + split / t;
}

double embedding_weight_grad_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const double s = static_cast<double>(shape.sequence) / l.cp, b = l.micro_batch;
  const bool sp = l.sequence_parallel && l.t > 1;
  return 8 * s * b / (sp ? l.t : 1);
}

double head_weight_grad_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const double s = static_cast<double>(shape.sequence) / l.cp, b = l.micro_batch;
  const bool sp = l.sequence_parallel && l.t > 1;
  return 4 * s * b * shape.hidden / (sp ? l.t : 1);
}

double embedding_activation_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const double s = static_cast<double>(shape.sequence) / l.cp, b = l.micro_batch;
  const bool sp = l.sequence_parallel && l.t > 1;
  return (8 * s * b + (shape.embedding_dropout ? s * b * shape.hidden : 0.0)) / (sp ? l.t : 1);
}

double head_activation_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const double s = static_cast<double>(shape.sequence) / l.cp, b = l.micro_batch;
  const bool sp = l.sequence_parallel && l.t > 1;
  return 4 * s * b * shape.vocabulary / l.t + 4 * s * b * shape.hidden / (sp ? l.t : 1);
}

std::vector<StashBytes> chunk_stash_bytes(const TransformerShape& shape, const ParallelLayout& l) {
  const std::vector<int> layers = chunk_layers(shape, l);
  const double act = layer_activation_bytes(shape, l), wg = layer_weight_grad_bytes(shape, l);
  std::vector<StashBytes> out;
  for (std::size_t c = 0; c < layers.size(); ++c) {
    StashBytes b{layers[c] * act, layers[c] * wg};
    if (c == 0) b.held += embedding_activation_bytes(shape, l), b.for_weight += embedding_weight_grad_bytes(shape, l);
    if (c + 1 == layers.size()) b.held += head_activation_bytes(shape, l), b.for_weight += head_weight_grad_bytes(shape, l);
    out.push_back(b);
  }
  return out;
}

int in_flight_chunks(const ParallelLayout& l, int rank) {
  if (!megatron_schedule(l)) {
    const InFlight f = schedule_in_flight(layout_schedule(l), l.p, l.v, l.microbatches);
    return f.rank_chunks[static_cast<std::size_t>(rank)];
  }
  // Megatron runs 1F1B with v = 1, its interleaving with v > 1: their records' closed forms.
  const ScheduleKind kind = l.v == 1 ? ScheduleKind::OneFOneB : ScheduleKind::Interleaved;
  return schedule_kind(kind).in_flight(l.p, rank, l.v, l.microbatches);
}

double LlmMemory::peak() const {
  double out = 0;
  for (const RankMemory& st : stages) out = std::max(out, st.total());
  return out;
}

int binding_rank(const std::vector<RankMemory>& ranks) {
  int out = -1;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (out < 0 || ranks[k].total() > ranks[static_cast<std::size_t>(out)].total()) out = static_cast<int>(k);
  }
  return out;
}

std::string binding_rank_line(const std::vector<RankMemory>& ranks, double capacity, double headroom) {
  const int k = binding_rank(ranks);
  if (k < 0) return "";
  const RankMemory& m = ranks[static_cast<std::size_t>(k)];
  char line[384];
  std::snprintf(line, sizeof line,
                "memory: rank %d binds first at %.2f GB (%.2f weights + %.2f gradients + %.2f optimizer + %.2f "
                "activations), %.2f GB left of %.2f GB usable (%.2f GB less %.2f GB headroom)",
                m.rank, m.total() / 1e9, m.parameter_bytes / 1e9, m.gradient_bytes / 1e9, m.optimizer_bytes / 1e9,
                m.activation_bytes / 1e9, (capacity - headroom - m.total()) / 1e9, (capacity - headroom) / 1e9,
                capacity / 1e9, headroom / 1e9);
  return line;
}

LlmMemory llm_memory(const TransformerShape& shape, const ParallelLayout& layout, const InFlight* walked) {
  InFlight own;
  if (megatron_schedule(layout)) {
    walked = nullptr;
  } else if (walked == nullptr) {
    own = schedule_in_flight(layout_schedule(layout), layout.p, layout.v, layout.microbatches);
    walked = &own;
  }
  const int head_rank = chunk_rank(layout, layout.p * layout.v - 1);
  std::vector<double> walked_bytes;
  if (walked != nullptr) {
    const std::vector<StashBytes> chunks = chunk_stash_bytes(shape, layout);
    std::vector<double> held, for_weight;
    for (const StashBytes& c : chunks) held.push_back(c.held), for_weight.push_back(c.for_weight);
    walked_bytes = peak_bytes(*walked, held, for_weight);
  }
  const ActivationBytes bytes = activation_bytes_of(shape, layout);
  LlmMemory out;
  out.layer_activation_bytes = bytes.layer;
  const std::vector<RankLayers> ranks = layers_of_ranks(shape, layout);
  out.stages.reserve(ranks.size());
  for (int k = 0; k < layout.p; ++k) {
    const RankLayers& layers = ranks[static_cast<std::size_t>(k)];
    RankMemory st;
    st.rank = k;
    st.layers = layers.count;
    st.embedding = k == 0;
    st.head = k == head_rank;
    add_parameters(st, shape, layout, layers);
    add_activations(st, layout, bytes, walked, walked_bytes);
    out.stages.push_back(st);
  }
  return out;
}

}  // namespace pipescope
