// Writes a transformer layer's costs and spec; reads the shape from the first decoder
// layer's spec, the vocabulary from the embedding's (or the head's), the layer count
// from the roles (llm/profile_layers.h).
#include "llm/profile_layers.h"

#include <algorithm>

#include "llm/layout_check.h"

namespace pipescope {

namespace {

int spec_int(const Json& spec, const char* key, int fallback = 0) {
  return spec.contains(key) && spec[key].is_number_integer() ? spec[key].get<int>() : fallback;
}

bool spec_bool(const Json& spec, const char* key, bool fallback) {
  return spec.contains(key) && spec[key].is_boolean() ? spec[key].get<bool>() : fallback;
}

std::string type_of(const LayerProfile& l) {
  return l.spec.is_object() && l.spec.contains("type") && l.spec["type"].is_string() ? l.spec["type"].get<std::string>() : "";
}

}  // namespace

void append_costs(LayerProfile& layer, const LayerTime& time, const StashBytes& stash, double output_bytes) {
  const auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  layer.forward_ms.push_back(ms(time.forward_ns));
  layer.backward_input_ms.push_back(ms(time.input_grad_ns));
  layer.backward_weight_ms.push_back(ms(time.weight_grad_ns));
  layer.backward_ms.push_back(ms(time.input_grad_ns + time.weight_grad_ns));
  layer.activation_bytes.push_back(stash.held);
  layer.weight_grad_bytes.push_back(stash.for_weight);
  layer.output_bytes.push_back(output_bytes);
}

Json decoder_layer_spec(const TransformerShape& s, const std::string& type) {
  Json j = {{"type", type},
            {"hidden", s.hidden},
            {"heads", s.heads},
            {"head_dim", s.kv_channels > 0 ? s.kv_channels : s.hidden / std::max(s.heads, 1)},
            {"sequence", s.sequence},
            {"swiglu", s.swiglu},
            {"rms_norm", s.rms_norm},
            {"bias_linear", s.bias_linear},
            {"qkv_bias", s.qkv_bias},
            {"output_bias", s.output_bias},
            {"mlp_bias", s.mlp_bias}};
  if (s.kv_heads > 0) j["kv_heads"] = s.kv_heads;
  if (s.ffn_hidden > 0) j["ffn_hidden"] = s.ffn_hidden;
  if (s.experts > 0) {
    j["experts"] = s.experts;
    j["moe_topk"] = s.moe_topk;
    if (s.moe_ffn_hidden > 0) j["moe_ffn_hidden"] = s.moe_ffn_hidden;
    if (s.moe_layer_frequency != 1) j["moe_layer_frequency"] = s.moe_layer_frequency;
    if (s.shared_expert_ffn_hidden > 0) j["shared_expert_ffn_hidden"] = s.shared_expert_ffn_hidden;
  }
  return j;
}

bool is_decoder_layer(const LayerProfile& layer) {
  const std::string type = type_of(layer);
  return type == "transformer_block" || type == "hf_decoder_layer";
}

std::optional<TransformerShape> transformer_shape_of(const Profile& profile, int t, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<TransformerShape> {
    if (why) *why = profile.source + ": " + reason;
    return std::nullopt;
  };
  const Json* block = nullptr;
  TransformerShape s;
  s.name = profile.model;
  int vocabulary = 0;
  bool tied = true;
  for (const LayerProfile& l : profile.layers) {
    const std::string type = type_of(l);
    if (type == "embedding" || type == "hf_embedding" || type == "lm_head" || type == "hf_lm_head") {
      vocabulary = std::max(vocabulary, spec_int(l.spec, "vocabulary"));
      if (type == "hf_lm_head" || type == "lm_head") tied = spec_bool(l.spec, "tied", tied);
      continue;
    }
    if (!is_decoder_layer(l)) {
      return fail("layer \"" + l.name + "\" is not a decoder layer of `profile synth` (spec.type \"" + type + "\")");
    }
    if (block == nullptr) block = &l.spec;
    ++s.layers;
  }
  if (block == nullptr) return fail("no decoder layers");
  const Json& b = *block;
  s.hidden = spec_int(b, "hidden"), s.heads = spec_int(b, "heads"), s.sequence = spec_int(b, "sequence");
  if (s.hidden < 1 || s.heads < 1 || s.sequence < 1 || vocabulary < 1) {
    return fail("the specs do not state hidden, heads, sequence and vocabulary (profile synth writes them)");
  }
  s.vocabulary = padded_vocabulary(vocabulary, t);
  s.tied_embeddings = tied;
  s.bias_linear = spec_bool(b, "bias_linear", true);
  // Hugging Face decoders are SwiGLU + RMSNorm; a GPT block says so when it is (llm-plan's).
  const bool hf = b["type"] == "hf_decoder_layer";
  s.swiglu = spec_bool(b, "swiglu", hf), s.rms_norm = spec_bool(b, "rms_norm", hf);
  s.kv_heads = spec_int(b, "kv_heads");
  s.ffn_hidden = spec_int(b, "ffn_hidden");
  s.qkv_bias = spec_bool(b, "qkv_bias", false);
  s.output_bias = spec_bool(b, "output_bias", false), s.mlp_bias = spec_bool(b, "mlp_bias", false);
  const int head_dim = spec_int(b, "head_dim");
  if (head_dim > 0 && head_dim * s.heads != s.hidden) s.kv_channels = head_dim;
  s.experts = spec_int(b, "experts"), s.moe_topk = spec_int(b, "moe_topk");
  s.moe_ffn_hidden = spec_int(b, "moe_ffn_hidden"), s.moe_layer_frequency = spec_int(b, "moe_layer_frequency", 1);
  s.shared_expert_ffn_hidden = spec_int(b, "shared_expert_ffn_hidden");
  return s;
}

}  // namespace pipescope
