"""A real Celery app on Kombu's filesystem transport in a temporary folder, made the current app, so that a
test can read exactly which task messages were sent (name, arguments, queue) after a transaction commits."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from celery import Celery, current_app


@dataclass(frozen=True)
class Sent:
    task: str
    args: list
    queue: str


class RecordingBroker:
    def __init__(self, folder: Path):
        self.folder = folder
        (folder / "control").mkdir(parents=True, exist_ok=True)
        self.app = Celery("recording-broker", broker="filesystem://")
        self.app.conf.broker_transport_options = {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "control_folder": str(folder / "control"),
            "store_processed": False,
        }

    def sent(self) -> list[Sent]:
        """Every message in the broker, oldest first (by write time; messages written within the same
        clock tick may come in either order)."""
        out = []
        for path in sorted(self.folder.glob("*.msg"), key=lambda p: (p.stat().st_mtime_ns, p.name)):
            message = json.loads(path.read_text())
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            out.append(Sent(message["headers"]["task"], args, path.name.split(".")[-2]))
        return out


@contextmanager
def recording_broker(folder: Path) -> Iterator[RecordingBroker]:
    broker = RecordingBroker(folder)
    previous = current_app._get_current_object()
    broker.app.set_current()
    try:
        yield broker
    finally:
        previous.set_current()
