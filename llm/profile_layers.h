// A transformer as a Profile's layers, written and read in one place: llm/'s per-layer
// costs (llm/layer_time.h, llm/memory.h) as one batch size's entry of a LayerProfile, and
// the shape as the decoder layers' specs, which transformer_shape_of reads back. Every
// analytic profile takes this path: `profile synth --hf-config` ("hf_decoder_layer"),
// `profile synth --kind gpt` and `llm-plan --out`'s profile ("transformer_block").
// Invariant: transformer_shape_of on a profile whose decoder layers carry
// decoder_layer_spec(s, ...) gives back s (but its name, taken from the profile's model,
// and its vocabulary, padded as Megatron pads it for tensor-parallel size t); the layers
// counted are the profile's decoder layers. Profiles written before every field was
// stated read with each type's defaults: a GPT block is Megatron's GPT (4 h FFN,
// LayerNorm, GeLU, tied embeddings), a Hugging Face decoder SwiGLU with RMSNorm.
//   append_costs(layer, transformer_layer_time(shape, l, gpu, false), stash, hidden_bytes);
//   layer.spec = decoder_layer_spec(shape, "transformer_block");
//   std::optional<TransformerShape> s = transformer_shape_of(profile, layout.t);
#pragma once

#include <optional>
#include <string>

#include "core/json_reader.h"
#include "core/profile.h"
#include "llm/layer_time.h"
#include "llm/layout.h"
#include "llm/memory.h"

namespace pipescope {

// One batch size's forward, input-gradient, weight-gradient and whole-backward times,
// its stash (what F keeps to I, what W keeps after I) and the bytes it sends on, appended
// to `layer`'s per-batch-size lists.
void append_costs(LayerProfile& layer, const LayerTime& time, const StashBytes& stash, double output_bytes);

// The decoder layer's spec: `type` ("transformer_block" or "hf_decoder_layer") and every
// field of the shape a layer states (hidden, heads, KV heads, head dimension, FFN width,
// sequence, SwiGLU, RMSNorm, the biases, experts and top-k).
Json decoder_layer_spec(const TransformerShape& shape, const std::string& type);

// Whether a layer is a decoder layer of the shape (spec.type "transformer_block" or
// "hf_decoder_layer"), the layers transformer_shape_of counts.
bool is_decoder_layer(const LayerProfile& layer);

// nullopt, with `why` set when given, for a profile whose specs do not state the shape.
std::optional<TransformerShape> transformer_shape_of(const Profile& profile, int t, std::string* why = nullptr);

}  // namespace pipescope
