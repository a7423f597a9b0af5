"""runner-controller: ingest, store, analysis and remediation for a fleet of CI runners."""
