// Per-layer time of llm/layer_time.h: the sharded GEMM shapes of one micro-batch, the
// bytes of its elementwise ops, and the TP / CP / EP communication Megatron exposes.
// Elementwise bytes per element, forward / backward, as fused kernels move them
// (Megatron-LM's and Transformer Engine's, or torch.compile's; bf16): LayerNorm or RMSNorm
// 4 (read x, write y) / 6 (read x and dy, write dx); bias-dropout-add 7 (output, residual,
// write, 1-byte mask) / 5 (read dy and the mask, write dx); bias-GeLU 4 / 6; SwiGLU 6 / 10;
// rotary embedding 4 / 4 per query and key element; unfused attention's scale-mask-softmax
// 4 / 6 and dropout 5 / 5 per score. Eager PyTorch (fused_elementwise off) runs each op of
// the model's Python as its own kernel: RMSNorm as torchtitan's (x.float(), pow, mean,
// x * rsqrt, type_as, * weight) 36 / 66, RoPE through complex fp32 (float, multiply,
// type_as) 20 / 20, SwiGLU as silu then multiply 10 / 18, the residual add 6 / 6;
// LayerNorm and GeLU are one kernel either way. Per token-hidden element a fused layer's
// two norms and two bias-dropout-adds move 22 bytes forward and 22 backward.
#include "llm/layer_time.h"

#include <algorithm>
#include <cmath>

#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

struct Dims {
  int64_t b, s, sl, h, a, kvh, hd, t, ffn, mats, m;
  int64_t q;  // a x hd: the query (and attention output) width, h unless --kv-channels says otherwise
  bool sp;
};

Dims dims_of(const TransformerShape& shape, const ParallelLayout& l) {
  Dims d{};
  d.b = l.micro_batch, d.s = shape.sequence, d.sl = shape.sequence / l.cp;
  d.h = shape.hidden, d.a = shape.heads;
  d.kvh = shape.kv_heads > 0 ? shape.kv_heads : shape.heads;
  d.hd = shape.kv_channels > 0 ? shape.kv_channels : shape.hidden / shape.heads;
  d.q = d.a * d.hd;
  d.t = l.t, d.ffn = ffn_width(shape), d.mats = shape.swiglu ? 2 : 1;
  d.m = d.b * d.sl;
  d.sp = l.sequence_parallel && l.t > 1;
  return d;
}

GemmShape input_grad(const GemmShape& g) { return {g.m, g.k, g.n, g.batch}; }
GemmShape weight_grad(const GemmShape& g) { return {g.k, g.n, g.m, g.batch}; }

int64_t pos(int64_t x) { return std::max<int64_t>(x, 0); }

// The attention core of one micro-batch: scores (Q K^T), softmax + dropout, over V.
struct Core {
  int64_t forward_ns = 0, backward_ns = 0;
};

// The attention core's GEMMs: forward scores (Q K^T) and context (over V); backward the
// gradients of both with respect to both operands.
struct CoreGemms {
  GemmShape scores, context, backward[4];
};

CoreGemms core_gemms(const Dims& d) {
  const int64_t batch = d.b * d.a / d.t;
  return {{d.sl, d.s, d.hd, batch},
          {d.sl, d.hd, d.s, batch},
          {{d.sl, d.hd, d.s, batch}, {d.s, d.hd, d.sl, batch}, {d.sl, d.s, d.hd, batch}, {d.s, d.hd, d.sl, batch}}};
}

// Flash attention's FLOPs for one micro-batch, forward, as the kernel runs them: Q K^T and
// P V over the causal half of each rank's queries x the sequence's keys (load-balanced
// context parallelism gives every rank half its square), 4 b (a / t) hd sl s / 2.
double flash_forward_flops(const Dims& d) {
  return 4.0 * static_cast<double>(d.b * d.a / d.t) * static_cast<double>(d.hd) * static_cast<double>(d.sl) *
         static_cast<double>(d.s) / 2.0;
}
// The backward's five GEMMs (the scores recomputed, dV, dP, dQ, dK): 2.5 x the forward's.
constexpr double kFlashBackwardRatio = 2.5;

