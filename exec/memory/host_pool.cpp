// A worker's host pool: its changes in time order (exec/memory/host_pool.h).
#include "exec/memory/host_pool.h"

#include <algorithm>

namespace pipescope::exec {

std::vector<std::pair<int64_t, int64_t>> HostPool::series() const {
  std::vector<std::pair<int64_t, int64_t>> c = changes_;
  std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // leaving before arriving
  });
  int64_t held = 0;
  for (auto& [time, bytes] : c) bytes = held += bytes;
  return c;
}

int64_t HostPool::peak() const {
  int64_t peak = 0;
  for (const auto& [time, held] : series()) peak = std::max(peak, held);
  return peak;
}

int64_t HostPool::sent() const {
  int64_t sum = 0;
  for (const auto& [time, bytes] : changes_) sum += bytes > 0 ? bytes : 0;
  return sum;
}

}  // namespace pipescope::exec
