// Forward/backward of the primitive layers. Each forward stashes its input (and, for
// LayerNorm and attention, the statistics / probabilities it computes), never its output.
#include "exec/layers/primitive_layers.h"

#include <cmath>

#include "core/error.h"

namespace pipescope::exec {

namespace {

Parameter make_parameter(Context ctx, const std::string& name, int64_t rows, int64_t cols,
                         const std::vector<float>& init) {
  Parameter p;
  p.name = name;
  p.value = Tensor::from_host(ctx, rows, cols, init, Category::Parameters);
  p.grad = Tensor::zeros(ctx, rows, cols, Category::Gradients);
  return p;
}

void check_input(const Tensor& x, int64_t features, int64_t sequence, const char* layer) {
  if (x.cols != features || x.rows % sequence != 0) {
    throw RunError(std::string(layer) + ": input is [" + std::to_string(x.rows) + ", " +
                   std::to_string(x.cols) + "], expected [samples x " + std::to_string(sequence) +
                   ", " + std::to_string(features) + "]");
  }
}

}  // namespace

// ---- linear ----------------------------------------------------------------------

LinearLayer::LinearLayer(Context ctx, int64_t in, int64_t out, int64_t sequence, uint64_t seed,
                         const std::string& name)
    : ctx_(ctx), in_(in), out_(out) {
  sequence_ = sequence;
  const float scale = 1.0f / std::sqrt(static_cast<float>(in));
  weight_ = make_parameter(ctx, name + ".weight", in, out, uniform_values(seed, in * out, scale));
  bias_ = make_parameter(ctx, name + ".bias", 1, out, uniform_values(seed ^ 0x5bd1e995u, out, scale));
}

Tensor LinearLayer::forward(const Tensor& x, LayerStash* stash) {
  check_input(x, in_, sequence_, "linear");
  Tensor y = Tensor::empty(ctx_, x.rows, out_);
  Backend& be = ctx_.backend;
  be.gemm(false, false, int(x.rows), int(out_), int(in_), 1.0f, x.data(), int(in_),
          weight_.value.data(), int(out_), 0.0f, y.data(), int(out_));
  be.add_bias(y.data(), bias_.value.data(), int(x.rows), int(out_));
  if (stash) {
    x.stash();
    stash->saved = {x};
  }
  return y;
}

Tensor LinearLayer::backward_input(const Tensor& dy, LayerStash& stash) {
  Tensor dx = Tensor::empty(ctx_, dy.rows, in_);
  ctx_.backend.gemm(false, true, int(dy.rows), int(in_), int(out_), 1.0f, dy.data(), int(out_),
                    weight_.value.data(), int(out_), 0.0f, dx.data(), int(in_));
  stash.pending = {dy};
  return dx;
}

void LinearLayer::backward_weight(LayerStash& stash) {
  const Tensor& x = stash.saved.at(0);
  const Tensor& dy = stash.pending.at(0);
  Backend& be = ctx_.backend;
  be.gemm(true, false, int(in_), int(out_), int(x.rows), 1.0f, x.data(), int(in_), dy.data(),
          int(out_), 1.0f, weight_.grad.data(), int(out_));
  be.sum_rows_accumulate(bias_.grad.data(), dy.data(), int(dy.rows), int(out_));
  stash.pending.clear();
}

// ---- GELU ------------------------------------------------------------------------

GeluLayer::GeluLayer(Context ctx, int64_t features, int64_t sequence) : ctx_(ctx), features_(features) {
  sequence_ = sequence;
}

Tensor GeluLayer::forward(const Tensor& x, LayerStash* stash) {
  check_input(x, features_, sequence_, "gelu");
  Tensor y = Tensor::empty(ctx_, x.rows, x.cols);
  ctx_.backend.gelu_forward(y.data(), x.data(), x.numel());
  if (stash) {
    x.stash();
    stash->saved = {x};
  }
  return y;
}

Tensor GeluLayer::backward_input(const Tensor& dy, LayerStash& stash) {
  const Tensor& x = stash.saved.at(0);
  Tensor dx = Tensor::empty(ctx_, dy.rows, dy.cols);
  ctx_.backend.gelu_backward(dx.data(), x.data(), dy.data(), dy.numel());
  return dx;
}

// ---- LayerNorm -------------------------------------------------------------------

LayerNormLayer::LayerNormLayer(Context ctx, int64_t features, int64_t sequence, const std::string& name)
    : ctx_(ctx), features_(features) {
  sequence_ = sequence;
  gamma_ = make_parameter(ctx, name + ".gamma", 1, features, std::vector<float>(features, 1.0f));
  beta_ = make_parameter(ctx, name + ".beta", 1, features, std::vector<float>(features, 0.0f));
}

Tensor LayerNormLayer::forward(const Tensor& x, LayerStash* stash) {
  check_input(x, features_, sequence_, "layernorm");
  Tensor y = Tensor::empty(ctx_, x.rows, x.cols);
  Tensor mean = Tensor::empty(ctx_, x.rows, 1);
  Tensor rstd = Tensor::empty(ctx_, x.rows, 1);
  ctx_.backend.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma_.value.data(),
                                 beta_.value.data(), int(x.rows), int(x.cols));
  if (stash) {
    x.stash();
    mean.stash();
    rstd.stash();
    stash->saved = {x, mean, rstd};
  }
  return y;
}

