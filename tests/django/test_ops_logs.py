"""Log lines of the prediction path are JSON objects carrying the prediction, target and method ids.

The prediction runs through the real sandbox (predictors.programs.selftest_fold) from its Celery task
function; the records it logs are formatted by the formatter the settings' LOGGING configures.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.conf import settings

from comparna.ops.logs import JsonFormatter
from predictors.core.runners import SandboxRunner
from predictors.core.spec import PredictorSpec
from predictors.models import Prediction
from predictors.services import queue_predictions, register_spec
from predictors.tasks import run_prediction_task
from tests.factories import make_dataset, make_target

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed"),
]


def test_the_settings_log_json_lines_by_default():
    assert settings.LOGGING["handlers"]["console"]["formatter"] == "json"
    assert settings.LOGGING["formatters"]["json"]["()"] == "comparna.ops.logs.JsonFormatter"


def test_a_prediction_logs_a_json_line_with_its_ids(caplog):
    spec = PredictorSpec(
        name="selftest", program="selftest", version="1", time_limit_s=5.0, memory_limit_mb=256,
        argv=("{python}", "-m", "predictors.programs.selftest_fold", "{fasta}"),
    )
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    target = make_target("GGGGAAACCCC", "((((...))))", dataset=make_dataset("strand"))
    queue_predictions(versions=[version], targets=[target])
    prediction = Prediction.objects.get(method_version=version, target=target)

    with caplog.at_level(logging.INFO, logger="predictors.execution"):
        status = run_prediction_task(prediction.pk)
    assert status == "ok"
    records = [r for r in caplog.records if r.name == "predictors.execution"]
    assert records, "the prediction path logged nothing"
    line = JsonFormatter().format(records[-1])
    assert "\n" not in line
    data = json.loads(line)
    assert data["prediction_id"] == prediction.pk
    assert data["target_id"] == target.pk
    assert data["method_version_id"] == version.pk and data["method_id"] == version.method_id
    assert data["status"] == "ok" and data["level"] == "INFO" and data["logger"] == "predictors.execution"
    assert data["message"].startswith(f"prediction {prediction.pk}: ok in ")


def test_the_formatter_writes_exceptions_and_odd_values_as_json():
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        record = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "failed %s", ("it",), exc_info=__import__("sys").exc_info(),
            extra={"prediction_id": 7, "path": object(), "ids": (1, 2)},
        )
    data = json.loads(JsonFormatter().format(record))
    assert data["message"] == "failed it" and data["prediction_id"] == 7 and data["ids"] == [1, 2]
    assert "ValueError: bad" in data["exception"] and isinstance(data["path"], str)
