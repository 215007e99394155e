#include "interop/synth_profile.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/plan.h"

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

void check_layers(int layers) {
  if (layers < 1 || layers > kMaxProfileLayers) {
    throw InputError("--layers: expected 1 to " + std::to_string(kMaxProfileLayers) + ", got " +
                     std::to_string(layers));
  }
}

}  // namespace

namespace {

void check_gpt_spec(const GptSpec& g) {
  if (g.layers < 1 || g.hidden < 1 || g.heads < 1 || g.sequence < 1 || g.vocabulary < 1) {
    throw InputError("profile synth: layers, hidden, heads, sequence and vocabulary must be positive");
  }
  check_layers(g.layers);
  if (g.hidden % g.heads != 0) throw InputError("profile synth: hidden must be a multiple of heads");
  if (!(g.peak_tflops > 0) || !std::isfinite(g.peak_tflops) || !(g.efficiency > 0) || g.efficiency > 1) {
    throw InputError("profile synth: peak TFLOP/s must be positive and efficiency in (0, 1]");
  }
  if (g.position_embedding != "learned_absolute" && g.position_embedding != "rope") {
    throw InputError("--position-embedding-type: expected learned_absolute or rope, got \"" + g.position_embedding + "\"");
  }
  if (g.recompute_granularity != "none" && g.recompute_granularity != "selective") {
    throw InputError("--recompute-granularity: expected none or selective (whole stages: simulate --recompute), got \"" +
                     g.recompute_granularity + "\"");
  }
  if (!(g.embedding_dropout >= 0 && g.embedding_dropout < 1)) {
    throw InputError("--embedding-dropout: expected a probability in [0, 1)");
  }
}

// The numbers every GPT layer's formulas use: s, h, a, V and the achieved FLOP rate.
struct GptShape {
  explicit GptShape(const GptSpec& spec)
      : g(spec), s(spec.sequence), h(spec.hidden), a(spec.heads), V(spec.vocabulary),
        flops_per_ms(spec.peak_tflops * 1e12 * spec.efficiency / 1e3),
        positions(spec.position_embedding == "learned_absolute"),
        selective(spec.recompute_granularity == "selective") {}
  double ms(double flops) const { return flops / flops_per_ms; }
  const GptSpec& g;
  const double s, h, a, V, flops_per_ms;
  const bool positions, selective;
};

// Token (and learned position) embedding: memory-bound, its time the bytes it moves.
LayerProfile gpt_embedding(const GptShape& c) {
  const GptSpec& g = c.g;
  const double s = c.s, h = c.h, V = c.V;
  const bool positions = c.positions;
  LayerProfile emb;
  emb.name = "embedding";
  emb.parameter_bytes = to_bytes(2 * (V * h + (positions ? s * h : 0)), "the embedding's parameters");
  for (double b : g.batch_sizes) {
    double moved = 2 * b * s * h * 2;  // read rows + write the hidden state
    double t = moved / (g.memory_gb_per_s * 1e6);
    emb.forward_ms.push_back(t);
    emb.backward_ms.push_back(2 * t);
    emb.backward_input_ms.push_back(0.0);
    emb.backward_weight_ms.push_back(2 * t);
    emb.activation_bytes.push_back(8 * b * s + (g.embedding_dropout > 0 ? s * b * h : 0));  // token ids, mask
    emb.weight_grad_bytes.push_back(emb.activation_bytes.back());  // W scatters by the token ids: needs it all
    emb.output_bytes.push_back(2 * s * b * h);
  }
  Json emb_spec = {{"type", "embedding"}, {"vocabulary", g.vocabulary}, {"hidden", g.hidden}, {"sequence", g.sequence}};
  if (!positions) emb_spec["position_embedding_type"] = g.position_embedding;
  if (g.embedding_dropout > 0) emb_spec["dropout"] = g.embedding_dropout;
  add_spec(emb, emb_spec);
  emb.optimizer_ms = adam_step_ms(emb.parameter_bytes, g.memory_gb_per_s);
  return emb;
}

// One transformer block (Narayanan et al., SC 2021: 24 b s h^2 + 4 b s^2 h FLOPs forward;
// Korthikanti et al. 2022: s b h (34 + 5 a s / h) bytes of activations).
LayerProfile gpt_block(const GptShape& c, int l) {
  const GptSpec& g = c.g;
  const double s = c.s, h = c.h, a = c.a;
  const bool selective = c.selective;
  const double biases = g.bias_linear ? 9 : 0;  // QKV 3 h, projection h, fc1 4 h, fc2 h
  auto ms = [&](double flops) { return c.ms(flops); };
  LayerProfile blk;
  blk.name = "block." + std::to_string(l);
  blk.parameter_bytes = to_bytes(2 * (12 * h * h + (4 + biases) * h), "a block's parameters");
  for (double b : g.batch_sizes) {
    double dense = 24 * b * s * h * h, attn = 4 * b * s * s * h;
    double again = selective ? attn : 0;  // the attention core's forward, run again in backward
    blk.forward_ms.push_back(ms(dense + attn));
    blk.backward_input_ms.push_back(ms(dense + 2 * attn + again));
    blk.backward_weight_ms.push_back(ms(dense));
    blk.backward_ms.push_back(ms(2 * dense + 2 * attn + again));
    blk.activation_bytes.push_back(s * b * h * (34 + (selective ? 0 : 5 * a * s / h)));
    blk.weight_grad_bytes.push_back(32 * s * b * h);  // Qi et al. 2023, sec. 3: M_W = 32 h per token
    blk.output_bytes.push_back(2 * s * b * h);
  }
  Json blk_spec = {{"type", "transformer_block"}, {"hidden", g.hidden}, {"heads", g.heads}, {"sequence", g.sequence}};
  if (!g.bias_linear) blk_spec["bias_linear"] = false;
  if (selective) blk_spec["recompute_granularity"] = g.recompute_granularity;
  add_spec(blk, blk_spec);
  blk.optimizer_ms = adam_step_ms(blk.parameter_bytes, g.memory_gb_per_s);
  return blk;
}

// The LM head: logits over the vocabulary and the loss.
LayerProfile gpt_head(const GptShape& c) {
  const GptSpec& g = c.g;
  const double s = c.s, h = c.h, V = c.V;
  auto ms = [&](double flops) { return c.ms(flops); };
  LayerProfile head;
  head.name = "head";
  head.parameter_bytes = to_bytes(2 * (V * h + 2 * h), "the head's parameters");
  for (double b : g.batch_sizes) {
    double f = 2 * b * s * h * V;
    head.forward_ms.push_back(ms(f));
    head.backward_input_ms.push_back(ms(f));
    head.backward_weight_ms.push_back(ms(f));
    head.backward_ms.push_back(ms(2 * f));
    head.activation_bytes.push_back(2 * b * s * h + 4 * b * s * V);
    head.weight_grad_bytes.push_back(2 * b * s * h);  // dW = logits' gradient x its input: not the logits
    head.output_bytes.push_back(4);  // the loss
  }
  add_spec(head, {{"type", "lm_head"}, {"vocabulary", g.vocabulary}, {"hidden", g.hidden}});
  head.optimizer_ms = adam_step_ms(head.parameter_bytes, g.memory_gb_per_s);
  return head;
}

}  // namespace

Profile make_gpt_profile(const GptSpec& g) {
  check_gpt_spec(g);
  const GptShape shape(g);
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
