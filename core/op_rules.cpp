// The rules of core/op_rules.h. Invariant: every function here is total over valid
// ops and reads nothing but its arguments, so callers can rely on the same answer.
#include "core/op_rules.h"

#include <algorithm>

#include "core/cost_model.h"
#include "core/error.h"

namespace pipescope {

Product product_of(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return Product::Output;
    case OpKind::Backward:
    case OpKind::BackwardInput: return Product::InputGradient;
    case OpKind::Recompute: return Product::Recomputed;
    case OpKind::BackwardWeight: return Product::WeightGradient;
  }
  return Product::Output;
}

Needs op_needs(const Op& op, int stages, bool r_ops) {
  Needs n;
  auto add = [&](Product p, int stage) { n.items[n.count++] = Need{p, stage}; };
  const int s = op.stage;
  switch (op.kind) {
    case OpKind::Forward:
      if (s > 0) add(Product::Output, s - 1);
      break;
    case OpKind::Recompute: add(Product::Output, s); break;
    case OpKind::Backward:
    case OpKind::BackwardInput:
      add(Product::Output, s);
      if (r_ops) add(Product::Recomputed, s);
      if (s + 1 < stages) add(Product::InputGradient, s + 1);
      break;
    case OpKind::BackwardWeight: add(Product::InputGradient, s); break;
  }
  return n;
}


namespace {

// Forward over the stage's layers, relative to what the device held before: the most it
// adds while it runs, and what it holds when the last layer has returned (stash or kept
// input, plus the output). With a stash, layer l starts holding the stashes of layers
// before it and its input; without, the kept stage input `kept` and its input (layer 0's
// input is the kept one).
OpMemory forward_pass(const std::vector<LayerBytes>& layers, bool stash, int64_t kept) {
  OpMemory m;
  int64_t before = 0;  // stashes of the layers already run
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LayerBytes& b = layers[l];
    const int64_t start = stash ? before + b.input : (l == 0 ? b.input : kept + b.input);
    m.peak = std::max(m.peak, start + (stash ? b.forward : b.forward_no_grad));
    before += b.activation;
  }
  m.held = (stash ? before : kept) + layers.back().output;
  m.peak = std::max(m.peak, m.held);
  return m;
}

}  // namespace

StageMemory stage_memory(const std::vector<LayerBytes>& layers, bool first, bool last, bool r_ops) {
  StageMemory out;
  if (layers.empty()) return out;
  auto at = [&](OpKind k) -> OpMemory& { return out.op[static_cast<std::size_t>(k)]; };
  const int64_t o = layers.back().output;
  const int64_t kept = r_ops && !first ? layers.front().input : 0;
  // F: the forward, then on the last stage the loss (its target and gradient beside the
  // output); the output goes once sent, the loss gradient stays until B or I.
  OpMemory f = forward_pass(layers, !r_ops, kept);
  const int64_t stash = r_ops ? kept : f.held - o;
  at(OpKind::Forward) = {std::max(f.peak, f.held + (last ? 2 * o : 0)), stash + (last ? o : 0)};
  // R: a fresh copy of the stage input (or the data) forward with a stash; nothing sent.
  OpMemory r = forward_pass(layers, true, 0);
  at(OpKind::Recompute) = {r.peak, r.held - o};
  // B, I: layer by layer in reverse from the output gradient (received, or the loss
  // gradient the device already holds); I keeps each layer's held_for_weight and, once a
  // layer's backward_input has returned, drops what its W does not need (freed_at_input).
  const int64_t base = last ? -o : 0;
  int64_t whole = 0, split = 0, kept_for_w = 0, released = 0;
  for (std::size_t l = layers.size(); l-- > 0;) {
    const LayerBytes& b = layers[l];
    whole = std::max({whole, b.output + b.backward_input, b.input + b.held_for_weight + b.backward_weight});
    split = std::max(split, kept_for_w - released + b.output + b.backward_input);
    kept_for_w += b.held_for_weight;
    split = std::max(split, kept_for_w - released + b.input);
    released += b.freed_at_input;
  }
  at(OpKind::Backward) = {base + whole, 0};
  at(OpKind::BackwardInput) = {base + split, base + kept_for_w - released};
  // W: layer by layer in order, each freeing what its I kept once it is done.
  int64_t w = 0, freed = 0;
  for (const LayerBytes& b : layers) {
    w = std::max(w, b.backward_weight - freed);
    freed += b.held_for_weight;
  }
  at(OpKind::BackwardWeight) = {w, 0};
  return out;
}

