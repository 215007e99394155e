// Korthikanti et al. (2022) Tables 4 and 5 predicted by llm/'s time model on the A100
// GPU file (profiles/gpus/a100-80gb.json): each row's paper number, ours and the error.
//   auto rows = korthikanti_table5(load_gpu_model(path));  std::cout << korthikanti_markdown(rows);
#pragma once

#include <string>
#include <vector>

#include "experiments/korthikanti_table5_data.h"
#include "llm/gpu_model.h"
#include "llm/layout.h"
#include "llm/step_time.h"

namespace pipescope {

TransformerShape korthikanti_shape(const KorthikantiModel& m);
// The paper's layout: t, p, v, micro-batch, M = global batch / micro-batch, d = 1,
// and either full recompute (no SP) or SP + selective recompute ("present work").
ParallelLayout korthikanti_layout(const KorthikantiModel& m, bool present_work);

struct KorthikantiRow {
  KorthikantiModel paper;
  StepTime full, present;
  double full_s() const { return static_cast<double>(full.step_ns) * 1e-9; }
  double present_s() const { return static_cast<double>(present.step_ns) * 1e-9; }
  double full_error() const { return full_s() / paper.full_recompute_s - 1.0; }
  double present_error() const { return present_s() / paper.present_work_s - 1.0; }
  // Throughput increase of present work over full recompute (Table 5's column).
  double paper_speedup() const { return paper.full_recompute_s / paper.present_work_s - 1.0; }
  double speedup() const { return full_s() / present_s() - 1.0; }
};
std::vector<KorthikantiRow> korthikanti_table5(const GpuModel& gpu);

struct KorthikantiLayer {
  KorthikantiLayerRow paper;
  LayerTime ours;
  double forward_ms() const { return static_cast<double>(ours.forward_ns) / 1e6; }
  double backward_ms() const { return static_cast<double>(ours.backward_ns()) / 1e6; }
};
std::vector<KorthikantiLayer> korthikanti_table4(const GpuModel& gpu);

std::string korthikanti_markdown(const std::vector<KorthikantiRow>& rows, const std::vector<KorthikantiLayer>& layers);

}  // namespace pipescope
