// In-process transport: one mailbox per device, guarded by a mutex and a condition
// variable. A send copies the tensor into the receiver's mailbox; a failure reported by
// any worker wakes every waiter, which then throws RunError with that failure.
//   ThreadHub hub(K);  // then worker d uses hub.endpoint(d) on its own thread
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "exec/transport.h"

namespace pipescope::exec {

class ThreadHub : public Hub {
 public:
  explicit ThreadHub(int devices);
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
  void fail(const std::string& message);
  [[noreturn]] void throw_stopped(int device, const std::string& waiting_for);

  const int devices_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<Mailbox> boxes_;
  std::string failure_;
  bool failed_ = false;
  int barrier_count_ = 0;
  int64_t barrier_generation_ = 0;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

}  // namespace pipescope::exec