Tensor LayerNormLayer::backward_input(const Tensor& dy, LayerStash& stash) {
  const Tensor &x = stash.saved.at(0), &mean = stash.saved.at(1), &rstd = stash.saved.at(2);
  Tensor dx = Tensor::empty(ctx_, dy.rows, dy.cols);
  ctx_.backend.layernorm_backward_input(dx.data(), dy.data(), x.data(), mean.data(), rstd.data(),
                                        gamma_.value.data(), int(dy.rows), int(dy.cols));
  stash.pending = {dy};
  return dx;
}

void LayerNormLayer::backward_weight(LayerStash& stash) {
  const Tensor &x = stash.saved.at(0), &mean = stash.saved.at(1), &rstd = stash.saved.at(2);
  const Tensor& dy = stash.pending.at(0);
  ctx_.backend.layernorm_backward_weight_accumulate(gamma_.grad.data(), beta_.grad.data(), dy.data(),
                                                    x.data(), mean.data(), rstd.data(),
                                                    int(dy.rows), int(dy.cols));
  stash.pending.clear();
}

// ---- causal attention core -------------------------------------------------------

CausalAttentionCore::CausalAttentionCore(Context ctx, int64_t hidden, int64_t heads, int64_t sequence)
    : ctx_(ctx), hidden_(hidden), heads_(heads) {
  sequence_ = sequence;
}

Tensor CausalAttentionCore::forward(const Tensor& qkv, LayerStash* stash) {
  check_input(qkv, 3 * hidden_, sequence_, "attention");
  const int s = int(sequence_), h = int(hidden_), a = int(heads_), d = h / a;
  const int64_t samples = qkv.rows / s;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Backend& be = ctx_.backend;
  Tensor probs = Tensor::empty(ctx_, samples * a * s, s);
  Tensor out = Tensor::empty(ctx_, qkv.rows, hidden_);
  for (int64_t b = 0; b < samples; ++b) {
    const float* q = qkv.data() + b * s * 3 * h;
    float* p = probs.data() + b * a * s * s;
    // scores_head = scale Q_head K_head^T, one gemm per head (heads are d columns apart).
    be.gemm_batched(false, true, s, s, d, scale, q, 3 * h, d, q + h, 3 * h, d, 0.0f, p, s,
                    int64_t(s) * s, a);
    be.causal_softmax_forward(p, p, a * s, s);
    be.gemm_batched(false, false, s, d, s, 1.0f, p, s, int64_t(s) * s, q + 2 * h, 3 * h, d, 0.0f,
                    out.data() + b * s * h, h, d, a);
  }
  if (stash) {
    qkv.stash();
    probs.stash();
    stash->saved = {qkv, probs};
  }
  return out;
}

Tensor CausalAttentionCore::backward_input(const Tensor& dy, LayerStash& stash) {
  const Tensor &qkv = stash.saved.at(0), &probs = stash.saved.at(1);
  const int s = int(sequence_), h = int(hidden_), a = int(heads_), d = h / a;
  const int64_t samples = qkv.rows / s;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Backend& be = ctx_.backend;
  Tensor dqkv = Tensor::empty(ctx_, qkv.rows, 3 * hidden_);
  Tensor dp = Tensor::empty(ctx_, int64_t(a) * s, s);  // one sample's worth, reused
  for (int64_t b = 0; b < samples; ++b) {
    const float* q = qkv.data() + b * s * 3 * h;
    const float* p = probs.data() + b * a * s * s;
    const float* dout = dy.data() + b * s * h;
    float* dq = dqkv.data() + b * s * 3 * h;
    // dP = dO V^T; dV = P^T dO; dS = softmax'(dP); dQ = scale dS K; dK = scale dS^T Q.
    be.gemm_batched(false, true, s, s, d, 1.0f, dout, h, d, q + 2 * h, 3 * h, d, 0.0f, dp.data(), s,
                    int64_t(s) * s, a);
    be.gemm_batched(true, false, s, d, s, 1.0f, p, s, int64_t(s) * s, dout, h, d, 0.0f, dq + 2 * h,
                    3 * h, d, a);
    be.causal_softmax_backward(dp.data(), p, dp.data(), a * s, s);
    be.gemm_batched(false, false, s, d, s, scale, dp.data(), s, int64_t(s) * s, q + h, 3 * h, d,
                    0.0f, dq, 3 * h, d, a);
    be.gemm_batched(true, false, s, d, s, scale, dp.data(), s, int64_t(s) * s, q, 3 * h, d, 0.0f,
                    dq + h, 3 * h, d, a);
  }
  return dqkv;
}

}  // namespace pipescope::exec
