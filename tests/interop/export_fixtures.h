// Plans and profiles the export tests build in memory: an embedding, L decoder layers
// and a head (tensor-parallel 2, sequence 4096 in the specs), cut into stages of given
// decoder counts, stage s on position s % K with r replicas each.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "core/profile.h"

namespace pipescope {

inline LayerProfile layer(const std::string& name, const std::string& type) {
  LayerProfile l;
  l.name = name;
  l.forward_ms = l.backward_ms = {1.0};
  l.activation_bytes = l.output_bytes = {1.0};
  l.spec = {{"type", type}, {"tensor_parallel", 2}, {"sequence", 4096}};
  return l;
}

// Embedding, L decoder layers, head.
inline Profile llm_profile(int decoders) {
  Profile p;
  p.model = "test";
  p.dtype = "bf16";
  p.batch_sizes = {1};
  p.source = "test.json";
  p.layers.push_back(layer("model.embed_tokens", "hf_embedding"));
  for (int i = 0; i < decoders; ++i) p.layers.push_back(layer("model.layers." + std::to_string(i), "hf_decoder_layer"));
  p.layers.push_back(layer("lm_head", "hf_lm_head"));
  return p;
}

// A plan whose stage s holds `decoders[s]` decoder layers (stage 0 also the embedding,
// the last also the head); K positions, r replicas each.
inline Plan plan_of(const std::vector<int>& decoders, int K, int r, int M, int64_t mbs, ScheduleKind kind) {
  Plan p;
  p.chunks = static_cast<int>(decoders.size()) / K;
  p.schedule = kind;
  p.microbatches = M;
  p.batch_size = mbs * M * r;
  int at = 0;
  for (std::size_t s = 0; s < decoders.size(); ++s) {
    PlanStage st;
    st.first_layer = at;
    at += decoders[s] + (s == 0 ? 1 : 0) + (s + 1 == decoders.size() ? 1 : 0);
    st.end_layer = at;
    for (int k = 0; k < r; ++k) st.devices.push_back(static_cast<int>(s % K) * r + k);
    p.stages.push_back(st);
  }
  return p;
}

}  // namespace pipescope
