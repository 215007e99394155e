// The scatter, the filter boxes, the table and the description of gui/app/plans_view.h.
#include "gui/app/plans_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPolygonF>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "gui/app/scatter_axes.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

namespace {
constexpr int kLeft = 78, kTop = 30, kRight = 20, kBottom = 62;
}  // namespace

PlansScatter::PlansScatter(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

void PlansScatter::set_model(const PlansModel* model) {
  model_ = model;
  connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
  connect(model_, &QAbstractItemModel::dataChanged, this, qOverload<>(&QWidget::update));
  update();
}

void PlansScatter::set_current(int entry) {
  current_ = entry;
  update();
}

QRect PlansScatter::plot_rect() const {
  return QRect(kLeft, kTop, std::max(10, width() - kLeft - kRight), std::max(10, height() - kTop - kBottom));
}

LinearScale PlansScatter::x_scale() const {
  const QRect r = plot_rect();
  const PlanSet* s = model_ ? model_->plans() : nullptr;
  const double top = s ? model_->memory_axis().top / s->unit.bytes : 1;
  return {0, std::max(1e-9, top), static_cast<double>(r.left()), static_cast<double>(r.right())};
}

// From a little below the fastest step to a little above the slowest: the plans a search
// keeps are often within a few per cent of each other.
LinearScale PlansScatter::y_scale() const {
  const QRect r = plot_rect();
  const double lo = model_ ? static_cast<double>(model_->min_step_ns()) / 1e6 : 0;
  const double hi = model_ && model_->max_step_ns() > 0 ? static_cast<double>(model_->max_step_ns()) / 1e6 : 1;
  const double pad = std::max(0.08 * (hi - lo), 0.01 * hi);
  return {std::max(0.0, lo - pad), hi + pad, static_cast<double>(r.bottom()), static_cast<double>(r.top())};
}

QPointF PlansScatter::place(const PlanPoint& p) const {
  return {x_scale().px(static_cast<double>(p.peak_bytes) / model_->plans()->unit.bytes),
          y_scale().px(static_cast<double>(p.step_ns) / 1e6)};
}

QPointF PlansScatter::point_of(int row) const { return place(model_->at(row).point); }

double PlansScatter::capacity_x() const {
  const PlanSet* s = model_ ? model_->plans() : nullptr;
  if (!s) return -1;
  const MemoryAxis axis = model_->memory_axis();
  if (axis.capacity_beyond) return plot_rect().right();
  return axis.capacity_inside ? x_scale().px(static_cast<double>(s->capacity_bytes) / s->unit.bytes) : -1;
}

int PlansScatter::row_at(QPoint pos) const {
  if (!model_ || !model_->plans()) return -1;
  int best = -1;
  double best_d = 7 * 7;
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QPointF d = point_of(r) - QPointF(pos);
    const double d2 = d.x() * d.x() + d.y() * d.y();
    if (d2 < best_d) {
      best_d = d2;
      best = r;
    }
  }
  return best;
}

// A swatch for each mark the rows use, then the colour dimension's values (the part
// that may run past the right edge when a dimension has many).
void PlansScatter::paint_legend(QPainter& p) {
  const PlanSet& s = *model_->plans();
  int x = kLeft;
  const int y = height() - 22;
  auto label = [&](const QString& text) {
    p.setPen(palette().color(QPalette::Text));
    const int w = p.fontMetrics().horizontalAdvance(text);
    p.drawText(x, y, w + 4, 18, Qt::AlignVCenter, text);
    x += w + 14;
  };
  const auto any = [&](bool PlanRow::*flag, bool want) {
    return std::any_of(s.rows.begin(), s.rows.end(), [&](const PlanRow& r) { return r.*flag == want; });
  };
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(QColor(90, 90, 90), 1.5));
  if (any(&PlanRow::fits, false)) {
    p.drawEllipse(QPointF(x + 5, y + 9), 5, 5);
    x += 14;
    label("hollow: does not fit");
  }
  if (any(&PlanRow::offload, true)) {
    p.setPen(QPen(QColor(90, 90, 90), 1.5));
    p.drawPolygon(QPolygonF({QPointF(x + 5, y + 3), QPointF(x + 11, y + 9), QPointF(x + 5, y + 15), QPointF(x - 1, y + 9)}));
    x += 14;
    label("diamond: offload (dotted: without it)");
  }
  if (any(&PlanRow::pareto, true)) {
    p.setPen(QPen(QColor(30, 30, 30), 2));
    p.drawLine(x, y + 9, x + 20, y + 9);
    x += 26;
    label("\u2605 Pareto front");
  }
  if (s.capacity_bytes > 0) {
    p.setPen(QPen(does_not_fit_color(), 1.5, Qt::DashLine));
    p.drawLine(x, y + 2, x, y + 16);
    x += 8;
    label(s.device + " memory");
  }
  if (model_->colour_by().isEmpty()) return;
  label(model_->colour_by() + ":");
  for (const PlanValue& v : model_->dimension(model_->colour_by()).values) {
    p.setPen(QPen(v.colour.darker(130), 1));
    p.setBrush(v.colour);
    p.drawEllipse(QPointF(x + 5, y + 9), 5, 5);
    x += 14;
    label(v.name);
  }
}

