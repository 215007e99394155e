// The real copies of one worker's activation offload (exec/runtime/stage_offload.h).
#include "exec/runtime/stage_offload.h"

#include <algorithm>

#include "core/error.h"
#include "core/invariant.h"

namespace pipescope::exec {

namespace {

void add_buffer(const Tensor& t, std::vector<Buffer*>& out) {
  Buffer* b = t.buffer.get();
  if (!b || b->category() != Category::Activations) return;
  if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
}

void add_stash(const LayerStash& st, std::vector<Buffer*>& out) {
  for (const Tensor& t : st.saved) add_buffer(t, out);
  for (const LayerStash& c : st.children) add_stash(c, out);
}

}  // namespace

std::vector<Buffer*> stash_buffers(const Tensor& input, const std::vector<LayerStash>& stashes) {
  std::vector<Buffer*> out;
  add_buffer(input, out);
  for (const LayerStash& st : stashes) add_stash(st, out);
  return out;
}

StageOffload::StageOffload(const Schedule& s, const OffloadRun& run, int position, StashOf stash_of)
    : s_(s), run_(run), position_(position), first_op_([&] {
        std::vector<std::size_t> f(static_cast<std::size_t>(s.positions()) + 1, 0);
        for (int d = 0; d < s.positions(); ++d) f[d + 1] = f[d] + s.position_ops[d].size();
        return f;
      }()),
      first_(first_op_[static_cast<std::size_t>(position)]), stash_of_(std::move(stash_of)) {
  const std::size_t slots = static_cast<std::size_t>(s.stages()) * s.microbatches();
  if (run.slot_bytes.size() != slots) {
    throw InputError("offload: expected one byte count per (stage, micro-batch) slot, " + std::to_string(slots) +
                     ", got " + std::to_string(run.slot_bytes.size()));
  }
  pieces_.resize(slots);
  piece_bytes_.assign(slots, 0);
}

void StageOffload::start_step() {
  for (std::vector<Piece>& p : pieces_) p.clear();
  std::fill(piece_bytes_.begin(), piece_bytes_.end(), 0);
  pool_.clear();
  walk_.reset();
  recorder_.reset();
  timeline_ = Timeline{};
  recorder_.emplace(timeline_, s_.positions());
  walk_.emplace(s_, run_.link, run_.slot_bytes, first_op_, static_cast<StashMoves&>(*this), &*recorder_);
}

// Copies the slot's first `bytes` of stash to the host; its device bytes stay until release.
void StageOffload::offload(int, std::size_t slot, int64_t bytes, int64_t on_host_ns) {
  const int M = s_.microbatches();
  std::vector<Piece>& pieces = pieces_[slot];
  int64_t copied = 0;
  for (Buffer* b : stash_of_(static_cast<int>(slot / M), static_cast<int>(slot % M))) {
    if (copied == bytes) break;
    const int64_t element = b->backend().element_bytes();
    const int64_t floats = std::min(b->floats(), (bytes - copied) / element);
    if (floats == 0) break;
    Piece p{b, std::vector<float>(static_cast<std::size_t>(floats))};
    b->backend().download(p.host.data(), b->data(), floats);
    pieces.push_back(std::move(p));
    copied += floats * element;
  }
  if (copied != bytes) {
    throw RunError("offload: stage " + std::to_string(slot / M) + " micro-batch " + std::to_string(slot % M) +
                   " was to send " + std::to_string(bytes) + " bytes of its stash to the host, but its stash holds " +
                   std::to_string(copied) + " in whole elements");
  }
  piece_bytes_[slot] = copied;
  pool_.arrive(copied, on_host_ns);
}

void StageOffload::release(int, std::size_t slot, int64_t bytes, int64_t) {
  PS_INVARIANT(bytes == piece_bytes_[slot], "the walk released other bytes than the offload copied");
  for (Piece& p : pieces_[slot]) p.buffer->evict(static_cast<int64_t>(p.host.size()));
}

void StageOffload::reload(int, std::size_t slot, int64_t bytes, int64_t, int64_t back_ns) {
  if (bytes > 0) {
    for (Piece& p : pieces_[slot]) p.buffer->restore(p.host);
  }
  pool_.leave(piece_bytes_[slot], back_ns);
  pieces_[slot].clear();
}

void StageOffload::finish_step(StepRecord& record) {
  for (const TimelineEvent& e : timeline_.events) {
    record.host_transfers.push_back(
        {e.category == "offload", e.stage, e.microbatch, e.start_ns, e.start_ns + e.duration_ns});
  }
  record.host_memory = pool_.series();
  record.host_peak_bytes = pool_.peak();
  record.offloaded_bytes = pool_.sent();
  record.offload_delay_ns = walk_->delay(position_);
}

}  // namespace pipescope::exec
