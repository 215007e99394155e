// A deterministic event queue: events are ordered by (time, insertion sequence), so
// two events at the same integer-nanosecond time pop in the order they were pushed
// and the same input always replays the same way. No global state: each simulation
// owns its queue.
//   EventQueue<MyEvent> q;  q.push(10, e);  while (!q.empty()) { auto [t, e] = q.pop(); }
#pragma once

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

namespace pipescope {

template <typename Payload>
class EventQueue {
 public:
  void push(int64_t time, const Payload& payload) { heap_.push(Entry{time, next_seq_++, payload}); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  std::pair<int64_t, Payload> pop() {
    Entry e = heap_.top();
    heap_.pop();
    return {e.time, e.payload};
  }
  void reserve(std::size_t n) {
    std::vector<Entry> storage;
    storage.reserve(n);
    heap_ = Heap(Later{}, std::move(storage));
  }

 private:
  struct Entry {
    int64_t time;
    uint64_t seq;
    Payload payload;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  using Heap = std::priority_queue<Entry, std::vector<Entry>, Later>;
  Heap heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace pipescope
