"""Adam on one flat buffer: torch's Adam update, run once over all of a group's tensors instead of once per tensor.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539 (the code GAN, its MMD null and the 2-D autoencoders are small MLPs: on the CPU
their Adam steps are bound by the number of tensor operations, about eight per parameter tensor and step, not by
the arithmetic).

`FlatAdam` is `torch.optim.Adam` (no weight decay, no amsgrad) whose parameters, first and second moments are
views into flat buffers of the group (each tensor on a 64-byte boundary, as a tensor of its own); a step copies the
gradients into one flat buffer (one call) and applies torch's per-tensor
update (`_single_tensor_adam`: lerp, mul + addcmul, sqrt / bias correction + eps, addcdiv; the same scalars from
the same step count) to the flat buffers: eight operations per step instead of eight per tensor, the same
elementwise operations on the same values, so the same numbers bit for bit (tests/acl/test_acl_flatadam.py
checks it against torch's Adam over a training run). Its `state_dict` is torch's Adam's (per-parameter tensors);
a state loaded into it (or a parameter whose storage was replaced) is copied into fresh flat buffers at the next
step. Off the CPU, or when a parameter has no gradient, or with options it does not cover, it is torch's Adam.
"""
from __future__ import annotations

import torch


ALIGN = 16   # elements: 64 bytes of float32


class FlatAdam(torch.optim.Adam):
    """torch's Adam with the update of each parameter group run on flat buffers on the CPU (module docstring)."""

    def __init__(self, params, lr: float, **kw):
        super().__init__(params, lr, foreach=True, **kw)
        self._flat: dict[int, dict] = {}

    def _covered(self, group: dict, params: list) -> bool:
        return (len(params) > 0 and all(p.grad is not None for p in params)
                and all(p.device.type == "cpu" and not p.grad.is_sparse and not p.is_complex() for p in params)
                and not group["amsgrad"] and not group["maximize"] and group["weight_decay"] == 0
                and not group["capturable"] and not group["differentiable"] and not group.get("fused")
                and not torch.is_tensor(group["lr"]) and not any(torch.is_tensor(b) for b in group["betas"]))

    def _views_valid(self, gi: int, params: list) -> bool:
        """The group's parameters and moments are still the views `_flatten` made (a loaded state dict, or a
        parameter whose storage was replaced, e.g. by `Module.to`, is not)."""
        flat = self._flat.get(gi)
        if flat is None or len(flat["ptrs"]) != len(params):
            return False
        state = self.state
        for p, ptr, m, v in zip(params, flat["ptrs"], flat["m"], flat["v"]):
            st = state.get(p)
            if st is None or p.data_ptr() != ptr or st.get("exp_avg") is not m or st.get("exp_avg_sq") is not v \
                    or st.get("step") is not flat["step"]:
                return False
        return True

    @torch.no_grad()
    def _flatten(self, gi: int, params: list) -> bool:
        """Copy the group's parameters and moments into flat buffers and make them views of those; False if the
        parameters' step counts differ (some stepped without the others): then torch's update goes on."""
        states = [self.state[p] for p in params]
        fresh = [len(st) == 0 for st in states]
        if any(fresh) and not all(fresh):
            return False
        steps = {float(st["step"]) for st in states} if not fresh[0] else {0.0}
        if len(steps) != 1:
            return False
        dt = params[0].dtype
        if any(p.dtype != dt for p in params):
            return False
        offsets, o = [], 0
        for p in params:   # each tensor starts on a 64-byte boundary, as a tensor of its own does (BLAS kernels may
            offsets.append(o)   # take another path, and round otherwise, on unaligned data); the gaps stay zero
            o += -(-p.numel() // ALIGN) * ALIGN
        P, M, V, G = (torch.zeros(o, dtype=dt) for _ in range(4))
        step = torch.tensor(0.0, dtype=torch.float32) if fresh[0] else states[0]["step"].detach().clone()
        for p, st, off in zip(params, states, offsets):
            n = p.numel()
            P[off:off + n].copy_(p.detach().reshape(-1))
            if not fresh[0]:
                M[off:off + n].copy_(st["exp_avg"].reshape(-1))
                V[off:off + n].copy_(st["exp_avg_sq"].reshape(-1))
            p.data = P[off:off + n].view_as(p)
            st["exp_avg"] = M[off:off + n].view_as(p)
            st["exp_avg_sq"] = V[off:off + n].view_as(p)
            st["step"] = step   # one tensor for the group (torch's Adam: a CPU float per parameter): they step together
        self._flat[gi] = {"P": P, "M": M, "V": V, "G": G, "step": step, "ptrs": [p.data_ptr() for p in params],
                          "m": [self.state[p]["exp_avg"] for p in params],
                          "v": [self.state[p]["exp_avg_sq"] for p in params],
                          "g": [G[off:off + p.numel()].view_as(p) for p, off in zip(params, offsets)]}
        return True

    def zero_grad(self, set_to_none: bool = True) -> None:
        """torch's: with `set_to_none`, every parameter's gradient dropped (here without torch's profiler record
        around the loop, which cost about as much as the loop for these few tensors)."""
        if not set_to_none:
            return super().zero_grad(False)
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None
        return None

    @torch.no_grad()
    def step(self, closure=None):
        """torch's Adam step on the flat buffers (module docstring). torch wraps an optimizer's `step` in a profiler
        record and its step hooks unless the method says it is `hooked` (below): this one is run as it is, so hooks
        registered with `register_step_pre_hook` / `register_step_post_hook` are not called (this repository registers none)."""
        if closure is not None:
            return super().step(closure)
        rest = []
        for gi, group in enumerate(self.param_groups):
            params = list(group["params"])
            if not self._covered(group, params) or not (self._views_valid(gi, params) or self._flatten(gi, params)):
                rest.append(gi)
                continue
            flat = self._flat[gi]
            P, M, V, step_t = flat["P"], flat["M"], flat["V"], flat["step"]
            beta1, beta2 = group["betas"]
            lr, eps = group["lr"], group["eps"]
            grad = flat["G"]
            torch._foreach_copy_(flat["g"], [p.grad for p in params])
            step_t += 1
            M.lerp_(grad, 1 - beta1)
            V.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5
            denom = (V.sqrt() / bias_correction2_sqrt).add_(eps)
            P.addcdiv_(M, denom, value=-step_size)
        if rest:   # torch's update for the groups not covered here, each parameter with its own step count again
            for gi in rest:
                if self._flat.pop(gi, None) is not None:
                    for p in self.param_groups[gi]["params"]:
                        if "step" in self.state.get(p, {}):
                            self.state[p]["step"] = self.state[p]["step"].clone()
            saved = self.param_groups
            self.param_groups = [saved[i] for i in rest]
            try:
                super().step()
            finally:
                self.param_groups = saved
        return None

    step.hooked = True   # torch.optim.Optimizer leaves a step so marked unwrapped (`step` docstring)
