"""Static files: content-hashed names, gzip + brotli copies, and only the plotly.js file we use.

``collectstatic`` writes every file once under a name holding its content hash (``site.3f2a….css``) with a
``.gz`` and (when the ``brotli`` package is installed) a ``.br`` beside it; WhiteNoise serves the smallest
encoding the browser accepts and marks hashed names cacheable for ever (a changed file gets a new name).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

PLOTLY_JS = "plotly/plotly.min.js"
_PLOTLY_DIR = Path(plotly.__file__).parent / "package_data"


def compression_cache_dir() -> Path:
    """Where compressed copies are kept between ``collectstatic`` runs, by content hash
    (``COMPARNA_STATIC_CACHE``, default ``$XDG_CACHE_HOME/comparna/static``)."""
    explicit = os.environ.get("COMPARNA_STATIC_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "comparna" / "static"


class CachingCompressor(Compressor):
    """WhiteNoise's compressor (gzip level 9, brotli quality 11) remembering its output by the content's
    SHA-256: brotli takes about 12 s of CPU for plotly.js, which every fresh ``collectstatic`` (each test
    stack) would otherwise pay again."""

    def _cached(self, encoding: str, data: bytes, compress) -> bytes:
        folder = compression_cache_dir()
        path = folder / f"{hashlib.sha256(data).hexdigest()}.{encoding}"
        try:
            return path.read_bytes()
        except OSError:
            pass
        out = compress(data)
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".part") as tmp:
                tmp.write(out)
            os.replace(tmp.name, path)
        except OSError:  # a read-only home: compress every time
            pass
        return out

    def compress_gzip(self, data: bytes) -> bytes:
        return self._cached("gz", data, Compressor.compress_gzip)

    def compress_brotli(self, data: bytes) -> bytes:
        return self._cached("br", data, Compressor.compress_brotli)


class SiteStaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed, compressed static files; before the first ``collectstatic`` (tests that render pages without
    collecting files, ``manage.py check``) names are used as they are."""

    def stored_name(self, name: str) -> str:
        if not self.hashed_files and not self.exists(self.manifest_name):
            return name
        return super().stored_name(name)

    def create_compressor(self, **kwargs) -> Compressor:
        return CachingCompressor(**kwargs)


class PlotlyFinder(BaseFinder):
    """Finds ``plotly/plotly.min.js`` in the plotly package, and nothing else of its data folder (the Jupyter
    widget bundle, sample data sets and templates beside it are not site files)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(_PLOTLY_DIR))
        self.storage.prefix = "plotly"

    def check(self, **kwargs):
        return []

    def find(self, path: str, find_all: bool = False, **kwargs):
        if path != PLOTLY_JS:
            return [] if find_all else None
        found = str(_PLOTLY_DIR / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns):
        yield "plotly.min.js", self.storage
