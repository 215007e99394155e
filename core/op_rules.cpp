// The rules of core/op_rules.h. Invariant: every function here is total over valid
// ops and reads nothing but its arguments, so callers can rely on the same answer.
#include "core/op_rules.h"

#include <algorithm>

#include "core/cost_model.h"

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

Needs op_needs(const Op& op, int stages, bool recompute) {
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
      if (recompute) add(Product::Recomputed, s);
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

StageMemory stage_memory(const std::vector<LayerBytes>& layers, bool first, bool last, bool recompute) {
  StageMemory out;
  if (layers.empty()) return out;
  auto at = [&](OpKind k) -> OpMemory& { return out.op[static_cast<std::size_t>(k)]; };
  const int64_t o = layers.back().output;
  const int64_t kept = recompute && !first ? layers.front().input : 0;
  // F: the forward, then on the last stage the loss (its target and gradient beside the
  // output); the output goes once sent, the loss gradient stays until B or I.
  OpMemory f = forward_pass(layers, !recompute, kept);
  const int64_t stash = recompute ? kept : f.held - o;
  at(OpKind::Forward) = {std::max(f.peak, f.held + (last ? 2 * o : 0)), stash + (last ? o : 0)};
  // R: a fresh copy of the stage input (or the data) forward with a stash; nothing sent.
  OpMemory r = forward_pass(layers, true, 0);
  at(OpKind::Recompute) = {r.peak, r.held - o};
  // B, I: layer by layer in reverse from the output gradient (received, or the loss
  // gradient the device already holds); I keeps each layer's held_for_weight.
  const int64_t base = last ? -o : 0;
  int64_t whole = 0, split = 0, kept_for_w = 0;
  for (std::size_t l = layers.size(); l-- > 0;) {
    const LayerBytes& b = layers[l];
    whole = std::max({whole, b.output + b.backward_input, b.input + b.held_for_weight + b.backward_weight});
    split = std::max(split, kept_for_w + b.output + b.backward_input);
    kept_for_w += b.held_for_weight;
    split = std::max(split, kept_for_w + b.input);
  }
  at(OpKind::Backward) = {base + whole, 0};
  at(OpKind::BackwardInput) = {base + split, base + kept_for_w};
  // W: layer by layer in order, each freeing what its I kept once it is done.
  int64_t w = 0, freed = 0;
  for (const LayerBytes& b : layers) {
    w = std::max(w, b.backward_weight - freed);
    freed += b.held_for_weight;
  }
  at(OpKind::BackwardWeight) = {w, 0};
  return out;
}

int64_t static_bytes(int64_t parameter_bytes, double optimizer_state_factor) {
  return static_cast<int64_t>(static_cast<double>(parameter_bytes) * (2.0 + optimizer_state_factor));
}

int64_t allreduce_ns(const Link& ring, int64_t gradient_bytes, int replicas) {
  if (replicas < 2) return 0;
  const int64_t r = replicas;
  return ring.busy_ns(2 * (r - 1) * gradient_bytes / r) + 2 * (r - 1) * ring.latency_ns();
}

double slowest_speed(const Hardware& hardware, const std::vector<int>& devices) {
  double speed = 1e300;
  for (int d : devices) speed = std::min(speed, hardware.device_speed(d));
  return devices.empty() ? 1.0 : speed;
}

}  // namespace pipescope
