// Mailboxes, a barrier and all-reduce groups under one mutex. Invariant: every wait also
// ends when any worker reported a failure (failed_) or at its deadline, so no thread
// outlives a failed run waiting.
#include "exec/transport/thread_transport.h"

#include "core/error.h"

namespace pipescope::exec {

std::string MessageKey::describe() const {
  return std::string(kind == MessageKind::Activation ? "activation" : "gradient") + " for stage " +
         std::to_string(stage) + ", micro-batch " + std::to_string(microbatch);
}

void Endpoint::allreduce_sum(std::vector<float>&, const std::vector<int>&, Clock::time_point) {
  throw RunError("this transport cannot all-reduce the gradients of replicated stages");
}

void Endpoint::post_validation(int, double, bool) {
  throw RunError("this transport cannot run post-validation's global gradient check (use --transport threads)");
}

Endpoint::Validation Endpoint::await_validation(int, Clock::time_point) {
  throw RunError("this transport cannot run post-validation's global gradient check (use --transport threads)");
}

namespace {
std::string describe_group(const std::vector<int>& group) {
  std::string out;
  for (int d : group) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "the gradient all-reduce of devices " + out;
}
}  // namespace

class ThreadEndpoint : public Endpoint {
 public:
  ThreadEndpoint(ThreadHub& hub, int device) : hub_(hub), device_(device) {}
  int device() const override { return device_; }
  int positions() const override { return hub_.devices_; }

  void send(int to, const MessageKey& key, const Tensor& t) override {
    ThreadHub::Message m{t.rows, t.cols, t.to_host()};
    std::lock_guard<std::mutex> lock(hub_.mu_);
    hub_.boxes_.at(to).messages[key].push_back(std::move(m));
    hub_.events_.fetch_add(1, std::memory_order_release);
    hub_.cv_.notify_all();
  }

  Tensor recv(int from, const MessageKey& key, int64_t rows, int64_t cols, Context ctx,
              Clock::time_point deadline) override {
    ThreadHub::Message m;
    {
      std::unique_lock<std::mutex> lock(hub_.mu_);
      auto& box = hub_.boxes_[device_].messages;
      auto ready = [&] {
        if (hub_.failed_) return true;
        auto it = box.find(key);
        return it != box.end() && !it->second.empty();
      };
      hub_.spin_until(lock, deadline, ready);
      if (!hub_.cv_.wait_until(lock, deadline, ready)) {
        throw RunError("device " + std::to_string(device_) + " timed out waiting for the " +
                       key.describe() + " from device " + std::to_string(from));
      }
      if (hub_.failed_) {
        lock.unlock();
        hub_.throw_stopped(device_, "the " + key.describe());
      }
      auto it = box.find(key);
      m = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) box.erase(it);
    }
    if (m.rows != rows || m.cols != cols) {
      throw RunError("device " + std::to_string(device_) + " received [" + std::to_string(m.rows) +
                     ", " + std::to_string(m.cols) + "] as the " + key.describe() + ", expected [" +
                     std::to_string(rows) + ", " + std::to_string(cols) + "]");
    }
    return Tensor::from_host(ctx, rows, cols, m.data);
  }

  void barrier(Clock::time_point deadline, const std::string& where) override {
    std::unique_lock<std::mutex> lock(hub_.mu_);
    const int64_t generation = hub_.barrier_generation_;
    if (++hub_.barrier_count_ == hub_.devices_) {
      hub_.barrier_count_ = 0;
      ++hub_.barrier_generation_;
      hub_.events_.fetch_add(1, std::memory_order_release);
      hub_.cv_.notify_all();
      return;
    }
    auto done = [&] { return hub_.failed_ || hub_.barrier_generation_ != generation; };
    hub_.spin_until(lock, deadline, done);
    if (!hub_.cv_.wait_until(lock, deadline, done)) {
      throw RunError("device " + std::to_string(device_) + " timed out at " + where);
    }
    if (hub_.barrier_generation_ == generation) {
      lock.unlock();
      hub_.throw_stopped(device_, where);
    }
  }

