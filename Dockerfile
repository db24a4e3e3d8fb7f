# The image every service of docker-compose.yml runs (web, both workers, beat); tests/unit/test_deployment.py
# checks that it provides what those commands need (postgresql-client: manage.py backup/restore).
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 PATH=/app/.venv/bin:$PATH \
    COMPARNA_VENVS_DIR=/opt/comparna/venvs
RUN apt-get update && apt-get install -y --no-install-recommends \
      python3 python3-venv python3-dev build-essential cd-hit infernal infernal-doc bubblewrap postgresql-client \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The virtualenv where the scripts and the sandbox expect it (.venv beside manage.py); .dockerignore keeps
# the host's .venv, .venvs, var/ (database, keys, logs) and .git out of the build context.
COPY requirements.txt .
RUN python3 -m venv .venv && .venv/bin/pip install --no-cache-dir -r requirements.txt
COPY . .
# The predictor programs the prediction worker runs: Debian's vienna-rna (RNAPKplex), the methods with a
# virtualenv of their own (in $COMPARNA_VENVS_DIR), LinearFold-C, the Numba cache. No Podman image is
# built inside the image (COMPARNA_SKIP_IMAGE=1): methods that need a container engine are left out of the
# catalogue, as the script says in its output.
RUN COMPARNA_SKIP_IMAGE=1 bash scripts/install_predictors.sh && rm -rf /var/lib/apt/lists/*
# Static files into STATIC_ROOT (/app/staticfiles); a throwaway data directory (and generated key) for the
# build step only.
RUN COMPARNA_DATA_DIR=/tmp/build-data python manage.py collectstatic --noinput -v 0 && rm -rf /tmp/build-data
EXPOSE 8000
CMD ["gunicorn", "comparna.wsgi", "-b", "0.0.0.0:8000", "-w", "4"]
