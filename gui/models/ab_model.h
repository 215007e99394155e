// A/B: the pinned plan (A) against the plan shown now (B), row by row: step time,
// throughput, bubble fraction, then the peak memory of each stage; columns A, B,
// B - A and (B - A) / A. A stage only one plan has shows "-" on the other side and
// no difference. RawRole carries the numbers as the reports have them (ns,
// samples/s, fraction, bytes; the difference in the same unit) for tests. Two version 3
// plans' jobs (set_jobs) compare their whole steps (evaluate_job's, data-parallel tail and
// ZeRO traffic included), MFU, bubble and each pipeline rank's memory per GPU, all kinds,
// the numbers `simulate --plan` prints, not the pipeline part the timelines draw.
//   AbModel m; m.set_reports(pinned.report, current.report);
#pragma once

#include <QAbstractTableModel>
#include <optional>
#include <vector>

#include "core/report.h"
#include "gui/models/job_model.h"

namespace pipescope::gui {

class AbModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Row { StepTime, Throughput, Bubble, FirstStage };  // FirstStage + s: stage s's peak
  enum Column { Metric, A, B, Delta, Relative, ColumnCount };
  enum Role { RawRole = Qt::UserRole + 1 };

  using QAbstractTableModel::QAbstractTableModel;
  void set_reports(const StepReport& a, const StepReport& b);
  void set_jobs(const JobEvaluation& a, const JobEvaluation& b);
  void clear();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // "1f1b K=4 M=8 (micro-batch 2): 12.345 ms" - how the view names each side.
  static QString describe(const StepReport& report);
  // "t 4 sp cp 4 ... (interleaved): 33415.863 ms" - a job's layout and whole step.
  static QString describe(const JobEvaluation& job);

 private:
  enum class Unit { Ms, Samples, Percent, GiB };
  struct Line {
    QString name;
    Unit unit;
    std::optional<double> a, b;  // raw values
  };
  QString format(double raw, Unit unit) const;
  std::vector<Line> lines_;
};

}  // namespace pipescope::gui
