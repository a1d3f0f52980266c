"""TEMPLATE (replace this docstring): the paper's title, authors and arXiv link.

Toy paper of the template: A. Author, "Antithetic variates for a monotone integrand" (a stand-in, not a real
paper), https://arxiv.org/abs/0000.00000 -- replace with your paper's arXiv link (a test requires one).

Modules, each small and named for what it holds (replace with yours):

* `mc`        the integrand, its closed form and the Monte-Carlo estimators (Eqs. 1-3 of the toy)
* `studies`   one module per notebook: `measure(cfg, run)` returns the metrics it logs and what it plots
* `figures`   the figures the notebooks save
* `config`    the smoke / quick / full profiles, their bounds, `preflight` and `TUNED`
* `describe`  one line per profile key (the README's generated Profiles table)
* `cost`      the full profile's cost model (`benchmarks/full_cost.py`)
"""
