// MPI endpoint and runner; rank = worker (replica rank % r of position rank / r).
// Invariant: every request this rank starts is completed, cancelled or left to
// MPI_Abort. A send goes out of a host copy owned by the endpoint (pending_) until it
// completes, so the worker may free or reuse its tensor at once and may even be
// destroyed before the endpoint.
#include "exec/transport/mpi_runner.h"

#include <mpi.h>

#include <exception>
#include <memory>
#include <thread>

#include "core/error.h"
#include "exec/runtime/replica_layout.h"
#include "exec/runtime/stage_worker.h"

namespace pipescope::exec {

namespace {

constexpr int kFailureTag = 0;

// Ranks of this job on this machine (they share its cores).
int local_ranks() {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int n = 1;
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return n;
}

class MpiEndpoint : public Endpoint {
 public:
  // replicas: ranks r p .. r p + r - 1 form position p's all-reduce communicator.
  MpiEndpoint(int stages, int microbatches, int replicas, bool spin)
      : stages_(stages), microbatches_(microbatches), spin_(spin) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_split(MPI_COMM_WORLD, rank_ / replicas, rank_ % replicas, &replicas_comm_);
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    const int64_t needed = 1 + 2LL * stages * microbatches;
    if (found && needed > *ub) {
      throw InputError("--transport mpi: " + std::to_string(stages) + " stages x " + std::to_string(microbatches) +
                       " micro-batches need more message tags than this MPI offers (" + std::to_string(*ub) + ")");
    }
  }
  ~MpiEndpoint() override {
    for (auto& p : pending_) {
      MPI_Cancel(&p.first);
      MPI_Request_free(&p.first);
    }
    // Freeing a communicator is collective: not while a failure unwinds (MPI_Abort follows).
    if (std::uncaught_exceptions() == 0) MPI_Comm_free(&replicas_comm_);
  }
  MpiEndpoint(const MpiEndpoint&) = delete;
  MpiEndpoint& operator=(const MpiEndpoint&) = delete;

  int device() const override { return rank_; }
  int positions() const override { return size_; }

  void send(int to, const MessageKey& key, const Tensor& t) override {
    auto copy = std::make_unique<std::vector<float>>(t.to_host());
    MPI_Request req;
    MPI_Isend(copy->data(), static_cast<int>(copy->size()), MPI_FLOAT, to, tag(key), MPI_COMM_WORLD, &req);
    pending_.emplace_back(req, std::move(copy));
    reap();
  }

  Tensor recv(int from, const MessageKey& key, int64_t rows, int64_t cols, Context ctx,
              Clock::time_point deadline) override {
    Tensor t = Tensor::empty(ctx, rows, cols);
    MPI_Request req;
    MPI_Irecv(t.data(), static_cast<int>(t.numel()), MPI_FLOAT, from, tag(key), MPI_COMM_WORLD, &req);
    wait(req, deadline, "the " + key.describe() + " from device " + std::to_string(from));
    return t;
  }

  void barrier(Clock::time_point deadline, const std::string& where) override {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait(req, deadline, where);
  }

  // MPI_Iallreduce polled like a receive (a blocking MPI_Allreduce could not see a
  // failure notice); the group is this rank's replicas communicator.
  void allreduce_sum(std::vector<float>& data, const std::vector<int>& group, Clock::time_point deadline) override {
    int members = 0;
    MPI_Comm_size(replicas_comm_, &members);
    if (members != static_cast<int>(group.size())) {
      throw RunError("device " + std::to_string(rank_) + ": the all-reduce group has " + std::to_string(group.size()) +
                     " devices but the replicas communicator " + std::to_string(members));
    }
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, replicas_comm_, &req);
    wait(req, deadline, "the gradient all-reduce of the " + std::to_string(members) + " replicas of its stage");
  }

  void flush(Clock::time_point deadline) override {
    while (!pending_.empty()) {
      wait(pending_.front().first, deadline, "a send to complete");
      pending_.erase(pending_.begin());
    }
  }

