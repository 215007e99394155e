// Builds the Profile and Plan of llm/step_time.h, simulates them and adds the
// data-parallel tail. The simulated step ends with each pipeline rank's optimizer step
// (profile optimizer_ms); everything else comes from llm/layer_time.h and
// llm/collectives.h.
#include "llm/step_time.h"

#include <algorithm>
#include <cmath>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/op_rules.h"
#include "core/schedule.h"
#include "llm/collectives.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/pipeline_schedule.h"
#include "llm/profile_layers.h"
#include "sim/simulator.h"

namespace pipescope {

namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// `stash`: what one micro-batch of the layer keeps, F to I and I to W (llm/memory.h).
LayerProfile layer_profile(const std::string& name, const LayerTime& t, int64_t output_bytes, int64_t optimizer_ns,
                           const StashBytes& stash) {
  LayerProfile l;
  l.name = name;
  append_costs(l, t, stash, static_cast<double>(output_bytes));
  l.parameter_bytes = t.parameters * 2;
  l.optimizer_ms = ms(optimizer_ns);
  return l;
}

// The transformer layers, each timed once per kind (dense or MoE).
std::vector<LayerTime> transformer_layers(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu) {
  const LayerTime dense = transformer_layer_time(shape, l, gpu, false);
  const LayerTime moe = shape.experts > 0 ? transformer_layer_time(shape, l, gpu, true) : dense;
  const int freq = std::max(shape.moe_layer_frequency, 1);
  std::vector<LayerTime> out;
  for (int i = 0; i < shape.layers; ++i) out.push_back(shape.experts > 0 && i % freq == 0 ? moe : dense);
  return out;
}

}  // namespace

int64_t sharded_parameters(int64_t parameters, const ParallelLayout& l) {
  const int64_t group = int64_t{l.d} * l.cp;
  return l.sharding == Sharding::None ? parameters : (parameters + group - 1) / group;
}

int64_t optimizer_step_ns(const GpuModel& gpu, int64_t parameters) {
  return memory_ns(gpu, 42.0 * static_cast<double>(parameters));
}

LlmPipeline llm_pipeline(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu) {
  if (const std::string why = schedule_refusal(l); !why.empty()) throw InputError(why);
  const std::vector<int> per_chunk = chunk_layers(shape, l);
  const int64_t send = static_cast<int64_t>(l.micro_batch) * (shape.sequence / l.cp) * shape.hidden * 2 / l.t;
  LlmPipeline out;
  Profile& p = out.profile;
  p.model = shape.name, p.device_name = gpu.node.name, p.backend = "analytic", p.dtype = "bf16";
  p.batch_sizes = {static_cast<double>(l.micro_batch)};
  const LayerTime emb = embedding_time(shape, l, gpu), head = head_time(shape, l, gpu);
  const StashBytes emb_stash{embedding_activation_bytes(shape, l), embedding_weight_grad_bytes(shape, l)};
  const StashBytes layer_stash{layer_activation_bytes(shape, l), layer_weight_grad_bytes(shape, l)};
  const StashBytes head_stash{head_activation_bytes(shape, l), head_weight_grad_bytes(shape, l)};
  p.layers.push_back(layer_profile("embedding", emb, send, optimizer_step_ns(gpu, sharded_parameters(emb.parameters, l)), emb_stash));
  p.layers.back().spec = {{"type", "embedding"}, {"vocabulary", shape.vocabulary}, {"hidden", shape.hidden}};
  const std::vector<LayerTime> layers = transformer_layers(shape, l, gpu);
  const Json block = decoder_layer_spec(shape, "transformer_block");  // llm/profile_layers.h reads it back
  for (int i = 0; i < shape.layers; ++i) {
    const LayerTime& t = layers[static_cast<std::size_t>(i)];
    p.layers.push_back(layer_profile("layers." + std::to_string(i), t, send, optimizer_step_ns(gpu, sharded_parameters(t.parameters, l)),
                                     layer_stash));
    p.layers.back().spec = block;
  }
  p.layers.push_back(layer_profile("head", head, 0, optimizer_step_ns(gpu, sharded_parameters(head.parameters, l)), head_stash));
  p.layers.back().spec = {{"type", "lm_head"}, {"vocabulary", shape.vocabulary}, {"tied", shape.tied_embeddings}};
  Plan& plan = out.plan;
  plan.microbatches = l.microbatches;
  plan.batch_size = static_cast<int64_t>(l.micro_batch) * l.microbatches;
  plan.schedule = layout_schedule(l);
  plan.chunks = l.v;
  plan.p2p = l.overlap_p2p ? P2p::Overlapped : P2p::Blocking;  // llm/layout.h: Megatron's interleaved default
  plan.stages = llm_stages(shape, l);
  return out;
}

