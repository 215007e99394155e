// A decoder-only transformer read from a Hugging Face `config.json` (model_type llama,
// mistral, qwen2, gemma or mixtral) as the one shape type, llm/layout.h's
// TransformerShape: SwiGLU and RMSNorm as these families build them, the biases,
// grouped-query heads, head dimension, tying and experts the config states (or its config
// class's default). Invariant: the reader counts nothing; parameters, FLOPs and activation
// bytes are llm/'s (llm/memory.h, llm/layer_time.h), and the shape it returns gives
// transformers' own parameter count there (python/tests/test_oracle_hf.py). The
// sequence length is not in a config: the caller sets shape.sequence; the vocabulary is
// the config's (Megatron's padding is the caller's: llm/layout_check.h).
//   HfModel m = load_hf_model("profiles/hf/llama-3-8b.json");
//   double n = model_parameters(m.shape).total();   // 8,030,261,248
#pragma once

#include <optional>
#include <string>

#include "core/json_reader.h"
#include "llm/layout.h"

namespace pipescope {

// What a config states beyond the shape, which no count reads but an export sets so that
// the framework builds the same numerics (Megatron-Bridge's mapping: rope_theta ->
// rotary_base, rms_norm_eps -> layernorm_epsilon, initializer_range -> init_method_std,
// rope_scaling, hidden_act). Each absent field stays unset.
struct HfNumerics {
  std::optional<double> rope_theta;
  std::optional<double> norm_epsilon;       // rms_norm_eps, else layer_norm_eps
  std::optional<double> initializer_range;
  bool rope_scaling = false;                // the config has a rope_scaling object
  std::string rope_scaling_type;            // its rope_type (or type); "" when it names none
  std::optional<double> rope_scaling_factor;
  std::string hidden_act;                   // "" when absent
  int max_position_embeddings = 0;          // 0 when absent
};

struct HfModel {
  std::string family;      // model_type: llama | mistral | qwen2 | gemma | mixtral
  std::string source;      // the file it was read from
  TransformerShape shape;  // name: "_name_or_path" when present, else the family; sequence 0
  HfNumerics numerics;
};

// Reads the fields pipescope needs; an unknown model_type or a missing / out-of-range
// field throws InputError naming the file and the field.
HfModel hf_model_from_json(const JsonReader& reader);
HfModel load_hf_model(const std::string& path);

}  // namespace pipescope