// The front as a staircase: from each point, the step holds until the next.
void PlansScatter::paint_front(QPainter& p) {
  const std::vector<int> front = model_->front();
  if (front.empty()) return;
  QPainterPath path;
  for (std::size_t k = 0; k < front.size(); ++k) {
    const QPointF pt = place(model_->plans()->rows[static_cast<std::size_t>(front[k])].point);
    if (k == 0) {
      path.moveTo(pt);
    } else {
      path.lineTo(pt.x(), path.currentPosition().y());
      path.lineTo(pt);
    }
  }
  p.setPen(QPen(QColor(30, 30, 30), 2));
  p.setBrush(Qt::NoBrush);
  p.drawPath(path);
}

void PlansScatter::paint_points(QPainter& p) {
  // Offload the search took (memory bound the plan): a dotted line from its point
  // without offload (a small hollow circle) to its point with.
  for (int row = 0; row < model_->rowCount(); ++row) {
    const std::optional<PlanPoint>& before = model_->at(row).without_offload;
    if (!before) continue;
    const QPointF from = place(*before);
    p.setPen(QPen(model_->colour(row), 1, Qt::DotLine));
    p.setBrush(Qt::NoBrush);
    p.drawLine(from, point_of(row));
    p.drawEllipse(from, 2.5, 2.5);
  }
  for (int row = model_->rowCount() - 1; row >= 0; --row) {
    const PlanRow& r = model_->at(row);
    const QColor col = model_->colour(row);
    const QPointF pt = point_of(row);
    const double radius = r.pareto ? 7 : 5;
    if (r.fits) {
      p.setPen(QPen(col.darker(130), 1));
      p.setBrush(col);
    } else {
      p.setPen(QPen(col, 1.5));
      p.setBrush(Qt::NoBrush);
    }
    if (r.offload) {
      p.drawPolygon(QPolygonF({pt + QPointF(0, -radius - 1), pt + QPointF(radius + 1, 0), pt + QPointF(0, radius + 1),
                               pt + QPointF(-radius - 1, 0)}));
    } else {
      p.drawEllipse(pt, radius, radius);
    }
    if (r.pareto) {
      p.setPen(QColor(20, 20, 20));
      p.drawText(QRectF(pt.x() + 5, pt.y() - 18, 16, 16), Qt::AlignCenter, "\u2605");
    }
    drawn_.push_back({row, model_->entry(row), pt, col});
  }
  const int current_row = model_->row_of(current_);
  if (current_row >= 0) {
    const double radius = model_->at(current_row).pareto ? 11 : 9;
    p.setPen(QPen(QColor(20, 20, 20), 2));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(point_of(current_row), radius, radius);
  }
}

void PlansScatter::paintEvent(QPaintEvent*) {
  drawn_.clear();
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  p.setRenderHint(QPainter::Antialiasing, true);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  const PlanSet* s = model_ ? model_->plans() : nullptr;
  QString head = s ? s->title + ": step time against peak memory per " + s->device : QString("Plans");
  if (s) head += QString("  (%1 of %2 shown, %3 fit)").arg(model_->rowCount()).arg(s->rows.size()).arg(model_->fitting());
  p.drawText(QRect(8, 4, width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter, head);
  p.setFont(font());
  const QRect plot = plot_rect();
  if (!s) {
    p.drawText(plot, Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    return;
  }
  paint_scatter_axes(p, palette().color(QPalette::Text), plot, x_scale(), y_scale(), kLeft,
                     QString("peak memory per %1 (%2)").arg(s->device, s->unit.meaning), "step time (ms)");
  paint_legend(p);
  const double cx = capacity_x();
  if (cx >= 0) {
    p.setPen(QPen(does_not_fit_color(), 1.5, Qt::DashLine));
    p.drawLine(QPointF(cx, plot.top()), QPointF(cx, plot.bottom()));
    if (model_->memory_axis().capacity_beyond) {
      p.drawText(QRectF(plot.right() - 206, plot.top() + 4, 200, 16), Qt::AlignRight | Qt::AlignVCenter,
                 QString("%1 memory %2 %3 \u2192")
                     .arg(s->device)
                     .arg(static_cast<double>(s->capacity_bytes) / s->unit.bytes, 0, 'f', 1)
                     .arg(s->unit.name));
    }
  }
  paint_front(p);
  p.setClipRect(plot.adjusted(-6, -6, 6, 6));
  paint_points(p);
}

void PlansScatter::mousePressEvent(QMouseEvent* e) {
  const int row = row_at(e->pos());
  if (row >= 0) emit rowClicked(row);
}

void PlansScatter::mouseMoveEvent(QMouseEvent* e) {
  const int row = row_at(e->pos());
  if (row >= 0) {
    QToolTip::showText(e->globalPosition().toPoint(), model_->at(row).tooltip, this);
  } else {
    QToolTip::hideText();
  }
}

PlansView::PlansView(const QString& action, const QString& action_tip, const QString& placeholder, QWidget* parent)
    : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  action_ = new QPushButton(action, this);
  action_->setToolTip(action_tip);
  bar->addWidget(action_);
  filter_bar_ = new QHBoxLayout;
  bar->addLayout(filter_bar_);
  colour_by_ = new QComboBox(this);
  bar->addWidget(colour_by_);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(200);
  progress_->hide();
  bar->addWidget(progress_);
  bar->addStretch(1);
  layout->addLayout(bar);
  message_ = new QLabel(this);
  message_->setWordWrap(true);
  message_->hide();
  layout->addWidget(message_);
  auto* split = new QSplitter(Qt::Vertical, this);
  scatter_ = new PlansScatter(split);
  scatter_->set_placeholder(placeholder);
  table_ = new QTableView(split);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  description_area_ = new QScrollArea(split);
  description_ = new QLabel(description_area_);
  description_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  description_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  description_->setMargin(4);
  description_->setWordWrap(true);
  description_area_->setWidget(description_);
  description_area_->setWidgetResizable(true);
  description_area_->hide();
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 1);
  split->setSizes({460, 200, 130});
  layout->addWidget(split, 1);
  connect(action_, &QPushButton::clicked, this, &PlansView::actionRequested);
  connect(scatter_, &PlansScatter::rowClicked, this, [this](int row) {
    select_row(row);
    emit candidateClicked(model_->entry(row));
  });
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    if (model_ && i.isValid()) emit candidateClicked(model_->entry(i.row()));
  });
  connect(colour_by_, &QComboBox::currentIndexChanged, this, [this] {
    if (model_ && colour_by_->currentIndex() >= 0) model_->set_colour_by(colour_by_->currentData().toString());
  });
}

