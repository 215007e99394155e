#include "gui/app/plans_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPolygonF>
#include <QProgressBar>
#include <QPushButton>
#include <QHeaderView>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>

#include "core/report.h"
#include "gui/app/scatter_axes.h"
#include "gui/models/palette.h"
#include "gui/models/plans_model.h"
#include "gui/models/schedule_names.h"

namespace pipescope::gui {

namespace {
constexpr int kLeft = 78, kTop = 30, kRight = 20, kBottom = 62;
constexpr double kGiB = 1024.0 * 1024 * 1024;
}  // namespace

PlansScatter::PlansScatter(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

void PlansScatter::set_model(const PlansModel* model) {
  model_ = model;
  connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
  update();
}

void PlansScatter::set_current(int candidate) {
  current_ = candidate;
  update();
}

QRect PlansScatter::plot_rect() const {
  return QRect(kLeft, kTop, std::max(10, width() - kLeft - kRight), std::max(10, height() - kTop - kBottom));
}

LinearScale PlansScatter::x_scale() const {
  const QRect r = plot_rect();
  const double top = model_ ? model_->memory_axis().top / kGiB : 1;
  return {0, std::max(1e-9, top), static_cast<double>(r.left()), static_cast<double>(r.right())};
}

LinearScale PlansScatter::y_scale() const {
  const QRect r = plot_rect();
  const double top = model_ ? 1.08 * model_->max_throughput() : 1;
  return {0, std::max(1e-9, top), static_cast<double>(r.bottom()), static_cast<double>(r.top())};
}

QPointF PlansScatter::point_of(int row) const {
  const Candidate& c = model_->candidate(row);
  return {x_scale().px(static_cast<double>(c.peak_bytes) / kGiB), y_scale().px(c.throughput_samples_per_s)};
}

int PlansScatter::row_at(QPoint pos) const {
  if (!model_) return -1;
  int best = -1;
  double best_d = 7 * 7;  // within 7 px
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

void PlansScatter::paint_axes(QPainter& p, const QRect& plot) {
  paint_scatter_axes(p, palette().color(QPalette::Text), plot, x_scale(), y_scale(), kLeft,
                     "peak memory per device (GiB)", "throughput (samples/s)");
}

void PlansScatter::paint_legend(QPainter& p) {
  int x = kLeft;
  const int y = height() - 22;
  auto label = [&](const QString& text) {
    p.setPen(palette().color(QPalette::Text));
    const int w = p.fontMetrics().horizontalAdvance(text);
    p.drawText(x, y, w + 4, 18, Qt::AlignVCenter, text);
    x += w + 18;
  };
  for (ScheduleKind k : schedule_kinds()) {
    p.setPen(Qt::NoPen);
    p.setBrush(schedule_color(k));
    p.drawEllipse(QPointF(x + 5, y + 9), 5, 5);
    x += 14;
    label(QString::fromStdString(to_string(k)));
  }
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(QColor(90, 90, 90), 1.5));
  p.drawEllipse(QPointF(x + 5, y + 9), 5, 5);
  x += 14;
  label("hollow: does not fit");
  p.setPen(QPen(QColor(90, 90, 90), 1.5));
  p.drawPolygon(QPolygonF({QPointF(x + 5, y + 3), QPointF(x + 11, y + 9), QPointF(x + 5, y + 15), QPointF(x - 1, y + 9)}));
  x += 14;
  label("diamond: offload (dotted: without it)");
  p.setPen(QPen(QColor(30, 30, 30), 2));
  p.drawLine(x, y + 9, x + 20, y + 9);
  x += 26;
  label("\u2605 Pareto front");
  p.setPen(QPen(does_not_fit_color(), 1.5, Qt::DashLine));
  p.drawLine(x, y + 2, x, y + 16);
  x += 8;
  label("device memory");
}

void PlansScatter::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  p.setRenderHint(QPainter::Antialiasing, true);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  const SearchResult* r = model_ ? model_->result() : nullptr;
  QString head = "Every candidate plan: throughput against peak memory per device";
  if (r) head += QString("  (%1 candidates, %2 fit)").arg(r->candidates.size()).arg(r->ranking.size());
  p.drawText(QRect(8, 4, width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter, head);
  p.setFont(font());
  const QRect plot = plot_rect();
  paint_legend(p);
  if (!r) {
    p.drawText(plot, Qt::AlignCenter, "Press \"Search\" to simulate every candidate plan");
    return;
  }
  paint_axes(p, plot);
  const LinearScale x = x_scale(), y = y_scale();
  const MemoryAxis axis = model_->memory_axis();
  if (axis.capacity_inside || axis.capacity_beyond) {  // beyond the zoomed axis: at its edge
    const double gib = static_cast<double>(r->memory_limit_bytes) / kGiB;
    const double mx = axis.capacity_inside ? x.px(gib) : plot.right();
    p.setPen(QPen(does_not_fit_color(), 1.5, Qt::DashLine));
    p.drawLine(QPointF(mx, plot.top()), QPointF(mx, plot.bottom()));
    if (axis.capacity_beyond) {
      p.drawText(QRectF(plot.right() - 206, plot.top() + 4, 200, 16), Qt::AlignRight | Qt::AlignVCenter,
                 QString("device memory %1 GiB \u2192").arg(gib, 0, 'f', 1));
    }
  }
  // The front as a staircase: from each point, throughput holds until the next.
  const std::vector<int> front = model_->front();
  if (!front.empty()) {
    QPainterPath path;
    for (std::size_t k = 0; k < front.size(); ++k) {
      const Candidate& c = r->candidates[front[k]];
      const QPointF pt(x.px(static_cast<double>(c.peak_bytes) / kGiB), y.px(c.throughput_samples_per_s));
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
  p.setClipRect(plot.adjusted(-6, -6, 6, 6));
  // Offload the search took (memory bound the plan): a dotted line from its point
  // without offload (a small hollow circle) to its point with.
  for (int row = 0; row < model_->rowCount(); ++row) {
    const std::optional<PlansModel::Point> before = model_->without_offload(row);
    if (!before) continue;
    const QPointF from(x.px(static_cast<double>(before->peak_bytes) / kGiB), y.px(before->throughput_samples_per_s));
    p.setPen(QPen(schedule_color(model_->candidate(row).schedule), 1, Qt::DotLine));
    p.setBrush(Qt::NoBrush);
    p.drawLine(from, point_of(row));
    p.drawEllipse(from, 2.5, 2.5);
  }
  for (int row = 0; row < model_->rowCount(); ++row) {
    const Candidate& c = model_->candidate(row);
    const QColor col = schedule_color(c.schedule);
    const QPointF pt = point_of(row);
    const double radius = c.pareto ? 6 : 4;
    const bool offload = c.plan.offload.active();
    if (c.fits) {
      p.setPen(QPen(col.darker(130), 1));
      p.setBrush(col);
    } else {
      p.setPen(QPen(col, 1.5));
      p.setBrush(Qt::NoBrush);
    }
    if (offload) {
      p.drawPolygon(QPolygonF({pt + QPointF(0, -radius - 1), pt + QPointF(radius + 1, 0), pt + QPointF(0, radius + 1),
                               pt + QPointF(-radius - 1, 0)}));
    } else {
      p.drawEllipse(pt, radius, radius);
    }
    if (c.pareto) {
      p.setPen(QColor(20, 20, 20));
      p.drawText(QRectF(pt.x() + 5, pt.y() - 18, 16, 16), Qt::AlignCenter, "\u2605");
    }
    if (c.index == current_) {
      p.setPen(QPen(QColor(20, 20, 20), 2));
      p.setBrush(Qt::NoBrush);
      p.drawEllipse(pt, radius + 4, radius + 4);
    }
  }
}

void PlansScatter::mousePressEvent(QMouseEvent* e) {
  const int row = row_at(e->pos());
  if (row >= 0) emit candidateClicked(model_->candidate(row).index);
}

void PlansScatter::mouseMoveEvent(QMouseEvent* e) {
  const int row = row_at(e->pos());
  if (row >= 0) {
    QToolTip::showText(e->globalPosition().toPoint(),
                       model_->data(model_->index(row, 0), Qt::ToolTipRole).toString() + "\nclick to load", this);
  } else {
    QToolTip::hideText();
  }
}

PlansView::PlansView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  search_ = new QPushButton("Search", this);
  search_->setToolTip("Simulate every candidate as `pipescope sweep` does (D = the hardware's devices, N = micro-batch size x M)");
  schedule_ = new QComboBox(this);
  schedule_->addItem("all schedules", QString());
  for (const QString& s : schedule_names()) schedule_->addItem(schedule_label(s), s);
  stages_ = new QComboBox(this);
  stages_->addItem("all K", 0);
  recompute_ = new QComboBox(this);
  recompute_->addItem("recompute on or off", static_cast<int>(PlansModel::Recompute::Any));
  recompute_->addItem("recompute on", static_cast<int>(PlansModel::Recompute::On));
  recompute_->addItem("recompute off", static_cast<int>(PlansModel::Recompute::Off));
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(200);
  progress_->hide();
  message_ = new QLabel(this);
  bar->addWidget(search_);
  bar->addWidget(schedule_);
  bar->addWidget(stages_);
  bar->addWidget(recompute_);
  bar->addWidget(progress_);
  bar->addWidget(message_, 1);
  layout->addLayout(bar);
  auto* split = new QSplitter(Qt::Vertical, this);
  scatter_ = new PlansScatter(split);
  table_ = new QTableView(split);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  split->setSizes({600, 190});
  layout->addWidget(split, 1);
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    if (model_ && i.isValid()) emit candidateClicked(model_->data(i, PlansModel::CandidateRole).toInt());
  });
  connect(search_, &QPushButton::clicked, this, &PlansView::searchRequested);
  connect(scatter_, &PlansScatter::candidateClicked, this, &PlansView::candidateClicked);
  connect(schedule_, &QComboBox::currentIndexChanged, this, [this] {
    if (model_) model_->set_schedule_filter(schedule_->currentData().toString());
  });
  connect(stages_, &QComboBox::currentIndexChanged, this, [this] {
    if (model_) model_->set_stages_filter(stages_->currentData().toInt());
  });
  connect(recompute_, &QComboBox::currentIndexChanged, this, [this] {
    if (model_) model_->set_recompute_filter(static_cast<PlansModel::Recompute>(recompute_->currentData().toInt()));
  });
}

void PlansView::set_model(PlansModel* model) {
  model_ = model;
  scatter_->set_model(model);
  table_->setModel(model);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(PlansModel::Label, QHeaderView::Stretch);
}

void PlansView::refresh_filters() {
  const int keep = stages_->currentData().toInt();
  QSignalBlocker block(stages_);
  stages_->clear();
  stages_->addItem("all K", 0);
  for (int k : model_->stage_values()) stages_->addItem(QString("K=%1").arg(k), k);
  const int at = stages_->findData(keep);
  stages_->setCurrentIndex(at < 0 ? 0 : at);
  model_->set_stages_filter(stages_->currentData().toInt());
}

void PlansView::set_running(bool running) {
  search_->setEnabled(!running);
  progress_->setVisible(running);
  if (running) progress_->setValue(0);
}

void PlansView::set_progress(int done, int total) {
  progress_->setMaximum(std::max(1, total));
  progress_->setValue(done);
}

void PlansView::set_message(const QString& message) { message_->setText(message); }

}  // namespace pipescope::gui
