// The squeeze-and-fill pass that takes a V-shape building-block repetition (v_shape.cpp)
// to its compact order: the second and third steps of Qi et al., "Pipeline Parallelism
// with Controllable Memory" (NeurIPS 2024, section 3: repeat the block, squeeze it, then
// reorder warm-up and cool-down greedily; the sail-sg zero-bubble-pipeline-parallelism
// repository's v_schedule.py does the same with its squeeze_without_change_order and a
// greedy reorder; code our own). It plays the schedule with unit ops and free hops:
// whenever a position is idle it starts the first F or I, in the block's order, whose
// inputs are done (an F only while the position holds fewer than `max_alive` stashes,
// counted from F's start to W's end), else its oldest pending W.
// Invariant: the result holds exactly the block's ops, each position's order is the
// order in which the play started them, so every op comes after what it needs in a
// single global order and the schedule never deadlocks whatever the op times. When no
// position can start anything under the cap, one F goes past it (the play never stops);
// with V-ZB's order and cap 2K that never happens (tests/zero_bubble: the peak stays K),
// with v-half's or v-min's own caps it does, so the pass is applied to v-zb only.
//   Schedule s = squeeze_v_block(block, 2 * K);  // V-ZB: K whole micro-batches per position
#pragma once

#include "core/schedule.h"

namespace pipescope {

// `block`: split backward (F, I, W; no B, no R), one stash per (stage, micro-batch).
// max_alive: per position, in chunk stashes (a V's chunk holds half a whole stage's).
Schedule squeeze_v_block(const Schedule& block, int max_alive);

}  // namespace pipescope
