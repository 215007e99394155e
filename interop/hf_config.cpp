// Hugging Face config reading and the parameter / FLOP / activation closed forms of
// interop/hf_config.h. Field names and defaults follow transformers' LlamaConfig,
// MistralConfig, Qwen2Config, GemmaConfig and MixtralConfig.
#include "interop/hf_config.h"

#include <algorithm>
#include <array>

#include "core/error.h"

namespace pipescope {

namespace {

constexpr int64_t kMaxDimension = int64_t{1} << 24;  // 16M: beyond any published model

int64_t required_int(const JsonReader& r, const std::string& key, int64_t max = kMaxDimension) {
  if (!r.has(key)) r.fail("missing field \"" + key + "\" (required for model_type " + r["model_type"].as_string() + ")");
  return r[key].as_int(1, max);
}

// A field that may be absent or null (transformers writes "head_dim": null).
bool present(const JsonReader& r, const std::string& key) { return r.has(key) && !r[key].json().is_null(); }

}  // namespace

HfModel hf_model_from_json(const JsonReader& r) {
  if (!r.json().is_object()) r.fail("expected a Hugging Face config object");
  if (!r.has("model_type")) r.fail("missing field \"model_type\" (one of llama, mistral, qwen2, gemma, mixtral)");
  HfModel m;
  m.source = r.source();
  m.family = r["model_type"].as_string();
  static const std::array<const char*, 5> kFamilies = {"llama", "mistral", "qwen2", "gemma", "mixtral"};
  bool known = false;
  for (const char* f : kFamilies) known = known || m.family == f;
  if (!known) r["model_type"].fail("unknown family \"" + m.family + "\"; expected llama, mistral, qwen2, gemma or mixtral");
  m.name = present(r, "_name_or_path") ? r["_name_or_path"].as_string() : m.family;
  m.hidden = required_int(r, "hidden_size");
  m.ffn = required_int(r, "intermediate_size");
  m.layers = required_int(r, "num_hidden_layers", 100000);
  m.heads = required_int(r, "num_attention_heads");
  m.vocabulary = required_int(r, "vocab_size", int64_t{1} << 26);
  // An absent field takes its config class's default (transformers 5.x); an explicit
  // null num_key_value_heads or head_dim means "as many as the heads" / hidden / heads.
  const bool is_gemma = m.family == "gemma", is_llama = m.family == "llama";
  if (present(r, "num_key_value_heads")) {
    m.kv_heads = r["num_key_value_heads"].as_int(1, m.heads);
  } else if (r.has("num_key_value_heads") || is_llama) {
    m.kv_heads = m.heads;  // LlamaConfig: None; the others: an explicit null
  } else {
    // MistralConfig / MixtralConfig 8, Qwen2Config 32, GemmaConfig 16.
    m.kv_heads = m.family == "qwen2" ? 32 : is_gemma ? 16 : 8;
    if (m.kv_heads > m.heads) {
      r.fail("num_key_value_heads is absent, so it is " + m.family + "'s default " + std::to_string(m.kv_heads) +
             ", more than num_attention_heads (" + std::to_string(m.heads) + "); state it");
    }
  }
  if (m.heads % m.kv_heads != 0) r["num_key_value_heads"].fail("must divide num_attention_heads (" + std::to_string(m.heads) + ")");
  if (present(r, "head_dim")) {
    m.head_dim = r["head_dim"].as_int(1, kMaxDimension);
  } else if (is_gemma && !r.has("head_dim")) {
    m.head_dim = 256;  // GemmaConfig's default, whatever hidden / heads is
  } else {
    if (m.hidden % m.heads != 0) r["num_attention_heads"].fail("must divide hidden_size when head_dim is absent");
    m.head_dim = m.hidden / m.heads;
  }
  m.tied = present(r, "tie_word_embeddings") ? r["tie_word_embeddings"].as_bool() : is_gemma;
  // Biases as the modeling files build them: qwen2's q, k, v always (o_proj never);
  // llama's and gemma's q, k, v, o under attention_bias; llama's MLP under mlp_bias;
  // mistral and mixtral have none (they ignore both fields).
  const bool attention_bias = (is_llama || is_gemma) && present(r, "attention_bias") && r["attention_bias"].as_bool();
  m.qkv_bias = m.family == "qwen2" || attention_bias;
  m.output_bias = attention_bias;
  m.mlp_bias = is_llama && present(r, "mlp_bias") && r["mlp_bias"].as_bool();
  if (m.family == "mixtral") {  // MixtralConfig: 8 experts, 2 per token
    m.experts = r.has("num_local_experts") ? r["num_local_experts"].as_int(1, 4096) : 8;
    m.top_k = r.has("num_experts_per_tok") ? r["num_experts_per_tok"].as_int(1, m.experts) : std::min<int64_t>(2, m.experts);
  }
  // Counts are int64; a config beyond 10^15 parameters (10^4 x the largest published
  // model) is refused before any count could overflow.
  const double h = static_cast<double>(m.hidden), per_expert = 3.0 * h * static_cast<double>(m.ffn);
  const double attention = h * 2.0 * static_cast<double>(m.attention_width() + m.kv_width());
  const double estimate = static_cast<double>(m.layers) * (attention + std::max<double>(1.0, static_cast<double>(m.experts)) * per_expert) +
                          2.0 * static_cast<double>(m.vocabulary) * h;
  if (estimate > 1e15) r.fail("the model would have " + std::to_string(estimate) + " parameters, beyond the limit of 1e15");
  return m;
}

HfModel load_hf_model(const std::string& path) { return hf_model_from_json(JsonReader::from_file(path)); }

ParameterCount count_parameters(const HfModel& m) {
  ParameterCount c;
  const int64_t h = m.hidden, A = m.attention_width(), Akv = m.kv_width();
  c.layers = m.layers;
  c.embedding = m.vocabulary * h;
  c.attention = h * A + 2 * h * Akv + A * h;
  if (m.qkv_bias) c.attention += A + 2 * Akv;
  if (m.output_bias) c.attention += h;
  const int64_t expert = 3 * h * m.ffn + (m.mlp_bias ? 2 * m.ffn + h : 0);  // gate, up, down (+ their biases)
  if (m.moe()) {
    const int64_t router = h * m.experts;
    c.mlp = m.experts * expert + router;
    c.mlp_active = m.top_k * expert + router;
  } else {
    c.mlp = c.mlp_active = expert;
  }
  c.norms = 2 * h;
  c.final_norm = h;
  c.head = m.tied ? 0 : m.vocabulary * h;
  return c;
}

int64_t ParameterCount::active_matmul() const {
  return layers * (attention + mlp_active) + embedding;  // the head multiplies a V x h matrix, tied or not
}

LayerFlops decoder_layer_flops(const HfModel& m, int64_t seq) {
  const double s = static_cast<double>(seq), h = static_cast<double>(m.hidden);
  const double A = static_cast<double>(m.attention_width()), Akv = static_cast<double>(m.kv_width());
  const double f = static_cast<double>(m.ffn);
  LayerFlops out;
  out.qkv = 2 * s * h * (A + 2 * Akv);
  out.scores = 2 * (2 * s * s * A);
  out.output = 2 * s * A * h;
  const double routed = m.moe() ? static_cast<double>(m.top_k) : 1.0;
  out.router = m.moe() ? 2 * s * h * static_cast<double>(m.experts) : 0.0;
  out.mlp = routed * 3 * (2 * s * h * f);
  return out;
}

double head_flops(const HfModel& m, int64_t seq) {
  return 2.0 * static_cast<double>(seq) * static_cast<double>(m.hidden) * static_cast<double>(m.vocabulary);
}

double training_flops_per_token(const HfModel& m, int64_t seq) {
  const LayerFlops l = decoder_layer_flops(m, seq);
  const double per_layer = l.forward() + l.backward_input() + l.backward_weight();
  const double head = 3 * head_flops(m, seq);
  return (static_cast<double>(m.layers) * per_layer + head) / static_cast<double>(seq);
}

double decoder_layer_activation_bytes(const HfModel& m, int64_t seq, int dtype_bytes, bool selective_recompute,
                                      int tp) {
  // Elements kept per token (Korthikanti et al. 2022, sec. 4.1, tensor by tensor; these
  // families have no dropout, so no masks):
  //   two RMSNorm inputs 2h; QKV GEMM input h; Q and K for the scores A + Akv; V Akv;
  //   o_proj input A; MLP input h; SwiGLU: the fused gate|up output 2f (SiLU is
  //   recomputed from it, as Megatron's fused swiglu does) and down_proj's input f.
  //   Under MoE each token's MLP tensors are kept once per routed expert, plus the
  //   dispatched copy of its input (h) and the router's logits (E).
  const double h = static_cast<double>(m.hidden), A = static_cast<double>(m.attention_width());
  const double Akv = static_cast<double>(m.kv_width()), f = static_cast<double>(m.ffn);
  const double routed = m.moe() ? static_cast<double>(m.top_k) : 1.0;
  double per_token = 2 * h + h + (A + Akv) + Akv + A + h;
  per_token += m.moe() ? routed * (h + 3 * f) + static_cast<double>(m.experts) : 3 * f;
  // The attention probabilities: heads x s per token (s^2 heads per sequence), kept
  // unless the attention core is recomputed (selective recompute / flash attention).
  if (!selective_recompute) per_token += static_cast<double>(m.heads) * static_cast<double>(seq);
  return per_token * static_cast<double>(seq) * dtype_bytes / tp;
}

double decoder_layer_weight_grad_bytes(const HfModel& m, int64_t seq, int dtype_bytes, int tp) {
  // Per token: RMSNorm inputs 2h, QKV input h, o_proj input A, MLP (or router) input h,
  // and down_proj's input f (under MoE each routed expert's input h and down input f).
  const double h = static_cast<double>(m.hidden), A = static_cast<double>(m.attention_width());
  const double f = static_cast<double>(m.ffn);
  double per_token = 2 * h + h + A + h;
  per_token += m.moe() ? static_cast<double>(m.top_k) * (h + f) : f;
  return per_token * static_cast<double>(seq) * dtype_bytes / tp;
}

}  // namespace pipescope
