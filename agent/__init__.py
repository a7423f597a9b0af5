"""runner-agent: a light daemon on every CI runner that reads its health and reports it to the controller."""

__version__ = "0.1.0"