Core attention_core(const Dims& d, const GpuModel& gpu, AttentionKernel kernel) {
  if (kernel == AttentionKernel::Flash) {
    const double forward = flash_forward_flops(d);
    return {flash_attention_ns(gpu, forward, d.sl, false),
            flash_attention_ns(gpu, kFlashBackwardRatio * forward, d.sl, true)};
  }
  const CoreGemms g = core_gemms(d);
  const double elements = static_cast<double>(g.scores.batch * d.sl * d.s);
  Core c;
  c.forward_ns = gemm_ns(gpu, g.scores) + gemm_ns(gpu, g.context) + memory_ns(gpu, 9.0 * elements);
  c.backward_ns = memory_ns(gpu, 11.0 * elements);
  for (const GemmShape& b : g.backward) c.backward_ns += gemm_ns(gpu, b);
  return c;
}

struct Linears {
  GemmShape qkv, proj, up, down, extra_up, extra_down, router;
};

Linears linears_of(const Dims& d, const TransformerShape& shape, bool moe) {
  Linears x{};
  x.qkv = {d.m, (d.q + 2 * d.kvh * d.hd) / d.t, d.h};
  x.proj = {d.m, d.h, d.q / d.t};
  if (!moe) {
    x.up = {d.m, d.mats * d.ffn / d.t, d.h};
    x.down = {d.m, d.h, d.ffn / d.t};
    return x;
  }
  const int64_t topk = std::max(shape.moe_topk, 1);
  const int64_t e_ffn = shape.moe_ffn_hidden > 0 ? shape.moe_ffn_hidden : d.ffn;
  x.up = {d.m * topk, d.mats * e_ffn / d.t, d.h};
  x.down = {d.m * topk, d.h, e_ffn / d.t};
  x.router = {d.m, shape.experts, d.h};
  if (shape.shared_expert_ffn_hidden > 0) {
    x.extra_up = {d.m, d.mats * shape.shared_expert_ffn_hidden / d.t, d.h};
    x.extra_down = {d.m, d.h, shape.shared_expert_ffn_hidden / d.t};
  }
  return x;
}

// Forward, input-gradient and weight-gradient GEMM time of the layer's linears, in the
// recipe's GEMM class (the router stays bf16), with the recipe's casts: cast_bytes per
// element of x, W and dy, half charged to each of the two GEMMs that read the tensor.
struct LinearTimes {
  int64_t forward = 0, input = 0, weight = 0;
  // Each linear's forward / input-gradient / weight-gradient GEMM, casts included.
  int64_t f_qkv = 0, f_proj = 0, f_up = 0, f_down = 0;
  int64_t i_qkv = 0, i_proj = 0, i_up = 0, i_down = 0;
  int64_t w_qkv = 0, w_up = 0;
};

struct LinearGemms {
  int64_t forward = 0, input = 0, weight = 0;
};

LinearGemms time_linear(const GemmShape& g, const GpuModel& gpu, const Fp8RecipeInfo& fp8) {
  LinearGemms r{gemm_ns(gpu, g, fp8.gemm), gemm_ns(gpu, input_grad(g), fp8.gemm), gemm_ns(gpu, weight_grad(g), fp8.gemm)};
  if (fp8.cast_bytes > 0 && g.m > 0 && g.n > 0 && g.k > 0) {
    const double x = static_cast<double>(g.m * g.k), w = static_cast<double>(g.n * g.k), dy = static_cast<double>(g.m * g.n);
    const double half = fp8.cast_bytes / 2;
    r.forward += memory_ns(gpu, half * (x + w));
    r.input += memory_ns(gpu, half * (dy + w));
    r.weight += memory_ns(gpu, half * (dy + x));
  }
  return r;
}

