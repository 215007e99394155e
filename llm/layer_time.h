// Compute time of one transformer layer (and of the embedding and the output head + loss)
// on one GPU of a tensor-parallel group, for one micro-batch, under (t, sp, cp, ep,
// recompute, micro_batch, attention kernel, fp8 recipe). Invariant: every GEMM is timed by
// the GPU's curve (llm/gpu_model.h) at its sharded shape, the linears in the fp8 recipe's
// GEMM class with its casts' bytes; the fused attention kernel by its own curve; every
// elementwise op by its bytes / HBM; communication is added where the framework exposes it:
//   forward      the linears (QKV with GQA, projection, the MLP's 2 matrices, 3 with
//                SwiGLU), each sharded by t; the attention core: flash, one fused kernel
//                over the causal half (4 b a hd s_q s / 2 / t FLOPs), or unfused, the GEMMs
//                Q K^T and over V on the whole square with softmax + dropout by their
//                bytes; norms, residual adds, the activation and RoPE by their bytes (the
//                token-wise ones divided by t under SP, whole without it), fused or eager;
//                2 TP all-reduces (no SP) or 2 all-gathers + 2 reduce-scatters (SP),
//                exposed, or under tp_comm_overlap only what exceeds the GEMM each feeds.
//   I (input)    the input-gradient GEMMs, the attention core's backward (flash: 2.5 x its
//                forward FLOPs, the scores recomputed in the kernel; unfused: four GEMMs),
//                elementwise backward; TP: without SP the 2 all-reduces overlap the
//                weight-gradient GEMM of their linear (Megatron's async all-reduce); with
//                SP the 2 all-gathers of the output gradient are exposed, the 2
//                reduce-scatters overlap W and the re-gathered inputs of W overlap I.
//   W (weight)   the weight-gradient GEMMs.
//   R            recompute: the whole forward (full), or selective as the framework runs
//                it (llm/layout.h's SelectivePolicy: Megatron's attention core; torchtitan's
//                every other matmul and the elementwise ops); run before I, counted in it.
// CP: K/V go round a ring of cp ranks in cp - 1 steps, overlapped with the attention
// core (Megatron / Transformer Engine's p2p context parallelism); only what exceeds it
// shows. EP: 2 all-to-alls forward (dispatch, combine) and 2 backward, exposed.
// FLOPs (LayerFlops, MFU) keep Megatron's convention whatever the kernel: the whole s x s
// square, no recompute.
#pragma once

#include <cstdint>
#include <string>

#include "llm/collectives.h"
#include "llm/gpu_model.h"
#include "llm/layout.h"

namespace pipescope {

struct LayerTime {
  int64_t forward_ns = 0;       // F, communication included
  int64_t input_grad_ns = 0;    // I, recompute and exposed communication included
  int64_t weight_grad_ns = 0;   // W
  int64_t recompute_ns = 0;     // the part of I that is recompute
  // Where the forward's time goes (they add up to forward_ns).
  int64_t forward_gemm_ns = 0, forward_memory_ns = 0, forward_comm_ns = 0;
  int64_t backward_comm_ns = 0;          // all backward communication
  int64_t backward_comm_exposed_ns = 0;  // the part not hidden behind a GEMM (in I)
  double model_flops = 0;                // forward + backward FLOPs of this GPU (no recompute): LayerFlops::total
  int64_t parameters = 0;                // on this GPU (llm/memory.h's count, rounded)
  int64_t backward_ns() const { return input_grad_ns + weight_grad_ns; }
  int64_t total_ns() const { return forward_ns + backward_ns(); }
};

// The FFN width Megatron-LM uses: the shape's, else llm/layout_check.h's default_ffn_hidden
// (4 h; 8/3 h rounded down to a multiple of 64 with SwiGLU).
int ffn_width(const TransformerShape& shape);

// FLOPs of one layer for one micro-batch on one GPU of the layout, from the GEMM shapes
// transformer_layer_time times (the one FLOP count of a transformer: `profile synth` and
// llm-time both take it from here). A multiply-add is 2 FLOPs and the attention scores
// cover the full s x s square (Megatron-LM's convention, Narayanan et al. 2021: a GPT
// layer's forward is 24 b s h^2 + 4 b s^2 h at t = 1).
struct LayerFlops {
  double forward = 0;      // the linears (QKV with GQA, projection, MLP, router), Q K^T and attention over V
  double input_grad = 0;   // the linears' input gradients, the attention core's four GEMMs (twice its forward)
  double weight_grad = 0;  // the linears' weight gradients (the attention core has no weights)
  double recompute = 0;    // what R runs before I: the attention core's forward (selective) or the whole forward (full)
  double total() const { return forward + input_grad + weight_grad; }  // model FLOPs: no recompute
};
LayerFlops transformer_layer_flops(const TransformerShape& shape, const ParallelLayout& layout, bool moe = false);
// The output layer's logits GEMM (2 b s h V / t each of F, I and W); the loss and the norm are memory-bound.
LayerFlops head_flops(const TransformerShape& shape, const ParallelLayout& layout);

// `moe`: this layer's MLP is the mixture of experts (shape.experts > 0).
LayerTime transformer_layer_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                                 bool moe = false);
// The word (and learned position) embedding: a vocabulary-parallel lookup, then an
// all-reduce over TP (a reduce-scatter under SP).
LayerTime embedding_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu);
// The final LayerNorm, the vocabulary-parallel output GEMM and the cross-entropy loss.
LayerTime head_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu);

}  // namespace pipescope
