// SGD and Adam over a worker's parameters; gradients are zeroed after every step.
#include "exec/layers/optimizer.h"

#include "core/error.h"

namespace pipescope::exec {

std::string to_string(OptimizerKind kind) { return kind == OptimizerKind::Sgd ? "sgd" : "adam"; }

OptimizerKind parse_optimizer_kind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::Sgd;
  if (name == "adam") return OptimizerKind::Adam;
  throw InputError("--optimizer: expected sgd or adam, got \"" + name + "\"");
}

Optimizer::Optimizer(Context ctx, std::vector<Parameter*> params, const OptimizerSettings& settings)
    : ctx_(ctx), params_(std::move(params)), settings_(settings) {
  if (settings_.kind == OptimizerKind::Adam) {
    for (Parameter* p : params_) {
      m_.push_back(Tensor::zeros(ctx, p->value.rows, p->value.cols, Category::OptimizerState));
      v_.push_back(Tensor::zeros(ctx, p->value.rows, p->value.cols, Category::OptimizerState));
    }
  }
}

void Optimizer::step() {
  ++steps_;
  Backend& be = ctx_.backend;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    if (settings_.kind == OptimizerKind::Sgd) {
      be.sgd_step(p.value.data(), p.grad.data(), settings_.lr, p.value.numel());
    } else {
      AdamSettings a;
      a.lr = settings_.lr;
      be.adam_step(p.value.data(), p.grad.data(), m_[i].data(), v_[i].data(), a, steps_, p.value.numel());
    }
    be.fill(p.grad.data(), 0.0f, p.grad.numel());
  }
}

Optimizer::State Optimizer::save() const {
  State s;
  s.steps = steps_;
  for (const Parameter* p : params_) s.values.push_back(p->value.to_host());
  for (const Tensor& t : m_) s.m.push_back(t.to_host());
  for (const Tensor& t : v_) s.v.push_back(t.to_host());
  return s;
}

void Optimizer::restore(const State& s) {
  Backend& be = ctx_.backend;
  steps_ = s.steps;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    be.upload(p.value.data(), s.values.at(i).data(), p.value.numel());
    be.fill(p.grad.data(), 0.0f, p.grad.numel());
  }
  for (std::size_t i = 0; i < m_.size(); ++i) be.upload(m_[i].data(), s.m.at(i).data(), m_[i].numel());
  for (std::size_t i = 0; i < v_.size(); ++i) be.upload(v_[i].data(), s.v.at(i).data(), v_[i].numel());
}

}  // namespace pipescope::exec
