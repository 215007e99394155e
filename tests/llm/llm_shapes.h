// Transformer shapes the llm/ tests share, with their published sizes: GPT-3 175B
// (Brown et al. 2020, Korthikanti et al. 2022 Table 3), Llama-3-8B and -70B
// (profiles/hf/*.json) and Mixtral-8x7B (46.7 B parameters).
#pragma once

#include "llm/layout.h"

namespace pipescope::testing {

inline TransformerShape gpt3_175b() {
  TransformerShape s;
  s.name = "gpt3-175b";
  s.layers = 96, s.hidden = 12288, s.heads = 96, s.sequence = 2048, s.vocabulary = 51200;
  s.bias_linear = false;
  return s;
}

inline TransformerShape llama3(int layers, int hidden, int heads, int ffn) {
  TransformerShape s;
  s.layers = layers, s.hidden = hidden, s.heads = heads, s.kv_heads = 8, s.ffn_hidden = ffn;
  s.swiglu = true, s.bias_linear = false, s.rms_norm = true, s.tied_embeddings = false;
  s.vocabulary = 128256, s.sequence = 8192;
  return s;
}
inline TransformerShape llama3_8b() { return llama3(32, 4096, 32, 14336); }
inline TransformerShape llama3_70b() { return llama3(80, 8192, 64, 28672); }

inline TransformerShape mixtral_8x7b() {
  TransformerShape s = llama3(32, 4096, 32, 14336);
  s.vocabulary = 32000, s.sequence = 4096, s.experts = 8, s.moe_topk = 2;
  return s;
}

}  // namespace pipescope::testing
