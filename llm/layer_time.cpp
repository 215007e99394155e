// Per-layer time of llm/layer_time.h: the sharded GEMM shapes of one micro-batch, the
// bytes of its elementwise ops, and the TP / CP / EP communication Megatron exposes.
// Elementwise bytes per element (bf16, Megatron's fused kernels), forward / backward:
// LayerNorm 4 (read x, write y) / 6 (read x and dy, write dx); bias-dropout-add 7
// (output, residual, write, 1-byte mask) / 5 (read dy and the mask, write dx); bias-GeLU
// 4 / 6; SwiGLU 6 / 10; on every attention score scale-mask-softmax 4 / 6 and dropout
// 5 / 5. Per token-hidden element a layer's two LayerNorms and two bias-dropout-adds
// move 22 bytes forward and 22 backward.
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

Core attention_core(const Dims& d, const GpuModel& gpu) {
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

// Forward, input-gradient and weight-gradient GEMM time of the layer's linears.
struct LinearTimes {
  int64_t forward = 0, input = 0, weight = 0, weight_qkv = 0, weight_up = 0, input_qkv = 0, input_up = 0;
};

LinearTimes time_linears(const Linears& x, const GpuModel& gpu) {
  LinearTimes r;
  for (const GemmShape* g : {&x.qkv, &x.proj, &x.up, &x.down, &x.extra_up, &x.extra_down, &x.router}) {
    r.forward += gemm_ns(gpu, *g);
    r.input += gemm_ns(gpu, input_grad(*g));
    r.weight += gemm_ns(gpu, weight_grad(*g));
  }
  r.weight_qkv = gemm_ns(gpu, weight_grad(x.qkv)), r.weight_up = gemm_ns(gpu, weight_grad(x.up));
  r.input_qkv = gemm_ns(gpu, input_grad(x.qkv)), r.input_up = gemm_ns(gpu, input_grad(x.up));
  return r;
}

// TP communication of a layer: forward (exposed) and backward (total, exposed).
struct Comm {
  int64_t forward = 0, backward = 0, backward_exposed = 0;
};

Comm tensor_parallel_comm(const Dims& d, const GpuModel& gpu, const ParallelLayout& l, const LinearTimes& lin) {
  Comm c;
  if (d.t < 2) return c;
  const GroupLink tp = group_link(gpu, l, Group::Tp);
  const int64_t bytes = d.m * d.h * 2;
  if (!d.sp) {
    const int64_t ar = allreduce_group_ns(tp, bytes);
    c.forward = 2 * ar;
    c.backward = 2 * ar;
    c.backward_exposed = pos(ar - lin.weight_qkv) + pos(ar - lin.weight_up);
    return c;
  }
  const int64_t ag = allgather_group_ns(tp, bytes), rs = reduce_scatter_group_ns(tp, bytes);
  c.forward = 2 * (ag + rs);
  c.backward = 4 * ag + 2 * rs;  // output-gradient gathers, input-gradient scatters, W's re-gathers
  c.backward_exposed = 2 * ag + pos(rs - lin.weight_qkv) + pos(rs - lin.weight_up) + pos(ag - lin.input_qkv) +
                       pos(ag - lin.input_up);
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

LayerTime transformer_layer_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                                 bool moe) {
  const Dims d = dims_of(shape, layout);
  const Core core = attention_core(d, gpu);
  const LinearTimes lin = time_linears(linears_of(d, shape, moe), gpu);
  Comm comm = tensor_parallel_comm(d, gpu, layout, lin);
  add_cp_ep(comm, d, core, shape, layout, gpu, moe);
  const double token = static_cast<double>(d.m * d.h) / static_cast<double>(d.sp ? d.t : 1);
  const double act = static_cast<double>(d.m * d.ffn / d.t);
  const int64_t elementwise = memory_ns(gpu, 22.0 * token + act * (shape.swiglu ? 6.0 : 4.0));
  const int64_t elementwise_back = memory_ns(gpu, 22.0 * token + act * (shape.swiglu ? 10.0 : 6.0));
  LayerTime r;
  r.forward_gemm_ns = lin.forward + core.forward_ns;
  r.forward_memory_ns = elementwise;
  r.forward_comm_ns = comm.forward;
  r.forward_ns = r.forward_gemm_ns + r.forward_memory_ns + r.forward_comm_ns;
  if (layout.recompute == Recompute::Full) r.recompute_ns = r.forward_ns;
  if (layout.recompute == Recompute::Selective) r.recompute_ns = core.forward_ns;
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
