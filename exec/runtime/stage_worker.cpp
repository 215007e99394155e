// One device's op loop. Invariant: a micro-batch's stash is dropped only at the end of
// an op that frees it (core/op_rules.h: B, or W under split backward), exactly when the
// simulator frees it, except for what I frees layer by layer (release_for_weight, for
// the layers with weight_grad_bytes in the profile); what an op receives and sends is op_receives / op_sends. Under an
// asynchronous schedule the weight versions change only at the ends of such ops, in
// WeightVersions' order (drop, keep, optimizer step), exactly when the simulator's do.
#include "exec/runtime/stage_worker.h"
#include "exec/runtime/stage_state.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <tuple>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope::exec {

namespace {
// CPU time of the calling thread: with wall time it tells whether an op had a core to itself.
int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

StageWorker::StageWorker(const WorkerSetup& setup, Endpoint& endpoint)
    : setup_(setup),
      layout_(replica_layout(setup.plan)),
      position_(layout_.position(setup.worker)),
      replica_(layout_.replica(setup.worker)),
      endpoint_(endpoint),
      backend_(make_backend(setup.options.backend, setup.worker, layout_.workers())) {
  const Plan& plan = setup_.plan;
  const Schedule& sched = setup_.schedule;
  microbatch_size_ = layout_.rows_per_replica();
  Context ctx{*backend_, tracker_};
  stages_.resize(sched.stages());
  for (int s = 0; s < sched.stages(); ++s) {
    if (sched.stage_position[s] != position_) continue;
    auto st = std::make_unique<StageState>();
    st->first_layer = plan.stages[s].first_layer;
    st->layers = build_stage_layers(setup_.profile, plan.stages[s].first_layer, plan.stages[s].end_layer, ctx);
    st->micro.resize(sched.microbatches());
    sequence_ = st->layers.front()->sequence();
    for (auto& layer : st->layers) {
      for (Parameter* p : layer->parameters()) st->parameters.push_back(p), parameters_.push_back(p);
    }
    if (sched.asynchronous()) {
      st->versions.emplace(sched);
      st->optimizer = std::make_unique<Optimizer>(ctx, st->parameters, setup_.options.optimizer);
    }
    stages_[s] = std::move(st);
  }
  if (!sched.asynchronous()) optimizer_ = std::make_unique<Optimizer>(ctx, parameters_, setup_.options.optimizer);
  if (const auto& off = setup_.options.offload) {
    offload_ = std::make_unique<StageOffload>(sched, *off, position_, [this](int stage, int mb) {
      const MicroState& ms = stages_.at(stage)->micro.at(mb);
      return stash_buffers(ms.input, ms.stashes);
    });
  }
  result_.device = setup_.worker;
  result_.static_bytes = tracker_.current_total();
  result_.weight_bytes = tracker_.current(Category::Parameters);
  result_.gradient_bytes = tracker_.current(Category::Gradients);
  result_.optimizer_bytes = tracker_.current(Category::OptimizerState);
}

StageWorker::~StageWorker() = default;

int64_t StageWorker::now() { return setup_.model_clock ? clock_ : backend_->now_ns(); }

Clock::time_point StageWorker::deadline() const {
  return Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(setup_.options.timeout_s * 1000));
}

// Samples now, or at `at` the highest point since tracker_.start_window(): activations,
// kept weight versions (parameter bytes beyond the stage's own weights; they change only
// between ops) and the rest above the static bytes (the transients).
void StageWorker::sample_memory(StepRecord& record, int64_t at, int64_t activations) {
  const bool now = at < 0;
  const int64_t act = now ? tracker_.current(Category::Activations) : activations;
  const int64_t total = now ? tracker_.current_total() : tracker_.window_peak_total();
  const int64_t versions = tracker_.current(Category::Parameters) - result_.weight_bytes;
  record.memory.push_back(
      {0, now ? this->now() : at, act, total - result_.static_bytes - act - versions, versions});
}

Tensor StageWorker::upload_input(int m) {
  const int64_t b = microbatch_size_;
  const int64_t features = stages_[0]->layers.front()->in_features();
  Context ctx{*backend_, offload_ ? staging_ : tracker_};  // offload: counted from the op's start
  return Tensor::from_host(ctx, b * sequence_, features,
                           input_data(layout_.first_sample(m, replica_), b, sequence_, features));
}

