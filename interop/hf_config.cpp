// Hugging Face config reading (interop/hf_config.h). Field names and defaults follow
// transformers' LlamaConfig, MistralConfig, Qwen2Config, GemmaConfig and MixtralConfig.
#include "interop/hf_config.h"

#include <algorithm>
#include <array>

#include "core/error.h"

namespace pipescope {

namespace {

constexpr int64_t kMaxDimension = int64_t{1} << 24;  // 16M: beyond any published model

int required_int(const JsonReader& r, const std::string& key, int64_t max = kMaxDimension) {
  if (!r.has(key)) r.fail("missing field \"" + key + "\" (required for model_type " + r["model_type"].as_string() + ")");
  return static_cast<int>(r[key].as_int(1, max));
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
  TransformerShape& s = m.shape;
  s.name = present(r, "_name_or_path") ? r["_name_or_path"].as_string() : m.family;
  s.hidden = required_int(r, "hidden_size");
  s.ffn_hidden = required_int(r, "intermediate_size");
  s.layers = required_int(r, "num_hidden_layers", 100000);
  s.heads = required_int(r, "num_attention_heads");
  s.vocabulary = required_int(r, "vocab_size", int64_t{1} << 26);
  // An absent field takes its config class's default (transformers 5.x); an explicit
  // null num_key_value_heads or head_dim means "as many as the heads" / hidden / heads.
  const bool is_gemma = m.family == "gemma", is_llama = m.family == "llama";
  if (present(r, "num_key_value_heads")) {
    s.kv_heads = static_cast<int>(r["num_key_value_heads"].as_int(1, s.heads));
  } else if (r.has("num_key_value_heads") || is_llama) {
    s.kv_heads = s.heads;  // LlamaConfig: None; the others: an explicit null
  } else {
    // MistralConfig / MixtralConfig 8, Qwen2Config 32, GemmaConfig 16.
    s.kv_heads = m.family == "qwen2" ? 32 : is_gemma ? 16 : 8;
    if (s.kv_heads > s.heads) {
      r.fail("num_key_value_heads is absent, so it is " + m.family + "'s default " + std::to_string(s.kv_heads) +
             ", more than num_attention_heads (" + std::to_string(s.heads) + "); state it");
    }
  }
  if (s.heads % s.kv_heads != 0) r["num_key_value_heads"].fail("must divide num_attention_heads (" + std::to_string(s.heads) + ")");
  int head_dim = 0;
  if (present(r, "head_dim")) {
    head_dim = required_int(r, "head_dim");
  } else if (is_gemma && !r.has("head_dim")) {
    head_dim = 256;  // GemmaConfig's default, whatever hidden / heads is
  } else {
    if (s.hidden % s.heads != 0) r["num_attention_heads"].fail("must divide hidden_size when head_dim is absent");
    head_dim = s.hidden / s.heads;
  }
  if (static_cast<int64_t>(head_dim) * s.heads > kMaxDimension) {
    r.fail("num_attention_heads x head_dim = " + std::to_string(static_cast<int64_t>(head_dim) * s.heads) +
           ", beyond the limit of 16777216");
  }
  if (static_cast<int64_t>(head_dim) * s.heads != s.hidden) s.kv_channels = head_dim;  // else h / a, the default
  s.tied_embeddings = present(r, "tie_word_embeddings") ? r["tie_word_embeddings"].as_bool() : is_gemma;
  // These families: SwiGLU MLPs (gate, up, down), RMSNorm (h weights), rotary positions,
  // no biases but the ones below. Trained as Megatron-LM trains them: its default hidden
  // dropout keeps the embedding's mask (TransformerShape's default).
  s.swiglu = true, s.rms_norm = true, s.learned_positions = false;
  s.bias_linear = false;
  // Biases as the modeling files build them: qwen2's q, k, v always (o_proj never);
  // llama's and gemma's q, k, v, o under attention_bias; llama's MLP under mlp_bias;
  // mistral and mixtral have none (they ignore both fields).
  const bool attention_bias = (is_llama || is_gemma) && present(r, "attention_bias") && r["attention_bias"].as_bool();
  s.qkv_bias = m.family == "qwen2" || attention_bias;
  s.output_bias = attention_bias;
  s.mlp_bias = is_llama && present(r, "mlp_bias") && r["mlp_bias"].as_bool();
  if (m.family == "mixtral") {  // MixtralConfig: 8 experts, 2 per token
    s.experts = r.has("num_local_experts") ? static_cast<int>(r["num_local_experts"].as_int(1, 4096)) : 8;
    s.moe_topk = r.has("num_experts_per_tok") ? static_cast<int>(r["num_experts_per_tok"].as_int(1, s.experts))
                                              : std::min(2, s.experts);
  }
  HfNumerics& n = m.numerics;
  if (present(r, "rope_theta")) n.rope_theta = r["rope_theta"].as_double(0);
  for (const char* eps : {"rms_norm_eps", "layer_norm_eps"}) {
    if (present(r, eps) && !n.norm_epsilon) n.norm_epsilon = r[eps].as_double(0);
  }
  if (present(r, "initializer_range")) n.initializer_range = r["initializer_range"].as_double(0);
  if (r.has("rope_scaling") && r["rope_scaling"].json().is_object()) {
    const JsonReader scaling = r["rope_scaling"];
    n.rope_scaling = true;
    n.rope_scaling_type = scaling.has("rope_type") ? scaling["rope_type"].as_string()
                          : scaling.has("type")    ? scaling["type"].as_string()
                                                   : "";
    if (scaling.has("factor")) n.rope_scaling_factor = scaling["factor"].as_double(0);
  }
  if (r.has("hidden_act") && r["hidden_act"].json().is_string()) n.hidden_act = r["hidden_act"].as_string();
  if (r.has("max_position_embeddings")) {
    n.max_position_embeddings = static_cast<int>(r["max_position_embeddings"].as_int(1, 1 << 30));
  }
  // Counts are doubles and times int64 nanoseconds; a config beyond 10^15 parameters
  // (10^4 x the largest published model) is refused before any count could overflow.
  const double h = static_cast<double>(s.hidden), per_expert = 3.0 * h * static_cast<double>(s.ffn_hidden);
  const double width = static_cast<double>(head_dim) * static_cast<double>(s.heads + s.kv_heads);
  const double estimate = static_cast<double>(s.layers) * (h * 2.0 * width + std::max(1.0, static_cast<double>(s.experts)) * per_expert) +
                          2.0 * static_cast<double>(s.vocabulary) * h;
  if (estimate > 1e15) r.fail("the model would have " + std::to_string(estimate) + " parameters, beyond the limit of 1e15");
  return m;
}

HfModel load_hf_model(const std::string& path) { return hf_model_from_json(JsonReader::from_file(path)); }

}  // namespace pipescope
