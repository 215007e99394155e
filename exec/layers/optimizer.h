// The optimizer step applied once per training step, after every micro-batch's
// gradients have been accumulated: SGD (no state) or Adam (two moments per parameter,
// charged as Category::OptimizerState from construction on, so a stage's static bytes
// are constant over a run). step() also zeroes the gradients for the next step.
//   Optimizer opt(ctx, params, {.kind = OptimizerKind::Adam, .lr = 1e-3f});  opt.step();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/layers/layer.h"

namespace pipescope::exec {

enum class OptimizerKind : uint8_t { Sgd, Adam };
std::string to_string(OptimizerKind kind);                 // "sgd", "adam"
OptimizerKind parse_optimizer_kind(const std::string& name);  // throws InputError naming --optimizer

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::Adam;
  float lr = 1e-3f;
};

class Optimizer {
 public:
  Optimizer(Context ctx, std::vector<Parameter*> params, const OptimizerSettings& settings);
  void step();
  // What step() changes, kept aside (host copies of the parameters and the moments) so
  // that a rejected step can be undone: restore() puts it back and zeroes the gradients.
  struct State {
    std::vector<std::vector<float>> values, m, v;
    int steps = 0;
  };
  State save() const;
  void restore(const State& state);

 private:
  Context ctx_;
  std::vector<Parameter*> params_;
  OptimizerSettings settings_;
  std::vector<Tensor> m_, v_;
  int steps_ = 0;
};

}  // namespace pipescope::exec
