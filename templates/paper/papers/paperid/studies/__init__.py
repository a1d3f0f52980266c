"""One module per notebook of `notebooks/paperid/` (`NN-some-topic.ipynb` drives `some_topic.py`), each with
`measure(cfg, run) -> dict` (TEMPLATE: add a module here for each notebook you add)."""
