// The lower bound and the exact time of llm/layout_search.h for one layout. The bound
// restates how llm/step_time.h builds its pipeline (one stage per chunk: its layers, the
// embedding on the first, the head on the last; each layer's optimizer step on the
// parameters / d of a sharded optimizer) without simulating it:
//   rank r's step >= fill_r + busy_r + opt_r, and rank 0's >= fill_r + busy_r + drain_r + opt_0
// where busy_r = M x its stages' F + B (B = I + W), fill_r = the F of stages 0 .. r-1 that
// its first forward waits for (stage r is the first a rank runs, V-shapes too), drain_r =
// the B of stages r-1 .. 0 after its last backward. The drain holds only where each rank
// ends with a whole B that runs down to stage 0 (gpipe, 1f1b, interleaved, looped-bfs:
// llm/pipeline_schedule.h's ends_with_backward_chain); the zero-bubble kinds end ranks
// with W, which needs nothing of the others, so their bound is fill + busy alone.
// Point-to-point time is left out (it only adds); the data-parallel tail, the tied
// embedding all-reduce and the ZeRO-2 / 3 traffic are step_time's own closed forms, so
// they enter bound and exact step alike.
#include <algorithm>

#include "llm/collectives.h"
#include "llm/job.h"
#include "llm/layer_time.h"
#include "llm/layout_search.h"
#include "llm/layout_search_internal.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {


}  // namespace

LayerTimes layer_times(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu) {
  LayerTimes out;
  out.dense = transformer_layer_time(shape, l, gpu, false);
  out.moe = shape.experts > 0 ? transformer_layer_time(shape, l, gpu, true) : out.dense;
  out.embedding = embedding_time(shape, l, gpu);
  out.head = head_time(shape, l, gpu);
  return out;
}

RankCosts rank_costs(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu, const LayerTimes& lt) {
  const std::vector<int> chunks = chunk_layers(shape, l);
  RankCosts rc;
  rc.stage_f.assign(chunks.size(), 0);
  rc.stage_b.assign(chunks.size(), 0);
  rc.busy.assign(static_cast<std::size_t>(l.p), 0);
  rc.fwd = rc.bwd = rc.params = rc.opt = rc.busy;
  rc.layers.assign(static_cast<std::size_t>(l.p), 0);
  const int freq = std::max(shape.moe_layer_frequency, 1);
  std::vector<std::size_t> rank_of(chunks.size());
  for (std::size_t c = 0; c < chunks.size(); ++c) rank_of[c] = static_cast<std::size_t>(chunk_rank(l, static_cast<int>(c)));
  // A layer's optimizer step, once per kind of layer (it depends on its parameters alone).
  struct Timed {
    const LayerTime& time;
    int64_t optimizer_ns;
  };
  auto timed = [&](const LayerTime& t) { return Timed{t, optimizer_step_ns(gpu, sharded_parameters(t.parameters, l))}; };
  const Timed embedding = timed(lt.embedding), dense = timed(lt.dense), moe = timed(lt.moe), head = timed(lt.head);
  auto add = [&](std::size_t stage, const Timed& t) {
    const std::size_t r = rank_of[stage];
    rc.stage_f[stage] += t.time.forward_ns;
    rc.stage_b[stage] += t.time.input_grad_ns + t.time.weight_grad_ns;
    rc.params[r] += t.time.parameters;
    rc.opt[r] += t.optimizer_ns;
  };
  int layer = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    if (c == 0) add(c, embedding);
    for (int i = 0; i < chunks[c]; ++i, ++layer) add(c, shape.experts > 0 && layer % freq == 0 ? moe : dense);
    rc.layers[rank_of[c]] += chunks[c];
    if (c + 1 == chunks.size()) add(c, head);
  }
  for (std::size_t s = 0; s < chunks.size(); ++s) {
    const std::size_t r = rank_of[s];
    rc.fwd[r] += rc.stage_f[s];
    rc.bwd[r] += rc.stage_b[s];
  }
  for (std::size_t r = 0; r < rc.busy.size(); ++r) rc.busy[r] = l.microbatches * (rc.fwd[r] + rc.bwd[r]);
  return rc;
}

int64_t bound_from_costs(const TransformerShape& shape, const ParallelLayout& l, const GpuModel& gpu,
                         const StepOptions& options, const RankCosts& rc) {
  int64_t pipe = 0, dp = 0, extra = 0, fill = 0, drain = 0;
  const bool chain = ends_with_backward_chain(layout_schedule(l));
  for (std::size_t r = 0; r < rc.busy.size(); ++r) {
    const int64_t end = fill + rc.busy[r];
    pipe = std::max(pipe, end + rc.opt[r]);
    if (chain) pipe = std::max(pipe, end + drain + rc.opt[0]);
    fill += rc.stage_f[r];
    drain += rc.stage_b[r];
    // The tail depends on the rank's parameters, F, B and busy time alone: a rank equal to
    // the one before it in all four (the middle ranks, as a rule) adds nothing new.
    const bool as_before = r > 0 && rc.params[r] == rc.params[r - 1] && rc.fwd[r] == rc.fwd[r - 1] &&
                           rc.bwd[r] == rc.bwd[r - 1] && rc.busy[r] == rc.busy[r - 1] &&
                           rc.layers[r] == rc.layers[r - 1];
    if (as_before) continue;
    dp = std::max(dp, dp_exposed_ns(gpu, l, rc.params[r], rc.fwd[r], rc.bwd[r], options));
    extra = std::max(extra, sharding_extra_ns(gpu, l, rc.params[r], rc.busy[r], rc.fwd[r], rc.bwd[r], options,
                                              rc.layers[r]));
  }
  // The cost model rounds each stage's summed milliseconds to nanoseconds: a few ns per op.
  const int64_t slack = 4 * static_cast<int64_t>(l.microbatches) * l.v * l.p + 1000;
  return std::max<int64_t>(pipe + dp + embedding_sync_ns(shape, l, gpu) + extra - slack, 0);
}

int64_t layout_bound_ns(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                        const StepOptions& options) {
  const LayerTimes lt = layer_times(shape, layout, gpu);
  return bound_from_costs(shape, layout, gpu, options, rank_costs(shape, layout, gpu, lt));
}

LlmCandidate time_layout(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                         const StepOptions& options, const InFlight* walked) {
  Job job;
  job.shape = shape;
  job.layout = layout;
  job.layout.overlap_grad_reduce = options.overlap_grad_reduce;
  job.layout.overlap_param_gather = options.overlap_param_gather;
  const JobReport report = evaluate_job(job, gpu, walked);
  const StepTime& st = report.time;
  LlmCandidate c;
  c.layout = job.layout;
  c.vocabulary = shape.vocabulary;
  const RankCosts rc = rank_costs(shape, job.layout, gpu, layer_times(shape, job.layout, gpu));
  c.bound_ns = bound_from_costs(shape, job.layout, gpu, options, rc);
  c.sharding_ns = st.sharding_ns;
  c.pipeline_ns = st.pipeline_ns;
  c.dp_exposed_ns = st.dp_exposed_ns;
  c.step_ns = st.step_ns;
  c.bubble = st.bubble;
  c.mfu = st.mfu;
  c.schedule = st.schedule;
  c.peak_bytes = report.memory.peak();
  c.ranks = report.memory.stages;
  return c;
}

}  // namespace pipescope