WeightVersions::WeightVersions(const Schedule& s)
    : mode_(s.weight_update), step_microbatches_(s.step_microbatches()), steps_(s.steps) {
  if (mode_ == WeightUpdate::Stash) {
    version_of_.assign(static_cast<std::size_t>(s.microbatches()), -1);
    users_.assign(static_cast<std::size_t>(s.microbatches()) + 1, 0);
  }
  if (mode_ == WeightUpdate::DoubleBuffer) freed_in_step_.assign(static_cast<std::size_t>(steps_), 0);
}

bool WeightVersions::available(int version) const {
  return version == current_ || std::binary_search(kept_.begin(), kept_.end(), version);
}

int WeightVersions::use(const Op& op) {
  const int t = op.microbatch / step_microbatches_;
  switch (mode_) {
    case WeightUpdate::Flush: return t;
    case WeightUpdate::Stash: {
      int& v = version_of_[op.microbatch];
      if (v < 0) {  // the micro-batch's first op (its F) takes the current version
        v = current_;
        ++users_[v];
      }
      return v;
    }
    case WeightUpdate::DoubleBuffer: {
      const int v = std::max(t - 1, 0);
      if (!available(v)) {
        throw InputError(std::string(1, op_letter(op.kind)) + "(stage " + std::to_string(op.stage) +
                         ", micro-batch " + std::to_string(op.microbatch) + ") of step " + std::to_string(t) +
                         " needs weight version " + std::to_string(v) + " but its stage holds " +
                         (v > current_ ? "only up to version " + std::to_string(current_) +
                                             " (the update of step " + std::to_string(v - 1) + " comes later)"
                                       : "no longer (dropped)"));
      }
      return v;
    }
  }
  return 0;
}

WeightVersions::Update WeightVersions::finish(const Op& op) {
  Update u;
  if (mode_ == WeightUpdate::Flush || !op_frees(op.kind)) return u;
  auto drop = [&](int v) {
    auto it = std::lower_bound(kept_.begin(), kept_.end(), v);
    if (it == kept_.end() || *it != v) return;
    kept_.erase(it);
    u.dropped.push_back(v);
  };
  bool keep = false;
  if (mode_ == WeightUpdate::Stash) {
    const int v = version_of_[op.microbatch];
    if (--users_[v] == 0) drop(v);
    keep = users_[current_] > 0;
  } else {
    const int t = op.microbatch / step_microbatches_;
    if (++freed_in_step_[t] < step_microbatches_) return u;
    if (current_ != t) {
      throw InputError("stage " + std::to_string(op.stage) + " finishes step " + std::to_string(t) +
                       " before step " + std::to_string(current_) + " (2bw updates once per step, in order)");
    }
    if (t >= 1) drop(t - 1);
    keep = t + 1 < steps_;  // step t + 1 runs on version t
  }
  if (keep) {
    kept_.push_back(current_);  // current_ is the newest version: kept_ stays ascending
    u.kept = current_;
  }
  u.happens = true;
  ++current_;
  return u;
}

int64_t static_bytes(int64_t parameter_bytes, double optimizer_state_factor) {
  return static_cast<int64_t>(static_cast<double>(parameter_bytes) * (2.0 + optimizer_state_factor));
}

int64_t allreduce_ns(const Link& ring, int64_t gradient_bytes, int replicas) {
  if (replicas < 2) return 0;
  return ring.busy_ns(ring_allreduce_bytes(gradient_bytes, replicas)) + ring_allreduce_hops(replicas) * ring.latency_ns();
}

int64_t allgather_ns(const Link& ring, int64_t bytes, int devices) {
  return ring.busy_ns(ring_allgather_bytes(bytes, devices)) + ring_allgather_hops(devices) * ring.latency_ns();
}

double slowest_speed(const Hardware& hardware, const std::vector<int>& devices) {
  double speed = 1e300;
  for (int d : devices) speed = std::min(speed, hardware.device_speed(d));
  return devices.empty() ? 1.0 : speed;
}

}  // namespace pipescope
