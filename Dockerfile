FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH
RUN apt-get update && apt-get install -y --no-install-recommends \
      python3 python3-venv python3-dev build-essential cd-hit infernal infernal-doc bubblewrap \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt .
RUN python3 -m venv /opt/venv && pip install --no-cache-dir -r requirements.txt
COPY . .
# A throwaway data directory (and generated key) for the build step only.
RUN COMPARNA_DATA_DIR=/tmp/build-data python manage.py collectstatic --noinput -v 0 && rm -rf /tmp/build-data
EXPOSE 8000
CMD ["gunicorn", "comparna.wsgi", "-b", "0.0.0.0:8000", "-w", "4"]
