// The A/B tab: pin the plan shown as A, change anything, and see A's and B's
// timelines one above the other on one time axis (same scale, zoom and pan linked,
// so equal times line up) over a table of differences (gui/models/ab_model.h).
// content() is what File > Export and the Export buttons write as one PNG or SVG.
#pragma once

#include <QWidget>

class QLabel;
class QTableView;

namespace pipescope::gui {

class AbModel;
class TimelineModel;
class TimelineView;

class AbView : public QWidget {
  Q_OBJECT
 public:
  explicit AbView(QWidget* parent = nullptr);
  void set_models(AbModel* deltas, const TimelineModel* a, const TimelineModel* b);
  void set_titles(const QString& a, const QString& b);
  void set_message(const QString& message);
  // Both timelines show [0, end_ns) of the longer step.
  void align(int64_t end_ns);
  QWidget* content() const { return content_; }
  TimelineView* view_a() const { return a_; }
  TimelineView* view_b() const { return b_; }

 signals:
  void pinRequested();
  void exportRequested(const QString& extension);

 private:
  QWidget* content_;
  TimelineView* a_;
  TimelineView* b_;
  QTableView* table_;
  QLabel* message_;
};

}  // namespace pipescope::gui
