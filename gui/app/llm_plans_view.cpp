// The scatter, the filter boxes, the table and the description of gui/app/llm_plans_view.h.
// Rows are drawn last to first, so the fastest layout is on top where points overlap.
#include "gui/app/llm_plans_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "gui/app/scatter_axes.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

namespace {
constexpr int kLeft = 78, kTop = 30, kRight = 20, kBottom = 62;
constexpr double kGB = 1e9;
constexpr LlmDimension kDimensions[] = {LlmDimension::T, LlmDimension::D, LlmDimension::Cp, LlmDimension::Ep,
                                        LlmDimension::Sharding};
}  // namespace

LlmPlansScatter::LlmPlansScatter(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

void LlmPlansScatter::set_model(const LlmPlansModel* model) {
  model_ = model;
  connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
  connect(model_, &QAbstractItemModel::dataChanged, this, qOverload<>(&QWidget::update));
  update();
}

void LlmPlansScatter::set_current(int candidate) {
  current_ = candidate;
  update();
}

QRect LlmPlansScatter::plot_rect() const {
  return QRect(kLeft, kTop, std::max(10, width() - kLeft - kRight), std::max(10, height() - kTop - kBottom));
}

LinearScale LlmPlansScatter::x_scale() const {
  const QRect r = plot_rect();
  const double top = model_ ? model_->memory_axis().top / kGB : 1;
  return {0, std::max(1e-9, top), static_cast<double>(r.left()), static_cast<double>(r.right())};
}

// From a little below the fastest step to a little above the slowest: the layouts a
// search keeps are often within a few per cent of each other.
LinearScale LlmPlansScatter::y_scale() const {
  const QRect r = plot_rect();
  const double lo = model_ ? static_cast<double>(model_->min_step_ns()) / 1e9 : 0;
  const double hi = model_ ? static_cast<double>(model_->max_step_ns()) / 1e9 : 1;
  const double pad = std::max(0.08 * (hi - lo), 0.01 * std::max(hi, 1e-9));
  return {std::max(0.0, lo - pad), hi + pad, static_cast<double>(r.bottom()), static_cast<double>(r.top())};
}

double LlmPlansScatter::capacity_x() const {
  if (!model_ || !model_->result()) return -1;
  const MemoryAxis axis = model_->memory_axis();
  if (axis.capacity_beyond) return plot_rect().right();
  return axis.capacity_inside ? x_scale().px(model_->result()->capacity / kGB) : -1;
}

QPointF LlmPlansScatter::point_of(int row) const {
  const LlmCandidate& c = model_->candidate(row);
  return {x_scale().px(c.peak_bytes / kGB), y_scale().px(static_cast<double>(c.step_ns) / 1e9)};
}

int LlmPlansScatter::row_at(QPoint pos) const {
  if (!model_) return -1;
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

void LlmPlansScatter::paint_axes(QPainter& p, const QRect& plot) {
  paint_scatter_axes(p, palette().color(QPalette::Text), plot, x_scale(), y_scale(), kLeft,
                     "peak memory per GPU (GB)", "step time (s)");
}

void LlmPlansScatter::paint_legend(QPainter& p) {
  int x = kLeft;
  const int y = height() - 22;
  auto label = [&](const QString& text) {
    p.setPen(palette().color(QPalette::Text));
    const int w = p.fontMetrics().horizontalAdvance(text);
    p.drawText(x, y, w + 4, 18, Qt::AlignVCenter, text);
    x += w + 14;
  };
  const LlmDimension dim = model_->colour_by();
  label(to_qstring(dim) + ":");
  for (int value : model_->values(dim)) {
    const QColor c = model_->value_colour(value);
    p.setPen(QPen(c.darker(130), 1));
    p.setBrush(c);
    p.drawEllipse(QPointF(x + 5, y + 9), 5, 5);
    x += 14;
    label(dimension_value_name(dim, value));
  }
  p.setPen(QPen(does_not_fit_color(), 1.5, Qt::DashLine));
  p.drawLine(x, y + 2, x, y + 16);
  x += 8;
  label("GPU memory");
}

void LlmPlansScatter::paintEvent(QPaintEvent*) {
  drawn_.clear();
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  p.setRenderHint(QPainter::Antialiasing, true);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  const LlmSearchResult* r = model_ ? model_->result() : nullptr;
  QString head = "llm-plan's layouts: step time against peak memory per GPU";
  if (r) head += QString("  (%1 of %2 shown)").arg(model_->rowCount()).arg(r->best.size());
  p.drawText(QRect(8, 4, width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter, head);
  p.setFont(font());
  const QRect plot = plot_rect();
  if (!r) {
    p.drawText(plot, Qt::AlignCenter | Qt::TextWordWrap,
               "Open a `pipescope llm-plan --json` result (File > Open llm-plan result..., or --llm-plan FILE)");
    return;
  }
  paint_axes(p, plot);
  paint_legend(p);
  const double cx = capacity_x();
  if (cx >= 0) {
    p.setPen(QPen(does_not_fit_color(), 1.5, Qt::DashLine));
    p.drawLine(QPointF(cx, plot.top()), QPointF(cx, plot.bottom()));
    if (model_->memory_axis().capacity_beyond) {
      p.drawText(QRectF(plot.right() - 206, plot.top() + 4, 200, 16), Qt::AlignRight | Qt::AlignVCenter,
                 QString("GPU memory %1 GB \u2192").arg(r->capacity / kGB, 0, 'f', 1));
    }
  }
  p.setClipRect(plot.adjusted(-6, -6, 6, 6));
  for (int row = model_->rowCount() - 1; row >= 0; --row) {
    const QColor col = model_->colour(row);
    const QPointF pt = point_of(row);
    p.setPen(QPen(col.darker(130), 1));
    p.setBrush(col);
    p.drawEllipse(pt, 5, 5);
    const int candidate = model_->data(model_->index(row, 0), LlmPlansModel::CandidateIndexRole).toInt();
    drawn_.push_back({row, candidate, pt, col});
  }
  const int current_row = model_->row_of_candidate(current_);
  if (current_row >= 0) {
    p.setPen(QPen(QColor(20, 20, 20), 2));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(point_of(current_row), 9, 9);
  }
}

void LlmPlansScatter::mousePressEvent(QMouseEvent* e) {
  const int row = row_at(e->pos());
  if (row >= 0) emit rowClicked(row);
}

void LlmPlansScatter::mouseMoveEvent(QMouseEvent* e) {
  const int row = row_at(e->pos());
  if (row < 0) {
    QToolTip::hideText();
    return;
  }
  const LlmCandidate& c = model_->candidate(row);
  QToolTip::showText(e->globalPosition().toPoint(),
                     QString("%1\n%2, step %3 s, peak %4 GB, bubble %5, MFU %6 %")
                         .arg(QString::fromStdString(layout_summary(c.layout)), QString::fromStdString(c.schedule))
                         .arg(static_cast<double>(c.step_ns) / 1e9, 0, 'f', 3).arg(c.peak_bytes / kGB, 0, 'f', 1)
                         .arg(c.bubble, 0, 'f', 3).arg(100 * c.mfu, 0, 'f', 1),
                     this);
}

LlmPlansView::LlmPlansView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  auto* open = new QPushButton("Open llm-plan result...", this);
  open->setToolTip("A file `pipescope llm-plan ... --top 50 --json > r.json` wrote");
  bar->addWidget(open);
  for (LlmDimension d : kDimensions) {
    auto* box = new QComboBox(this);
    box->setToolTip("show only the layouts with this " + to_qstring(d));
    filters_[static_cast<int>(d)] = box;
    bar->addWidget(box);
  }
  colour_by_ = new QComboBox(this);
  for (LlmDimension d : kDimensions) colour_by_->addItem("colour by " + to_qstring(d), static_cast<int>(d));
  bar->addWidget(colour_by_);
  bar->addStretch(1);
  layout->addLayout(bar);
  auto* split = new QSplitter(Qt::Vertical, this);
  scatter_ = new LlmPlansScatter(split);
  table_ = new QTableView(split);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  auto* scroll = new QScrollArea(split);
  description_ = new QLabel(scroll);
  description_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  description_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  description_->setMargin(4);
  description_->setWordWrap(true);
  scroll->setWidget(description_);
  scroll->setWidgetResizable(true);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 1);
  split->setSizes({460, 200, 130});
  layout->addWidget(split, 1);
  refresh_filters();
  connect(open, &QPushButton::clicked, this, &LlmPlansView::openRequested);
  connect(scatter_, &LlmPlansScatter::rowClicked, this, &LlmPlansView::select_row);
  for (LlmDimension d : kDimensions) {
    QComboBox* box = filter(d);
    connect(box, &QComboBox::currentIndexChanged, this, [this, d, box] {
      if (model_) model_->set_filter(d, box->currentData().toInt());
    });
  }
  connect(colour_by_, &QComboBox::currentIndexChanged, this, [this] {
    if (model_) model_->set_colour_by(static_cast<LlmDimension>(colour_by_->currentData().toInt()));
  });
}

void LlmPlansView::set_model(LlmPlansModel* model) {
  model_ = model;
  scatter_->set_model(model);
  table_->setModel(model);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(LlmPlansModel::Layout, QHeaderView::Stretch);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
    if (i.isValid()) scatter_->set_current(model_->data(i, LlmPlansModel::CandidateIndexRole).toInt());
  });
  // A filter resets the model: the layout shown stays selected while it is visible.
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    const int row = model_->row_of_candidate(scatter_->current());
    if (row >= 0) table_->selectRow(row);
  });
  refresh_filters();
}

void LlmPlansView::refresh_filters() {
  for (LlmDimension d : kDimensions) {
    QComboBox* box = filter(d);
    QSignalBlocker block(box);
    box->clear();
    box->addItem("all " + to_qstring(d), -1);
    if (model_) {
      for (int v : model_->values(d)) box->addItem(to_qstring(d) + " = " + dimension_value_name(d, v), v);
    }
    box->setEnabled(box->count() > 2);  // one value: nothing to filter
  }
  scatter_->set_current(-1);
}

void LlmPlansView::set_description(const QString& text) { description_->setText(text); }

QString LlmPlansView::description() const { return description_->text(); }

void LlmPlansView::select_row(int row) {
  if (!model_ || row < 0 || row >= model_->rowCount()) return;
  table_->selectRow(row);
  scatter_->set_current(model_->data(model_->index(row, 0), LlmPlansModel::CandidateIndexRole).toInt());
}

}  // namespace pipescope::gui
