"""GPU-agnostic backend shared by every paper of the reproduction monorepo.

`common` knows nothing about any paper. See `common/README.md` for the map of modules.
"""
