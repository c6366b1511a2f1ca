"""The console's static files, read once from the package (no build step), and the frame of the
pages rendered on the server. The stylesheet is the replay report's (``gateway.replay.style``)
plus the console's own, so a run's timeline looks the same in both."""

from __future__ import annotations

from html import escape
from pathlib import Path

from gateway.replay.style import CSS as REPORT_CSS

_HERE = Path(__file__).with_name("static")
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


def _load() -> dict[str, tuple[bytes, str]]:
    files = {p.name: (p.read_bytes(), _TYPES[p.suffix]) for p in _HERE.iterdir() if p.suffix in _TYPES}
    own, kind = files.pop("console.css")
    files["console.css"] = (REPORT_CSS.encode() + b"\n" + own, kind)
    return files


ASSETS = _load()  # name -> (bytes, content type)


def page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="/ui/static/console.css"></head>\n'
        f'<body class="console">\n{body}\n</body></html>\n'
    )