  void allreduce_sum(std::vector<float>& data, const std::vector<int>& group, Clock::time_point deadline) override {
    std::size_t me = 0;
    while (me < group.size() && group[me] != device_) ++me;
    if (me == group.size()) throw RunError("device " + std::to_string(device_) + " is not in " + describe_group(group));
    std::unique_lock<std::mutex> lock(hub_.mu_);
    ThreadHub::ReduceGroup& g = hub_.groups_[group.front()];
    g.parts.resize(group.size());
    g.parts[me].assign(data.begin(), data.end());  // copies into last step's buffer: no new pages
    const int64_t generation = g.generation;
    if (++g.arrived == static_cast<int>(group.size())) {
      // Summed once, in member order: every member gets the same bits.
      g.arrived = 0;
      g.sum.assign(g.parts[0].begin(), g.parts[0].end());
      for (std::size_t i = 1; i < g.parts.size(); ++i) {
        if (g.parts[i].size() != g.sum.size()) throw RunError(describe_group(group) + ": parts differ in size");
        for (std::size_t k = 0; k < g.sum.size(); ++k) g.sum[k] += g.parts[i][k];
      }
      ++g.generation;
      hub_.events_.fetch_add(1, std::memory_order_release);
      hub_.cv_.notify_all();
      data.assign(g.sum.begin(), g.sum.end());
      return;
    }
    auto done = [&] { return hub_.failed_ || g.generation != generation; };
    hub_.spin_until(lock, deadline, done);
    if (!hub_.cv_.wait_until(lock, deadline, done)) {
      throw RunError("device " + std::to_string(device_) + " timed out waiting for " + describe_group(group));
    }
    if (g.generation == generation) {
      lock.unlock();
      hub_.throw_stopped(device_, describe_group(group));
    }
    data.assign(g.sum.begin(), g.sum.end());
  }

  void post_validation(int seq, double norm_sq, bool finite) override {
    std::lock_guard<std::mutex> lock(hub_.mu_);
    ThreadHub::ValidationSlot& v = hub_.validations_[seq];
    v.norm_sq.resize(hub_.devices_, 0.0);
    v.finite.resize(hub_.devices_, 1);
    v.norm_sq[device_] = norm_sq;
    v.finite[device_] = finite ? 1 : 0;
    if (++v.posted == hub_.devices_) {
      hub_.events_.fetch_add(1, std::memory_order_release);
      hub_.cv_.notify_all();
    }
  }

  Validation await_validation(int seq, Clock::time_point deadline) override {
    std::unique_lock<std::mutex> lock(hub_.mu_);
    ThreadHub::ValidationSlot& v = hub_.validations_[seq];
    auto done = [&] { return hub_.failed_ || v.posted == hub_.devices_; };
    const std::string what = "the global gradient check of post-validation (check " + std::to_string(seq) + ")";
    hub_.spin_until(lock, deadline, done);
    if (!hub_.cv_.wait_until(lock, deadline, done)) {
      throw RunError("device " + std::to_string(device_) + " timed out waiting for " + what);
    }
    if (v.posted != hub_.devices_) {
      lock.unlock();
      hub_.throw_stopped(device_, what);
    }
    Validation out;
    for (int d = 0; d < hub_.devices_; ++d) out.norm_sq += v.norm_sq[d], out.finite = out.finite && v.finite[d];
    return out;
  }

  void flush(Clock::time_point) override {}  // sends copy synchronously

  void report_failure(const std::string& message) override { hub_.fail(message); }

 private:
  ThreadHub& hub_;
  int device_;
};

ThreadHub::ThreadHub(int devices, bool spin) : devices_(devices), boxes_(devices), spin_(spin) {
  for (int d = 0; d < devices; ++d) endpoints_.push_back(std::make_unique<ThreadEndpoint>(*this, d));
}

ThreadHub::~ThreadHub() = default;

Endpoint& ThreadHub::endpoint(int device) { return *endpoints_.at(device); }

std::string ThreadHub::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void ThreadHub::fail(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_) {
    failed_ = true;
    failure_ = message;
  }
  events_.fetch_add(1, std::memory_order_release);
  cv_.notify_all();
}

void ThreadHub::throw_stopped(int device, const std::string& waiting_for) {
  throw RunError("device " + std::to_string(device) + " stopped while waiting for " + waiting_for +
                 " because " + failure());
}

}  // namespace pipescope::exec
