// What a stage worker keeps per model stage and per micro-batch (exec/runtime/stage_worker.h);
// internal to the worker's files (stage_worker.cpp, stage_post_validation.cpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/op_rules.h"
#include "exec/layers/model.h"
#include "exec/layers/optimizer.h"
#include "exec/runtime/stage_worker.h"

namespace pipescope::exec {

struct StageWorker::MicroState {
  Tensor input;                    // the stage input kept under re-materialisation
  std::vector<LayerStash> stashes;  // one per layer
  Tensor loss_grad;                // last stage: dLoss/dOutput, from F until B
};

struct StageWorker::StageState {
  int first_layer = 0;
  StageLayers layers;
  std::vector<MicroState> micro;
  std::vector<Parameter*> parameters;
  // Asynchronous schedules only: the version rules, the kept versions' copies (version ->
  // one tensor per entry of `parameters`) and the stage's own optimizer.
  std::optional<WeightVersions> versions;
  std::map<int, std::vector<Tensor>> kept;
  std::unique_ptr<Optimizer> optimizer;
};

}  // namespace pipescope::exec
