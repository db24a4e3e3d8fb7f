"""Image archives uploaded on the owner's registration page: received under a size cap, checked, kept.

Django would otherwise write an upload of any size to disk before the view could look at it, so
:class:`CappedUploadHandler` (first in ``FILE_UPLOAD_HANDLERS``) stops receiving as soon as a request's
files exceed the archive cap and resets the connection.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload

from comparna.bounded import TooLarge
from comparna.owners.models import ImageUpload
from predictors.core.image_archive import ArchiveRejected, prepare_archive
from predictors.core.owner_image import archives_dir

MB = 2**20


def max_bytes() -> int:
    return settings.IMAGE_ARCHIVE_MAX_MB * MB


class CappedUploadHandler(FileUploadHandler):
    """Refuses request bodies whose files together exceed the image-archive cap, while they arrive."""

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.received = getattr(self, "received", 0)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received = getattr(self, "received", 0) + len(raw_data)
        if self.received > max_bytes():
            self.request.upload_too_large = True
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


class UploadRefused(ValueError):
    """An archive that is not kept; the message is for the owner."""


def store_image_upload(*, user, uploaded: UploadedFile) -> ImageUpload:
    """Check an uploaded archive (:func:`predictors.core.image_archive.prepare_archive`), keep its sanitised
    copy and record it as the user's; the same archive uploaded again is the same row."""
    if uploaded.size > max_bytes():
        raise UploadRefused(f"the archive is over the {settings.IMAGE_ARCHIVE_MAX_MB} MB limit")
    dest = archives_dir()
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    incoming = dest / ".incoming"
    incoming.mkdir(mode=0o700, exist_ok=True)
    path = getattr(uploaded, "temporary_file_path", None)
    tmp = None
    try:
        if path is not None:
            src = Path(path())
        else:  # small files stay in memory: write them out
            fd, name = tempfile.mkstemp(dir=incoming, suffix=".tar")
            tmp = Path(name)
            with open(fd, "wb") as fh:
                for chunk in uploaded.chunks():
                    fh.write(chunk)
            src = tmp
        info = prepare_archive(
            src, dest, max_bytes=max_bytes(), max_expanded_bytes=settings.IMAGE_ARCHIVE_MAX_EXPANDED_MB * MB
        )
    except (ArchiveRejected, TooLarge) as exc:
        raise UploadRefused(str(exc)) from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    row, _ = ImageUpload.objects.update_or_create(
        owner=user,
        sha256=info.sha256,
        defaults={"filename": (uploaded.name or "")[:200], "size": info.size, "info": info.as_dict()},
    )
    return row
