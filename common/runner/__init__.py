"""The runner: `python -m common.reproduce` (see common/README.md, "The runner")."""
