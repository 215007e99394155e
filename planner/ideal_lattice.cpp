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

struct Adjacency {
  std::vector<std::vector<int>> pred, succ;
};

Adjacency adjacency_of(int n, const std::vector<std::pair<int, int>>& edges) {
  Adjacency g{std::vector<std::vector<int>>(n), std::vector<std::vector<int>>(n)};
  for (auto [a, b] : edges) {
    g.pred[b].push_back(a);
    g.succ[a].push_back(b);
  }
  return g;
}

// One random key per vertex: an ideal's hash is the xor of its members' keys.
std::vector<uint64_t> zobrist_keys(int n) {
  std::vector<uint64_t> keys(n);
  for (int v = 0; v < n; ++v) keys[v] = splitmix(static_cast<uint64_t>(v) + 1);
  return keys;
}

// The addable vertices of the empty ideal: those without predecessors (a bitset).
std::vector<uint64_t> sources(const Adjacency& g, int words) {
  std::vector<uint64_t> can(static_cast<std::size_t>(words), 0);
  for (int v = 0; v < static_cast<int>(g.pred.size()); ++v) {
    if (g.pred[v].empty()) can[v >> 6] |= uint64_t{1} << (v & 63);
  }
  return can;
}

// The predecessors of v whose every successor lies in ideal d or is v: the vertices
// that adding v to d closes (all their consumers are then in).
void closed_by(const Adjacency& g, int v, const uint64_t* d, std::vector<int>& closed) {
  closed.clear();
  for (int u : g.pred[v]) {
    bool all_in = true;
    for (int x : g.succ[u]) all_in = all_in && (x == v || has(d, x));
    if (all_in) closed.push_back(u);
  }
}

// The addable vertices of `set` = d + v, from d's (`add`): v leaves, and each successor
// of v whose predecessors are all in `set` joins.
void addable_after(const Adjacency& g, int v, const uint64_t* add, const uint64_t* set, int words,
                   std::vector<uint64_t>& can) {
  std::copy(add, add + words, can.begin());
  can[v >> 6] &= ~(uint64_t{1} << (v & 63));
  for (int x : g.succ[v]) {
    bool ready = true;
    for (int u : g.pred[x]) ready = ready && has(set, u);
    if (ready) can[x >> 6] |= uint64_t{1} << (x & 63);
  }
}

// The (upper, lower) links into CSR by a counting sort on the upper ideal.
void links_to_csr(const std::vector<std::pair<int, int>>& links, IdealLattice& out) {
  const int count = static_cast<int>(out.parent.size());
  out.below_begin.assign(static_cast<std::size_t>(count) + 1, 0);
  for (auto [up, down] : links) ++out.below_begin[up + 1];
  for (int d = 0; d < count; ++d) out.below_begin[d + 1] += out.below_begin[d];
  out.below.resize(links.size());
  std::vector<int> fill(out.below_begin.begin(), out.below_begin.end() - 1);
  for (auto [up, down] : links) out.below[fill[up]++] = down;
}

}  // namespace

std::vector<int> IdealLattice::members(int ideal) const {
  std::vector<int> out;
  for (int d = ideal; parent[d] >= 0; d = parent[d]) out.push_back(added[d]);
  std::sort(out.begin(), out.end());
  return out;
}

IdealLattice build_ideal_lattice(int n, const std::vector<std::pair<int, int>>& edges, std::size_t max_ideals,
                                 int window) {
  const Adjacency g = adjacency_of(n, edges);
  const std::vector<uint64_t> zobrist = zobrist_keys(n);
  const int words = std::max(1, (n + 63) / 64);
  const int step = window > 1 ? window / 2 : 0;
  IdealLattice out;
  out.vertices = n;
  std::vector<std::pair<int, int>> links;  // (ideal, ideal below it), as found
  auto add_ideal = [&](int parent, int added, const std::vector<int>& closed) {
    out.parent.push_back(parent);
    out.added.push_back(added);
    out.closed_begin.push_back(static_cast<int>(out.closed.size()));
    out.closed.insert(out.closed.end(), closed.begin(), closed.end());
  };
  // Per ideal of a level: its members and its addable vertices (bitsets), the first
  // vertex it lacks and its largest vertex.
  struct Extra {
    std::vector<uint64_t> addable;
    std::vector<int> first_missing, largest;
  };
  Level level(words);
  Extra extra;
  std::vector<uint64_t> set(static_cast<std::size_t>(words), 0), can = sources(g, words);
  bool fresh = false;
  level.find_or_add(set.data(), 0, fresh);
  extra.addable = can;
  extra.first_missing = {0};
  extra.largest = {-1};
  add_ideal(-1, -1, {});
  std::vector<int> closed;
  int level_first = 0;  // global index of level's ideal 0
  for (int size = 0; size < n; ++size) {
    Level next(words);
    Extra next_extra;
    const int next_first = level_first + level.count();
    for (int i = 0; i < level.count(); ++i) {
      const uint64_t* d = level.bits(i);
      const uint64_t* add = &extra.addable[static_cast<std::size_t>(i) * words];
      for (int w = 0; w < words; ++w) {
        for (uint64_t bits = add[w]; bits; bits &= bits - 1) {
          const int v = w * 64 + __builtin_ctzll(bits);
          int first_missing = extra.first_missing[i];
          if (v == first_missing) {
            do ++first_missing;
            while (first_missing < n && has(d, first_missing));
          }
          const int largest = std::max(extra.largest[i], v);
          // A window keeps the ideals between two prefixes `window` apart.
          if (step > 0 && largest >= (first_missing / step) * step + window) continue;
          std::copy(d, d + words, set.begin());
          set[v >> 6] |= uint64_t{1} << (v & 63);
          const int k = next.find_or_add(set.data(), level.hash(i) ^ zobrist[v], fresh);
          if (fresh) {
            if (out.parent.size() >= max_ideals) return IdealLattice{n, false, false, {}, {}, {}, {}, {}, {}};
            closed_by(g, v, d, closed);
            add_ideal(level_first + i, v, closed);
            addable_after(g, v, add, set.data(), words, can);
            next_extra.addable.insert(next_extra.addable.end(), can.begin(), can.end());
            next_extra.first_missing.push_back(first_missing);
            next_extra.largest.push_back(largest);
          }
          links.emplace_back(next_first + k, level_first + i);
        }
      }
    }
    level_first = next_first;
    level = std::move(next);
    extra = std::move(next_extra);
  }
  out.closed_begin.push_back(static_cast<int>(out.closed.size()));  // sentinel
  links_to_csr(links, out);
  out.complete = true;
  out.all_ideals = step == 0 || window > n;
  return out;
}

}  // namespace pipescope