void PlansView::set_model(PlansModel* model) {
  model_ = model;
  scatter_->set_model(model);
  table_->setModel(model);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
    if (i.isValid()) scatter_->set_current(model_->entry(i.row()));
  });
  // A filter resets the model: the row shown stays selected while it is visible.
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    if (model_->columnCount() > 0) table_->horizontalHeader()->setSectionResizeMode(PlansModel::Label, QHeaderView::Stretch);
    const int row = model_->row_of(scatter_->current());
    if (row >= 0) table_->selectRow(row);
  });
  refresh_filters();
}

QComboBox* PlansView::filter(const QString& dimension) const {
  for (QComboBox* box : filters_) {
    if (box->property("dimension").toString() == dimension) return box;
  }
  return nullptr;
}

void PlansView::refresh_filters() {
  for (QComboBox* box : filters_) delete box;
  filters_.clear();
  QSignalBlocker block(colour_by_);
  colour_by_->clear();
  const PlanSet* s = model_ ? model_->plans() : nullptr;
  for (std::size_t d = 0; s && d < s->dimensions.size(); ++d) {
    const PlanDimension& dim = s->dimensions[d];
    auto* box = new QComboBox(this);
    box->setProperty("dimension", dim.name);
    box->setToolTip("show only the rows with this " + dim.name);
    box->addItem("all " + dim.name, -1);
    for (const PlanValue& v : dim.values) box->addItem(dim.name + " = " + v.name, v.value);
    box->setCurrentIndex(std::max(0, box->findData(model_->filter(dim.name))));
    box->setEnabled(box->count() > 2);  // one value: nothing to filter
    connect(box, &QComboBox::currentIndexChanged, this,
            [this, box, name = dim.name] { model_->set_filter(name, box->currentData().toInt()); });
    filter_bar_->addWidget(box);
    filters_.push_back(box);
    colour_by_->addItem("colour by " + dim.name, dim.name);
  }
  colour_by_->setCurrentIndex(std::max(0, colour_by_->findData(model_ ? model_->colour_by() : QString())));
  colour_by_->setVisible(s != nullptr);
  table_->clearSelection();
  scatter_->set_current(-1);
}

void PlansView::set_description(const QString& text) {
  description_->setText(text);
  description_area_->setVisible(!text.isEmpty());
}

QString PlansView::description() const { return description_->text(); }

void PlansView::set_message(const QString& message) {
  message_->setText(message);
  message_->setVisible(!message.isEmpty());
}

void PlansView::set_running(bool running) {
  action_->setEnabled(!running);
  progress_->setVisible(running);
  if (running) progress_->setValue(0);
}

void PlansView::set_progress(int done, int total) {
  progress_->setMaximum(std::max(1, total));
  progress_->setValue(done);
}

void PlansView::select_row(int row) {
  if (!model_ || row < 0 || row >= model_->rowCount()) return;
  table_->selectRow(row);
  scatter_->set_current(model_->entry(row));
}

}  // namespace pipescope::gui
