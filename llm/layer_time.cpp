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
  double flops = 0;
};

Core attention_core(const Dims& d, const GpuModel& gpu) {
  const int64_t batch = d.b * d.a / d.t;
  const GemmShape scores{d.sl, d.s, d.hd, batch}, context{d.sl, d.hd, d.s, batch};
  const double elements = static_cast<double>(batch * d.sl * d.s);
  Core c;
  c.forward_ns = gemm_ns(gpu, scores) + gemm_ns(gpu, context) + memory_ns(gpu, 9.0 * elements);
  c.backward_ns = gemm_ns(gpu, {d.sl, d.hd, d.s, batch}) + gemm_ns(gpu, {d.s, d.hd, d.sl, batch}) +
                  gemm_ns(gpu, {d.sl, d.s, d.hd, batch}) + gemm_ns(gpu, {d.s, d.hd, d.sl, batch}) +
                  memory_ns(gpu, 11.0 * elements);
  c.flops = 3.0 * static_cast<double>(gemm_flops(scores) + gemm_flops(context));
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
  double flops = 0;
};

LinearTimes time_linears(const Linears& x, const GpuModel& gpu) {
  LinearTimes r;
  for (const GemmShape* g : {&x.qkv, &x.proj, &x.up, &x.down, &x.extra_up, &x.extra_down, &x.router}) {
    r.forward += gemm_ns(gpu, *g);
    r.input += gemm_ns(gpu, input_grad(*g));
    r.weight += gemm_ns(gpu, weight_grad(*g));
    r.flops += 3.0 * static_cast<double>(gemm_flops(*g));
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

int64_t layer_parameters(const Dims& d, const TransformerShape& shape, bool moe, const ParallelLayout& l) {
  const int64_t qkv = d.q + 2 * d.kvh * d.hd;
  int64_t mlp = (d.mats + 1) * d.h * d.ffn;
  if (moe) {
    const int64_t e_ffn = shape.moe_ffn_hidden > 0 ? shape.moe_ffn_hidden : d.ffn;
    mlp = (d.mats + 1) * d.h * e_ffn * shape.experts / std::max(l.ep, 1) +
          (d.mats + 1) * d.h * shape.shared_expert_ffn_hidden;
  }
  int64_t p = (d.h * qkv + d.h * d.q + mlp) / d.t + 4 * d.h;
  if (shape.bias_linear) p += (qkv + d.mats * d.ffn) / d.t + 2 * d.h;
  return p;
}

}  // namespace

int ffn_width(const TransformerShape& shape) {
  if (shape.ffn_hidden > 0) return shape.ffn_hidden;
  if (!shape.swiglu) return 4 * shape.hidden;
  return (8 * shape.hidden / 3) / 64 * 64;
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
  r.model_flops = lin.flops + core.flops;
  r.parameters = layer_parameters(d, shape, moe, layout);
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
  r.parameters = static_cast<int64_t>(shape.vocabulary) * d.h / d.t + d.s * d.h;
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
  r.model_flops = 3.0 * static_cast<double>(gemm_flops(logits));
  const bool shares_embedding = shape.tied_embeddings && layout.p == 1;
  r.parameters = (shares_embedding ? 0 : static_cast<int64_t>(shape.vocabulary) * d.h / d.t) + 2 * d.h;
  return r;
}

}  // namespace pipescope
