"""runnerctl: the operators' CLI, an HTTP client of runner-controller with kubectl's habits."""

__version__ = "0.1.0"
