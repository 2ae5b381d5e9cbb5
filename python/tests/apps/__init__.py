"""Replica apps for the end-to-end tests: the same prime service as
`fulcrum backend prime` (GET /prime/{n}, GET /healthz), as a Starlette app
(ASGI, for uvicorn) and a Flask app (WSGI, for gunicorn), each wrapped in
fulcrum_client's monitor. Configured by environment variables (settings.py);
started by e2e_harness."""