std::string StageWorker::where(int stage) const {
  return "stage " + std::to_string(stage) + (layout_.replicas > 1 ? " replica " + std::to_string(replica_) : "") +
         " (device " + std::to_string(setup_.worker) + ")";
}

std::string StageWorker::replica_of() const {
  if (layout_.replicas < 2) return "";
  return " (replica " + std::to_string(replica_) + " of position " + std::to_string(position_) + ")";
}

void StageWorker::allreduce_gradients(StepRecord& record) {
  if (layout_.replicas < 2) return;
  const int64_t t0 = now();
  // The flat copy of the gradients is charged while the all-reduce uses it (core/op_rules.h's
  // allreduce_buffer_bytes); its pages are kept from step to step (no new page faults), the
  // way a caching allocator keeps freed blocks, and like torch.cuda.max_memory_allocated
  // the tracker counts what is in use.
  std::vector<float>& flat = allreduce_buffer_;
  std::size_t n = 0;
  int64_t bytes = 0;
  for (const Parameter* p : parameters_) n += static_cast<std::size_t>(p->grad.numel()), bytes += p->grad.bytes();
  tracker_.start_window();
  tracker_.charge(Category::Transient, bytes);
  flat.resize(n);
  std::size_t at = 0;
  for (const Parameter* p : parameters_) {
    backend_->download(flat.data() + at, p->grad.data(), p->grad.numel());
    at += static_cast<std::size_t>(p->grad.numel());
  }
  endpoint_.allreduce_sum(flat, layout_.group_of(setup_.worker), deadline());
  at = 0;
  for (Parameter* p : parameters_) {
    backend_->upload(p->grad.data(), flat.data() + at, p->grad.numel());
    at += static_cast<std::size_t>(p->grad.numel());
  }
  tracker_.discharge(Category::Transient, bytes);
  sample_memory(record, t0, tracker_.current(Category::Activations));
  sample_memory(record);
  record.allreduce_start_ns = t0;
  record.allreduce_end_ns = now();
}

// FNV-1a over every parameter's bytes: replicas that applied the same update agree.
uint64_t StageWorker::parameter_hash() const {
  uint64_t h = 1469598103934665603ull;
  for (const Parameter* p : parameters_) {
    for (float v : p->value.to_host()) {
      unsigned char bytes[sizeof v];
      std::memcpy(bytes, &v, sizeof v);
      for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    }
  }
  return h;
}

WorkerResult StageWorker::run() {
  try {
    if (setup_.schedule.asynchronous()) {
      run_async();
    } else if (setup_.options.optimizer_step == OptimizerStep::PostValidation) {
      run_post_validation();
    } else {
      run_steps();
    }
    result_.parameter_hash = parameter_hash();
    if (setup_.options.keep_parameters) {
      for (const auto& st : stages_) {
        if (!st) continue;
        for (std::size_t l = 0; l < st->layers.size(); ++l) {
          auto& out = result_.parameters[st->first_layer + static_cast<int>(l)];
          for (Parameter* p : st->layers[l]->parameters()) out.push_back(p->value.to_host());
        }
      }
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    // A worker that stopped because another one failed passes the root cause on as is.
    if (what.find(" stopped while waiting for ") != std::string::npos) throw RunError(what);
    std::string place = current_.stage >= 0
                            ? where(current_.stage) + " failed at " + to_string(current_.kind) + " of micro-batch " +
                                  std::to_string(current_.microbatch) + " in step " + std::to_string(step_)
                            : "device " + std::to_string(setup_.worker) + replica_of() + " failed in step " +
                                  std::to_string(step_);
    std::string message = place + ": " + what;
    endpoint_.report_failure(message);
    throw RunError(message);
  }
  return std::move(result_);
}

void StageWorker::run_steps() {
  const RunOptions& o = setup_.options;
  for (step_ = 0; step_ < o.steps; ++step_) {
    const int step = step_;
    StepRecord record;
    if (setup_.model_clock) setup_.model_clock->reach(step, clock_);
    endpoint_.barrier(deadline(), "the start of step " + std::to_string(step));
    if (setup_.model_clock) clock_ = setup_.model_clock->reached(step);
    record.origin_ns = now();
    tracker_.reset_peaks();
    if (offload_) offload_->start_step();
    const std::vector<Op>& ops = setup_.schedule.position_ops[position_];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      current_ = ops[i];
      run_op(ops[i], i, step, record);
    }
    current_ = Op{OpKind::Forward, -1, -1};
    if (offload_) offload_->finish_step(record);
    endpoint_.flush(deadline());
    allreduce_gradients(record);
    keep_step_gradients(step);
    const int64_t t0 = now();
    optimizer_->step();  // in place: holds nothing beyond the optimizer state
    if (setup_.model_clock) clock_ += setup_.model_clock->optimizer_ns(position_);
    record.optimizer_start_ns = t0;
    record.optimizer_ns = now() - t0;
    record.peak_activation_bytes = tracker_.peak(Category::Activations);
    record.peak_total_bytes = tracker_.peak_total();
    result_.steps.push_back(std::move(record));
  }
}

