// Every CUDA kernel and layer against the CPU reference (the ggml test-backend-ops
// pattern): the same inputs on both backends, the same call, relative L2 error under
// 1e-4 in fp32 and 2e-2 in bf16. Also: bf16 tensors are charged 2 bytes per element,
// and the caching allocator hands a freed block out again without a new cudaMalloc.
// Label `gpu`: without a GPU every test skips and says why.
#include <gtest/gtest.h>

#include <memory>

#include "tests/cuda/cuda_gpu.h"
#include "exec/backends/cpu_backend.h"
#include "exec/layers/layer.h"
#include "exec/memory/tensor.h"

namespace pipescope::exec {
namespace {

using test::relative_error;
using test::tolerance;

// The same buffers on the CPU reference and on the GPU.
class Twin {
 public:
  explicit Twin(const std::string& dtype) : dtype_(dtype), gpu_(make_backend(dtype == "bf16" ? "cuda:bf16" : "cuda")) {}
  ~Twin() {
    for (auto& b : bufs_) {
      cpu_.deallocate(b.c, b.n);
      gpu_->deallocate(b.g, b.n);
    }
  }
  int buffer(int64_t n, uint64_t seed, float scale = 1.0f) {
    Buf b{cpu_.allocate(n), gpu_->allocate(n), n};
    const std::vector<float> v = uniform_values(seed, n, scale);
    cpu_.upload(b.c, v.data(), n);
    gpu_->upload(b.g, v.data(), n);
    bufs_.push_back(b);
    return static_cast<int>(bufs_.size()) - 1;
  }
  float* c(int i) { return bufs_.at(i).c; }
  float* g(int i) { return bufs_.at(i).g; }
  CpuBackend& cpu() { return cpu_; }
  Backend& gpu() { return *gpu_; }
  double error(int i) {
    const Buf& b = bufs_.at(i);
    std::vector<float> want(b.n), got(b.n);
    cpu_.download(want.data(), b.c, b.n);
    gpu_->download(got.data(), b.g, b.n);
    return relative_error(got, want);
  }
  double tol() const { return tolerance(dtype_); }

 private:
  struct Buf {
    float* c;
    float* g;
    int64_t n;
  };
  std::string dtype_;
  CpuBackend cpu_;
  std::unique_ptr<Backend> gpu_;
  std::vector<Buf> bufs_;
};

class CudaKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { PS_REQUIRE_GPU(); }
};

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaKernels, ::testing::Values("fp32", "bf16"));

TEST_P(CudaKernels, GemmAllTranspositionsAndAccumulation) {
  Twin t(GetParam());
  const int m = 37, n = 53, k = 71;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int a = t.buffer(int64_t(m) * k, 1), b = t.buffer(int64_t(k) * n, 2), c = t.buffer(int64_t(m) * n, 3);
      const int lda = ta ? m : k, ldb = tb ? k : n;
      for (Backend* be : {static_cast<Backend*>(&t.cpu()), &t.gpu()}) {
        const bool cpu = be == &t.cpu();
        be->gemm(ta, tb, m, n, k, 0.5f, cpu ? t.c(a) : t.g(a), lda, cpu ? t.c(b) : t.g(b), ldb, 1.0f,
                 cpu ? t.c(c) : t.g(c), n);
      }
      EXPECT_LT(t.error(c), t.tol()) << "ta=" << ta << " tb=" << tb;
    }
  }
}

TEST_P(CudaKernels, StridedBatchedGemmAsAttentionUsesIt) {
  Twin t(GetParam());
  const int s = 24, h = 32, heads = 4, d = h / heads;
  const int qkv = t.buffer(int64_t(s) * 3 * h, 4), p = t.buffer(int64_t(heads) * s * s, 5);
  t.cpu().gemm_batched(false, true, s, s, d, 0.3f, t.c(qkv), 3 * h, d, t.c(qkv) + h, 3 * h, d, 0.0f, t.c(p), s,
                       int64_t(s) * s, heads);
  t.gpu().gemm_batched(false, true, s, s, d, 0.3f, t.g(qkv), 3 * h, d, t.g(qkv) + h, 3 * h, d, 0.0f, t.g(p), s,
                       int64_t(s) * s, heads);
  EXPECT_LT(t.error(p), t.tol());
}

