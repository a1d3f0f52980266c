"""ACL tests run torch on one thread: the models are tiny, and a second OpenMP thread on a shared
2-core machine mostly spins (10-100x slower under load)."""
import torch

torch.set_num_threads(1)
