// The summary panel's rows: step time, throughput, bubble fraction, then the peak
// memory of each stage (red when it does not fit the device). RawRole carries the
// number as the report has it (ns, samples/s, fraction, bytes) so tests compare
// against the simulator without parsing text. For a version 3 plan's job (set_job) the
// rows are its layout (job_layout_rows), then evaluate_job's step, throughput, bubble and
// MFU, then each pipeline rank's memory per GPU (GiB, 2^30 bytes; red over the GPU file's
// capacity).
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "core/report.h"

namespace pipescope::gui {

struct JobEvaluation;

class SummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Row { StepTime, Throughput, Bubble, FirstStage };  // FirstStage + d: stage d's peak
  enum Role { RawRole = Qt::UserRole + 1, FitsRole };

  using QAbstractTableModel::QAbstractTableModel;
  void set_report(const StepReport& report);
  void set_job(const JobEvaluation& job);
  // The row named `name` (column 0's text), -1 when there is none.
  int row_of(const QString& name) const;
  void clear();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Line {
    QString name, value;
    QVariant raw;
    bool fits = true;
  };
  std::vector<Line> lines_;
};

}  // namespace pipescope::gui
