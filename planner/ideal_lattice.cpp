// Breadth-first over ideal sizes: level k + 1 is every D + {v} for D on level k and v a
// vertex outside D whose predecessors all lie in D. A child is found again from each of
// its maximal vertices; an open-addressing table keyed by a Zobrist hash (XOR of one
// random word per vertex) and checked by a full bitset compare merges the duplicates.
#include "planner/ideal_lattice.h"

#include <algorithm>

namespace pipescope {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One level of ideals as bitsets, with a hash table to find a set again.
class Level {
 public:
  explicit Level(int words) : words_(words) {}
  int count() const { return static_cast<int>(hash_.size()); }
  const uint64_t* bits(int i) const { return &bits_[static_cast<std::size_t>(i) * words_]; }
  uint64_t hash(int i) const { return hash_[i]; }

  // The index of `set`, adding it when new; `fresh` says which.
  int find_or_add(const uint64_t* set, uint64_t h, bool& fresh) {
    if ((hash_.size() + 1) * 2 > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t k = h & mask;; k = (k + 1) & mask) {
      const int i = slots_[k];
      if (i < 0) {
        slots_[k] = count();
        hash_.push_back(h);
        bits_.insert(bits_.end(), set, set + words_);
        fresh = true;
        return slots_[k];
      }
      if (hash_[i] == h && std::equal(set, set + words_, bits(i))) {
        fresh = false;
        return i;
      }
    }
  }

 private:
  void grow() {
    slots_.assign(std::max<std::size_t>(16, slots_.size() * 2), -1);
    const std::size_t mask = slots_.size() - 1;
    for (int i = 0; i < count(); ++i) {
      std::size_t k = hash_[i] & mask;
      while (slots_[k] >= 0) k = (k + 1) & mask;
      slots_[k] = i;
    }
  }
  int words_;
  std::vector<uint64_t> bits_, hash_;
  std::vector<int> slots_;
};

bool has(const uint64_t* set, int v) { return (set[v >> 6] >> (v & 63)) & 1; }

}  // namespace

std::vector<int> IdealLattice::members(int ideal) const {
  std::vector<int> out;
  for (int d = ideal; parent[d] >= 0; d = parent[d]) out.push_back(added[d]);
  std::sort(out.begin(), out.end());
  return out;
}

IdealLattice build_ideal_lattice(int n, const std::vector<std::pair<int, int>>& edges, std::size_t max_ideals) {
  std::vector<std::vector<int>> pred(n), succ(n);
  for (auto [a, b] : edges) {
    pred[b].push_back(a);
    succ[a].push_back(b);
  }
  std::vector<uint64_t> zobrist(n);
  for (int v = 0; v < n; ++v) zobrist[v] = splitmix(static_cast<uint64_t>(v) + 1);
  const int words = std::max(1, (n + 63) / 64);
  IdealLattice out;
  out.vertices = n;
  std::vector<std::vector<int>> below_lists;  // per ideal, filled as children are found
  auto add_ideal = [&](int parent, int added, std::vector<int> closed) {
    out.parent.push_back(parent);
    out.added.push_back(added);
    out.closed_begin.push_back(static_cast<int>(out.closed.size()));
    out.closed.insert(out.closed.end(), closed.begin(), closed.end());
    below_lists.emplace_back();
  };
  Level level(words);
  std::vector<uint64_t> set(static_cast<std::size_t>(words), 0);
  bool fresh = false;
  level.find_or_add(set.data(), 0, fresh);
  add_ideal(-1, -1, {});
  int level_first = 0;  // global index of level's ideal 0
  for (int size = 0; size < n; ++size) {
    Level next(words);
    const int next_first = level_first + level.count();
    for (int i = 0; i < level.count(); ++i) {
      const uint64_t* d = level.bits(i);
      for (int v = 0; v < n; ++v) {
        if (has(d, v)) continue;
        bool ready = true;
        for (int u : pred[v]) ready = ready && has(d, u);
        if (!ready) continue;
        std::copy(d, d + words, set.begin());
        set[v >> 6] |= uint64_t{1} << (v & 63);
        const int k = next.find_or_add(set.data(), level.hash(i) ^ zobrist[v], fresh);
        if (fresh) {
          if (out.parent.size() >= max_ideals) return IdealLattice{n, false, {}, {}, {}, {}, {}, {}};
          std::vector<int> closed;
          for (int u : pred[v]) {
            bool all_in = true;
            for (int w : succ[u]) all_in = all_in && (w == v || has(d, w));
            if (all_in) closed.push_back(u);
          }
          add_ideal(level_first + i, v, std::move(closed));
        }
        below_lists[static_cast<std::size_t>(next_first + k)].push_back(level_first + i);
      }
    }
    level_first = next_first;
    level = std::move(next);
  }
  out.closed_begin.push_back(static_cast<int>(out.closed.size()));  // sentinel
  out.below_begin.push_back(0);
  for (const std::vector<int>& b : below_lists) {
    out.below.insert(out.below.end(), b.begin(), b.end());
    out.below_begin.push_back(static_cast<int>(out.below.size()));
  }
  out.complete = true;
  return out;
}

}  // namespace pipescope
