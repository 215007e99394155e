// A plan at scale for the timeline tests and the paint benchmark: a model of L equal
// blocks (1 ms forward, 2 ms backward, 1 MiB activations, 256 KiB outputs at
// micro-batch 1) on `devices` devices joined by NVLink-like links (450 GB/s, 5 us),
// cut into K equal stages with 1F1B. Without communication its step would be
// (M + K - 1)(t_f + t_b) with t_f = L/K ms, t_b = 2 L/K ms.
//   Evaluation e = uniform_plan(64, 64, 1024);   // K = 64, M = 1024
#pragma once

#include <memory>

#include "gui/models/plan_evaluation.h"

namespace pipescope::gui {

inline std::shared_ptr<const Profile> uniform_profile(int layers) {
  auto p = std::make_shared<Profile>();
  p->model = "uniform-" + std::to_string(layers);
  p->batch_sizes = {1};
  for (int l = 0; l < layers; ++l) {
    LayerProfile layer;
    layer.name = "block." + std::to_string(l);
    layer.forward_ms = {1.0};
    layer.backward_ms = {2.0};
    layer.activation_bytes = {1048576.0};
    layer.output_bytes = {262144.0};
    layer.parameter_bytes = 4 << 20;
    p->layers.push_back(layer);
  }
  return p;
}

inline std::shared_ptr<const Hardware> nvlink_hardware(int devices) {
  auto h = std::make_shared<Hardware>();
  h->name = std::to_string(devices) + "x NVLink-like";
  h->devices = devices;
  h->memory_bytes = 141000000000;
  h->link = {450.0, 5.0};
  return h;
}

inline PlanInputs uniform_inputs(int layers, int stages, int microbatches) {
  PlanInputs in;
  in.profile = uniform_profile(layers);
  in.hardware = nvlink_hardware(stages);
  in.choice.stages = stages;
  in.choice.microbatches = microbatches;
  in.choice.partition = PartitionKind::Uniform;
  return in;
}

}  // namespace pipescope::gui
