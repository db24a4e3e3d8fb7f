"""Page weight: the heaviest page's HTML and the bytes a first visit to a ranking page transfers.

Starts the production stack (PostgreSQL, Redis, gunicorn, collected static files) on loopback and fills it
with the deterministic site data of ``tests/web_data.py`` at full size: ``--strand`` RNA STRAND-like targets
of 40..``--max-length`` nt (1701 = the non-redundant RNA STRAND set), ``--pdb`` PDB-like targets, the five
methods of web_data plus ``--extra-methods`` more (12 in all by default), every prediction scored, three dated
ranking snapshots per subset. Then:

- every public page a visitor reaches (home, rankings, every subset ranking and matrix, comparisons, every
  method and its predictions list, the target browser, the longest targets' pages, datasets, snapshots) is
  fetched and its HTML size recorded; the heaviest must be <= 300 KB;
- headless Chromium opens the RNA STRAND "all" ranking page in a fresh profile (empty cache) and the bytes
  on the wire of every response are summed (CDP ``Network.loadingFinished.encodedDataLength``: headers and
  compressed bodies); they must be <= 1.5 MB.

Reported as costs (bytes): system = the first visit as served (hashed, brotli-compressed static files);
baseline = the same responses fetched without compression (what the site sent before: plotly.js raw);
limit = the page's own HTML alone (every static file already cached).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench  # noqa: E402
from tests.e2e.stack import production_stack  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
RANKING = "/rankings/rnastrand/all/extended/"
HTML_LIMIT = 300_000
VISIT_LIMIT = 1_500_000

# Run inside ``manage.py shell``: more methods of varied quality on every target, then new snapshots.
EXTRA_METHODS = """
import random
from comparna.models import Subset, Target
from comparna.rna.canonical import structure_from_text
from comparna.services.rankings import rank_subset
from predictors.models import Method
from tests.web_data import MethodPlan, _predict, _version

rng = random.Random(23)
targets = list(Target.objects.prefetch_related("references").order_by("pk"))
for k in range({n}):
    plan = MethodPlan(f"ExtraFold{{k + 1}}", "single", 0.35 + 0.5 * rng.random(), rng.randint(1, 4),
                      fail_every=rng.choice([0, 0, 9, 13]))
    method = Method.objects.create(name=plan.name, input_kind="single", description="A bench predictor.")
    version = _version(method, plan)
    for i, t in enumerate(targets):
        ref = next(r for r in t.references.all() if r.definition == "extended")
        _predict(rng, version, t, sorted(structure_from_text(t.length, ref.pairs).pairs), plan, i)
for subset in Subset.objects.all():
    for definition in subset.definitions():
        rank_subset(subset=subset, definition=definition, seed=11)
"""

IDS = """
from comparna.models import Dataset, Subset, Target
from predictors.models import Method
import json
methods = list(Method.objects.order_by("name").values_list("pk", flat=True))
longest = list(Target.objects.order_by("-length").values_list("pk", flat=True)[:5])
subsets = [(s.dataset.slug, s.slug, d)
           for s in Subset.objects.select_related("dataset") for d in s.definitions()]
print("IDS " + json.dumps({"methods": methods, "longest": longest, "subsets": subsets,
                           "datasets": list(Dataset.objects.values_list("slug", flat=True))}))
"""


def public_pages(ids: dict) -> list[str]:
    pages = ["/", "/about/", "/datasets/", "/rankings/", "/methods/", "/targets/", "/snapshots/"]
    pages += [f"/rankings/{d}/" for d in ids["datasets"]]
    for dataset, subset, definition in ids["subsets"]:
        ranking = f"/rankings/{dataset}/{subset}/{definition}/"
        pages += [ranking, ranking + "matrix/"]
    m = ids["methods"]
    pages += [f"{RANKING}compare/{a}/{b}/" for a, b in zip(m, m[1:], strict=False)][:4]
    pages += [f"/methods/{pk}/" for pk in m] + [f"/methods/{pk}/predictions/" for pk in m]
    pages += [f"/targets/{pk}/" for pk in ids["longest"]]
    return pages


def first_visit(url: str) -> dict:
    """Bytes on the wire of every response of a first visit to ``url`` in a fresh Chromium profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        urls, sizes, encodings = {}, {}, {}
        def received(event):
            headers = {k.lower(): v for k, v in event["response"]["headers"].items()}
            urls[event["requestId"]] = event["response"]["url"]
            encodings[event["requestId"]] = headers.get("content-encoding", "")

        cdp.on("Network.responseReceived", received)
        cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
        response = page.goto(url, wait_until="networkidle")
        page.wait_for_function("[...document.querySelectorAll('[data-figure]')].every(d => "
                               "d.classList.contains('rendered'))", timeout=60_000)
        status = response.status if response else 0
        browser.close()
    items = [
        {"url": urls.get(k, "?"), "bytes": v, "encoding": encodings.get(k, "")} for k, v in sizes.items()
    ]
    return {"status": status, "total": sum(i["bytes"] for i in items), "responses": items}


