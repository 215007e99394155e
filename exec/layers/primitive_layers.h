// The primitive layers: linear (y = x W + b), GELU (tanh approximation), LayerNorm, and
// the causal self-attention core (softmax(Q K^T / sqrt(d)) V per head, on a fused
// [rows, 3 hidden] QKV input). The residual blocks in block_layers.h compose them.
#pragma once

#include "exec/layers/layer.h"

namespace pipescope::exec {

class LinearLayer : public Layer {
 public:
  LinearLayer(Context ctx, int64_t in, int64_t out, int64_t sequence, uint64_t seed, const std::string& name);
  Tensor forward(const Tensor& x, LayerStash* stash) override;
  Tensor backward_input(const Tensor& dy, LayerStash& stash) override;
  void backward_weight(LayerStash& stash) override;
  std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }

 private:
  Context ctx_;
  int64_t in_, out_;
  Parameter weight_;  // [in, out]
  Parameter bias_;    // [1, out]
};

class GeluLayer : public Layer {
 public:
  GeluLayer(Context ctx, int64_t features, int64_t sequence);
  Tensor forward(const Tensor& x, LayerStash* stash) override;
  Tensor backward_input(const Tensor& dy, LayerStash& stash) override;
  void backward_weight(LayerStash&) override {}
  int64_t in_features() const override { return features_; }
  int64_t out_features() const override { return features_; }

 private:
  Context ctx_;
  int64_t features_;
};

class LayerNormLayer : public Layer {
 public:
  LayerNormLayer(Context ctx, int64_t features, int64_t sequence, const std::string& name);
  Tensor forward(const Tensor& x, LayerStash* stash) override;
  Tensor backward_input(const Tensor& dy, LayerStash& stash) override;
  void backward_weight(LayerStash& stash) override;
  std::vector<Parameter*> parameters() override { return {&gamma_, &beta_}; }
  int64_t in_features() const override { return features_; }
  int64_t out_features() const override { return features_; }

 private:
  Context ctx_;
  int64_t features_;
  Parameter gamma_, beta_;
};

// Input [rows, 3 hidden] = Q | K | V, heads of hidden / heads columns each; output
// [rows, hidden]. Stashes its input and the attention probabilities [samples x heads x seq, seq].
class CausalAttentionCore : public Layer {
 public:
  CausalAttentionCore(Context ctx, int64_t hidden, int64_t heads, int64_t sequence);
  Tensor forward(const Tensor& qkv, LayerStash* stash) override;
  Tensor backward_input(const Tensor& dy, LayerStash& stash) override;
  void backward_weight(LayerStash&) override {}
  int64_t in_features() const override { return 3 * hidden_; }
  int64_t out_features() const override { return hidden_; }

 private:
  Context ctx_;
  int64_t hidden_, heads_;
};

}  // namespace pipescope::exec
