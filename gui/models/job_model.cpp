// A v3 plan's job read, edited and evaluated by llm/'s functions (gui/models/job_model.h);
// the calls are simulate_job's (cli/simulate_job.cpp): plan_job_on_gpu (the job validated on
// its cluster's GPU file), evaluate_job.
#include "gui/models/job_model.h"

#include <filesystem>

#include "llm/framework.h"
#include "llm/layout_check.h"
#include "llm/pipeline_schedule.h"

namespace pipescope::gui {

double JobEvaluation::usable_bytes() const {
  return job_usable_bytes(inputs.job, static_cast<double>(capacity_bytes()));
}

bool JobEvaluation::fits(const RankMemory& rank) const {
  return capacity_bytes() <= 0 || rank.total() <= usable_bytes();
}

bool JobEvaluation::fits() const {
  for (const RankMemory& m : report.memory.stages) {
    if (!fits(m)) return false;
  }
  return true;
}

std::optional<JobInputs> read_plan_job(const Plan& plan) {
  std::optional<PlannedJob> planned = plan_job_on_gpu(plan);
  if (!planned) return std::nullopt;
  auto gpu = std::make_shared<const GpuModel>(std::move(planned->gpu));
  return JobInputs{std::move(planned->job), std::move(gpu), plan.source, {}};
}

JobEvaluation evaluate_job_inputs(const JobInputs& inputs) {
  return {inputs, evaluate_job(inputs.job, *inputs.gpu)};
}

void save_job_plan(const JobInputs& in, const std::string& path) {
  const std::filesystem::path base = std::filesystem::path(in.source).parent_path();
  const std::string beside = base.empty() ? in.job.cluster.gpu : (base / in.job.cluster.gpu).string();
  std::error_code ec;
  write_job_plan(in.job, *in.gpu, std::filesystem::is_regular_file(beside, ec) ? beside : in.job.cluster.gpu, path);
}

bool JobEdit::empty() const {
  return !p && !v && !microbatches && !micro_batch && !d && !t && !cp && !ep && !schedule && !sequence_parallel &&
         !recompute && !sharding;
}

JobLayoutChoice job_layout_choice(const Job& job) {
  const ParallelLayout& l = job.layout;
  return {l.t, l.cp, l.ep, l.sequence_parallel, l.recompute, l.sharding};
}

JobInputs edit_job(const JobInputs& base, const JobEdit& edit) {
  if (edit.empty()) return base;  // the plan's job as read
  JobInputs out{base.job, base.gpu, base.source, {}};
  ParallelLayout& l = out.job.layout;
  const auto take = [](auto& field, const auto& value) {
    if (value) field = *value;
  };
  take(l.p, edit.p), take(l.v, edit.v), take(l.microbatches, edit.microbatches), take(l.micro_batch, edit.micro_batch);
  take(l.d, edit.d), take(l.t, edit.t), take(l.cp, edit.cp), take(l.ep, edit.ep);
  take(l.sequence_parallel, edit.sequence_parallel), take(l.recompute, edit.recompute), take(l.sharding, edit.sharding);
  if (edit.schedule) l.schedule = *edit.schedule;  // an optional field of the layout: set, not taken
  if (edit.t && out.job.vocab_size > 0) {
    out.job.shape.vocabulary = padded_vocabulary(out.job.vocab_size, l.t, out.job.vocab_divisible_by);
  }
  if (l.p != base.job.layout.p || l.v != base.job.layout.v) l.layers_per_chunk.clear();  // an even cut of the new p x v
  // the overlap the framework runs of the edited layout, as asked of the base (job_search_request's p2p)
  const ParallelLayout& was = base.job.layout;
  set_framework_overlap(out.job.framework, was.overlap_grad_reduce, was.overlap_param_gather, l,
                        was.overlap_p2p || layout_schedule(was) != ScheduleKind::Interleaved);
  validate_job(out.job, l.gpus(), &out.notes);
  return out;
}

LlmSearchRequest job_search_request(const Job& job, int top) {
  const ParallelLayout& l = job.layout;
  LlmSearchRequest q;
  q.shape = job.shape;
  if (job.vocab_size > 0) {
    q.shape.vocabulary = job.vocab_size;
    q.vocab_divisible_by = job.vocab_divisible_by;
  } else {
    q.vocab_divisible_by = 1;
  }
  q.gpus = l.gpus();
  q.global_batch = l.global_batch();
  q.framework = job.framework;
  q.precision = l.precision;
  q.attention = l.attention, q.fp8 = l.fp8, q.fused_elementwise = l.fused_elementwise;
  q.order = l.order;
  q.options.overlap_grad_reduce = l.overlap_grad_reduce;
  q.options.overlap_param_gather = l.overlap_param_gather;
  q.options.overlap_p2p = l.overlap_p2p || layout_schedule(l) != ScheduleKind::Interleaved;  // off only where it was turned off
  q.top = top;
  return q;
}

JobInputs job_with_layout(const JobInputs& base, const LlmCandidate& candidate) {
  JobInputs out{base.job, base.gpu, base.source, {}};
  out.job.layout = candidate.layout;
  out.job.shape.vocabulary = candidate.vocabulary;
  validate_job(out.job, candidate.layout.gpus(), &out.notes);
  return out;
}

PlanChoice job_choice(const Job& job) {
  const ParallelLayout& l = job.layout;
  PlanChoice c;
  c.stages = l.p;
  c.microbatches = l.microbatches;
  c.microbatch_size = l.micro_batch;
  c.schedule = layout_schedule(l);
  c.chunks = l.v;
  c.recompute = l.recompute;
  c.replicas = l.d;
  return c;
}

JobEdit job_edit(const Job& job, const PlanChoice& c, const std::optional<JobLayoutChoice>& layout) {
  const ParallelLayout& l = job.layout;
  JobEdit e;
  if (layout) {
    if (layout->t != l.t) e.t = layout->t;
    if (layout->cp != l.cp) e.cp = layout->cp;
    if (layout->ep != l.ep) e.ep = layout->ep;
    if (layout->sequence_parallel != l.sequence_parallel) e.sequence_parallel = layout->sequence_parallel;
    if (layout->recompute != l.recompute) e.recompute = layout->recompute;
    if (layout->sharding != l.sharding) e.sharding = layout->sharding;
  }
  const int v = required_chunks(c.schedule) == 0 ? c.chunks : required_chunks(c.schedule);
  if (c.stages != l.p) e.p = c.stages;
  if (v != l.v) e.v = v;
  if (c.microbatches != l.microbatches) e.microbatches = c.microbatches;
  if (c.microbatch_size > 0 && static_cast<int>(c.microbatch_size) != l.micro_batch) e.micro_batch = static_cast<int>(c.microbatch_size);
  if (c.replicas != l.d) e.d = c.replicas;
  if (c.schedule != layout_schedule(l)) e.schedule = c.schedule;
  return e;
}

std::vector<std::pair<QString, QString>> job_layout_rows(const Job& job) {
  const TransformerShape& s = job.shape;
  const ParallelLayout& l = job.layout;
  auto str = [](const std::string& text) { return QString::fromStdString(text); };
  auto num = [](int n) { return QString::number(n); };
  return {
      {"Model", QString("%1 (L %2, h %3, s %4)").arg(str(s.name)).arg(s.layers).arg(s.hidden).arg(s.sequence)},
      {"GPUs", QString("%1 x %2, %3 per node").arg(l.gpus()).arg(str(job.cluster.gpu)).arg(job.cluster.gpus_per_node)},
      {"Framework", str(to_string(job.framework))},
      {"t (tensor parallel)", num(l.t)},
      {"SP (sequence parallel)", l.sequence_parallel ? "on" : "off"},
      {"cp (context parallel)", num(l.cp)},
      {"ep (expert parallel)", num(l.ep)},
      {"d (data parallel)", num(l.d)},
      {"p (pipeline ranks, K)", num(l.p)},
      {"v (chunks per rank)", num(l.v)},
      {"Schedule", str(to_string(layout_schedule(l)))},
      {"b (micro-batch size)", num(l.micro_batch)},
      {"M (micro-batches)", num(l.microbatches)},
      {"Global batch (b M d)", num(l.global_batch())},
      {"Recompute", str(to_string(l.recompute))},
      {"Sharding", str(to_string(l.sharding))},
      {"Precision", str(to_string(l.precision))},
  };
}

}  // namespace pipescope::gui