void StageWorker::keep_step_gradients(int step) {
  if (step != 0 || !setup_.options.check_gradients) return;
  for (int s = 0; s < static_cast<int>(stages_.size()); ++s) {
    if (!stages_[s]) continue;
    for (std::size_t l = 0; l < stages_[s]->layers.size(); ++l) {
      auto& out = result_.gradients[stages_[s]->first_layer + static_cast<int>(l)];
      for (Parameter* p : stages_[s]->layers[l]->parameters()) out.push_back(p->grad.to_host());
    }
  }
}

// One barrier, then every step's ops in the device's order; each op's records go under
// its micro-batch's step, all with the run's one origin. The peaks are the run's.
void StageWorker::run_async() {
  const Schedule& sched = setup_.schedule;
  std::vector<StepRecord> records(static_cast<std::size_t>(sched.steps));
  endpoint_.barrier(deadline(), "the start of the run");
  const int64_t origin = now();
  for (StepRecord& r : records) r.origin_ns = origin;
  tracker_.reset_peaks();
  for (std::size_t i = 0; i < sched.position_ops[position_].size(); ++i) {
    const Op& op = sched.position_ops[position_][i];
    current_ = op;
    step_ = sched.step_of(op.microbatch);
    run_op(op, i, step_, records[step_]);
  }
  current_ = Op{OpKind::Forward, -1, -1};
  endpoint_.flush(deadline());
  for (StepRecord& r : records) {
    r.peak_activation_bytes = tracker_.peak(Category::Activations);
    r.peak_total_bytes = tracker_.peak_total();
  }
  result_.steps = std::move(records);
}

// Swaps the stage's parameter values with the kept copy of `version`; a second call swaps back.
void StageWorker::swap_version(StageState& st, int version) {
  std::vector<Tensor>& copy = st.kept.at(version);
  for (std::size_t i = 0; i < st.parameters.size(); ++i) std::swap(st.parameters[i]->value, copy[i]);
}

// The end of an op under an asynchronous schedule: what WeightVersions::finish says, in
// its order (free the dropped copies, keep a copy of the current weights, step the
// optimizer in place on the accumulated gradient, which it zeroes). Copy and step are
// timed together as the update, on the device's track.
void StageWorker::update_weights(const Op& op, StepRecord& record) {
  StageState& st = *stages_.at(op.stage);
  const WeightVersions::Update u = st.versions->finish(op);
  if (!u.happens) return;
  const int64_t t0 = now();
  for (int v : u.dropped) st.kept.erase(v);
  if (u.kept >= 0) {
    Context ctx{*backend_, tracker_};
    std::vector<Tensor> copy;
    for (const Parameter* p : st.parameters) {
      Tensor c = Tensor::empty(ctx, p->value.rows, p->value.cols, Category::Parameters);
      backend_->copy(c.data(), p->value.data(), c.numel());
      copy.push_back(std::move(c));
    }
    st.kept.emplace(u.kept, std::move(copy));
  }
  int copies = 0;
  for (const auto& any : stages_) copies += any ? static_cast<int>(any->kept.size()) : 0;
  result_.weight_versions = std::max(result_.weight_versions, 1 + copies);
  result_.weight_version_bytes =
      std::max(result_.weight_version_bytes, tracker_.current(Category::Parameters) - result_.weight_bytes);
  st.optimizer->step();
  if (setup_.model_clock) clock_ += setup_.model_clock->stage_optimizer_ns(op.stage);
  record.updates.push_back({op.stage, op.microbatch, t0, now()});
  sample_memory(record);
}

