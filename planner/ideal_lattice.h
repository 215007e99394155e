// The downsets (ideals) of a DAG: every vertex set closed under predecessors, from the
// empty set to all vertices. Invariant: ideals are numbered by size (a subset always has
// a smaller number), so one forward sweep visits every ideal after all of its subsets;
// `below` lists, for each ideal D, the ideals D \ {x} for every maximal x of D (the cover
// relation), and parent/added give one such link to rebuild sums and member lists.
//   IdealLattice lattice = build_ideal_lattice(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}, 1 << 20);
//   // 6 ideals: {}, {0}, {0,1}, {0,2}, {0,1,2}, {0,1,2,3}
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace pipescope {

struct IdealLattice {
  int vertices = 0;
  bool complete = false;           // false: more than the cap; the fields below are empty
  bool all_ideals = false;         // every downset (no window, or a window wider than the graph)
  std::vector<int> parent;         // per ideal: D \ {added}, -1 for the empty ideal
  std::vector<int> added;          // per ideal: the vertex that parent lacks
  std::vector<int> below_begin;    // CSR: below[below_begin[D] .. below_begin[D + 1])
  std::vector<int> below;          // D \ {x} for every maximal x of D
  // Vertices whose every successor lies in D but not in parent(D), other than `added`
  // itself: what leaves the cut when `added` joins (closed[closed_begin[D] ..
  // closed_begin[D + 1]); closed_begin has one entry more than there are ideals).
  std::vector<int> closed_begin;
  std::vector<int> closed;

  int size() const { return static_cast<int>(parent.size()); }
  int full() const { return size() - 1; }  // all vertices (the largest ideal)
  std::vector<int> members(int ideal) const;
};

// `edges` are [from, to] with from < to (vertices in a topological order). Stops and
// returns complete = false once more than `max_ideals` ideals exist. With window w > 1
// only the ideals D with prefix(k h) <= D <= prefix(k h + w) for some k (h = w / 2,
// prefix(i) = vertices [0, i)) are kept: every prefix, every downset near one, and still
// every kept D' <= D joined by kept cover links (docs/planner.md), so the search over
// them is exact for them; window 0 keeps all ideals.
IdealLattice build_ideal_lattice(int vertices, const std::vector<std::pair<int, int>>& edges,
                                 std::size_t max_ideals, int window = 0);

}  // namespace pipescope
