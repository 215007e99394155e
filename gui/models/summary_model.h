// The summary panel's rows: step time, throughput, bubble fraction, then the peak
// memory of each stage (red when it does not fit the device). RawRole carries the
// number as the report has it (ns, samples/s, fraction, bytes) so tests compare
// against the simulator without parsing text.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "core/report.h"

namespace pipescope::gui {

class SummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Row { StepTime, Throughput, Bubble, FirstStage };  // FirstStage + d: stage d's peak
  enum Role { RawRole = Qt::UserRole + 1, FitsRole };

  using QAbstractTableModel::QAbstractTableModel;
  void set_report(const StepReport& report);
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
