"""One subpackage per reproduced paper; see each `papers/<id>/README.md`."""
