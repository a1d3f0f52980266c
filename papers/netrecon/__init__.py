"""Network reconstruction may not mean dynamics prediction.

Z. Yu and H. Huang, arXiv:2409.04240, https://arxiv.org/abs/2409.04240

A random rate network (Sompolinsky-Crisanti-Sommers) is reconstructed from its trajectories almost
perfectly, yet in the chaotic phase a student built from the reconstructed couplings predicts the
teacher only for a time that grows like ln(1/error) / lambda. This package holds the model
(`rnn`), reconstruction (`recon`), Lyapunov analysis (`lyap`, `kernels`), dynamical mean-field theory
(`dmft`), prediction horizons (`predict`), standard errors (`estimates`), the worker tasks fanned out
with `common.parallel.pmap` (`tasks`, cached per run by `cache`), one study module per notebook
(`studies`), the figures (`figures`) and the profile table with the runner's contract (`config`).
"""