std::vector<PlanStage> llm_stages(const TransformerShape& shape, const ParallelLayout& l) {
  const std::vector<int> per_chunk = chunk_layers(shape, l);
  std::vector<PlanStage> stages;
  int first = 0;
  for (std::size_t c = 0; c < per_chunk.size(); ++c) {
    const int end = first + per_chunk[c] + (c == 0 ? 1 : 0) + (c + 1 == per_chunk.size() ? 1 : 0);
    stages.push_back({first, end, {chunk_rank(l, static_cast<int>(c))}});
    first = end;
  }
  return stages;
}

int64_t dp_exposed_ns(const GpuModel& gpu, const ParallelLayout& l, int64_t parameters, int64_t forward_ns,
                      int64_t backward_ns, const StepOptions& options) {
  if (l.d * l.cp <= 1) return 0;
  const GroupLink dp = gradient_group_link(gpu, l);
  const int64_t grad_bytes = parameters * 4;  // fp32 main gradients
  const bool sharded_opt = l.sharding != Sharding::None;
  const int64_t reduce = sharded_opt ? reduce_scatter_group_ns(dp, grad_bytes) : allreduce_group_ns(dp, grad_bytes);
  // ZeRO-3 keeps its updated parameters sharded: its gathers are the per-micro-batch ones
  // before forward and backward (llm/layout_bound.cpp's sharding_extra_ns), none after the step.
  const int64_t gather = sharded_opt && l.sharding != Sharding::Zero3 ? allgather_group_ns(dp, parameters * 2) : 0;
  return (options.overlap_grad_reduce ? std::max<int64_t>(reduce - backward_ns, 0) : reduce) +
         (options.overlap_param_gather ? std::max<int64_t>(gather - forward_ns, 0) : gather);
}

// ZeRO-2 reduce-scatters the gradients after every micro-batch's backward (M - 1 more than
// the one after the flush dp_exposed_ns counts); ZeRO-3 / FSDP also all-gathers the parameters before
// each micro-batch's forward and again before its backward (2 M). Both are prefetched and
// overlapped with the rank's compute (DeepSpeed overlap_comm, FSDP's prefetching): only
// what exceeds busy shows. An assumption of pipescope's, stated in docs/llm-scale.md. The
// data-parallel link carries each collective once: the part of step_time's tail that its
// overlap switches hid behind compute (dp_exposed_ns with and without them) takes its share
// of the same busy time, so the excess of all of it shows here.
//
// Per layer: FSDP gathers layer i + 1 while layer i computes, so a layer whose collectives
// outlast its own compute shows the difference however much compute the step has overall
// (latency-bound collectives on many nodes): each micro-batch's forward shows
// layers x (all-gather(P / layers) - F / layers) where positive, its backward (ZeRO-3's
// all-gather and the reduce-scatter, ZeRO-2's reduce-scatter) likewise against B / layers.
// The larger of the two readings shows.
int64_t sharding_extra_ns(const GpuModel& gpu, const ParallelLayout& l, int64_t parameters, int64_t busy,
                          int64_t forward_ns, int64_t backward_ns, const StepOptions& options, int layers) {
  if (l.d * l.cp <= 1 || (l.sharding != Sharding::Zero2 && l.sharding != Sharding::Zero3)) return 0;
  const GroupLink dp = gradient_group_link(gpu, l);
  const bool zero3 = l.sharding == Sharding::Zero3;
  int64_t total = (l.microbatches - 1) * reduce_scatter_group_ns(dp, parameters * 4);
  if (zero3) total += 2 * l.microbatches * allgather_group_ns(dp, parameters * 2);
  const int64_t hidden_tail = dp_exposed_ns(gpu, l, parameters, forward_ns, backward_ns, {}) -
                              dp_exposed_ns(gpu, l, parameters, forward_ns, backward_ns, options);
  const int64_t n = std::max(layers, 1);
  const int64_t per_layer = parameters / n;
  const int64_t gather = zero3 ? allgather_group_ns(dp, per_layer * 2) : 0;
  const int64_t scatter = reduce_scatter_group_ns(dp, per_layer * 4);
  const int64_t per_microbatch =
      n * (std::max<int64_t>(gather - forward_ns / n, 0) + std::max<int64_t>(gather + scatter - backward_ns / n, 0));
  return std::max(std::max<int64_t>(total + hidden_tail - busy, 0), l.microbatches * per_microbatch);
}

