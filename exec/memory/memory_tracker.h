// Counts the bytes one device (one stage worker) holds, by category, with the peak of
// each category and of the total. Every tensor buffer of a worker is charged here on
// allocation and discharged when freed; a buffer that a layer stashes for its backward
// is moved into Category::Activations (retag), so the activation count follows the
// accounting rules of core/op_rules.h exactly, and so does the total (transients
// included; see exec/runtime/stage_worker.h and docs/memory.md).
// Invariant: current(c) >= 0 and peak(c) >= current(c) for every category.
// One tracker per worker thread: it is not synchronised.
//   MemoryTracker t;  t.charge(Category::Transient, 1024);  t.peak(Category::Activations);
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace pipescope::exec {

enum class Category : uint8_t { Parameters, Gradients, OptimizerState, Activations, Transient };
inline constexpr int kCategories = 5;
std::string to_string(Category c);  // "parameters", "gradients", ...

class MemoryTracker {
 public:
  void charge(Category c, int64_t bytes);
  void discharge(Category c, int64_t bytes);
  void move(Category from, Category to, int64_t bytes);

  int64_t current(Category c) const { return current_[static_cast<int>(c)]; }
  int64_t peak(Category c) const { return peak_[static_cast<int>(c)]; }
  int64_t current_total() const { return total_; }
  int64_t peak_total() const { return peak_total_; }
  // Peaks restart from the current values (e.g. at the start of a measured step).
  void reset_peaks();
  // The largest total since the last start_window() (an op's highest point).
  void start_window() { window_peak_ = total_; }
  int64_t window_peak_total() const { return window_peak_; }

 private:
  std::array<int64_t, kCategories> current_{};
  std::array<int64_t, kCategories> peak_{};
  int64_t total_ = 0;
  int64_t peak_total_ = 0;
  int64_t window_peak_ = 0;
};

}  // namespace pipescope::exec
