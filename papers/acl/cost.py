"""acl's full profile on one H100: small conv nets on MNIST (GPU), evaluation and the 2-D mixtures on the CPU.

The paper's cost model (common/README.md, the contract: `estimate(cfg) -> common.costmodel.Estimate`),
read by `benchmarks/full_cost.py`. Every number is an estimate from assumed inputs, listed in the record.
"""
from __future__ import annotations

import math

from common.costmodel import (CPU, DATA, IMAGE_SHAPES, UTIL, CpuPart, Estimate, GpuPart, activation_numel, forward_flops, leaf_modules,
                              linear_flops, make_data, meta, n_params, reproduce_command, train_memory_gb)


def estimate(cfg) -> Estimate:
    """The cost of one run of the full profile `cfg` (`config.get_config("full")`), from its counts."""
    from papers.acl.acl import CodeGAN
    from papers.acl.nets import Classifier, ConvDecoder, ConvEncoder

    ch, size, n_train_all, _ = IMAGE_SHAPES[cfg.dataset]
    n_train = n_train_all if cfg.n_train in (0, None) else min(cfg.n_train, n_train_all)
    img = (ch, size, size)
    E = meta(lambda: ConvEncoder(ch, size, cfg.code_dim, cfg.width))
    Dec = meta(lambda: ConvDecoder(cfg.code_dim, ch, size, cfg.width))
    Dx = meta(lambda: ConvEncoder(ch, size, 1, cfg.width))
    C = meta(lambda: Classifier(ch, size, 10, cfg.width // 2, cfg.cls_feat_dim))
    Dec_c = meta(lambda: ConvDecoder(cfg.cls_feat_dim, ch, size, cfg.width))
    feat = meta(lambda: Classifier(ch, size, 10))
    acl = meta(lambda: CodeGAN(cfg.code_dim, cfg.z_dim, cfg.hidden, cfg.depth))
    acl_c = meta(lambda: CodeGAN(cfg.cls_feat_dim, cfg.z_dim, cfg.hidden, cfg.depth))
    f = {"E": forward_flops(E, (1,) + img), "Dec": forward_flops(Dec, (1, cfg.code_dim)), "Dx": forward_flops(Dx, (1,) + img),
         "C": forward_flops(C, (1,) + img), "Dec_c": forward_flops(Dec_c, (1, cfg.cls_feat_dim)),
         "feat": forward_flops(feat, (1,) + img),
         "Gc": forward_flops(acl.G, (1, cfg.z_dim)), "Dc": forward_flops(acl.D, (1, cfg.code_dim)),
         "Gc_c": forward_flops(acl_c.G, (1, cfg.z_dim)), "Dc_c": forward_flops(acl_c.D, (1, cfg.cls_feat_dim))}
    ops = {k: leaf_modules(m) for k, m in dict(E=E, Dec=Dec, Dx=Dx, C=C, Gc=acl.G, Dc=acl.D).items()}
    B, Bc = cfg.batch, cfg.code_batch
    adam_ops = 15   # one fused-foreach Adam step and zero_grad, in eager ops (assumed)

    def code_round(gc, dc, batch):   # one D_c step (real and fake) and one G_c step
        return 3 * (2 * f[dc] + f[gc]) * batch + 3 * (f[gc] + f[dc]) * batch

    code_round_ops = 3 * (2 * ops["Dc"] + 2 * ops["Gc"]) + 2 * adam_ops + 10
    # fit_code_model, ACL-AE: ae_steps of E + Dec with a joint code round, then code_steps on cached codes
    ae_step = 3 * (f["E"] + f["Dec"]) * B + code_round("Gc", "Dc", B)
    ae_ops = 3 * (ops["E"] + ops["Dec"]) + adam_ops + code_round_ops
    cls_step = 3 * f["C"] * B
    cls_rec_step = f["C"] * B + 3 * f["Dec_c"] * B + code_round("Gc_c", "Dc_c", B)
    code_step_ae, code_step_cls = code_round("Gc", "Dc", Bc), code_round("Gc_c", "Dc_c", Bc)
    mmd_step = 3 * f["Gc"] * Bc + 3 * 2 * Bc * Bc * cfg.code_dim * 2   # G_c by MMD: the generator and the Gram matrices
    gan_step = f["Dec"] * B + 3 * 2 * f["Dx"] * B + 3 * (f["Dec"] + f["Dx"]) * B
    gan_ops = 3 * (2 * ops["Dx"] + ops["Dec"]) + ops["Dec"] + 2 * adam_ops + 10
    aclgan_step = gan_step + 3 * f["E"] * B + 3 * f["Dec"] * B + code_round("Gc", "Dc", B)
    aclgan_ops = gan_ops + 3 * (ops["E"] + ops["Dec"]) + code_round_ops
    R, Rc, Rg = cfg.replicates, cfg.cls_replicates, cfg.gan_replicates
    small = UTIL["small"]
    gpu = [
        GpuPart("ACL-AE replicates (E, Dec, joint code GAN; then the code phase and its MMD control)",
                R * (cfg.ae_steps * ae_step + cfg.code_steps * (code_step_ae + mmd_step)),
                ops=R * (cfg.ae_steps * ae_ops + cfg.code_steps * 2 * code_round_ops), util=small),
        GpuPart("ACL-classifier replicates (classifier, its decoder, code phase, MMD control)",
                Rc * (cfg.cls_steps * cls_step + cfg.ae_steps * cls_rec_step + cfg.code_steps * (code_step_cls + mmd_step)),
                ops=Rc * (cfg.cls_steps * (3 * ops["C"] + adam_ops) + cfg.ae_steps * ae_ops + cfg.code_steps * 2 * code_round_ops),
                util=small),
        GpuPart("plain GAN replicates", Rg * cfg.gan_steps * gan_step, ops=Rg * cfg.gan_steps * gan_ops, util=small),
        GpuPart("ACL-GAN replicates (image GAN + E + code GAN; code refit and MMD control)",
                Rg * (cfg.gan_steps * aclgan_step + cfg.code_steps * (code_step_ae + mmd_step)),
                ops=Rg * (cfg.gan_steps * aclgan_ops + cfg.code_steps * 2 * code_round_ops), util=small),
    ]
    # evaluation (CPU, numpy): features, FID / KID / PRDC on the feature net's 64-d features, memorization
    d_feat = 64
    npix = ch * size * size

    def evaluation(n: int, full: bool, mem: bool) -> float:
        fl = n * f["feat"] + cfg.kid_subsets * 3 * cfg.kid_subset_size ** 2 * d_feat * 2
        if full:
            fl += 3 * min(cfg.n_prdc, n) ** 2 * d_feat * 2
        if mem:
            m = min(cfg.n_mem, n)
            fl += 2 * m * n_train * (npix + d_feat) * 2
        return fl

    regions = cfg.n_regions + 2 ** max(1, int(math.log2(cfg.n_regions)))
    ev_ae = R * (evaluation(cfg.n_eval, True, True) + 4 * evaluation(cfg.n_eval, True, False)
                 + 2 * regions * evaluation(cfg.n_region, True, False))
    ev_cls = Rc * (evaluation(cfg.n_eval, True, True) + 4 * evaluation(cfg.n_eval, True, False))
    ev_gan = Rg * (evaluation(cfg.n_eval, True, True) + regions * evaluation(cfg.n_region, True, False))
    ev_aclgan = Rg * (evaluation(cfg.n_eval, True, True) + evaluation(cfg.n_eval, True, False)
                      + regions * evaluation(cfg.n_region, True, False))
    featnet = cfg.feat_epochs * n_train_all * 3 * f["feat"]
    # the 2-D mixtures (CPU worker processes): MLPs 2 -> h -> h -> c and back, batch syn_batch
    h, c2 = cfg.syn_hidden, cfg.syn_code_dim
    syn_mlp = lambda sizes: sum(linear_flops(1, a, b) for a, b in zip(sizes[:-1], sizes[1:]))  # noqa: E731
    fE, fG = syn_mlp([2, h, h, c2]), syn_mlp([c2, h, h, 2])
    fD, fgc, fdc = syn_mlp([2, h, h, 1]), syn_mlp([c2, h, h, c2]), syn_mlp([c2, h, h, 1])   # _syn_hyper: hidden = syn_hidden
    sb = cfg.syn_batch
    syn_code = 3 * (3 * fdc + 2 * fgc) * sb
    syn_ae = cfg.syn_ae_steps * (3 * (fE + fG) * sb + syn_code) + cfg.syn_code_steps * 2 * syn_code
    syn_gan = cfg.syn_gan_steps * (3 * (3 * fD + 2 * fG) * sb)
    syn_aclgan = cfg.syn_gan_steps * (3 * (3 * fD + 3 * fG + fE) * sb + syn_code) + cfg.syn_code_steps * 2 * syn_code
    syn = len(cfg.syn_mixtures) * cfg.syn_replicates * (syn_ae + syn_gan + syn_aclgan)
    cpu = [CpuPart("evaluation: features, FID/KID/PRDC, memorization (numpy)", ev_ae + ev_cls + ev_gan + ev_aclgan),
           CpuPart("feature network (trained once per run on one CPU thread: features independent of the core count)", featnet,
                   "small_gflops_per_core"),
           CpuPart("2-D mixtures (worker processes on the CPU)", syn)]
    biggest = max(n_params(m) for m in (E, Dec, Dx, C, Dec_c))
    acts = max(activation_numel(E, (B,) + img) + activation_numel(Dec, (B, cfg.code_dim)),
               2 * activation_numel(Dx, (B,) + img) + 2 * activation_numel(Dec, (B, cfg.code_dim)) + activation_numel(E, (B,) + img))
    eval_batch = 2000 * (npix + activation_numel(E, (1,) + img))   # batched(...) encodes 2000 images at a time
    workers = 8
    per_process = train_memory_gb(4 * biggest + 2 * n_params(acl), max(acts, eval_batch), resident_bytes=n_train * npix * 4 + n_train * 8)
    tasks = R + Rc + 2 * Rg
    return Estimate(
        data=f"{cfg.dataset} (the full profile's images; the 2-D mixtures are generated). " + DATA.get(cfg.dataset, cfg.dataset),
        make_data=make_data([cfg.dataset]), commands=[reproduce_command("acl")],
        gpu=gpu, cpu=cpu, memory_gb=min(workers, tasks) * per_process,
        assumptions=[
            f"{cfg.dataset}: {n_train} training images {img} on the device (float32), batch {B}, code batch {Bc}",
            f"forward FLOPs per image from the models on the meta device: E {f['E']:.3g}, Dec {f['Dec']:.3g}, D_x {f['Dx']:.3g}, "
            f"classifier {f['C']:.3g}, feature net {f['feat']:.3g}; per code G_c {f['Gc']:.3g}, D_c {f['Dc']:.3g}",
            f"replicates: {R} ACL-AE, {Rc} ACL-classifier, {Rg} GAN and {Rg} ACL-GAN; steps: ae {cfg.ae_steps}, code {cfg.code_steps}, "
            f"classifier {cfg.cls_steps}, GAN {cfg.gan_steps}; the MMD control refits G_c for code_steps",
            "these nets are small: a step is bound by eager-op overhead (ops per step counted from the leaf modules "
            "x 3 for backward, plus 15 per Adam step), not by FLOPs",
            f"GPU memory: {min(workers, tasks)} worker processes at once (pmap, one per core; assumed an 8-core machine, "
            f"`-p workers=N` sets it), each {per_process:.2f} GB (its CUDA context, the training set, the nets and Adam, "
            "the largest batch)",
            f"CPU: evaluation and the 2-D mixtures ({len(cfg.syn_mixtures)} mixtures x {cfg.syn_replicates} replicates x 3 "
            f"models, MLPs of {h} units on batches of {sb}) at {CPU['blas_gflops_per_core']:g} GFLOP/s per core, the feature "
            f"net (small convolutions) at {CPU['small_gflops_per_core']:g} (assumed)",
            "one run = seed 0; --seeds 0 1 2 costs 3x"],
        extra={"replicates": {"ae": R, "cls": Rc, "gan": Rg, "aclgan": Rg}})