bool StageWorker::injected_fault(const Op& op, int step) const {
  const RunOptions& o = setup_.options;
  if (!o.fault) return false;
  // Under an asynchronous schedule the micro-batch index already names its step.
  const bool in_step = setup_.schedule.asynchronous() || o.fault->step == step;
  if (!(o.fault->stage == op.stage && o.fault->replica == replica_ && o.fault->kind == op.kind &&
        o.fault->microbatch == op.microbatch && in_step)) {
    return false;
  }
  if (o.fault->crash) std::_Exit(9);  // a worker that dies without a word
  if (!o.fault->drop) throw RunError("injected fault");
  return true;  // the op runs, its output is lost on the way
}

// What the op starts from: the message core/op_rules.h says it receives, or at the
// pipeline's ends the data (F of the first stage) and the loss gradient (B/I of the last).
Tensor StageWorker::op_input(const Op& op) {
  const Schedule& sched = setup_.schedule;
  StageState& st = *stages_.at(op.stage);
  MicroState& ms = st.micro[op.microbatch];
  if (auto in = op_receives(op, sched.stages())) {
    Context ctx{*backend_, offload_ ? staging_ : tracker_};
    const int64_t rows = microbatch_size_ * sequence_;
    const int64_t cols = in->kind == MessageKind::Activation ? st.layers.front()->in_features()
                                                             : st.layers.back()->out_features();
    Tensor x = endpoint_.recv(layout_.worker(sched.stage_position[in->from_stage], replica_),
                              {in->kind, op.stage, op.microbatch}, rows, cols, ctx, deadline());
    if (setup_.model_clock) clock_ = setup_.model_clock->receive(op, *in, clock_);
    return x;
  }
  if (op.kind == OpKind::Forward || (op.kind == OpKind::Recompute && op.stage == 0)) return upload_input(op.microbatch);
  if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) {
    Tensor g = std::move(ms.loss_grad);
    ms.loss_grad = Tensor{};
    return g;
  }
  return Tensor{};
}

// The last stage's F also computes the loss and keeps dLoss/dOutput for its backward.
void StageWorker::loss(int m, const Tensor& y, MicroState& ms, StepRecord& record) {
  Context ctx{*backend_, tracker_};
  const int64_t rows = microbatch_size_ * sequence_;
  const int64_t features = y.cols;
  const int64_t first = layout_.first_sample(m, replica_);
  Tensor target = Tensor::from_host(ctx, rows, features, target_data(first, microbatch_size_, sequence_, features));
  ms.loss_grad = Tensor::empty(ctx, rows, features);
  const double denom = static_cast<double>(setup_.plan.batch_size) * sequence_ * features;
  double sq = backend_->mse_gradient(ms.loss_grad.data(), y.data(), target.data(), static_cast<float>(2.0 / denom),
                                     y.numel());
  record.loss += sq / denom;
}

