// A decoder-only transformer read from a Hugging Face `config.json` (model_type llama,
// mistral, qwen2, gemma or mixtral) and the closed forms pipescope plans it with:
// parameter counts, FLOPs of each op, and the activation bytes a layer keeps for its
// backward (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", section 4, applied tensor by tensor to grouped-query attention
// and SwiGLU). Invariant: every count is a function of the config alone; FLOPs count a
// multiply-add as 2 and attention scores over the full s x s square (Megatron-LM's
// convention, Narayanan et al. 2021), so one training step of a dense model costs
// 6 N + 12 L s (heads x head_dim) FLOPs per token, N the parameters that multiply.
//   HfModel m = load_hf_model("profiles/hf/llama-3-8b.json");
//   int64_t n = count_parameters(m).total();   // 8,030,261,248
#pragma once

#include <cstdint>
#include <string>

#include "core/json_reader.h"

namespace pipescope {

struct HfModel {
  std::string name;           // "_name_or_path" when present, else the family
  std::string family;         // model_type: llama | mistral | qwen2 | gemma | mixtral
  int64_t hidden = 0;         // hidden_size h
  int64_t ffn = 0;            // intermediate_size f (per expert under MoE)
  int64_t layers = 0;         // num_hidden_layers L
  int64_t heads = 0;          // num_attention_heads
  int64_t kv_heads = 0;       // num_key_value_heads (grouped-query attention)
  int64_t head_dim = 0;       // head_dim, default hidden / heads
  int64_t vocabulary = 0;     // vocab_size V
  bool tied = false;          // tie_word_embeddings: the head reuses the embedding
  bool qkv_bias = false;      // q/k/v projections carry a bias (qwen2; llama attention_bias)
  bool output_bias = false;   // o_proj carries a bias (llama, gemma attention_bias)
  bool mlp_bias = false;      // gate, up and down projections carry a bias (llama mlp_bias)
  int64_t experts = 0;        // num_local_experts (mixtral); 0 = dense MLP
  int64_t top_k = 0;          // num_experts_per_tok
  std::string source;

  int64_t attention_width() const { return heads * head_dim; }  // A: width of Q and of o_proj's input
  int64_t kv_width() const { return kv_heads * head_dim; }      // width of K and of V
  bool moe() const { return experts > 0; }
};

// Reads the fields pipescope needs; an unknown model_type or a missing / out-of-range
// field throws InputError naming the file and the field.
HfModel hf_model_from_json(const JsonReader& reader);
HfModel load_hf_model(const std::string& path);

struct ParameterCount {
  int64_t embedding = 0;         // V h
  int64_t attention = 0;         // per layer: q, k, v, o (+ biases)
  int64_t mlp = 0;               // per layer: all experts (+ router)
  int64_t mlp_active = 0;        // per layer: the top-k experts a token passes (+ router)
  int64_t norms = 0;             // per layer: the two RMSNorm weights
  int64_t final_norm = 0;        // h
  int64_t head = 0;              // V h, 0 when tied
  int64_t layers = 0;

  int64_t per_layer() const { return attention + mlp + norms; }
  int64_t total() const { return embedding + layers * per_layer() + final_norm + head; }
  // Parameters one token multiplies with: all but the embedding lookup, top-k experts
  // only; the tied head multiplies with the embedding matrix, so it counts here.
  int64_t active_matmul() const;
};
ParameterCount count_parameters(const HfModel& model);

// FLOPs of one decoder layer for one sequence of `seq` tokens.
struct LayerFlops {
  double qkv = 0;        // 2 s h (A + 2 Akv)
  double scores = 0;     // Q K^T and softmax(.) V: 2 x 2 s^2 A
  double output = 0;     // o_proj: 2 s A h
  double router = 0;     // 2 s h E
  double mlp = 0;        // 2 s h f x 3 (gate, up, down), x top-k under MoE
  double gemm() const { return qkv + output + router + mlp; }  // ops with weights
  double forward() const { return gemm() + scores; }
  double backward_input() const { return gemm() + 2 * scores; }  // scores have no weights
  double backward_weight() const { return gemm(); }
};
LayerFlops decoder_layer_flops(const HfModel& model, int64_t seq);
// Final norm + LM head (+ loss): 2 s h V forward; input and weight gradients the same.
double head_flops(const HfModel& model, int64_t seq);
// Training FLOPs per token of the whole model: forward + both backward halves.
double training_flops_per_token(const HfModel& model, int64_t seq);

// Bytes one decoder layer keeps for its backward, per sequence, activations of
// `dtype_bytes` each, with `tp`-way tensor parallelism and sequence parallelism (every
// tensor split t ways). Without selective recompute the attention probabilities
// (heads x s^2) are kept too.
double decoder_layer_activation_bytes(const HfModel& model, int64_t seq, int dtype_bytes,
                                      bool selective_recompute, int tp);
// The part of them the weight gradients still read after the input gradient (the
// profile's weight_grad_bytes), tensor by tensor: the inputs of the layers with weights
// (two RMSNorms, QKV, o_proj, the MLP's input GEMMs, down_proj; under MoE the router and
// each routed expert's), never Q, K, V, the attention probabilities or the gate|up output.
double decoder_layer_weight_grad_bytes(const HfModel& model, int64_t seq, int dtype_bytes, int tp);

}  // namespace pipescope
