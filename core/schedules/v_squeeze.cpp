// The squeeze-and-fill pass (see v_squeeze.h). Time is in unit steps: an op started at t
// ends at t + 1, so every decision at t reads only ends at or before t and the positions
// may decide in any order. A position decides: at its cap, its oldest ready W (it frees
// what the next F needs: the steady state's F I W); else the first ready F or I in the
// block's order (an F only under the cap: the squeeze, and the warm-up's extra F); else
// its oldest ready W (W fills what would be a bubble: the cool-down).
#include "core/schedules/v_squeeze.h"

#include <deque>
#include <limits>

#include "core/error.h"

namespace pipescope {

namespace {

constexpr int64_t kNotYet = std::numeric_limits<int64_t>::max();

class Squeeze {
 public:
  Squeeze(const Schedule& block, int max_alive)
      : S_(static_cast<int>(block.stage_position.size())), M_(block.num_microbatches), cap_(max_alive) {
    const int K = block.positions();
    order_.resize(K);
    started_.resize(K);
    first_.assign(K, 0);
    alive_.assign(K, 0);
    pending_w_.resize(K);
    for (int d = 0; d < K; ++d) {
      for (const Op& op : block.position_ops[d]) {
        if (op.kind == OpKind::Forward || op.kind == OpKind::BackwardInput) {
          order_[d].push_back(op);
        } else if (op.kind != OpKind::BackwardWeight) {
          throw InputError("squeeze: " + block.name + " holds a " + to_string(op.kind) +
                           " op; the pass takes split backward (F, I, W) only");
        }
        ++left_;
      }
      started_[d].assign(order_[d].size(), 0);
    }
    const auto table = std::vector<int64_t>(static_cast<std::size_t>(S_) * M_, kNotYet);
    f_end_ = i_end_ = table;
  }

  std::vector<std::vector<Op>> run() {
    const int K = static_cast<int>(order_.size());
    std::vector<std::vector<Op>> out(K);
    for (int64_t t = 0; left_ > 0; ++t) {
      bool moved = false;
      for (int d = 0; d < K; ++d) {
        Op op{};
        if (pick(d, t, /*over_cap=*/false, op)) {
          start(d, t, op, out[d]);
          moved = true;
        }
      }
      // Nothing starts at t (every op started before has ended by t, so nothing ever
      // would): the block's own order needs more than the cap; the first position with a
      // ready F takes it past the cap.
      for (int d = 0; !moved && d < K; ++d) {
        Op op{};
        if (pick(d, t, /*over_cap=*/true, op)) {
          start(d, t, op, out[d]);
          moved = true;
        }
      }
      if (!moved) throw InputError("squeeze: the block's order cannot finish (an op waits on itself)");
    }
    return out;
  }

 private:
  std::size_t at(int s, int m) const { return static_cast<std::size_t>(s) * M_ + m; }

  bool ready(const Op& op, int64_t t) const {
    const int s = op.stage, m = op.microbatch;
    if (op.kind == OpKind::Forward) return s == 0 || f_end_[at(s - 1, m)] <= t;
    return f_end_[at(s, m)] <= t && (s == S_ - 1 || i_end_[at(s + 1, m)] <= t);
  }

  bool pick(int d, int64_t t, bool over_cap, Op& op) {
    const std::vector<Op>& order = order_[d];
    while (first_[d] < order.size() && started_[d][first_[d]]) ++first_[d];
    const bool w_ready = !pending_w_[d].empty() && pending_w_[d].front().second <= t;
    // At the cap a ready W goes first: it frees the stash the next F needs.
    if (!over_cap && w_ready && alive_[d] >= cap_) return take_weight(d, op);
    for (std::size_t k = first_[d]; k < order.size(); ++k) {
      if (started_[d][k] || !ready(order[k], t)) continue;
      if (order[k].kind == OpKind::Forward && alive_[d] >= cap_ && !over_cap) continue;
      started_[d][k] = 1;
      op = order[k];
      return true;
    }
    return !over_cap && w_ready && take_weight(d, op);
  }

  bool take_weight(int d, Op& op) {
    op = pending_w_[d].front().first;
    pending_w_[d].pop_front();
    return true;
  }
  void start(int d, int64_t t, const Op& op, std::vector<Op>& out) {
    out.push_back(op);
    --left_;
    const std::size_t i = at(op.stage, op.microbatch);
    switch (op.kind) {
      case OpKind::Forward:
        f_end_[i] = t + 1;
        ++alive_[d];
        break;
      case OpKind::BackwardInput:
        i_end_[i] = t + 1;
        pending_w_[d].push_back({{OpKind::BackwardWeight, op.stage, op.microbatch}, t + 1});
        break;
      default:
        --alive_[d];  // freed at W's end, t + 1: no decision at t reads it
        break;
    }
  }

  const int S_, M_, cap_;
  std::vector<std::vector<Op>> order_;         // per position: its F and I, block order
  std::vector<std::vector<char>> started_;     // per position, per order_ entry
  std::vector<std::size_t> first_;             // per position: first entry not started
  std::vector<int> alive_;                     // per position: stashes held (F started, W not ended)
  std::vector<std::deque<std::pair<Op, int64_t>>> pending_w_;  // per position: (W, when its I ends)
  std::vector<int64_t> f_end_, i_end_;
  int64_t left_ = 0;
};

}  // namespace

Schedule squeeze_v_block(const Schedule& block, int max_alive) {
  Schedule s = block;
  s.position_ops = Squeeze(block, max_alive).run();
  return s;
}

}  // namespace pipescope
