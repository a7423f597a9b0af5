"""Turning what arrives (JSON results, JUnit XML, agent reports, webhooks) into stored rows."""
