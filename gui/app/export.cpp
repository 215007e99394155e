#include "gui/app/export.h"

#include <QBuffer>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QWidget>

#include "core/atomic_file.h"
#include "core/error.h"

namespace pipescope::gui {

static void write_bytes(const QString& path, const QByteArray& bytes) {
  write_file_atomically(path.toStdString(), std::string(bytes.constData(), static_cast<std::size_t>(bytes.size())));
}

void save_png(QWidget* widget, const QString& path) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!widget->grab().save(&buffer, "PNG")) throw InputError(path.toStdString() + ": could not encode the PNG");
  write_bytes(path, bytes);
}

void save_svg(QWidget* widget, const QString& path, const QString& title) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(widget->size());
  svg.setViewBox(QRect(QPoint(0, 0), widget->size()));
  svg.setTitle(title);
  svg.setDescription("pipescope-gui");
  {
    QPainter painter(&svg);
    widget->render(&painter);
  }
  write_bytes(path, bytes);
}

void save_image(QWidget* widget, const QString& path, const QString& title) {
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    save_svg(widget, path, title);
  } else {
    save_png(widget, path);
  }
}

}  // namespace pipescope::gui
