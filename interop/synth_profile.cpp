#include "interop/synth_profile.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.h"
#include "core/plan.h"
#include "llm/layer_time.h"
#include "llm/memory.h"
#include "llm/profile_layers.h"

namespace pipescope {

double adam_step_ms(int64_t parameter_bytes, double gb_per_s) {
  const double moved = (3.0 + 2.0 * kDefaultOptimizerStateFactor) * static_cast<double>(parameter_bytes);
  return moved / (gb_per_s * 1e6);  // GB/s = 1e6 bytes per ms
}

namespace {

void add_spec(LayerProfile& layer, const Json& spec) { layer.spec = spec; }

// Byte counts are computed in double; past the profile limit (or NaN) they are
// refused before the conversion to an integer could overflow.
int64_t to_bytes(double v, const char* what) {
  if (!(v >= 0 && v <= kMaxProfileBytes)) {
    char number[32];
    std::snprintf(number, sizeof number, "%.4g", v);
    throw InputError(std::string("profile synth: ") + what + " would be " + number +
                     " bytes, beyond the profile limit of 2^50 bytes");
  }
  return static_cast<int64_t>(v);
}

InputError granularity_refused(const std::string& name) {
  return InputError("--recompute-granularity: expected none or selective (whole stages: simulate --recompute), got \"" +
                    name + "\"");
}

void check_layers(int layers) {
  if (layers < 1 || layers > kMaxProfileLayers) {
    throw InputError("--layers: expected 1 to " + std::to_string(kMaxProfileLayers) + ", got " +
                     std::to_string(layers));
  }
}

}  // namespace

Recompute parse_recompute_granularity(const std::string& name) {
  const std::optional<Recompute> r = recompute_from_name(name);
  if (!r || *r == Recompute::Full) throw granularity_refused(name);
  return *r;
}

namespace {

void check_gpt_spec(const GptSpec& g) {
  if (g.layers < 1 || g.hidden < 1 || g.heads < 1 || g.sequence < 1 || g.vocabulary < 1) {
    throw InputError("profile synth: layers, hidden, heads, sequence and vocabulary must be positive");
  }
  check_layers(g.layers);
  if (g.sequence > (1 << 22)) throw InputError("--sequence: expected 1 to 4194304, got " + std::to_string(g.sequence));
  if (g.hidden % g.heads != 0) throw InputError("profile synth: hidden must be a multiple of heads");
  if (!(g.peak_tflops > 0) || !std::isfinite(g.peak_tflops) || !(g.efficiency > 0) || g.efficiency > 1) {
    throw InputError("profile synth: peak TFLOP/s must be positive and efficiency in (0, 1]");
  }
  if (g.position_embedding != "learned_absolute" && g.position_embedding != "rope") {
    throw InputError("--position-embedding-type: expected learned_absolute or rope, got \"" + g.position_embedding + "\"");
  }
  if (g.recompute == Recompute::Full) throw granularity_refused(to_string(g.recompute));
  if (!(g.embedding_dropout >= 0 && g.embedding_dropout < 1)) {
    throw InputError("--embedding-dropout: expected a probability in [0, 1)");
  }
}

// What every GPT layer needs: the shape, the layout of one sample (t = 1, the recompute
// asked for) and the achieved FLOP rate; counts are per sample and scale with b.
struct GptContext {
  explicit GptContext(const GptSpec& spec)
      : g(spec), shape(gpt_shape(spec)), flops_per_ms(spec.peak_tflops * 1e12 * spec.efficiency / 1e3) {
    one.micro_batch = 1;
    one.recompute = spec.recompute;
    one.attention = AttentionKernel::Unfused;  // Korthikanti's GPT: selective recompute is the flash-like setting
  }
  double ms(double flops) const { return flops / flops_per_ms; }
  double hidden_bytes(double b) const { return 2 * b * shape.sequence * shape.hidden; }  // bf16 hidden state
  const GptSpec& g;
  const TransformerShape shape;
  ParallelLayout one;
  const double flops_per_ms;
};

// Token (and learned position) embedding: memory-bound, its time the bytes it moves.
LayerProfile gpt_embedding(const GptContext& c) {
  const GptSpec& g = c.g;
  LayerProfile emb;
  emb.name = "embedding";
  emb.parameter_bytes = to_bytes(2 * embedding_parameters(c.shape).total(), "the embedding's parameters");
  const double kept = embedding_activation_bytes(c.shape, c.one), for_weight = embedding_weight_grad_bytes(c.shape, c.one);
  for (double b : g.batch_sizes) {
    double moved = 2 * c.hidden_bytes(b);  // read rows + write the hidden state
    double t = moved / (g.memory_gb_per_s * 1e6);
    emb.forward_ms.push_back(t);
    emb.backward_ms.push_back(2 * t);
    emb.backward_input_ms.push_back(0.0);
    emb.backward_weight_ms.push_back(2 * t);
    emb.activation_bytes.push_back(b * kept);          // token ids, dropout mask
    emb.weight_grad_bytes.push_back(b * for_weight);   // W scatters by the token ids
    emb.output_bytes.push_back(c.hidden_bytes(b));
  }
  Json emb_spec = {{"type", "embedding"}, {"vocabulary", g.vocabulary}, {"hidden", g.hidden}, {"sequence", g.sequence}};
  if (!c.shape.learned_positions) emb_spec["position_embedding_type"] = g.position_embedding;
  if (g.embedding_dropout > 0) emb_spec["dropout"] = g.embedding_dropout;
  add_spec(emb, emb_spec);
  emb.optimizer_ms = adam_step_ms(emb.parameter_bytes, g.memory_gb_per_s);
  return emb;
}

// One transformer block.
LayerProfile gpt_block(const GptContext& c, int l) {
  const GptSpec& g = c.g;
  LayerProfile blk;
  blk.name = "block." + std::to_string(l);
  blk.parameter_bytes = to_bytes(2 * layer_parameters(c.shape, false).total(), "a block's parameters");
  const LayerFlops f = transformer_layer_flops(c.shape, c.one);
  const double kept = layer_activation_bytes(c.shape, c.one), for_weight = layer_weight_grad_bytes(c.shape, c.one);
  for (double b : g.batch_sizes) {
    blk.forward_ms.push_back(c.ms(b * f.forward));
    blk.backward_input_ms.push_back(c.ms(b * (f.input_grad + f.recompute)));
    blk.backward_weight_ms.push_back(c.ms(b * f.weight_grad));
    blk.backward_ms.push_back(c.ms(b * (f.input_grad + f.recompute + f.weight_grad)));
    blk.activation_bytes.push_back(b * kept);
    blk.weight_grad_bytes.push_back(b * for_weight);
    blk.output_bytes.push_back(c.hidden_bytes(b));
  }
  Json blk_spec = decoder_layer_spec(c.shape, "transformer_block");  // llm/profile_layers.h reads it back
  if (c.one.recompute == Recompute::Selective) blk_spec["recompute_granularity"] = to_string(c.one.recompute);
  add_spec(blk, blk_spec);
  blk.optimizer_ms = adam_step_ms(blk.parameter_bytes, g.memory_gb_per_s);
  return blk;
}

// The LM head: the final LayerNorm, logits over the vocabulary and the loss.
LayerProfile gpt_head(const GptContext& c) {
  const GptSpec& g = c.g;
  LayerProfile head;
  head.name = "head";
  head.parameter_bytes = to_bytes(2 * head_parameters(c.shape, true).total(), "the head's parameters");
  const LayerFlops f = head_flops(c.shape, c.one);
  const double kept = head_activation_bytes(c.shape, c.one), for_weight = head_weight_grad_bytes(c.shape, c.one);
  for (double b : g.batch_sizes) {
    head.forward_ms.push_back(c.ms(b * f.forward));
    head.backward_input_ms.push_back(c.ms(b * f.input_grad));
    head.backward_weight_ms.push_back(c.ms(b * f.weight_grad));
    head.backward_ms.push_back(c.ms(b * (f.input_grad + f.weight_grad)));
    head.activation_bytes.push_back(b * kept);
    head.weight_grad_bytes.push_back(b * for_weight);  // dW = logits' gradient x its input: not the logits
    head.output_bytes.push_back(4);  // the loss
  }
  add_spec(head, {{"type", "lm_head"}, {"vocabulary", g.vocabulary}, {"hidden", g.hidden}});
  head.optimizer_ms = adam_step_ms(head.parameter_bytes, g.memory_gb_per_s);
  return head;
}

}  // namespace

TransformerShape gpt_shape(const GptSpec& g) {
  TransformerShape s;
  s.name = g.name;
  s.layers = g.layers, s.hidden = g.hidden, s.heads = g.heads, s.sequence = g.sequence, s.vocabulary = g.vocabulary;
  s.bias_linear = g.bias_linear;
  s.learned_positions = g.position_embedding == "learned_absolute";
  s.embedding_dropout = g.embedding_dropout > 0;
  return s;  // LayerNorm, GeLU MLP of 4 h, multi-head attention: TransformerShape's defaults
}

Profile make_gpt_profile(const GptSpec& g) {
  check_gpt_spec(g);
  const GptContext shape(g);
  Profile p;
  p.model = g.name;
  p.device_name = g.device_name;
  p.device_memory_bytes = g.device_memory_bytes;
  p.backend = "analytic";
  p.dtype = "bf16";
  p.batch_sizes = g.batch_sizes;
  p.layers.push_back(gpt_embedding(shape));
  for (int l = 0; l < g.layers; ++l) p.layers.push_back(gpt_block(shape, l));
  p.layers.push_back(gpt_head(shape));
  return p;
}

Profile make_uniform_profile(const UniformSpec& u) {
  check_layers(u.layers);
  if (!(u.forward_ms >= 0) || !(u.backward_ms >= 0) || !(u.activation_bytes >= 0) ||
      !(u.output_bytes >= 0) || u.parameter_bytes < 0 || !(u.heavy_factor > 0) || u.heavy_every < 0) {
    throw InputError("profile synth: times, sizes and --heavy-every must be >= 0 and --heavy-factor > 0");
  }
  Profile p;
  p.model = u.name;
  p.device_name = "analytic device";
  p.device_memory_bytes = int64_t{16} << 30;
  p.backend = "analytic";
  p.dtype = "fp32";
  p.batch_sizes = u.batch_sizes;
  for (int l = 0; l < u.layers; ++l) {
    bool heavy = u.heavy_every > 0 && (l + 1) % u.heavy_every == 0;
    double k = heavy ? u.heavy_factor : 1.0;
    LayerProfile layer;
    layer.name = (heavy ? "heavy." : "layer.") + std::to_string(l);
    layer.parameter_bytes = to_bytes(static_cast<double>(u.parameter_bytes) * k, "a layer's parameters");
    for (double b : u.batch_sizes) {
      layer.forward_ms.push_back(u.forward_ms * k * b);
      layer.backward_ms.push_back(u.backward_ms * k * b);
      layer.activation_bytes.push_back(u.activation_bytes * k * b);
      layer.output_bytes.push_back(u.output_bytes * b);
    }
    p.layers.push_back(layer);
  }
  return p;
}

}  // namespace pipescope
