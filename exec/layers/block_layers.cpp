// Residual blocks: forward runs the parts in order, backward_input in reverse; the
// residual path adds the output gradient to the parts' input gradient.
#include "exec/layers/block_layers.h"

#include "core/error.h"

namespace pipescope::exec {

SequentialBlock::SequentialBlock(Context ctx, std::vector<std::unique_ptr<Layer>> parts, bool residual)
    : ctx_(ctx), parts_(std::move(parts)), residual_(residual) {}

Tensor SequentialBlock::forward(const Tensor& x, LayerStash* stash) {
  if (stash) stash->children.assign(parts_.size(), LayerStash{});
  Tensor h = x;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    h = parts_[i]->forward(h, stash ? &stash->children[i] : nullptr);
  }
  if (!residual_) return h;
  Tensor y = Tensor::empty(ctx_, x.rows, x.cols);
  ctx_.backend.add(y.data(), x.data(), h.data(), y.numel());
  return y;
}

Tensor SequentialBlock::backward_input(const Tensor& dy, LayerStash& stash) {
  Tensor g = dy;
  for (std::size_t i = parts_.size(); i-- > 0;) g = parts_[i]->backward_input(g, stash.children.at(i));
  if (!residual_) return g;
  Tensor dx = Tensor::empty(ctx_, dy.rows, dy.cols);
  ctx_.backend.add(dx.data(), dy.data(), g.data(), dx.numel());
  return dx;
}

void SequentialBlock::backward_weight(LayerStash& stash) {
  for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i]->backward_weight(stash.children.at(i));
}

void SequentialBlock::release_for_weight(LayerStash& stash) {
  for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i]->release_for_weight(stash.children.at(i));
}

std::vector<Parameter*> SequentialBlock::parameters() {
  std::vector<Parameter*> out;
  for (auto& p : parts_) {
    for (Parameter* q : p->parameters()) out.push_back(q);
  }
  return out;
}

std::unique_ptr<Layer> make_mlp_block(Context ctx, int64_t hidden, int64_t ffn, int64_t sequence,
                                      uint64_t seed, const std::string& name) {
  std::vector<std::unique_ptr<Layer>> parts;
  parts.push_back(std::make_unique<LayerNormLayer>(ctx, hidden, sequence, name + ".ln"));
  parts.push_back(std::make_unique<LinearLayer>(ctx, hidden, ffn, sequence, seed * 3 + 1, name + ".fc1"));
  parts.push_back(std::make_unique<GeluLayer>(ctx, ffn, sequence));
  parts.push_back(std::make_unique<LinearLayer>(ctx, ffn, hidden, sequence, seed * 3 + 2, name + ".fc2"));
  return std::make_unique<SequentialBlock>(ctx, std::move(parts), true);
}

std::unique_ptr<Layer> make_attention_block(Context ctx, int64_t hidden, int64_t heads,
                                            int64_t sequence, uint64_t seed, const std::string& name) {
  std::vector<std::unique_ptr<Layer>> parts;
  parts.push_back(std::make_unique<LayerNormLayer>(ctx, hidden, sequence, name + ".ln"));
  parts.push_back(std::make_unique<LinearLayer>(ctx, hidden, 3 * hidden, sequence, seed * 3 + 1, name + ".qkv"));
  parts.push_back(std::make_unique<CausalAttentionCore>(ctx, hidden, heads, sequence));
  parts.push_back(std::make_unique<LinearLayer>(ctx, hidden, hidden, sequence, seed * 3 + 2, name + ".proj"));
  return std::make_unique<SequentialBlock>(ctx, std::move(parts), true);
}

}  // namespace pipescope::exec
