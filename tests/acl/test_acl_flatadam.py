"""`flatadam.FlatAdam` (what `nets.adam` builds): torch's Adam bit for bit, its state dict torch's, through state-dict
round trips, loads of torch's own Adam state, replaced parameter storage, learning-rate changes and a parameter
without a gradient."""
import pytest
import torch

from papers.acl.flatadam import FlatAdam
from papers.acl.nets import adam, mlp


def run(make_opt, steps=40, sizes=(3, 16, 16, 4), act="relu", event=None, seed=0, total=None):
    """A small MLP trained `steps` Adam steps (lr decaying as the code phases' does); `event(k, net, opt)` may act
    between steps. Returns (net, opt)."""
    torch.manual_seed(seed)
    net = mlp(list(sizes), act=act)
    opt = make_opt(net.parameters())
    g = torch.Generator().manual_seed(1)
    for k in range(steps):
        for group in opt.param_groups:
            group["lr"] = 3e-2 * (1 - 0.9 * k / (total or steps))
        loss = net(torch.randn(32, sizes[0], generator=g)).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if event is not None:
            event(k, net, opt)
    return net, opt


def torch_adam(foreach):
    return lambda params: torch.optim.Adam(params, 3e-2, betas=(0.5, 0.9), foreach=foreach)


def flat(params):
    return FlatAdam(params, 3e-2, betas=(0.5, 0.9))


def same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))


def same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    groups = [[{k: v for k, v in g.items() if k != "foreach"} for g in s["param_groups"]] for s in (sa, sb)]
    return groups[0] == groups[1] and sa["state"].keys() == sb["state"].keys() and all(
        sa["state"][i].keys() == sb["state"][i].keys() and all(torch.equal(sa["state"][i][k], sb["state"][i][k])
                                                             for k in sa["state"][i]) for i in sa["state"])


@pytest.mark.parametrize("sizes,act", [((3, 16, 16, 4), "relu"), ((4, 128, 128, 4), "leaky"), ((5, 7, 3, 1), "relu")])
@pytest.mark.parametrize("foreach", [False, True])
def test_flat_adam_equals_torch_adam_bit_for_bit(sizes, act, foreach):
    ref_net, ref_opt = run(torch_adam(foreach), sizes=sizes, act=act)
    net, opt = run(flat, sizes=sizes, act=act)
    assert same_weights(ref_net, net)
    assert same_state(ref_opt, opt)   # the same state dict as torch's Adam: checkpoints are interchangeable


def test_nets_adam_is_the_flat_update():
    net = mlp([2, 4, 1])
    opt = adam(net.parameters(), 1e-3, betas=(0.5, 0.9))
    assert isinstance(opt, FlatAdam) and isinstance(opt, torch.optim.Adam)
    assert opt.defaults["betas"] == (0.5, 0.9) and opt.defaults["foreach"] is True


def test_parameters_become_views_of_one_buffer_and_stay_the_modules():
    net, opt = run(flat, steps=3)
    params = list(net.parameters())
    buf = opt._flat[0]["P"]
    assert all(p.untyped_storage().data_ptr() == buf.untyped_storage().data_ptr() for p in params)
    assert all(p.data_ptr() % 64 == 0 for p in params)   # each on a 64-byte boundary, as a tensor of its own
    assert list(net.parameters()) == params   # the same Parameter objects: the module and other references see the steps


def test_state_dict_round_trip_and_torch_state_load_continue_bit_for_bit():
    ref, _ = run(torch_adam(True), steps=30)

    def reload_own(k, net, opt):
        if k == 9:
            opt.load_state_dict(opt.state_dict())

    net, _ = run(flat, steps=30, event=reload_own)
    assert same_weights(ref, net)

    # a checkpoint written by torch's Adam, loaded into FlatAdam halfway (and the other way round)
    half_net, half_opt = run(torch_adam(True), steps=15, total=30)
    opt = FlatAdam(half_net.parameters(), 3e-2, betas=(0.5, 0.9))
    opt.load_state_dict(half_opt.state_dict())
    g = torch.Generator().manual_seed(1)
    for _ in range(15):   # the batches the first 15 steps drew
        torch.randn(32, 3, generator=g)
    for k in range(15, 30):
        for group in opt.param_groups:
            group["lr"] = 3e-2 * (1 - 0.9 * k / 30)
        loss = half_net(torch.randn(32, 3, generator=g)).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    assert same_weights(ref, half_net)


def test_replaced_parameter_storage_and_module_reload_are_followed():
    ref, _ = run(torch_adam(True), steps=20)

    def replace(k, net, opt):
        if k == 5:   # a parameter's storage replaced (as Module._apply does): copied into fresh buffers next step
            for p in net.parameters():
                p.data = p.data.clone()
        if k == 11:  # a module state loaded in place (load_checkpoint): written through the views
            net.load_state_dict({key: v.clone() for key, v in net.state_dict().items()})

    net, _ = run(flat, steps=20, event=replace)
    assert same_weights(ref, net)


def test_parameter_without_gradient_takes_torchs_update():
    """A step where one parameter has no gradient is torch's (that parameter skipped, its step count behind); the
    steps after it stay torch's too (the counts differ), the same numbers."""
    def freeze_then_free(k, net, opt):
        net[0].bias.requires_grad_(3 <= k < 6)

    ref, ref_opt = run(torch_adam(True), steps=12, event=freeze_then_free)
    net, opt = run(flat, steps=12, event=freeze_then_free)
    assert same_weights(ref, net) and same_state(ref_opt, opt)


def test_zero_grad_and_an_unwrapped_step():
    """`zero_grad` drops (set_to_none) or zeroes the gradients as torch's does; `step` is run as defined (torch's
    profiler wrapper, which cost as much as the update on these small MLPs, is not put around it)."""
    net = mlp([3, 8, 2])
    opt = FlatAdam(net.parameters(), 1e-2)
    assert FlatAdam.step is FlatAdam.__dict__["step"] and FlatAdam.step.hooked
    for set_to_none in (True, False):
        net(torch.randn(4, 3)).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)
        grads = [p.grad for p in net.parameters()]
        assert all(g is None for g in grads) if set_to_none else all(g is not None and not g.any() for g in grads)
    ref_net, _ = run(torch_adam(False), steps=10)
    net, _ = run(flat, steps=10)
    assert same_weights(ref_net, net)
