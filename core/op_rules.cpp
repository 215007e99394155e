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