int64_t embedding_sync_ns(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu) {
  // A V puts the head on rank 0 beside the embedding: one copy, nothing to all-reduce.
  if (l.p <= 1 || !shape.tied_embeddings || chunk_rank(l, l.p * l.v - 1) == 0) return 0;
  const GroupLink pp = group_link(gpu, l, Group::Pp);
  const Link& link = pp.crosses_nodes ? gpu.node.inter_node : gpu.node.link;
  return allreduce_ns(link, static_cast<int64_t>(shape.vocabulary) * shape.hidden / l.t * 4, 2);
}

LlmPipelineRun run_llm_pipeline(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu,
                                bool record_timeline) {
  LlmPipelineRun run{llm_pipeline(shape, l, gpu), pipeline_hardware(gpu, l), {}, {}, {}};
  run.costs = build_cost_model(run.pipeline.profile, run.pipeline.plan, run.hardware);
  run.schedule = schedule_for(run.pipeline.plan);
  SimOptions so;
  so.record_timeline = record_timeline;
  so.p2p = *run.pipeline.plan.p2p;
  run.report = simulate(run.schedule, run.costs, run.hardware, so);
  return run;
}

StepTime step_time(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu,
                   const StepOptions& options) {
  const LlmPipelineRun run = run_llm_pipeline(shape, l, gpu);
  const LlmPipeline& pipe = run.pipeline;
  const CostModel& costs = run.costs;
  const StepReport& report = run.report;
  StepTime st;
  st.layer = transformer_layer_time(shape, l, gpu, false);
  st.embedding = embedding_time(shape, l, gpu);
  st.head = head_time(shape, l, gpu);
  st.pipeline_ns = report.step_ns;
  st.bubble = report.bubble_fraction;
  st.schedule = to_string(pipe.plan.schedule);
  st.layers_per_chunk = chunk_layers(shape, l)[0];
  // Per pipeline rank: its parameters, its optimizer step, one micro-batch's F and B.
  std::vector<int64_t> params(static_cast<std::size_t>(l.p), 0), fwd(params), bwd(params), opt(params);
  for (std::size_t s = 0; s < costs.stages.size(); ++s) {
    const auto r = static_cast<std::size_t>(chunk_rank(l, static_cast<int>(s)));
    params[r] += costs.stages[s].parameter_bytes / 2;
    opt[r] += costs.stages[s].optimizer_ns;
    fwd[r] += costs.stages[s].forward_ns;
    bwd[r] += costs.stages[s].backward_input_ns + costs.stages[s].backward_weight_ns;
  }
  st.optimizer_ns = *std::max_element(opt.begin(), opt.end());
  for (std::size_t r = 0; r < params.size(); ++r) {
    st.dp_exposed_ns = std::max(st.dp_exposed_ns, dp_exposed_ns(gpu, l, params[r], fwd[r], bwd[r], options));
  }
  std::vector<int> layers(params.size(), 0);
  const std::vector<int> per_chunk = chunk_layers(shape, l);
  for (std::size_t c = 0; c < per_chunk.size(); ++c) {
    layers[static_cast<std::size_t>(chunk_rank(l, static_cast<int>(c)))] += per_chunk[c];
  }
  for (std::size_t r = 0; r < params.size(); ++r) {
    const int64_t busy = l.microbatches * (fwd[r] + bwd[r]);
    st.sharding_ns =
        std::max(st.sharding_ns, sharding_extra_ns(gpu, l, params[r], busy, fwd[r], bwd[r], options, layers[r]));
  }
  st.embedding_sync_ns = embedding_sync_ns(shape, l, gpu);
  st.step_ns = st.pipeline_ns + st.dp_exposed_ns + st.embedding_sync_ns + st.sharding_ns;
  double per_replica = st.embedding.model_flops + st.head.model_flops;
  for (const LayerTime& t : transformer_layers(shape, l, gpu)) per_replica += t.model_flops;
  st.model_flops = per_replica * l.t * l.cp * l.microbatches * l.d;
  st.mfu = st.model_flops / (static_cast<double>(st.step_ns) * 1e-9 * l.gpus() * gpu.peak_tflops * 1e12);
  return st;
}

}  // namespace pipescope
