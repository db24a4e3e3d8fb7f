"""What the advisor's pages show of a request, assembled from its stored rows (a few small queries)."""

from __future__ import annotations

from comparna.advice import results
from comparna.advice.models import AdviceQuery, AdviceRequest, AdviceRun, Status
from comparna.advice.services import runnable_versions


def method_choices() -> list[dict]:
    """The methods a user may tick: those the advisor can run, by name."""
    return sorted(
        ({"id": v.method_id, "name": v.method.name, "max_length": int(v.spec.get("max_length") or 0)}
         for v in runnable_versions()),
        key=lambda m: m["name"].casefold(),
    )


def _run_row(run: AdviceRun, length: int) -> dict:
    result = run.result or {}
    return {
        "id": run.pk,
        "method": run.method.name,
        "method_id": run.method_id,
        "role": run.role,
        "status": run.status,
        "ok": bool(result.get("ok")),
        "outcome": result.get("status", ""),
        "message": result.get("message", ""),
        "runtime_s": result.get("runtime_s"),
        "n_pairs": result.get("n_pairs"),
        "dot_bracket": result.get("dot_bracket"),
        "probabilities": result.get("n_probabilities"),
        "profile": results.pairing_profile(result, length) if run.status == Status.DONE else None,
        "structure": results.structure_of(result, length) if run.status == Status.DONE else None,
    }


def query_data(query: AdviceQuery) -> dict:
    """One sequence's evidence, its runs, their agreement and their consensus."""
    length = len(query.sequence)
    runs = [_run_row(run, length) for run in query.runs.select_related("method")]
    finished = [r for r in runs if r["structure"] is not None]
    structures = [r["structure"] for r in finished]
    return {
        "position": query.position,
        "name": query.name,
        "sequence": query.sequence,
        "status": query.status,
        "error": query.error,
        "evidence": query.evidence,
        "runs": runs,
        "finished": [r["method"] for r in finished],
        "agreement": results.agreement(structures),
        "consensus": results.consensus(structures, length),
        "pending": query.status in (Status.QUEUED, Status.RUNNING)
        or any(r["status"] in (Status.QUEUED, Status.RUNNING) for r in runs),
    }


def request_data(request: AdviceRequest) -> dict:
    queries = [query_data(q) for q in request.queries.all()]
    runs = [r for q in queries for r in q["runs"]]
    done = sum(1 for r in runs if r["status"] in (Status.DONE, Status.FAILED))
    return {
        "token": request.token,
        "created_at": request.created_at,
        "expires_at": request.expires_at,
        "status": request.status,
        "pending": any(q["pending"] for q in queries),
        "queries": queries,
        "progress": {"runs_done": done, "runs": len(runs),
                     "sequences_done": sum(1 for q in queries if q["status"] in (Status.DONE, Status.FAILED)),
                     "sequences": len(queries)},
    }


def json_ready(data: dict) -> dict:
    """:func:`request_data` without the structure objects (the API's answer)."""
    out = dict(data)
    out["queries"] = []
    for q in data["queries"]:
        q = dict(q)
        q["runs"] = [
            {k: v for k, v in r.items() if k != "structure"}
            | {"pairs": sorted(r["structure"].pairs) if r["structure"] is not None else None}
            for r in q["runs"]
        ]
        out["queries"].append(q)
    return out
