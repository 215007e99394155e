// Evaluates a version 3 plan's job and prints it; the numbers are evaluate_job's, the
// memory per GPU of every pipeline rank by kind in bytes (json_number: exact integers).
#include "cli/simulate_job.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/llm_flags.h"
#include "cli/plan_options.h"
#include "core/error.h"
#include "llm/job.h"
#include "llm/layout_search.h"
#include "llm/plan_layout.h"

namespace pipescope::cli {

namespace {

std::string job_table(const Job& job, const JobReport& r, double capacity) {
  const StepTime& st = r.time;
  const TransformerShape& s = job.shape;
  std::ostringstream o;
  char line[320];
  std::snprintf(line, sizeof line, "job: %s, L %d h %d s %d on %d GPUs (%s, %d per node), %s\n", s.name.c_str(),
                s.layers, s.hidden, s.sequence, job.layout.gpus(), job.cluster.gpu.c_str(), job.cluster.gpus_per_node,
                to_string(job.framework).c_str());
  o << line << "layout: " << layout_summary(job.layout) << " (" << st.schedule << "); " << kernels_text(job.layout) << "\n";
  std::snprintf(line, sizeof line,
                "step %.3f s (%lld ns) = pipeline %.3f + data-parallel exposed %.3f + embedding sync %.3f + ZeRO "
                "traffic %.3f; bubble %.3f, MFU %.1f%%\n",
                st.step_ns / 1e9, static_cast<long long>(st.step_ns), st.pipeline_ns / 1e9, st.dp_exposed_ns / 1e9,
                st.embedding_sync_ns / 1e9, st.sharding_ns / 1e9, st.bubble, 100 * st.mfu);
  o << line << "| rank | parameters B | gradients B | optimizer B | activations B | total GiB |\n"
               "|---:|---:|---:|---:|---:|---:|\n";
  for (const RankMemory& m : r.memory.stages) {
    std::snprintf(line, sizeof line, "| %d | %.0f | %.0f | %.0f | %.0f | %.2f |\n", m.rank, m.parameter_bytes,
                  m.gradient_bytes, m.optimizer_bytes, m.activation_bytes, m.total() / (1024.0 * 1024 * 1024));
    o << line;
  }
  o << binding_rank_line(r.memory.stages, capacity, job_headroom_bytes(job, capacity)) << "\n";
  return o.str();
}

Json job_prediction_json(const Job& job, const JobReport& r) {
  const StepTime& st = r.time;
  Json ranks = Json::array();
  for (const RankMemory& m : r.memory.stages) ranks.push_back(rank_memory_to_json(m));
  return {{"format", "pipescope.job_prediction"}, {"version", 1}, {"job", job_to_json(job)},
          {"layout", layout_to_json(job.layout)}, {"schedule", st.schedule}, {"step_ns", st.step_ns},
          {"pipeline_ns", st.pipeline_ns}, {"dp_exposed_ns", st.dp_exposed_ns},
          {"embedding_sync_ns", st.embedding_sync_ns}, {"sharding_ns", st.sharding_ns},
          {"optimizer_ns", st.optimizer_ns}, {"step_ms", st.step_ns / 1e6}, {"bubble_fraction", st.bubble},
          {"mfu", st.mfu}, {"ranks", ranks}, {"peak_bytes", json_number(r.memory.peak())}};
}

}  // namespace

void simulate_job(const Plan& plan, const JobSimulation& run, const GateOptions& gates) {
  if (!run.shaping_flags.empty()) {
    throw InputError(run.shaping_flags.front() + ": " + run.plan_path +
                     " holds the whole job (a version 3 plan: model, GPU file, layout, framework); simulate it with "
                     "no other flag, or change the job and write a new plan (llm-plan --out)");
  }
  const PlannedJob planned = *plan_job_on_gpu(plan);
  const Job& job = planned.job;
  const GpuModel& gpu = planned.gpu;
  const JobReport r = evaluate_job(job, gpu);
  StepFacts facts;
  facts.title = layout_summary(job.layout);
  facts.model = job.shape.name;
  facts.step_ms = r.time.step_ns / 1e6;
  facts.throughput_samples_per_s = job.layout.global_batch() / (r.time.step_ns * 1e-9);
  facts.bubble_fraction = r.time.bubble;
  for (const RankMemory& m : r.memory.stages) facts.stage_peak_bytes.push_back(static_cast<int64_t>(m.total()));
  // fits as the search fits: under the GPU's memory less the job's headroom
  const double capacity = static_cast<double>(gpu.node.memory_bytes);
  facts.memory_limit_bytes = static_cast<int64_t>(job_usable_bytes(job, capacity));
  const std::vector<GateResult> results = gates.evaluate(facts);
  const std::string json = with_gates(job_prediction_json(job, r), results).dump(2) + "\n";
  std::vector<std::pair<std::string, std::string>> files;
  if (!run.output_path.empty()) files.emplace_back(run.output_path, json);
  for (auto& f : gates.junit_file("simulate", results)) files.push_back(std::move(f));
  write_outputs(files);
  std::cout << result_text(gates, run.json, json, job_table(job, r, capacity), step_markdown("simulate", facts),
                           results);
  enforce(results);
}

}  // namespace pipescope::cli
