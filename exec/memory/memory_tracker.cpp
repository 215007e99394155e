// Per-category byte counts of one worker. Invariant: a discharge never exceeds what was charged.
#include "exec/memory/memory_tracker.h"

#include <algorithm>
#include "core/invariant.h"

namespace pipescope::exec {

std::string to_string(Category c) {
  switch (c) {
    case Category::Parameters: return "parameters";
    case Category::Gradients: return "gradients";
    case Category::OptimizerState: return "optimizer_state";
    case Category::Activations: return "activations";
    case Category::Transient: return "transient";
  }
  return "?";
}

void MemoryTracker::charge(Category c, int64_t bytes) {
  int i = static_cast<int>(c);
  current_[i] += bytes;
  peak_[i] = std::max(peak_[i], current_[i]);
  total_ += bytes;
  peak_total_ = std::max(peak_total_, total_);
  window_peak_ = std::max(window_peak_, total_);
}

void MemoryTracker::discharge(Category c, int64_t bytes) {
  int i = static_cast<int>(c);
  current_[i] -= bytes;
  total_ -= bytes;
  PS_INVARIANT(current_[i] >= 0, "memory tracker discharged more than it was charged");
}

void MemoryTracker::move(Category from, Category to, int64_t bytes) {
  if (from == to) return;
  discharge(from, bytes);
  charge(to, bytes);
}

void MemoryTracker::reset_peaks() {
  peak_ = current_;
  peak_total_ = total_;
}

}  // namespace pipescope::exec