TEST_P(CudaKernels, ElementwiseAndColumnSums) {
  Twin t(GetParam());
  const int rows = 70, cols = 45;
  const int64_t n = int64_t(rows) * cols;
  const int y = t.buffer(n, 6), bias = t.buffer(cols, 7), out = t.buffer(cols, 8), a = t.buffer(n, 9),
            b = t.buffer(n, 10), sum = t.buffer(n, 11), gy = t.buffer(n, 12), gdx = t.buffer(n, 13);
  auto both = [&](auto&& f) {
    f(static_cast<Backend&>(t.cpu()), [&](int i) { return t.c(i); });
    f(t.gpu(), [&](int i) { return t.g(i); });
  };
  both([&](Backend& be, auto p) {
    be.add_bias(p(y), p(bias), rows, cols);
    be.sum_rows_accumulate(p(out), p(y), rows, cols);
    be.add(p(sum), p(a), p(b), n);
    be.gelu_forward(p(gy), p(a), n);
    be.gelu_backward(p(gdx), p(a), p(b), n);
  });
  for (int i : {y, out, sum, gy, gdx}) EXPECT_LT(t.error(i), t.tol()) << "buffer " << i;
}

TEST_P(CudaKernels, LayerNormForwardAndBothBackwards) {
  Twin t(GetParam());
  const int rows = 33, cols = 130;
  const int64_t n = int64_t(rows) * cols;
  const int x = t.buffer(n, 14, 2.0f), gamma = t.buffer(cols, 15), beta = t.buffer(cols, 16), y = t.buffer(n, 17),
            mean = t.buffer(rows, 18), rstd = t.buffer(rows, 19), dy = t.buffer(n, 20), dx = t.buffer(n, 21),
            dgamma = t.buffer(cols, 22), dbeta = t.buffer(cols, 23);
  for (Backend* be : {static_cast<Backend*>(&t.cpu()), &t.gpu()}) {
    auto p = [&](int i) { return be == &t.cpu() ? t.c(i) : t.g(i); };
    be->layernorm_forward(p(y), p(mean), p(rstd), p(x), p(gamma), p(beta), rows, cols);
    be->layernorm_backward_input(p(dx), p(dy), p(x), p(mean), p(rstd), p(gamma), rows, cols);
    be->layernorm_backward_weight_accumulate(p(dgamma), p(dbeta), p(dy), p(x), p(mean), p(rstd), rows, cols);
  }
  for (int i : {y, mean, rstd, dx, dgamma, dbeta}) EXPECT_LT(t.error(i), t.tol()) << "buffer " << i;
}

TEST_P(CudaKernels, CausalSoftmaxInPlaceBothWays) {
  Twin t(GetParam());
  const int seq = 40, rows = 3 * seq;  // rows wrap around the sequence: row r is position r % seq
  const int64_t n = int64_t(rows) * seq;
  const int s = t.buffer(n, 24, 4.0f), dp = t.buffer(n, 25);
  for (Backend* be : {static_cast<Backend*>(&t.cpu()), &t.gpu()}) {
    auto p = [&](int i) { return be == &t.cpu() ? t.c(i) : t.g(i); };
    be->causal_softmax_forward(p(s), p(s), rows, seq);
    be->causal_softmax_backward(p(dp), p(s), p(dp), rows, seq);
  }
  EXPECT_LT(t.error(s), t.tol());
  EXPECT_LT(t.error(dp), t.tol());
}

TEST_P(CudaKernels, LossAndOptimizers) {
  Twin t(GetParam());
  const int64_t n = 1000;
  const int y = t.buffer(n, 26), target = t.buffer(n, 27), dy = t.buffer(n, 28), w = t.buffer(n, 29),
            m = t.buffer(n, 30, 0.0f), v = t.buffer(n, 31, 0.0f), w2 = t.buffer(n, 32);
  const double want = t.cpu().mse_gradient(t.c(dy), t.c(y), t.c(target), 0.01f, n);
  const double got = t.gpu().mse_gradient(t.g(dy), t.g(y), t.g(target), 0.01f, n);
  EXPECT_NEAR(got, want, t.tol() * want);
  EXPECT_LT(t.error(dy), t.tol());
  AdamSettings a;
  a.lr = 1e-2f;
  for (int step = 1; step <= 3; ++step) {
    t.cpu().adam_step(t.c(w), t.c(dy), t.c(m), t.c(v), a, step, n);
    t.gpu().adam_step(t.g(w), t.g(dy), t.g(m), t.g(v), a, step, n);
  }
  t.cpu().sgd_step(t.c(w2), t.c(dy), 0.5f, n);
  t.gpu().sgd_step(t.g(w2), t.g(dy), 0.5f, n);
  for (int i : {w, m, v, w2}) EXPECT_LT(t.error(i), t.tol()) << "buffer " << i;
}

