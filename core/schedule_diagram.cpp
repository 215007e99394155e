// The text diagram of a schedule: one row per device, one cell per slot, each op placed
// at the earliest slot its needs allow (B two slots wide, as in the GPipe paper's figure).
// Invariant: the diagram is a picture of the dependency walk, never a timing prediction.
#include <algorithm>
#include <sstream>

#include "core/op_rules.h"
#include "core/schedule.h"
#include "core/schedule_walk.h"

namespace pipescope {

std::string schedule_diagram(const Schedule& s) {
  // Slot widths: backward twice a forward, as in the GPipe paper's figure.
  auto slots = [](OpKind k) { return k == OpKind::Backward ? 2 : 1; };
  std::vector<std::vector<int64_t>> start(s.positions());
  for (int d = 0; d < s.positions(); ++d) start[d].resize(s.position_ops[d].size());
  const int S = s.stages(), M = s.microbatches();
  std::vector<int64_t> end_of(static_cast<std::size_t>(kProducts) * S * M, 0);
  auto end_ref = [&](Product p, int st, int m) -> int64_t& {
    return end_of[(static_cast<std::size_t>(p) * S + st) * M + m];
  };
  std::vector<int64_t> device_free(s.positions(), 0);
  detail::walk_in_dependency_order(s, "", [&](int d, std::size_t i) {
    const Op& op = s.position_ops[d][i];
    int64_t t = device_free[d];
    for (const Need& n : op_needs(op, S, s.r_ops)) t = std::max(t, end_ref(n.product, n.stage, op.microbatch));
    start[d][i] = t;
    device_free[d] = t + slots(op.kind);
    end_ref(product_of(op.kind), op.stage, op.microbatch) = device_free[d];
  });
  int64_t width = *std::max_element(device_free.begin(), device_free.end());
  // A stage's chunk: its rank among the stages of its device (a, b, ... in the cells).
  std::vector<int> chunk(static_cast<std::size_t>(S), 0);
  int most = 1;
  for (int d = 0; d < s.positions(); ++d) {
    std::vector<int> mine = s.stages_of(d);
    for (std::size_t k = 0; k < mine.size(); ++k) chunk[mine[k]] = static_cast<int>(k);
    most = std::max(most, static_cast<int>(mine.size()));
  }
  // Room for the letter, the micro-batch, a chunk letter when devices hold several stages, and a space.
  const int cell = (M > 99 ? 5 : (M > 9 ? 4 : 3)) + (most > 1 ? 1 : 0);
  std::ostringstream out;
  out << s.name << ", K = " << s.positions() << ", M = " << s.step_microbatches();
  if (s.steps > 1) out << " x " << s.steps << " steps without a flush (micro-batch n is in step n / " << s.step_microbatches() << ")";
  if (most > 1) out << ", " << S << " stages";
  out << " (F forward, B backward, I input grad, W weight grad, R recompute";
  if (most > 1) out << "; a/b/... after the number = the device's 1st/2nd/... stage";
  out << "; '.' idle)\n";
  for (int d = 0; d < s.positions(); ++d) {
    std::vector<std::string> row(static_cast<std::size_t>(width), std::string(cell, ' '));
    for (auto& c : row) c[cell - 2] = '.';
    for (std::size_t i = 0; i < s.position_ops[d].size(); ++i) {
      const Op& op = s.position_ops[d][i];
      std::string label(1, op_letter(op.kind));
      label += std::to_string(op.microbatch);  // appended: GCC 12 -Wrestrict false positive (PR105329)
      if (most > 1) label += static_cast<char>('a' + std::min(chunk[op.stage], 25));
      for (int k = 0; k < slots(op.kind); ++k) {
        std::string text = k == 0 ? label : std::string("~");
        std::string padded = text.size() >= static_cast<std::size_t>(cell)
                                 ? text.substr(0, cell)
                                 : std::string(cell - text.size(), ' ') + text;
        row[start[d][i] + k] = padded;
      }
    }
    out << "device " << d << " |";
    for (const auto& c : row) out << c;
    out << "\n";
  }
  return out.str();
}

}  // namespace pipescope