LinearTimes time_linears(const Linears& x, const GpuModel& gpu, Fp8Recipe recipe) {
  const Fp8RecipeInfo& fp8 = fp8_recipe_info(recipe);
  LinearTimes r;
  auto add = [&](const GemmShape& g, const Fp8RecipeInfo& info, int64_t* f, int64_t* i, int64_t* w) {
    const LinearGemms t = time_linear(g, gpu, info);
    r.forward += t.forward, r.input += t.input, r.weight += t.weight;
    if (f) *f = t.forward;
    if (i) *i = t.input;
    if (w) *w = t.weight;
  };
  int64_t w_proj = 0, w_down = 0;
  add(x.qkv, fp8, &r.f_qkv, &r.i_qkv, &r.w_qkv);
  add(x.proj, fp8, &r.f_proj, &r.i_proj, &w_proj);
  add(x.up, fp8, &r.f_up, &r.i_up, &r.w_up);
  add(x.down, fp8, &r.f_down, &r.i_down, &w_down);
  add(x.extra_up, fp8, nullptr, nullptr, nullptr);
  add(x.extra_down, fp8, nullptr, nullptr, nullptr);
  add(x.router, fp8_recipe_info(Fp8Recipe::None), nullptr, nullptr, nullptr);
  return r;
}

// TP communication of a layer: forward (exposed) and backward (total, exposed).
struct Comm {
  int64_t forward = 0, backward = 0, backward_exposed = 0;
};

// With tp_comm_overlap (Megatron-LM's --tp-comm-overlap, torchtitan's async TP; SP only)
// every all-gather runs under the GEMM that consumes it and every reduce-scatter under the
// GEMM that produces it, chunk by chunk: only what exceeds that GEMM shows.
Comm tensor_parallel_comm(const Dims& d, const GpuModel& gpu, const ParallelLayout& l, const LinearTimes& lin) {
  Comm c;
  if (d.t < 2) return c;
  const GroupLink tp = group_link(gpu, l, Group::Tp);
  const int64_t bytes = d.m * d.h * 2;
  if (!d.sp) {
    const int64_t ar = allreduce_group_ns(tp, bytes);
    c.forward = 2 * ar;
    c.backward = 2 * ar;
    c.backward_exposed = pos(ar - lin.w_qkv) + pos(ar - lin.w_up);
    return c;
  }
  const int64_t ag = allgather_group_ns(tp, bytes), rs = reduce_scatter_group_ns(tp, bytes);
  c.forward = 2 * (ag + rs);
  c.backward = 4 * ag + 2 * rs;  // output-gradient gathers, input-gradient scatters, W's re-gathers
  if (l.tp_comm_overlap) {
    c.forward = pos(ag - lin.f_qkv) + pos(rs - lin.f_proj) + pos(ag - lin.f_up) + pos(rs - lin.f_down);
    c.backward_exposed = pos(ag - lin.i_down) + pos(ag - lin.i_proj) + pos(rs - lin.i_qkv) + pos(rs - lin.i_up) +
                         pos(ag - lin.w_qkv) + pos(ag - lin.w_up);
    return c;
  }
  c.backward_exposed = 2 * ag + pos(rs - lin.w_qkv) + pos(rs - lin.w_up) + pos(ag - lin.i_qkv) + pos(ag - lin.i_up);
  return c;
}

// Context parallel K/V ring and expert all-to-alls, added to `c`.
void add_cp_ep(Comm& c, const Dims& d, const Core& core, const TransformerShape& shape, const ParallelLayout& l,
               const GpuModel& gpu, bool moe) {
  if (l.cp > 1) {
    const GroupLink cp = group_link(gpu, l, Group::Cp);
    const int64_t step = p2p_group_ns(cp, 2 * d.b * d.sl * d.kvh * d.hd / d.t * 2);
    const int64_t ring = (l.cp - 1) * step;
    c.forward += pos(ring - core.forward_ns);
    c.backward += 2 * ring;
    c.backward_exposed += pos(2 * ring - core.backward_ns);
  }
  if (moe && l.ep > 1) {
    const GroupLink ep = group_link(gpu, l, Group::Ep);
    const int64_t a2a = alltoall_group_ns(ep, d.m * std::max(shape.moe_topk, 1) * d.h * 2);
    c.forward += 2 * a2a;
    c.backward += 2 * a2a;
    c.backward_exposed += 2 * a2a;
  }
}

}  // namespace

int ffn_width(const TransformerShape& shape) {
  return shape.ffn_hidden > 0 ? shape.ffn_hidden : default_ffn_hidden(shape.hidden, shape.swiglu);
}