// Every layer type, forward and both halves of backward, CPU vs GPU with the same seed.
TEST_P(CudaKernels, EveryLayerMatchesTheCpuReference) {
  const std::vector<Json> specs = {
      Json{{"type", "linear"}, {"in", 48}, {"out", 80}, {"sequence", 8}},
      Json{{"type", "gelu"}, {"features", 64}, {"sequence", 8}},
      Json{{"type", "layernorm"}, {"features", 96}, {"sequence", 8}},
      Json{{"type", "mlp_block"}, {"hidden", 64}, {"ffn", 256}, {"sequence", 16}},
      Json{{"type", "attention_block"}, {"hidden", 64}, {"heads", 4}, {"sequence", 16}},
  };
  for (std::size_t i = 0; i < specs.size(); ++i) {
    CpuBackend cpu;
    std::unique_ptr<Backend> gpu = make_backend(GetParam() == "bf16" ? "cuda:bf16" : "cuda");
    MemoryTracker tc, tg;
    Context cc{cpu, tc}, cg{*gpu, tg};
    auto root = std::make_shared<const Json>(specs[i]);
    JsonReader spec(root, root.get(), "test", "specs[" + std::to_string(i) + "]");
    std::unique_ptr<Layer> lc = make_layer(spec, cc, 7), lg = make_layer(spec, cg, 7);
    const int64_t rows = 3 * lc->sequence();
    const std::vector<float> xv = uniform_values(40 + i, rows * lc->in_features(), 1.0f);
    const std::vector<float> dyv = uniform_values(50 + i, rows * lc->out_features(), 1.0f);
    LayerStash sc, sg;
    Tensor yc = lc->forward(Tensor::from_host(cc, rows, lc->in_features(), xv), &sc);
    Tensor yg = lg->forward(Tensor::from_host(cg, rows, lg->in_features(), xv), &sg);
    EXPECT_LT(relative_error(yg.to_host(), yc.to_host()), tolerance(GetParam())) << specs[i].dump() << " forward";
    Tensor dxc = lc->backward(Tensor::from_host(cc, rows, lc->out_features(), dyv), sc);
    Tensor dxg = lg->backward(Tensor::from_host(cg, rows, lg->out_features(), dyv), sg);
    EXPECT_LT(relative_error(dxg.to_host(), dxc.to_host()), tolerance(GetParam())) << specs[i].dump() << " dx";
    std::vector<Parameter*> pc = lc->parameters(), pg = lg->parameters();
    ASSERT_EQ(pc.size(), pg.size());
    for (std::size_t j = 0; j < pc.size(); ++j) {
      EXPECT_LT(relative_error(pg[j]->grad.to_host(), pc[j]->grad.to_host()), tolerance(GetParam()))
          << specs[i].dump() << " " << pc[j]->name;
    }
    // The stash is charged at the backend's element size: bf16 takes half the bytes.
    EXPECT_EQ(tg.peak(Category::Activations) * (GetParam() == "bf16" ? 2 : 1), tc.peak(Category::Activations))
        << specs[i].dump();
  }
}

TEST(CudaAllocator, AFreedBlockIsHandedOutAgainWithoutCudaMalloc) {
  PS_REQUIRE_GPU();
  std::unique_ptr<Backend> be = make_backend("cuda");
  const CudaMemoryStats before = cuda_memory_stats(*be);
  float* a = be->allocate(1000);
  be->deallocate(a, 1000);
  float* b = be->allocate(900);  // rounds to the same 4 KiB block
  EXPECT_EQ(a, b);
  const CudaMemoryStats after = cuda_memory_stats(*be);
  EXPECT_EQ(after.device_mallocs, before.device_mallocs + 1) << "one cudaMalloc for both";
  EXPECT_EQ(after.in_use_bytes - before.in_use_bytes, 4096) << "900 floats = 3600 bytes, rounded up to 512s";
  be->deallocate(b, 900);
}

}  // namespace
}  // namespace pipescope::exec
