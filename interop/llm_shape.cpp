// Reads the shape from the first decoder layer's spec, the vocabulary from the embedding's
// (or the head's), the layer count from the roles (interop/llm_shape.h).
#include "interop/llm_shape.h"

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
    if (type != "transformer_block" && type != "hf_decoder_layer") {
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
  return s;
}

}  // namespace pipescope
