"""One module per notebook of `notebooks/diffusion/` (`NN-some-topic.ipynb` drives `some_topic.py`).

Each has one entry function `measure(cfg, ...) -> dict`: it runs the notebook's computation and returns
`"metrics"` (exactly what the notebook logs, plain floats, ints and bools) beside the arrays its figures
plot. The mapping from measurements to the claims' metric names lives in small named functions of each
module (unit-tested in tests/diffusion/test_diffusion_studies.py); the physics lives in the modules named
for it (`processes`, `thermo`, `landscape`, `franz_parisi`, `highdim`, `learned`).
"""
