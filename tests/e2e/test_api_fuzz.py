"""Fuzz the read-only API against its own OpenAPI schema (schemathesis): no request may end in a 5xx.

Runs in-process against the Django WSGI application on the test database filled with the site data, so
path ids and filter values hit real rows as well as missing ones. Also checks that responses conform to the
schema (status codes and bodies).
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = [pytest.mark.e2e, pytest.mark.django_db, pytest.mark.timeout(120)]

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_never_fails_and_conforms_to_its_schema(case, site):
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
