// Every candidate of the planner's search as a table, for the plans view's scatter
// of throughput against peak memory per device. Unfiltered, its rows are
// `pipescope sweep`'s rows in the same order and ParetoRole marks the rows sweep
// marks; filters (schedule, K, re-materialisation) hide rows but never change the
// front, which is the search's own over all fitting candidates. Candidates the search
// gave activation offload (memory bound them: planner/candidate_evaluation.h's
// consider_offload) say so (OffloadRole) and keep the point they had without it
// (without_offload), which the view joins to theirs: what the offload saved and cost.
//   PlansModel m; m.set_result(search_plans(plans_request(inputs)), batch);
//   m.set_schedule_filter("1f1b"); const Candidate& c = m.candidate(row);
#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <optional>
#include <vector>

#include "gui/models/plot_scale.h"
#include "planner/search.h"

namespace pipescope::gui {

class PlansModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Label, StepMs, Throughput, PeakGiB, Bubble, Fits, Pareto, Rank, ColumnCount };
  enum Role {
    CandidateRole = Qt::UserRole + 1, ThroughputRole, PeakBytesRole, FitsRole, ParetoRole, ScheduleRole,
    OffloadRole,  // "none", "selective", "all": the plan's activation offload
  };
  // Where a candidate the search gave offload sat without it.
  struct Point {
    int64_t peak_bytes = 0;
    double throughput_samples_per_s = 0;
  };
  enum class Recompute { Any, On, Off };

  using QAbstractTableModel::QAbstractTableModel;
  void set_result(std::shared_ptr<const SearchResult> result, int64_t batch);
  void clear();
  const SearchResult* result() const { return result_.get(); }
  int64_t batch() const { return batch_; }

  // "" = every schedule; 0 = every K.
  void set_schedule_filter(const QString& schedule);
  void set_stages_filter(int stages);
  void set_recompute_filter(Recompute recompute);
  // The K values the search spans, ascending (for the K filter).
  std::vector<int> stage_values() const;

  const Candidate& candidate(int row) const { return result_->candidates[rows_[row]]; }
  // The row's point without offload, when the search took offload for it (else none).
  std::optional<Point> without_offload(int row) const;
  // Candidates on the Pareto front, peak memory ascending (the line the view draws).
  std::vector<int> front() const;
  // Throughput and peak-memory ranges over every candidate (filters keep the axes still).
  double max_throughput() const;
  int64_t max_peak_bytes() const;  // over the candidates (not the device memory)
  MemoryAxis memory_axis() const;   // plot_scale.h's, for the candidates and the device memory

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  void refilter();
  bool visible(const Candidate& c) const;

  std::shared_ptr<const SearchResult> result_;
  int64_t batch_ = 0;
  std::vector<int> rows_;  // indices into result_->candidates, enumeration order
  QString schedule_;
  int stages_ = 0;
  Recompute recompute_ = Recompute::Any;
};

}  // namespace pipescope::gui
