"""The HTTP API under /v1, one router module per resource."""
