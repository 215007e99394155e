// Post-validation's step loop of a stage worker (RunOptions::optimizer_step; the
// protocol: exec/runtime/stage_worker.h). Invariant: every worker sees the same check
// results, so all of them redo the same steps and their messages match.
#include <cmath>
#include <limits>

#include "exec/runtime/stage_state.h"
#include "exec/runtime/stage_worker.h"

namespace pipescope::exec {

Endpoint::Validation StageWorker::local_validation() const {
  Endpoint::Validation v;
  for (const Parameter* p : parameters_) {
    for (float g : p->grad.to_host()) {
      v.finite = v.finite && std::isfinite(g);
      v.norm_sq += static_cast<double>(g) * g;
    }
  }
  return v;
}

void StageWorker::run_step_ops(int step, StepRecord& record) {
  const int M = setup_.schedule.microbatches();
  const std::size_t ops0 = record.ops.size(), transfers0 = record.transfers.size();
  const std::vector<Op>& ops = setup_.schedule.position_ops[position_];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    current_ = ops[i];
    run_op(ops[i], i, step, record);
  }
  current_ = Op{OpKind::Forward, -1, -1};
  endpoint_.flush(deadline());
  // The simulator numbers step t's micro-batch n as t M + n when it runs steps back to back.
  for (std::size_t i = ops0; i < record.ops.size(); ++i) record.ops[i].microbatch += step * M;
  for (std::size_t i = transfers0; i < record.transfers.size(); ++i) record.transfers[i].microbatch += step * M;
}

// Post-validation: one barrier, then the steps back to back. The check of step t - 1 is
// awaited after step t's ops, so it runs behind them; until it passes, the parameters and
// optimizer state from before step t - 1's update are kept (`before`). Every worker sees
// the same check results, so all of them redo the same steps and their messages match.
void StageWorker::run_post_validation() {
  const RunOptions& o = setup_.options;
  const int steps = o.steps;
  std::vector<StepRecord> records(static_cast<std::size_t>(steps));
  endpoint_.barrier(deadline(), "the start of the run");
  const int64_t origin = now();
  for (StepRecord& r : records) r.origin_ns = origin;
  tracker_.reset_peaks();
  int seq = 0;         // check sequence number: one per optimizer step taken
  int pending = -1;    // the step whose check is still out
  Optimizer::State before;
  bool poisoned = false;
  auto settle = [&] {  // awaits the pending check; true when it failed (restored)
    if (pending < 0) return false;
    const Endpoint::Validation v = endpoint_.await_validation(seq - 1, deadline());
    const bool failed = !v.finite || !std::isfinite(v.norm_sq);
    if (failed) {
      optimizer_->restore(before);
      result_.rolled_back_steps.push_back(pending);
    } else {
      result_.gradient_norms.push_back(std::sqrt(v.norm_sq));
    }
    pending = -1;
    return failed;
  };
  for (step_ = 0; step_ < steps; ++step_) {
    const int step = step_;
    run_step_ops(step, records[step]);
    if (settle()) {  // step - 1 was rolled back: this step ran on its weights
      const int64_t keep = records[step].origin_ns;
      records[step] = StepRecord{};
      records[step].origin_ns = keep;
      run_step_ops(step, records[step]);
    }
    keep_step_gradients(step);
    if (o.poison_gradient && o.poison_gradient->step == step && !poisoned && replica_ == 0 &&
        o.poison_gradient->stage < static_cast<int>(stages_.size()) && stages_[o.poison_gradient->stage]) {
      Parameter* p = stages_[o.poison_gradient->stage]->parameters.at(0);
      backend_->fill(p->grad.data(), std::numeric_limits<float>::quiet_NaN(), 1);
      poisoned = true;
    }
    const Endpoint::Validation mine = local_validation();
    endpoint_.post_validation(seq++, mine.norm_sq, mine.finite);
    pending = step;
    const int64_t t0 = now();
    before = optimizer_->save();  // measured with the update: what keeping the copy costs
    optimizer_->step();
    if (setup_.model_clock) clock_ += setup_.model_clock->optimizer_ns(position_);
    records[step].updates.push_back({setup_.schedule.stages_of(position_).front(), -1, t0, now()});
    records[step].optimizer_start_ns = t0;
    records[step].optimizer_ns = now() - t0;
    sample_memory(records[step]);
  }
  settle();
  for (StepRecord& r : records) {
    r.peak_activation_bytes = tracker_.peak(Category::Activations);
    r.peak_total_bytes = tracker_.peak_total();
  }
  result_.steps = std::move(records);
}

}  // namespace pipescope::exec
