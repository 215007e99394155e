// Residual pre-LayerNorm transformer blocks, composed of the primitive layers:
//   mlp_block:       y = x + fc2(gelu(fc1(ln(x))))
//   attention_block: y = x + proj(attention(qkv(ln(x))))
// Each sub-layer keeps its own child stash; the residual add needs nothing stashed, so
// a block's stash is exactly the sum of its sub-layers' stashes (x is kept once, by ln).
#pragma once

#include "exec/layers/primitive_layers.h"

namespace pipescope::exec {

// A chain of sub-layers with an optional residual connection around it.
class SequentialBlock : public Layer {
 public:
  SequentialBlock(Context ctx, std::vector<std::unique_ptr<Layer>> parts, bool residual);
  Tensor forward(const Tensor& x, LayerStash* stash) override;
  Tensor backward_input(const Tensor& dy, LayerStash& stash) override;
  void backward_weight(LayerStash& stash) override;
  void release_for_weight(LayerStash& stash) override;  // each part drops what its W does not read
  std::vector<Parameter*> parameters() override;
  int64_t in_features() const override { return parts_.front()->in_features(); }
  int64_t out_features() const override { return parts_.back()->out_features(); }
  int64_t sequence() const override { return parts_.front()->sequence(); }

 private:
  Context ctx_;
  std::vector<std::unique_ptr<Layer>> parts_;
  bool residual_;
};

std::unique_ptr<Layer> make_mlp_block(Context ctx, int64_t hidden, int64_t ffn, int64_t sequence,
                                      uint64_t seed, const std::string& name);
std::unique_ptr<Layer> make_attention_block(Context ctx, int64_t hidden, int64_t heads,
                                            int64_t sequence, uint64_t seed, const std::string& name);

}  // namespace pipescope::exec