  void report_failure(const std::string& message) override {
    failure_text_ = message;
    std::vector<MPI_Request> reqs;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request req;
      MPI_Isend(failure_text_.data(), static_cast<int>(failure_text_.size()), MPI_CHAR, r, kFailureTag,
                MPI_COMM_WORLD, &req);
      reqs.push_back(req);
    }
    // Give the notices a moment to leave; the job is aborted right after anyway.
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    for (MPI_Request& req : reqs) {
      int done = 0;
      while (!done && Clock::now() < until) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) std::this_thread::yield();
      }
    }
  }

 private:
  int tag(const MessageKey& k) const {
    return 1 + (static_cast<int>(k.kind) * stages_ + k.stage) * microbatches_ + k.microbatch;
  }

  void reap() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->first, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : it + 1;
    }
  }

  void check_failure_notice(const std::string& waiting_for) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, MPI_COMM_WORLD, &flag, &status);
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    std::string text(static_cast<std::size_t>(count), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kFailureTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    throw RunError("device " + std::to_string(rank_) + " stopped while waiting for " + waiting_for +
                   " because " + text);
  }

  // Polls: spins with yield for the first millisecond (short waits stay short), then,
  // unless spin_ (RunOptions::wait), sleeps 50 us between polls so that waiting ranks
  // leave the cores to working ones.
  void wait(MPI_Request& req, Clock::time_point deadline, const std::string& what) {
    const auto spin_until = Clock::now() + std::chrono::milliseconds(1);
    for (;;) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) return;
      check_failure_notice(what);
      const auto now = Clock::now();
      if (now > deadline) {
        throw RunError("device " + std::to_string(rank_) + " timed out waiting for " + what +
                       " (a stage may have died)");
      }
      if (spin_ || now < spin_until) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  int rank_ = 0, size_ = 1;
  int stages_, microbatches_;
  MPI_Comm replicas_comm_ = MPI_COMM_NULL;
  bool spin_;
  std::vector<std::pair<MPI_Request, std::unique_ptr<std::vector<float>>>> pending_;
  std::string failure_text_;
};

// Initialises MPI once per process; MPI_Finalize runs only after a run that succeeded
// (a failed run ends the job with MPI_Abort from main).
void ensure_initialized() {
  int init = 0;
  MPI_Initialized(&init);
  if (!init) MPI_Init(nullptr, nullptr);
}

std::vector<std::string> gather_strings(const std::string& mine, int rank, int size) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size), offsets(size);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = total;
      total += lens[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  }
  return out;
}

}  // namespace

bool mpi_available() { return true; }

bool mpi_active() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

RunResult run_mpi(const Profile& profile, const Plan& plan, const Schedule& schedule,
                  const RunOptions& options) {
  ensure_initialized();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const ReplicaLayout layout = replica_layout(plan);
  if (size != layout.workers()) {
    const std::string replicas =
        layout.replicas > 1 ? " x " + std::to_string(layout.replicas) + " replicas" : "";
    throw InputError("--transport mpi: started with " + std::to_string(size) + " rank(s) but the plan has " +
                     std::to_string(schedule.positions()) + " pipeline stages" + replicas + " (use mpirun -np " +
                     std::to_string(layout.workers()) + ")");
  }
  check_runnable(profile, plan, schedule, options);
  WorkerResult mine;
  const bool spin = options.spin_waits(local_ranks());
  {
    MpiEndpoint endpoint(schedule.stages(), schedule.microbatches(), layout.replicas, spin);
    // CUDA: tensors travel by NCCL, barriers and failure notices by MPI.
    std::unique_ptr<Endpoint> data = make_rank_endpoint(options.backend, endpoint, schedule, [](void* p, std::size_t n) {
      MPI_Bcast(p, static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
    });
    StageWorker worker(WorkerSetup{profile, plan, schedule, options, rank}, data ? *data : endpoint);
    mine = worker.run();
  }
  if (options.check_gradients) {
    mine.max_gradient_error = gradient_error(profile, plan, options.backend, mine.gradients);
    mine.gradients.clear();
  }
  std::vector<std::string> blobs = gather_strings(worker_result_to_json(mine).dump(), rank, size);
  RunResult r;
  r.is_root = rank == 0;
  if (r.is_root) {
    std::vector<WorkerResult> workers;
    for (const std::string& b : blobs) workers.push_back(worker_result_from_json(Json::parse(b)));
    r = merge_results(profile, plan, schedule, options, std::move(workers), spin);
    r.is_root = true;
  }
  MPI_Finalize();
  return r;
}

void abort_mpi_job(int code) {
  if (mpi_active()) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace pipescope::exec