def main(argv: list[str] | None = None) -> int:
    smoke = {"strand": 12, "pdb": 4, "max_length": 200, "extra_methods": 1}
    bench = Bench("page_weight", __doc__, smoke=smoke)
    p = bench.parser
    p.add_argument("--strand", type=int, default=1701, help="RNA STRAND-like targets (1701)")
    p.add_argument("--pdb", type=int, default=60, help="PDB-like targets (60)")
    p.add_argument("--max-length", type=int, default=1500, help="longest RNA STRAND-like target, nt (1500)")
    p.add_argument("--extra-methods", type=int, default=7, help="methods beyond web_data's five (7)")
    args = bench.parse(argv)

    with bench.measuring(), tempfile.TemporaryDirectory(prefix="comparna-bench-weight-") as tmp:
        env_extra = {"COMPARNA_STATIC_ROOT": str(Path(tmp) / "collected"), "COMPARNA_LOG_LEVEL": "WARNING"}
        with production_stack(extra_env=env_extra) as stack:
            stack.manage("collectstatic", "--noinput", "-v", "0")
            t0 = time.perf_counter()
            build = (f"build_site_data(n_strand={args.strand}, n_pdb={args.pdb}, "
                     f"max_length={args.max_length})")
            stack.manage("shell", "-c", "from tests.web_data import build_site_data; " + build, timeout=7200)
            if args.extra_methods:
                stack.manage("shell", "-c", EXTRA_METHODS.format(n=args.extra_methods), timeout=7200)
            build_s = time.perf_counter() - t0
            out = stack.manage("shell", "-c", IDS).stdout
            ids = json.loads(next(x[4:] for x in out.splitlines() if x.startswith("IDS ")))
            base = stack.start_web()

            html_sizes, statuses = {}, {}
            for path in public_pages(ids):
                r = requests.get(base + path, timeout=600)
                statuses[path] = r.status_code
                html_sizes[path] = len(r.content)
            heaviest = max(html_sizes, key=html_sizes.get)

            visit = first_visit(base + RANKING)
            identity = 0  # the same responses, uncompressed
            for item in visit["responses"]:
                r = requests.get(item["url"], headers={"Accept-Encoding": "identity"}, timeout=120)
                identity += len(r.content) + sum(len(k) + len(v) + 4 for k, v in r.headers.items())
            page_html = next(i["bytes"] for i in visit["responses"] if i["url"].endswith(RANKING))

        bench.check("every page answered 200", all(s == 200 for s in statuses.values()))
        bench.check("first visit answered 200", visit["status"] == 200)
        bench.check(f"heaviest page HTML <= {HTML_LIMIT} bytes", html_sizes[heaviest] <= HTML_LIMIT)
        bench.check(f"first visit to a ranking page <= {VISIT_LIMIT} bytes", visit["total"] <= VISIT_LIMIT)
        bench.check("plotly.js came brotli-compressed", any(
            "plotly" in i["url"] and i["encoding"] == "br" for i in visit["responses"]))
        bench.compare("first visit to the RNA STRAND ranking page", unit="bytes transferred",
                      system=(visit["total"], "as served: hashed static files, brotli, HTML uncompressed"),
                      baseline=(identity, "the same responses without compression"),
                      limit=(page_html, "the page's HTML alone (static files already cached)"))
        top = sorted(html_sizes.items(), key=lambda kv: -kv[1])[:8]
        bench.details.update({
            "heaviest_page": {"path": heaviest, "bytes": html_sizes[heaviest]},
            "heaviest_pages": dict(top),
            "pages_measured": len(html_sizes),
            "first_visit": {"total": visit["total"], "responses": sorted(
                ({"url": re.sub(r"^https?://[^/]+", "", i["url"]), "bytes": i["bytes"],
                  "encoding": i["encoding"]} for i in visit["responses"]), key=lambda i: -i["bytes"])},
            "setup": {"strand": args.strand, "pdb": args.pdb, "max_length": args.max_length,
                      "methods": 5 + args.extra_methods, "build_s": round(build_s, 1)},
        })
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
