"""A broker that cannot be reached after commit is logged, never turned into a failure of stored work."""

from __future__ import annotations

import logging
import socket

import pytest
from celery import Celery

from comparna.services.dispatch import send_after_commit


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket is: nothing listens there


@pytest.mark.django_db
def test_unreachable_broker_is_logged_not_raised(django_capture_on_commit_callbacks, caplog):
    app = Celery("dispatch-test", broker=f"redis://127.0.0.1:{closed_port()}/0")
    app.conf.update(task_publish_retry=False, broker_connection_retry=False, broker_connection_timeout=1,
                    broker_connection_max_retries=0)

    @app.task(name="dispatch_test.noop")
    def noop(x):
        return x

    with caplog.at_level(logging.ERROR, logger="comparna.services.dispatch"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            send_after_commit(noop, [(1,), (2,)])
    assert len(callbacks) == 1
    assert "could not send dispatch_test.noop (2 of 2 not sent)" in caplog.text
