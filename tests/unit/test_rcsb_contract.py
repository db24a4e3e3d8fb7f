"""The RCSB Search query of ingest/pdb/rcsb.py against the RCSB's own Python package, rcsb-api 1.7.3, offline.

rcsb-api fetches the Search API's attribute schemas from search.rcsb.org when ``rcsbapi.search`` is imported;
its fallback reads them from ``rcsbapi/search/resources/``, which the package's sdist ships and its wheel
leaves out (``[tool.hatch.build.targets.wheel] exclude = ["/rcsbapi/*/resources/*.json"]``). The two files
of the 1.7.3 sdist are kept gzipped in tests/data/rcsb_api/ (sha256 of the originals checked below) and
handed to that fallback, with every network fetch refused. Then:

- the package's own query builders (``AttributeQuery``, ``&``, ``Session`` request options) produce the same
  query and request options as ``rna_release_query``;
- every attribute our query filters or sorts on exists in the schema, on the ``text`` service we name, with
  the type of the value we send (an integer count, ISO dates for the release date range).

The Data API holdings status (ingest/pdb/holdings.py, REST ``/holdings/status/{id}``) is not covered: the
package ships the GraphQL schema and the REST core schemas, neither of which describes that endpoint.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
from pathlib import Path

import pytest

from ingest.pdb.rcsb import rna_release_query

pytest.importorskip("rcsbapi", reason="rcsb-api (requirements.txt) is not installed")

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "rcsb_api"
# sha256 of the files in rcsb_api-1.7.3.tar.gz
# (the sdist's own sha256: b9b2c147c098a4c482e34a2c5998b8680d3386c3550dce57fe9d57359eb59d0b)
SHA256 = {
    "structure_schema.json": "f2c0f0a8bfafb1495d9136e83ebb4d06a78e25821aa3fe22c22c95b77020cc7f",
    "chemical_schema.json": "2e697d616d10f0333f4b006924d7563082d1d8007bee24f8a9390be0c8c18b29",
}
SINCE, UNTIL = dt.date(2024, 1, 3), dt.date(2024, 1, 9)


@pytest.fixture(scope="module")
def schema_files(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("rcsb_api_schemas")
    files = {}
    for name, digest in SHA256.items():
        data = gzip.decompress((SCHEMAS / f"{name}.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} is not the file of rcsb-api 1.7.3"
        (out / name).write_bytes(data)
        files[name] = out / name
    return files


@pytest.fixture(scope="module")
def rcsbapi_search(schema_files):
    """``rcsbapi.search`` loaded from the shipped schema files through the package's own fallback."""
    import importlib.util
    import sys

    import httpx
    import rcsbapi

    # rcsbapi.search's __init__ builds the schema at import: load its schema module first, by file, and
    # point that module's fallback at the shipped files before the package is imported.
    assert "rcsbapi.search" not in sys.modules, "rcsbapi.search was imported before the schema was set"
    path = Path(rcsbapi.__file__).parent / "search" / "search_schema.py"
    spec = importlib.util.spec_from_file_location("rcsbapi.search.search_schema", path)
    search_schema = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = search_schema
    spec.loader.exec_module(search_schema)

    def no_network(*args, **kwargs):
        raise AssertionError(f"rcsb-api tried the network: {args!r}")

    defaults = search_schema.SearchSchema.__init__.__defaults__
    # (refetch, use_fallback, reload, struct url, struct file, chem url, chem file)
    offline = (False, True, True, defaults[3], str(schema_files["structure_schema.json"]), defaults[5],
               str(schema_files["chemical_schema.json"]))
    saved_get = httpx.get
    search_schema.SearchSchema.__init__.__defaults__ = offline
    httpx.get = no_network
    try:
        import rcsbapi.search as search
        import rcsbapi.search.search_query as search_query

        yield search, search_query
    finally:
        httpx.get = saved_get
        search_schema.SearchSchema.__init__.__defaults__ = defaults


def _terminals(node: dict) -> list[dict]:
    if node["type"] == "terminal":
        return [node]
    return [t for child in node["nodes"] for t in _terminals(child)]


def _without_ids(node: dict) -> dict:
    """``node`` without the package's node ids and its explicit ``negation: false`` (the API's default)."""
    node = {k: v for k, v in node.items() if k != "node_id"}
    if "parameters" in node and node["parameters"].get("negation") is False:
        node["parameters"] = {k: v for k, v in node["parameters"].items() if k != "negation"}
    if "nodes" in node:
        node["nodes"] = [_without_ids(n) for n in node["nodes"]]
    return node