LayerFlops transformer_layer_flops(const TransformerShape& shape, const ParallelLayout& layout, bool moe) {
  const Dims d = dims_of(shape, layout);
  const Linears x = linears_of(d, shape, moe);
  LayerFlops f;
  double linears = 0;
  for (const GemmShape* g : {&x.qkv, &x.proj, &x.up, &x.down, &x.extra_up, &x.extra_down, &x.router}) {
    linears += static_cast<double>(gemm_flops(*g));  // input_grad(g) and weight_grad(g) multiply as many
  }
  const CoreGemms core = core_gemms(d);
  const double core_forward = static_cast<double>(gemm_flops(core.scores) + gemm_flops(core.context));
  double core_backward = 0;
  for (const GemmShape& b : core.backward) core_backward += static_cast<double>(gemm_flops(b));
  f.forward = linears + core_forward;
  f.input_grad = linears + core_backward;
  f.weight_grad = linears;
  if (layout.recompute == Recompute::Selective) f.recompute = core_forward;
  if (layout.recompute == Recompute::Full) f.recompute = f.forward;
  return f;
}

LayerFlops head_flops(const TransformerShape& shape, const ParallelLayout& layout) {
  const Dims d = dims_of(shape, layout);
  const double logits = static_cast<double>(gemm_flops({d.m, shape.vocabulary / d.t, d.h}));
  LayerFlops f;
  f.forward = f.input_grad = f.weight_grad = logits;
  return f;
}

namespace {

// The bytes one micro-batch's elementwise ops move on one GPU, forward and backward, fused
// or eager (the file's opening comment gives each op's bytes per element).
struct ElementwiseBytes {
  double forward = 0, backward = 0;
};

ElementwiseBytes elementwise_bytes(const Dims& d, const TransformerShape& shape, const ParallelLayout& l) {
  const double token = static_cast<double>(d.m * d.h) / static_cast<double>(d.sp ? d.t : 1);  // norms, residuals
  const double act = static_cast<double>(d.m * d.ffn / d.t);                                  // the MLP's activation
  const double rope = shape.learned_positions ? 0.0 : static_cast<double>(d.m * (d.a + d.kvh) * d.hd / d.t);
  if (l.fused_elementwise) {
    return {22.0 * token + act * (shape.swiglu ? 6.0 : 4.0) + 4.0 * rope,
            22.0 * token + act * (shape.swiglu ? 10.0 : 6.0) + 4.0 * rope};
  }
  const double norm_f = shape.rms_norm ? 36.0 : 4.0, norm_b = shape.rms_norm ? 66.0 : 6.0;
  return {(2 * norm_f + 2 * 6.0) * token + act * (shape.swiglu ? 10.0 : 4.0) + 20.0 * rope,
          (2 * norm_b + 2 * 6.0) * token + act * (shape.swiglu ? 18.0 : 6.0) + 20.0 * rope};
}

// What selective recompute re-runs before I (llm/layout.h's SelectivePolicy): Megatron's
// attention core, or torchtitan's every other matmul (k of the fused QKV, the output
// projection, then w3 with SwiGLU or the second MLP matrix without) and the elementwise ops.
int64_t selective_recompute_ns(const ParallelLayout& l, const Dims& d, const Core& core, const LinearTimes& lin,
                               int64_t elementwise_forward, bool swiglu) {
  if (l.selective == SelectivePolicy::CoreAttention) return core.forward_ns;
  const double k_share = static_cast<double>(d.kvh) / static_cast<double>(d.a + 2 * d.kvh);
  return std::llround(k_share * static_cast<double>(lin.f_qkv)) + lin.f_proj + (swiglu ? lin.f_up / 2 : lin.f_down) +
         elementwise_forward;
}

}  // namespace

