// Saves what a widget paints as PNG (a grab at its size) or SVG (its paintEvent
// replayed on an SVG generator, so lines and text stay vectors). Files are written
// atomically (core/atomic_file.h); failures throw InputError naming the file.
#pragma once

#include <QString>

class QWidget;

namespace pipescope::gui {

void save_png(QWidget* widget, const QString& path);
void save_svg(QWidget* widget, const QString& path, const QString& title);
// By extension: .svg -> SVG, anything else -> PNG.
void save_image(QWidget* widget, const QString& path, const QString& title);

}  // namespace pipescope::gui
