// make_layer: spec JSON -> layer. Every field is checked with its JSON path so that a bad
// model or profile file names the offending value.
#include <cmath>

#include "core/error.h"
#include "exec/layers/block_layers.h"

namespace pipescope::exec {

std::vector<float> uniform_values(uint64_t seed, int64_t n, float scale) {
  std::vector<float> out(static_cast<std::size_t>(n));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double u = static_cast<double>(z >> 11) / 9007199254740992.0;  // [0, 1)
    out[static_cast<std::size_t>(i)] = static_cast<float>((2.0 * u - 1.0) * scale);
  }
  return out;
}

std::vector<std::string> layer_types() {
  return {"linear", "gelu", "layernorm", "mlp_block", "attention_block"};
}

std::unique_ptr<Layer> make_layer(const JsonReader& spec, Context ctx, uint64_t seed) {
  constexpr int64_t kMaxDim = 1 << 16;
  const std::string type = spec["type"].as_string();
  const int64_t sequence = spec.has("sequence") ? spec["sequence"].as_int(1, kMaxDim) : 1;
  const std::string name = spec.has("name") ? spec["name"].as_string() : type;
  if (type == "linear") {
    return std::make_unique<LinearLayer>(ctx, spec["in"].as_int(1, kMaxDim), spec["out"].as_int(1, kMaxDim),
                                         sequence, seed, name);
  }
  if (type == "gelu") return std::make_unique<GeluLayer>(ctx, spec["features"].as_int(1, kMaxDim), sequence);
  if (type == "layernorm") {
    return std::make_unique<LayerNormLayer>(ctx, spec["features"].as_int(1, kMaxDim), sequence, name);
  }
  if (type == "mlp_block") {
    return make_mlp_block(ctx, spec["hidden"].as_int(1, kMaxDim), spec["ffn"].as_int(1, kMaxDim), sequence,
                          seed, name);
  }
  if (type == "attention_block") {
    const int64_t hidden = spec["hidden"].as_int(1, kMaxDim);
    const int64_t heads = spec["heads"].as_int(1, hidden);
    if (hidden % heads != 0) spec["heads"].fail("hidden (" + std::to_string(hidden) + ") must be a multiple of heads");
    return make_attention_block(ctx, hidden, heads, sequence, seed, name);
  }
  std::string known;
  for (const std::string& t : layer_types()) known += (known.empty() ? "" : ", ") + t;
  spec["type"].fail("unknown layer type \"" + type + "\" (expected one of " + known + ")");
}

}  // namespace pipescope::exec
