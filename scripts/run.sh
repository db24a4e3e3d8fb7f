#!/usr/bin/env bash
# Runs CompaRNA in its embedded set-up (SQLite + filesystem Celery broker unless DATABASE_URL /
# CELERY_BROKER_URL are set): migrates, imports RNA STRAND and ArchiveII, syncs the predictor catalogue, queues the
# predictions, then starts four workers (queues testrun+predict(+develop), testrun alone, default, and families at a
# lower CPU priority), beat and the web server on 127.0.0.1:8000, and imports the PDB-derived sets beside them.
# Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export COMPARNA_DATA_DIR="${COMPARNA_DATA_DIR:-$PWD/var}"
mkdir -p "$COMPARNA_DATA_DIR/logs"
# Locally, rankings are refreshed every 3 minutes instead of nightly, so the site fills in while the
# predictions run (a recomputation happens only when its inputs changed).
export COMPARNA_RANKING_INTERVAL_S="${COMPARNA_RANKING_INTERVAL_S:-180}"
logs="$COMPARNA_DATA_DIR/logs"

$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput -v 0
$PY manage.py sync_predictors
# The declared datasets (ingest/datasets/catalogue.py) ship in data/ (provenance, licence and checksums
# in data/README.md); `import_dataset` also checks a declared file's sha256 itself.
if [ -z "${COMPARNA_RNASTRAND:-}" ]; then
  (cd data && sha256sum --check --quiet SHA256SUMS) || { echo "!! data/ does not match data/SHA256SUMS" >&2; exit 1; }
fi
$PY manage.py import_dataset rnastrand "${COMPARNA_RNASTRAND:-data/rna_strand_v2.0_bpseq.tar.gz}"
$PY manage.py import_dataset archiveii
$PY manage.py queue_predictions
# The PDB set from the first start: a worker polls the RCSB for every RNA entry released since
# COMPARNA_PDB_BENCHMARK_START if it answers; if not, the home page and the log say so and beat tries again.
$PY manage.py start_pdb_set

pids=()
imports=()
cleanup() { kill "${pids[@]}" "${imports[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
.venv/bin/celery -A comparna.celery:app worker -Q testrun,predict -n predict@%h -c "${COMPARNA_PREDICT_CONCURRENCY:-2}" \
  -l info > "$logs/worker-predict.log" 2>&1 & pids+=($!)
# The predict worker also takes the development lane ("develop", predictors/scheduling.py LANES) in turn with the
# public backlog; a slot reserved for test runs answers a method author's test run at once, whatever runs.
.venv/bin/celery -A comparna.celery:app worker -Q testrun -n testrun@%h -c 1 -l info > "$logs/worker-testrun.log" 2>&1 & pids+=($!)
.venv/bin/celery -A comparna.celery:app worker -Q default -n default@%h -c 1 -l info > "$logs/worker-default.log" 2>&1 & pids+=($!)
# Rfam family assignment (an hour or more of cmscan after the imports) on its own worker, at a lower CPU
# priority: on a laptop's few cores the predictions and the rankings come first.
nice -n 10 .venv/bin/celery -A comparna.celery:app worker -Q families -n families@%h -c 1 -l info \
  > "$logs/worker-families.log" 2>&1 & pids+=($!)
.venv/bin/celery -A comparna.celery:app beat -l info > "$logs/beat.log" 2>&1 & pids+=($!)
# The PDB-derived sets (data/pdb_derived/, issue 38) are imported once the workers run, so that RNA STRAND's and
# ArchiveII's first rankings do not wait for them; each import queues its targets at its declared priority
# (predictors/priorities.py): the small PDB test sets right after those first rankings' targets, then the rest.
# An import is idempotent: one that fails (e.g. SQLite busy beside the workers) is tried again.
( for name in spot-rna-pdb pdb-hires rna3db-2d bprna-ts0; do
    for attempt in 1 2 3; do
      nice -n 5 $PY manage.py import_dataset "$name" --no-progress >> "$logs/import-pdb-derived.log" 2>&1 && break
      echo "!! import_dataset $name failed (attempt $attempt; see $logs/import-pdb-derived.log)" >&2; sleep 20
    done
  done ) & imports+=($!)
echo "==> CompaRNA on http://127.0.0.1:8000/  (logs in $logs; predictions fill in as workers run)"
.venv/bin/gunicorn comparna.wsgi -b "${COMPARNA_BIND:-127.0.0.1:8000}" -w 2 --access-logfile - &
pids+=($!)
wait -n "${pids[@]}"
