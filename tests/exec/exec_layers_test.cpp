// Layer forward/backward against central finite differences (an independent reference:
// the pipeline tests compare with the same layer code, so the layers' own gradients are
// checked here), split backward = whole backward, and the stash sizes in closed form.
#include <gtest/gtest.h>

#include <cmath>

#include "exec/backends/cpu_backend.h"
#include "exec/layers/layer.h"

namespace pipescope::exec {
namespace {

JsonReader reader(const Json& j) {
  auto root = std::make_shared<const Json>(j);
  return JsonReader(root, root.get(), "test", "spec");
}

// loss(x, params) = sum(y * r) for a fixed random r; checks dL/dx and dL/dparams.
void check_gradients(const Json& spec, int64_t samples) {
  CpuBackend be;
  MemoryTracker tr;
  Context ctx{be, tr};
  auto layer = make_layer(reader(spec), ctx, 7);
  const int64_t rows = samples * layer->sequence();
  std::vector<float> xv = uniform_values(11, rows * layer->in_features(), 1.0f);
  std::vector<float> rv = uniform_values(13, rows * layer->out_features(), 1.0f);
  auto loss = [&](const std::vector<float>& xs) {
    Tensor y = layer->forward(Tensor::from_host(ctx, rows, layer->in_features(), xs), nullptr);
    std::vector<float> yh = y.to_host();
    double l = 0;
    for (std::size_t i = 0; i < yh.size(); ++i) l += double(yh[i]) * rv[i];
    return l;
  };
  LayerStash st;
  layer->forward(Tensor::from_host(ctx, rows, layer->in_features(), xv), &st);
  std::vector<float> dx = layer->backward(Tensor::from_host(ctx, rows, layer->out_features(), rv), st).to_host();
  const float eps = 1e-2f;
  // Input gradient: every 7th element (enough to catch indexing errors, fast).
  for (std::size_t i = 0; i < xv.size(); i += 7) {
    std::vector<float> a = xv, b = xv;
    a[i] += eps;
    b[i] -= eps;
    double fd = (loss(a) - loss(b)) / (2 * eps);
    EXPECT_NEAR(dx[i], fd, 2e-2 * std::max(1.0, std::fabs(fd))) << spec.dump() << " input " << i;
  }
  for (Parameter* p : layer->parameters()) {
    std::vector<float> g = p->grad.to_host();
    std::vector<float> w = p->value.to_host();
    for (std::size_t i = 0; i < w.size(); i += 5) {
      std::vector<float> wa = w, wb = w;
      wa[i] += eps;
      be.upload(p->value.data(), wa.data(), p->value.numel());
      double la = loss(xv);
      wb[i] -= eps;
      be.upload(p->value.data(), wb.data(), p->value.numel());
      double lb = loss(xv);
      be.upload(p->value.data(), w.data(), p->value.numel());
      double fd = (la - lb) / (2 * eps);
      EXPECT_NEAR(g[i], fd, 2e-2 * std::max(1.0, std::fabs(fd))) << p->name << "[" << i << "]";
    }
  }
}

TEST(ExecLayers, LinearMatchesFiniteDifferences) {
  check_gradients({{"type", "linear"}, {"in", 6}, {"out", 5}, {"sequence", 2}}, 3);
}
TEST(ExecLayers, GeluMatchesFiniteDifferences) {
  check_gradients({{"type", "gelu"}, {"features", 9}}, 4);
}
TEST(ExecLayers, LayerNormMatchesFiniteDifferences) {
  check_gradients({{"type", "layernorm"}, {"features", 8}, {"sequence", 3}}, 2);
}
TEST(ExecLayers, MlpBlockMatchesFiniteDifferences) {
  check_gradients({{"type", "mlp_block"}, {"hidden", 8}, {"ffn", 12}, {"sequence", 2}}, 2);
}
TEST(ExecLayers, AttentionBlockMatchesFiniteDifferences) {
  check_gradients({{"type", "attention_block"}, {"hidden", 8}, {"heads", 2}, {"sequence", 5}}, 2);
}

// backward_input + backward_weight must give exactly the gradients of backward.
TEST(ExecLayers, SplitBackwardEqualsWholeBackward) {
  CpuBackend be;
  MemoryTracker tr;
  Context ctx{be, tr};
  Json spec = {{"type", "attention_block"}, {"hidden", 8}, {"heads", 2}, {"sequence", 4}};
  auto a = make_layer(reader(spec), ctx, 3);
  auto b = make_layer(reader(spec), ctx, 3);
  Tensor x = Tensor::from_host(ctx, 8, 8, uniform_values(1, 64, 1.0f));
  Tensor dy = Tensor::from_host(ctx, 8, 8, uniform_values(2, 64, 1.0f));
  LayerStash sa, sb;
  a->forward(x, &sa);
  b->forward(x, &sb);
  std::vector<float> dxa = a->backward(dy, sa).to_host();
  std::vector<float> dxb = b->backward_input(dy, sb).to_host();
  b->backward_weight(sb);
  EXPECT_EQ(dxa, dxb);
  for (std::size_t i = 0; i < a->parameters().size(); ++i) {
    EXPECT_EQ(a->parameters()[i]->grad.to_host(), b->parameters()[i]->grad.to_host()) << i;
  }
}

// Stash sizes in closed form (fp32): attention block = ln (x, mean, rstd) + qkv input
// (ln output) + core (qkv, probabilities) + proj input: 4 (rows (6h + 2) + b a s^2).
TEST(ExecLayers, StashBytesFollowTheClosedForm) {
  CpuBackend be;
  MemoryTracker tr;
  Context ctx{be, tr};
  const int64_t b = 3, s = 5, h = 8, a = 2, ffn = 12, rows = b * s;
  auto attn = make_layer(reader({{"type", "attention_block"}, {"hidden", h}, {"heads", a}, {"sequence", s}}), ctx, 1);
  auto mlp = make_layer(reader({{"type", "mlp_block"}, {"hidden", h}, {"ffn", ffn}, {"sequence", s}}), ctx, 2);
  {
    LayerStash st;
    attn->forward(Tensor::zeros(ctx, rows, h), &st);
    EXPECT_EQ(tr.current(Category::Activations), 4 * (rows * (6 * h + 2) + b * a * s * s));
  }
  EXPECT_EQ(tr.current(Category::Activations), 0);
  {
    // mlp: ln (x, mean, rstd) + fc1 input + gelu input + fc2 input = 4 rows (2h + 2 + 2 ffn).
    LayerStash st;
    mlp->forward(Tensor::zeros(ctx, rows, h), &st);
    EXPECT_EQ(tr.current(Category::Activations), 4 * rows * (2 * h + 2 + 2 * ffn));
  }
  EXPECT_EQ(tr.current(Category::Activations), 0);
  EXPECT_EQ(tr.current(Category::Transient), 0);
}

TEST(ExecLayers, UnknownTypeNamesThePath) {
  CpuBackend be;
  MemoryTracker tr;
  Context ctx{be, tr};
  try {
    make_layer(reader({{"type", "conv"}}), ctx, 1);
    FAIL() << "expected InputError";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("spec.type: unknown layer type \"conv\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope::exec
