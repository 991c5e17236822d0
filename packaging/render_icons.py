"""Render Stockade's icon from resources/icons/stockade.svg: PNG sizes, a Windows .ico, a macOS .icns.

    .venv/bin/python packaging/render_icons.py           # rewrite the files after editing the SVG
    .venv/bin/python packaging/render_icons.py --check   # exit 1 if a file no longer matches it

Qt's SVG renderer draws every size from the one drawing, so the output depends only on the SVG
and the Qt version. `.ico` and `.icns` are containers of the same PNG images (PNG entries are
read by Windows Vista and later, and by macOS 10.7 and later). `--check` re-renders in memory
and compares every image (also those inside the containers) pixel by pixel, allowing the small
antialiasing differences between Qt releases.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ICONS = ROOT / "resources" / "icons"
SVG = ICONS / "stockade.svg"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)  # 256 is the largest an .ico entry can declare
# .icns PNG entry types by pixel size (ic10 is the 512 pt @2x image, rendered but not kept).
ICNS_TYPES = ((b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256),
              (b"ic09", 512), (b"ic10", 1024))
MAX_CHANNEL_DIFFERENCE = 6
"""Per 8-bit channel; antialiased edges move by a few levels between Qt releases."""


def png_path(size: int) -> Path:
    return ICONS / f"stockade-{size}.png"


def _application() -> object:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    return QGuiApplication.instance() or QGuiApplication(sys.argv[:1])


def render_png(size: int) -> bytes:
    """The SVG drawn at `size`x`size` pixels on a transparent square, as PNG bytes."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"render_icons: {SVG} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):  # type: ignore[call-overload]  # stub: bytes; runtime: str
        raise SystemExit(f"render_icons: could not encode the {size} px PNG")
    buffer.close()
    return bytes(data.data())


def build_ico(pngs: dict[int, bytes]) -> bytes:
    """An ICONDIR header, one 16-byte entry per size, then the PNG images themselves."""
    header = struct.pack("<HHH", 0, 1, len(ICO_SIZES))
    offset = len(header) + 16 * len(ICO_SIZES)
    entries, images = b"", b""
    for size in ICO_SIZES:
        data = pngs[size]
        edge = 0 if size >= 256 else size  # 0 means 256 in an ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", edge, edge, 0, 0, 1, 32, len(data), offset)
        images += data
        offset += len(data)
    return header + entries + images


def build_icns(pngs: dict[int, bytes]) -> bytes:
    """`icns` + total length, then (type, length including this 8-byte header, PNG) entries."""
    body = b"".join(kind + struct.pack(">I", len(pngs[size]) + 8) + pngs[size]
                    for kind, size in ICNS_TYPES)
    return b"icns" + struct.pack(">I", len(body) + 8) + body


def ico_images(data: bytes) -> Iterator[tuple[int, bytes]]:
    _reserved, kind, count = struct.unpack_from("<HHH", data, 0)
    if kind != 1:
        raise ValueError("not an .ico file")
    for index in range(count):
        edge, _h, _c, _r, _p, _b, length, offset = struct.unpack_from("<BBBBHHII", data,
                                                                      6 + 16 * index)
        yield (edge or 256), data[offset:offset + length]


def icns_images(data: bytes) -> Iterator[tuple[int, bytes]]:
    if data[:4] != b"icns" or struct.unpack_from(">I", data, 4)[0] != len(data):
        raise ValueError("not an .icns file")
    sizes = dict(ICNS_TYPES)
    position = 8
    while position < len(data):
        kind = data[position:position + 4]
        length = struct.unpack_from(">I", data, position + 4)[0]
        yield sizes.get(kind, 0), data[position + 8:position + length]
        position += length


def rendered() -> dict[int, bytes]:
    sizes = sorted({*PNG_SIZES, *ICO_SIZES, *(size for _kind, size in ICNS_TYPES)})
    return {size: render_png(size) for size in sizes}


def write_all() -> list[Path]:
    pngs = rendered()
    written = []
    for size in PNG_SIZES:
        png_path(size).write_bytes(pngs[size])
        written.append(png_path(size))
    (ICONS / "stockade.ico").write_bytes(build_ico(pngs))
    (ICONS / "stockade.icns").write_bytes(build_icns(pngs))
    return [*written, ICONS / "stockade.ico", ICONS / "stockade.icns"]


def image_difference(png_a: bytes, png_b: bytes) -> int | None:
    """The largest per-channel difference of two PNG images; None when sizes differ."""
    from PySide6.QtGui import QImage

    a, b = QImage.fromData(png_a), QImage.fromData(png_b)
    if a.isNull() or b.isNull() or a.size() != b.size():
        return None
    a = a.convertToFormat(QImage.Format.Format_ARGB32)
    b = b.convertToFormat(QImage.Format.Format_ARGB32)
    bytes_a, bytes_b = bytes(a.constBits()), bytes(b.constBits())
    if bytes_a == bytes_b:
        return 0
    return max(abs(x - y) for x, y in zip(bytes_a, bytes_b, strict=True))


def check() -> list[str]:
    """What no longer matches the SVG (empty when every icon file is current)."""
    fresh = rendered()
    problems: list[str] = []

    def compare(label: str, size: int, data: bytes) -> None:
        if size not in fresh:
            problems.append(f"{label}: unexpected {size} px image")
            return
        difference = image_difference(data, fresh[size])
        if difference is None:
            problems.append(f"{label}: not a {size} px PNG")
        elif difference > MAX_CHANNEL_DIFFERENCE:
            problems.append(f"{label}: differs from the SVG by up to {difference} levels")

    for size in PNG_SIZES:
        path = png_path(size)
        if not path.is_file():
            problems.append(f"{path.name}: missing")
            continue
        compare(path.name, size, path.read_bytes())
    for name, reader, expected in (
        ("stockade.ico", ico_images, set(ICO_SIZES)),
        ("stockade.icns", icns_images, {size for _kind, size in ICNS_TYPES}),
    ):
        path = ICONS / name
        try:
            images = list(reader(path.read_bytes()))
        except (OSError, ValueError, struct.error) as err:
            problems.append(f"{name}: unreadable ({err})")
            continue
        if {size for size, _data in images} != expected:
            problems.append(f"{name}: sizes {sorted(s for s, _d in images)}, "
                            f"expected {sorted(expected)}")
        for size, data in images:
            compare(f"{name} {size} px", size, data)
    return problems


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    _application()
    if argv == ["--check"]:
        problems = check()
        for problem in problems:
            print(f"render_icons: {problem}", file=sys.stderr)
        if problems:
            print("render_icons: run .venv/bin/python packaging/render_icons.py", file=sys.stderr)
            return 1
        print("render_icons: every icon file matches stockade.svg")
        return 0
    for path in write_all():
        print(f"render_icons: wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
