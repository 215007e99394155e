// Analytic profiles, for planning before anything is measured.
// GPT-style transformer (Megatron-LM's GPT: LayerNorm, GeLU MLP of 4 h, learned absolute
// positions unless rope, biases unless --disable-bias-linear, the head keeping its own
// copy of the word embedding as Megatron-LM's last stage does), mapped once to llm/'s
// TransformerShape (gpt_shape) and counted by llm/'s one cost model:
//   FLOPs           llm/layer_time.h's transformer_layer_flops / head_flops (24 b s h^2 +
//                   4 b s^2 h forward, Narayanan et al. SC 2021 eq. 3; I twice the attention
//                   core, W the linears; selective recompute reruns the core in I)
//   bytes kept      llm/memory.h: layer_activation_bytes s b h (34 + 5 a s / h) (Korthikanti
//                   et al. 2022 Table 2, 34 with selective recompute), W's share
//                   layer_weight_grad_bytes (18 s b h: the weighted layers' inputs), the
//                   embedding's and the head's
//   parameters      llm/memory.h: 12 h^2 + 13 h per block (12 h^2 + 4 h without biases),
//                   V h (+ s h) embedding, V h + 2 h head; 2 bytes each (bf16)
// time = FLOPs / (peak FLOP/s x efficiency); the embedding moves its bytes at
// memory_gb_per_s; optimizer_ms per layer = adam_step_ms (below). The options are
// Megatron-LM's flags of the same names; all of them together give the model its
// theoretical_memory_usage.py counts (tests/memory/memory_megatron_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/profile.h"
#include "llm/layout.h"

namespace pipescope {

struct GptSpec {
  std::string name = "gpt-1.3b";
  int layers = 24;
  int hidden = 2048;
  int heads = 16;
  int sequence = 2048;
  int vocabulary = 50257;
  double peak_tflops = 989.0;        // H200 dense bf16
  double efficiency = 0.45;
  double memory_gb_per_s = 4800.0;   // H200 HBM3e (profiles/gpus/h200.json), for the embedding lookup and Adam
  std::string device_name = "NVIDIA H200";
  int64_t device_memory_bytes = 141000000000;
  std::vector<double> batch_sizes = {1, 2, 4, 8};
  bool bias_linear = true;                 // false: --disable-bias-linear
  std::string position_embedding = "learned_absolute";  // or "rope" (no position table)
  Recompute recompute = Recompute::None;  // --recompute-granularity: none or selective (full: a plan's, whole stages)
  double embedding_dropout = 0;            // > 0: the embedding keeps its dropout mask
};

struct UniformSpec {
  std::string name = "toy-uniform";
  int layers = 16;
  double forward_ms = 1.0;           // at micro-batch size 1; scales linearly
  double backward_ms = 2.0;
  double activation_bytes = 1 << 20;
  double output_bytes = 1 << 18;
  int64_t parameter_bytes = 4 << 20;
  // Every `heavy_every`-th layer (0 = none) costs `heavy_factor` times the others:
  // an uneven, AmoebaNet-like model (reduction cells several times heavier).
  int heavy_every = 0;
  double heavy_factor = 1.0;
  std::vector<double> batch_sizes = {1, 2, 4, 8};
};

// One Adam step over `parameter_bytes` of parameters (the profile's optimizer_ms) at
// `gb_per_s` of memory bandwidth: in place, it reads the weights, the gradients and the
// optimizer state and writes the weights and the state back, (3 + 2 F) x parameter_bytes
// bytes with F = kDefaultOptimizerStateFactor (2: Adam's two moments, as the plan's
// static bytes count them); memory-bound, so bytes / bandwidth (a fused kernel streams
// at about the peak: no efficiency factor).
double adam_step_ms(int64_t parameter_bytes, double gb_per_s);

// --recompute-granularity's value for a GPT profile: none or selective (core/recompute.h's
// names); full, or any other word, throws InputError naming the flag (whole stages re-run
// by a plan: simulate --recompute).
Recompute parse_recompute_granularity(const std::string& name);

// The spec as the one shape type (the vocabulary as given: no padding).
TransformerShape gpt_shape(const GptSpec& spec);
Profile make_gpt_profile(const GptSpec& spec);
Profile make_uniform_profile(const UniformSpec& spec);

}  // namespace pipescope
