// How the workers of a run map onto a plan whose pipeline positions are replicated:
// D = K x r workers; worker w runs replica w % r of position w / r, and replica i of a
// stage exchanges activations and gradients only with replica i of its neighbours.
// Invariant: every position has the same r and r divides the micro-batch size b; replica
// i takes samples [m b + i b/r, m b + (i+1) b/r) of micro-batch m.
//   ReplicaLayout l = replica_layout(plan);   // throws InputError when r is not uniform
//   int peer = l.worker(l.position(w) + 1, l.replica(w));
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan.h"

namespace pipescope::exec {

struct ReplicaLayout {
  int positions = 1;       // K
  int replicas = 1;        // r
  int64_t microbatch = 1;  // b, samples per micro-batch before replication

  int workers() const { return positions * replicas; }
  int worker(int position, int replica) const { return position * replicas + replica; }
  int position(int worker) const { return worker / replicas; }
  int replica(int worker) const { return worker % replicas; }
  int64_t rows_per_replica() const { return microbatch / replicas; }  // b / r samples
  int64_t first_sample(int microbatch_index, int replica) const {
    return microbatch_index * microbatch + replica * rows_per_replica();
  }
  // The workers that all-reduce their gradients with `worker` (itself included).
  std::vector<int> group_of(int worker) const;
};

// Throws InputError naming the stage when stages have different replica counts, when
// the batch does not split into integer micro-batches, or when r does not divide b.
ReplicaLayout replica_layout(const Plan& plan);

}  // namespace pipescope::exec
