"""One study per notebook: `notebooks/asq/NN-topic.ipynb` calls `studies/topic.py: measure(cfg, run)`.

Each `measure` returns a dict whose `"metrics"` is exactly what its notebook logs, and whatever else the
notebook shows or plots (tables; the plots themselves are in `papers/asq/figures.py`). The mapping from
measurements to claim metric names is a small named function in each study, unit-tested in
`tests/asq/test_asq_studies.py`.

* `level_sets`     -- 01: the grids' level sets; weight error on synthetic and trained weights.
* `qat_comparison` -- 02: FP, LSQ and ASQ at 2/3/4 bits, the weight-grid ablation, the per-seed lists.
* `integer_lut`    -- 03: the integer / LUT path against fake quantization; storage and op accounting.
* `adapter`        -- 04: what the ASQ adapter's beta does over inputs, layers, classes and widths.
"""
