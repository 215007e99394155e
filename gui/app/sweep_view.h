// The K x M sweep tab: a heat map of throughput (rows K, columns M) for the chosen
// schedule, cells that do not fit crossed out, impossible plans greyed, the best
// cell framed and starred. Run/Cancel buttons and a progress bar drive a
// SweepWorker owned by the main window; clicking a cell asks to load that plan.
#pragma once

#include <QWidget>

class QCheckBox;
class QLabel;
class QProgressBar;
class QPushButton;

namespace pipescope::gui {

class SweepModel;

class SweepHeatMap : public QWidget {
  Q_OBJECT
 public:
  explicit SweepHeatMap(QWidget* parent = nullptr);
  void set_model(const SweepModel* model);
  QRect cell_rect(int row, int column) const;
  QSize sizeHint() const override { return {800, 500}; }

 signals:
  void cellClicked(int stages, int microbatches);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(class QMouseEvent*) override;
  void mouseMoveEvent(class QMouseEvent*) override;

 private:
  const SweepModel* model_ = nullptr;
};

class SweepView : public QWidget {
  Q_OBJECT
 public:
  explicit SweepView(QWidget* parent = nullptr);
  void set_model(const SweepModel* model);
  SweepHeatMap* heat_map() const { return map_; }
  void set_running(bool running);
  void set_progress(int done, int total);
  void set_message(const QString& message);
  // On: `pipescope plan`'s grid (mini-batch and devices fixed); off: K x M at the
  // current micro-batch size.
  bool planner_grid() const;
  void set_planner_grid(bool on);

 signals:
  void runRequested();
  void cancelRequested();
  void cellClicked(int stages, int microbatches);

 private:
  SweepHeatMap* map_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* message_;
  QCheckBox* planner_grid_;
};

}  // namespace pipescope::gui