LayerTime transformer_layer_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                                 bool moe) {
  const Dims d = dims_of(shape, layout);
  const Core core = attention_core(d, gpu, layout.attention);
  const LinearTimes lin = time_linears(linears_of(d, shape, moe), gpu, layout.fp8);
  Comm comm = tensor_parallel_comm(d, gpu, layout, lin);
  add_cp_ep(comm, d, core, shape, layout, gpu, moe);
  const ElementwiseBytes bytes = elementwise_bytes(d, shape, layout);
  const int64_t elementwise = memory_ns(gpu, bytes.forward);
  const int64_t elementwise_back = memory_ns(gpu, bytes.backward);
  LayerTime r;
  r.forward_gemm_ns = lin.forward + core.forward_ns;
  r.forward_memory_ns = elementwise;
  r.forward_comm_ns = comm.forward;
  r.forward_ns = r.forward_gemm_ns + r.forward_memory_ns + r.forward_comm_ns;
  if (layout.recompute == Recompute::Full) r.recompute_ns = r.forward_ns;
  if (layout.recompute == Recompute::Selective) {
    r.recompute_ns = selective_recompute_ns(layout, d, core, lin, elementwise, shape.swiglu);
  }
  r.backward_comm_ns = comm.backward;
  r.backward_comm_exposed_ns = comm.backward_exposed;
  r.input_grad_ns = lin.input + core.backward_ns + elementwise_back + r.recompute_ns + comm.backward_exposed;
  r.weight_grad_ns = lin.weight;
  r.model_flops = transformer_layer_flops(shape, layout, moe).total();
  r.parameters = std::llround(layer_parameters(shape, moe).per_gpu(layout.t, layout.ep));
  return r;
}

LayerTime embedding_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu) {
  const Dims d = dims_of(shape, layout);
  const double tokens = static_cast<double>(d.m * d.h);
  LayerTime r;
  r.forward_memory_ns = memory_ns(gpu, 13.0 * tokens);  // row gather 4, position add 2, dropout 7
  if (d.t > 1) {
    const GroupLink tp = group_link(gpu, layout, Group::Tp);
    r.forward_comm_ns = d.sp ? reduce_scatter_group_ns(tp, d.m * d.h * 2) : allreduce_group_ns(tp, d.m * d.h * 2);
  }
  r.forward_ns = r.forward_memory_ns + r.forward_comm_ns;
  r.weight_grad_ns = memory_ns(gpu, 10.0 * tokens);  // read the gradient, add into the fp32 table rows
  r.parameters = std::llround(embedding_parameters(shape).per_gpu(layout.t, 1));
  return r;
}

LayerTime head_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu) {
  const Dims d = dims_of(shape, layout);
  const GemmShape logits{d.m, shape.vocabulary / d.t, d.h};
  const double token = static_cast<double>(d.m * d.h) / static_cast<double>(d.sp ? d.t : 1);
  const double vocab = static_cast<double>(d.m * logits.n);
  LayerTime r;
  r.forward_gemm_ns = gemm_ns(gpu, logits);
  r.forward_memory_ns = memory_ns(gpu, 4.0 * token + 18.0 * vocab);  // final LayerNorm, fp32 cross-entropy
  if (d.t > 1) {
    const GroupLink tp = group_link(gpu, layout, Group::Tp);
    r.forward_comm_ns = 3 * allreduce_group_ns(tp, d.m * 4) + (d.sp ? allgather_group_ns(tp, d.m * d.h * 2) : 0);
    r.backward_comm_ns = d.sp ? reduce_scatter_group_ns(tp, d.m * d.h * 2) : allreduce_group_ns(tp, d.m * d.h * 2);
    r.backward_comm_exposed_ns = r.backward_comm_ns;
  }
  r.forward_ns = r.forward_gemm_ns + r.forward_memory_ns + r.forward_comm_ns;
  r.input_grad_ns = gemm_ns(gpu, input_grad(logits)) + memory_ns(gpu, 8.0 * token + 10.0 * vocab) +
                    r.backward_comm_exposed_ns;
  r.weight_grad_ns = gemm_ns(gpu, weight_grad(logits));
  r.model_flops = head_flops(shape, layout).total();
  // A tied output layer is the word embedding when the last chunk shares rank 0 with it
  // (p = 1, or a V); elsewhere Megatron keeps a copy on the head's rank (llm/memory.h).
  const bool shares_embedding = shape.tied_embeddings && chunk_rank(layout, layout.p * layout.v - 1) == 0;
  r.parameters = std::llround(head_parameters(shape, !shares_embedding).per_gpu(layout.t, 1));
  return r;
}

}  // namespace pipescope
