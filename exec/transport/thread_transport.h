// In-process transport: one mailbox per device, guarded by a mutex and a condition
// variable. A send copies the tensor into the receiver's mailbox; an all-reduce meets its
// group in a shared slot; a failure reported by any worker wakes every waiter, which then
// throws RunError with that failure.
//   ThreadHub hub(K);  // then worker d uses hub.endpoint(d) on its own thread
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "exec/transport/transport.h"

namespace pipescope::exec {

class ThreadHub : public Hub {
 public:
  // spin: waits poll instead of sleeping (RunOptions::wait).
  ThreadHub(int devices, bool spin);
  ~ThreadHub() override;
  Endpoint& endpoint(int device) override;
  // The first failure reported, or "" when none.
  std::string failure() const override;

 private:
  friend class ThreadEndpoint;
  struct Message {
    int64_t rows, cols;
    std::vector<float> data;
  };
  struct Mailbox {
    std::map<MessageKey, std::deque<Message>> messages;
  };
  // One all-reduce group (a stage's replicas): each member leaves its part; the last to
  // arrive sums the parts in member order into `sum` and starts the next generation.
  struct ReduceGroup {
    int arrived = 0;
    int64_t generation = 0;
    std::vector<std::vector<float>> parts;  // by member index
    std::vector<float> sum;
  };
  // One post-validation check: each device's part, by device.
  struct ValidationSlot {
    int posted = 0;
    std::vector<double> norm_sq;
    std::vector<uint8_t> finite;
  };
  void fail(const std::string& message);
  // With spinning on: polls `ready` (re-taking the lock only when an event happened)
  // until it holds or the deadline passes, so the waiting core never idles.
  template <class Ready>
  void spin_until(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Ready ready) {
    if (!spin_) return;
    while (!ready() && Clock::now() < deadline) {
      const uint64_t seen = events_.load(std::memory_order_acquire);
      lock.unlock();
      for (int i = 0; events_.load(std::memory_order_acquire) == seen; ++i) {
#if defined(__x86_64__)
        _mm_pause();
#endif
        // Now and then offer the core to any other runnable thread (another program, or
        // a worker of ours when the machine is busier than `auto` could see): on an
        // otherwise idle core the yield returns at once and the core stays warm.
        if ((i & 1023) == 1023) {  // every ~0.1 ms
          if (Clock::now() >= deadline) break;
          std::this_thread::yield();
        }
      }
      lock.lock();
    }
  }
  [[noreturn]] void throw_stopped(int device, const std::string& waiting_for);

  const int devices_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<Mailbox> boxes_;
  std::map<int, ReduceGroup> groups_;  // keyed by the group's first device
  std::map<int, ValidationSlot> validations_;  // by check sequence number
  std::string failure_;
  bool failed_ = false;
  int barrier_count_ = 0;
  int64_t barrier_generation_ = 0;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  const bool spin_;
  std::atomic<uint64_t> events_{0};  // bumped by every send, barrier or all-reduce release and failure
};

}  // namespace pipescope::exec
