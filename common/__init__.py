"""Everything that crosses a process boundary: wire models, runner identity and auth helpers."""
