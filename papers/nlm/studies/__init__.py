"""One study module per notebook: `notebooks/nlm/NN-some-topic.ipynb` drives `studies/some_topic.py`.

Each has one entry, `measure(cfg, run) -> dict`, whose `"metrics"` is exactly what its notebook
logs (the claims' metric names are made by small named functions beside it, unit-tested in
tests/nlm/test_nlm_studies.py); its other keys are what the notebook draws through `figures`. The reusable
computation lives in the modules named for it: `mainmodel`, `generation`, `sweep`, `windows`, `visits`,
`denoise`, `exact`, `thermo`. Training and the long Langevin runs go to `device` (`train.compute_device`
keeps a CUDA or ROCm GPU, sends anything else to the CPU); the measurements are made on the CPU, in numpy.
"""
