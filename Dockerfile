# LoopGuard gateway: slim image, non-root, embedded defaults (in-memory state, default policy).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True

WORKDIR /app
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY policies ./policies
# A regular (non-editable) install: the policy packs travel inside the package.
RUN pip install --no-cache-dir ".[fast]" && rm -rf /app/gateway

RUN useradd --create-home --uid 10001 loopguard
USER loopguard

EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"

# Bind all interfaces inside the container; the config file (LOOPGUARD_CONFIG) may set the rest.
ENTRYPOINT ["loopguard", "serve", "--host", "0.0.0.0", "--port", "8080"]
