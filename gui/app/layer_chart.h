// Bar chart of a per-layer quantity (a column of the LayerTableModel: F+B time,
// activation bytes, parameter bytes, ...), one bar per layer coloured by the model
// stage it belongs to, with dashed lines at stage boundaries and stage totals above.
#pragma once

#include <QWidget>

namespace pipescope::gui {

class LayerTableModel;

class LayerChart : public QWidget {
  Q_OBJECT
 public:
  explicit LayerChart(QWidget* parent = nullptr);
  void set_model(const LayerTableModel* model);
  void set_column(int column);  // a LayerTableModel::Column with numbers
  QSize sizeHint() const override { return {900, 300}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  const LayerTableModel* model_ = nullptr;
  int column_ = 4;
};

}  // namespace pipescope::gui
