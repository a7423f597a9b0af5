"""Remediation: take a sick runner out of rotation, rerun its jobs elsewhere, clear the flake records."""