// Runs the op's layers on `x`; returns what the op sends (if anything).
Tensor StageWorker::compute(const Op& op, Tensor x, StepRecord& record) {
  const Schedule& sched = setup_.schedule;
  StageState& st = *stages_.at(op.stage);
  MicroState& ms = st.micro[op.microbatch];
  Context ctx{*backend_, tracker_};
  auto forward = [&](Tensor h, bool keep) {
    if (keep) ms.stashes.assign(st.layers.size(), LayerStash{});
    for (std::size_t l = 0; l < st.layers.size(); ++l) h = st.layers[l]->forward(h, keep ? &ms.stashes[l] : nullptr);
    return h;
  };
  switch (op.kind) {
    case OpKind::Forward: {
      // Under re-materialisation F keeps only its received input (core/op_rules.h's stash).
      if (sched.r_ops && op.stage > 0) {
        x.stash();
        ms.input = x;
      }
      Tensor y = forward(std::move(x), !sched.r_ops);
      if (op.stage == sched.stages() - 1) loss(op.microbatch, y, ms, record);
      return y;
    }
    case OpKind::Recompute: {
      if (op.stage > 0) {
        x = Tensor::empty(ctx, ms.input.rows, ms.input.cols);
        backend_->copy(x.data(), ms.input.data(), x.numel());
      }
      forward(std::move(x), true);
      return Tensor{};
    }
    case OpKind::Backward:
    case OpKind::BackwardInput: {
      const bool whole = op.kind == OpKind::Backward;
      for (std::size_t l = st.layers.size(); l-- > 0;) {
        x = st.layers[l]->backward_input(x, ms.stashes.at(l));
        if (whole) {
          st.layers[l]->backward_weight(ms.stashes[l]);
        } else if (!setup_.profile.layers[st.first_layer + l].weight_grad_bytes.empty()) {
          // I frees what W does not need (core/op_rules.h), where the profile says how much.
          st.layers[l]->release_for_weight(ms.stashes[l]);
        }
      }
      return x;
    }
    case OpKind::BackwardWeight:
      for (std::size_t l = 0; l < st.layers.size(); ++l) st.layers[l]->backward_weight(ms.stashes.at(l));
      return Tensor{};
  }
  return Tensor{};
}

// The offload walk's part of an op's start: the offloads that reached the host leave the
// device, the reload for the next op starts, the op waits for its own reload; only then is
// its received input counted (the simulator's order: releases, reload, then the op's peak).
void StageWorker::offload_op_start(std::size_t index, Tensor& x) {
  const int64_t start = offload_->before_op(index, now());
  if (setup_.model_clock) {
    clock_ = start;
  } else {
    while (now() < start) std::this_thread::yield();  // the reload's copy has not ended yet
  }
  if (x.defined()) x.buffer->move_to(tracker_);
}

void StageWorker::run_op(const Op& op, std::size_t index, int step, StepRecord& record) {
  const bool drop_output = injected_fault(op, step);
  const Schedule& sched = setup_.schedule;
  Tensor x = op_input(op);
  if (offload_) offload_op_start(index, x);
  tracker_.start_window();  // the op's highest point: its input, workspace and output included
  const int64_t act0 = tracker_.current(Category::Activations);
  StageState& st = *stages_.at(op.stage);
  // The weights the op runs on: under a flush those after `step` optimizer steps.
  const int version = st.versions ? st.versions->use(op) : step;
  const bool swapped = st.versions && version != st.versions->current();
  if (swapped) swap_version(st, version);
  const int64_t t0 = now(), c0 = thread_cpu_ns();
  Tensor out = compute(op, std::move(x), record);
  if (setup_.model_clock) clock_ += setup_.model_clock->op_ns(op);
  const int64_t t1 = now(), c1 = thread_cpu_ns();
  if (swapped) swap_version(st, version);
  if (offload_) offload_->settle(t1);
  if (op_frees(op.kind)) st.micro[op.microbatch] = MicroState{};
  record.ops.push_back({op.kind, op.stage, op.microbatch, t0, t1, c1 - c0, version});
  if (auto msg = op_sends(op, sched.stages()); msg && !drop_output) {
    const int to = layout_.worker(sched.stage_position[msg->to_stage], replica_);
    int64_t s0 = now(), s1 = 0;
    if (ModelClock* model = setup_.model_clock) {  // stamped before the send, which publishes it
      std::tie(s0, s1) = model->send(*msg, op.microbatch, clock_);
      if (model->blocking()) clock_ = std::max(clock_, s1);  // the sender waits for its tensor to arrive
    }
    endpoint_.send(to, MessageKey{msg->kind, msg->to_stage, op.microbatch}, out);
    record.transfers.push_back({setup_.worker, to, msg->to_stage, op.microbatch, s0, setup_.model_clock ? s1 : now()});
  }
  out = Tensor{};  // sent: what the op leaves held is what remains
  if (offload_ && op.kind == OpKind::Forward) offload_->after_forward(index, t0, t1);
  sample_memory(record, t0, act0);
  sample_memory(record);
  if (st.versions) update_weights(op, record);
}

}  // namespace pipescope::exec
