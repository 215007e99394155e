// A profile's model as llm/layout.h's TransformerShape, for memory as Megatron-LM keeps it
// (llm/memory.h): from the specs `profile synth` writes -- GPT blocks ("transformer_block":
// hidden, heads, sequence; Megatron's GPT defaults: 4 h FFN, LayerNorm, GeLU, tied
// embeddings, unless the spec says swiglu / rms_norm / kv_heads / ffn_hidden / experts, as
// `llm-plan --out` writes them) or Hugging Face decoder layers ("hf_decoder_layer": heads, KV heads, head
// dimension, FFN, biases, experts; SwiGLU and RMSNorm as those families build them).
// Invariant: the layers counted are the profile's decoder layers; the vocabulary is
// padded as Megatron pads it for tensor-parallel size t.
//   std::optional<TransformerShape> s = transformer_shape_of(profile, layout.t);
#pragma once

#include <optional>
#include <string>

#include "core/profile.h"
#include "llm/layout.h"

namespace pipescope {

// nullopt, with `why` set when given, for a profile whose specs do not state the shape.
std::optional<TransformerShape> transformer_shape_of(const Profile& profile, int t, std::string* why = nullptr);

}  // namespace pipescope
