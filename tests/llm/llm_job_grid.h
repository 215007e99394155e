// The job grid of issue #37's "one answer" checks: 3 models (dense untied, dense tied,
// MoE) x 8..16384 GPUs x 3 frameworks, pinned schedules and the 70B job, 33 jobs; each
// front door's test walks the same list (tests/llm/llm_job_test.cpp: plan file and
// llm-time; gui/tests/job_models_test.cpp: the GUI's models), and
// python/tests/test_oracle_job_grid.py mirrors it for the frameworks' own code.
//   for (const GridJob& g : job_grid()) search_layouts(request_of(g), gpu_file(g.gpu));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llm/gpu_model.h"
#include "llm/layout_search.h"
#include "tests/llm/llm_shapes.h"
#include "tests/support/source_paths.h"

namespace pipescope::testing {

inline GpuModel gpu_file(const std::string& name) {
  return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/" + name + ".json");
}

struct GridJob {
  std::string label;
  TransformerShape shape;
  std::string gpu;
  int gpus = 0, global_batch = 0;
  Framework framework = Framework::Megatron;
  std::optional<ScheduleKind> schedule;
  int t = 0, p = 0;  // pins (0: searched), to keep the largest searches short
};

// 3 models (dense untied, dense tied, MoE) x 8..16384 GPUs x 3 frameworks, plus pinned
// schedules and issue #37's 70B job: 33 jobs, built here so that a new framework or schedule is one more line.
inline std::vector<GridJob> job_grid() {
  TransformerShape llama8 = llama3_8b();
  llama8.sequence = 4096;
  TransformerShape gpt = gpt3_175b();
  TransformerShape mixtral = mixtral_8x7b();
  std::vector<GridJob> grid;
  const Framework frameworks[] = {Framework::Megatron, Framework::Torch, Framework::DeepSpeed};
  for (Framework f : frameworks) {
    const std::string fw = to_string(f);
    grid.push_back({"llama3-8b 8 " + fw, llama8, "h100-sxm", 8, 64, f, std::nullopt, 0, 0});
    grid.push_back({"llama3-8b 64 " + fw, llama8, "h100-sxm", 64, 256, f, std::nullopt, 0, 0});
    grid.push_back({"llama3-8b 512 " + fw, llama8, "a100-80gb", 512, 1024, f, std::nullopt, 0, 0});
    grid.push_back({"gpt3-175b 64 " + fw, gpt, "h100-sxm", 64, 128, f, std::nullopt, 0, 0});
    grid.push_back({"gpt3-175b 1024 " + fw, gpt, "h100-sxm", 1024, 1536, f, std::nullopt, 8, 0});
    grid.push_back({"mixtral 16 " + fw, mixtral, "h100-sxm", 16, 64, f, std::nullopt, 0, 0});
    grid.push_back({"mixtral 128 " + fw, mixtral, "h200", 128, 512, f, std::nullopt, 0, 0});
    grid.push_back({"llama3-8b 16384 " + fw, llama8, "h100-sxm", 16384, 16384, f, std::nullopt, 8, 4});
  }
  // The 70B job of issue #37: 64 H100s, 512 sequences of 4096.
  TransformerShape llama70 = llama3_70b();
  llama70.sequence = 4096;
  for (Framework f : frameworks) {
    grid.push_back({"llama3-70b 64 " + to_string(f), llama70, "h100-sxm", 64, 512, f, std::nullopt, 0, 0});
  }
  grid.push_back({"mixtral 64 megatron interleaved", mixtral, "h100-sxm", 64, 256, Framework::Megatron,
                  ScheduleKind::Interleaved, 0, 4});
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::LoopedBFS, ScheduleKind::InterleavedZeroBubble,
                         ScheduleKind::ZeroBubbleV, ScheduleKind::DualPipeV}) {
    grid.push_back({"llama3-8b 32 torch " + to_string(k), llama8, "h100-sxm", 32, 128, Framework::Torch, k, 0, 4});
  }
  return grid;
}

inline LlmSearchRequest request_of(const GridJob& g) {
  LlmSearchRequest q;
  q.shape = g.shape;
  q.gpus = g.gpus, q.global_batch = g.global_batch, q.framework = g.framework, q.schedule = g.schedule;
  q.t = g.t, q.p = g.p;
  q.top = 3;
  return q;
}

}  // namespace pipescope::testing