def test_the_package_builds_the_same_query_and_request_options(rcsbapi_search):
    search, search_query = rcsbapi_search
    ours = rna_release_query(SINCE, UNTIL, start=200, rows=100)
    built = search.AttributeQuery(
        "rcsb_entry_info.polymer_entity_count_RNA", "greater", 0
    ) & search.AttributeQuery(
        "rcsb_accession_info.initial_release_date",
        "range",
        {"from": SINCE.isoformat(), "to": UNTIL.isoformat(), "include_lower": True, "include_upper": True},
    )
    session = search_query.Session(
        built,
        return_type="entry",
        rows=100,
        return_content_type=["experimental"],
        sort=[search.Sort("rcsb_accession_info.initial_release_date", "asc")],
    )
    params = json.loads(json.dumps(session._make_params(start=200)))
    assert params["return_type"] == ours["return_type"]
    assert _without_ids(params["query"]) == _without_ids(ours["query"])
    theirs_options, our_options = params["request_options"], ours["request_options"]
    for key in ("paginate", "results_content_type", "sort"):
        assert theirs_options[key] == our_options[key], key
    # what the package adds beyond ours is a documented option whose default the server applies for us
    assert set(theirs_options) - set(our_options) <= {"results_verbosity"}


SCHEMA_TYPES = {"integer": int, "number": (int, float)}


def _schema_node(structure_schema: dict, attribute: str) -> dict:
    node = structure_schema
    for part in attribute.split("."):
        while node.get("type") == "array":
            node = node["items"]
        node = node["properties"][part]
    return node


def _iso_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text[:10])
    except ValueError:
        return False
    return True


def _value_fits(node: dict, operator: str, value) -> bool:
    if node.get("format") in ("date", "date-time"):
        values = [value["from"], value["to"]] if operator == "range" else [value]
        return all(isinstance(v, str) and _iso_date(v) for v in values)
    expected = SCHEMA_TYPES.get(node.get("type"), str)
    values = [value["from"], value["to"]] if operator == "range" else [value]
    return all(isinstance(v, expected) and not isinstance(v, bool) for v in values)


def check_query(query: dict, *, search, structure_schema: dict) -> list[str]:
    """Problems of ``query`` against the shipped schema ([] when every attribute, service and value fits)."""
    problems = []
    attributes = set(search.search_attributes.list())
    for terminal in _terminals(query["query"]):
        p = terminal["parameters"]
        if p["attribute"] not in attributes:
            problems.append(f"{p['attribute']}: not an attribute of the Search API schema")
            continue
        service = search.search_attributes.get_attribute_type(p["attribute"])
        if service != terminal["service"]:
            problems.append(f"{p['attribute']}: on service {service!r}, queried on {terminal['service']!r}")
        node = _schema_node(structure_schema, p["attribute"])
        if not _value_fits(node, p["operator"], p["value"]):
            problems.append(f"{p['attribute']}: value {p['value']!r} does not fit type {node.get('type')}")
    for sort in query["request_options"].get("sort", []):
        if sort["sort_by"] != "score" and sort["sort_by"] not in attributes:
            problems.append(f"sort by {sort['sort_by']}: not an attribute of the Search API schema")
    return problems


def test_every_attribute_service_and_value_fits_the_shipped_schema(rcsbapi_search, schema_files):
    search, _ = rcsbapi_search
    structure = json.loads(schema_files["structure_schema.json"].read_text())
    query = rna_release_query(SINCE, UNTIL)
    assert check_query(query, search=search, structure_schema=structure) == []


def test_the_check_finds_a_wrong_attribute_service_or_value(rcsbapi_search, schema_files):
    search, _ = rcsbapi_search
    structure = json.loads(schema_files["structure_schema.json"].read_text())
    query = rna_release_query(SINCE, UNTIL)
    count, dates = _terminals(query["query"])
    count["parameters"]["attribute"] = "rcsb_entry_info.polymer_entity_count_rna"  # wrong case
    dates["service"] = "full_text"
    dates["parameters"]["value"]["from"] = "last week"
    query["request_options"]["sort"][0]["sort_by"] = "rcsb_accession_info.release_date"
    problems = check_query(query, search=search, structure_schema=structure)
    assert len(problems) == 4, problems
