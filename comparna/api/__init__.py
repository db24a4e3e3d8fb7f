"""The read-only REST API (Django REST framework, OpenAPI schema by drf-spectacular)."""
