"""Training loops: an autoencoder or a classifier with ACL attached, and a GAN with or without ACL.

Paper: J. Yuan et al., "Adversarial Code Learning for Image Generation", arXiv:2001.11539,
https://arxiv.org/abs/2001.11539

Every loop counts global steps through its phases, draws batches and noise from one explicit
generator, and checkpoints (models, every optimizer including the discriminators', the generator
state, the history) every `ckpt_every` steps, so a resumed run equals an uninterrupted one.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from common.checkpoint import load_checkpoint, save_checkpoint
from common.errors import UserError
from common.progress import progress
from common.seed import Streams

from .acl import CodeGAN
from .losses import check_loss, confuse_loss, d_loss, g_loss, gradient_penalty
from .mmd import BANDWIDTH_FACTORS, batch_bandwidths, median_distance, mmd2, mmd_code_step
from .nets import adam

MODES = ("joint", "two_stage")


@dataclass
class Hyper:
    """Every reconstructed unknown of the method is a field here (none is stated in the readable paper)."""
    code_dim: int = 16
    z_dim: int = 16
    hidden: int = 256            # width of the G_c / D_c MLPs
    depth: int = 2               # hidden layers of the G_c / D_c MLPs
    loss: str = "ns"             # ns | wgan-gp (code GAN and image GAN)
    gp_weight: float = 1.0       # WGAN-GP lambda
    n_critic: int = 1            # D_c (and D_x) steps per generator step
    mode: str = "joint"          # joint: code GAN trained alongside the AE; two_stage: after it
    enc_adv_weight: float = 0.0  # ARAE-style term pulling E(x) toward G_c(z) (0 = codes untouched)
    batch: int = 64              # image batch
    code_batch: int = 256        # code batch in the code-only phase
    lr: float = 1e-3             # AE / decoder / classifier (Adam)
    lr_g: float = 2e-4           # G_c and image G
    lr_d: float = 2e-4           # D_c and image D
    code_lr: float = 1e-3        # G_c / D_c of ACL-AE and ACL-classifier (Adam)
    normalize_codes: bool = True  # ACL-AE / -classifier: G_c, D_c see standardized codes
    whiten_codes: bool = False   # code-only phase: standardize by the full covariance's root, not per dimension
    residual_gc: bool = False    # G_c(z) = z + MLP(z) in standardized units (with whitening: starts at the fitted Gaussian)
    cls_steps: int = 0           # classifier phase (ACL-classifier only)
    ae_steps: int = 500          # reconstruction phase
    code_steps: int = 1000       # code-only phase (G_c / D_c on the cached codes)
    code_lr_final: float = 1.0   # code-only phase: lr decays linearly from code_lr to code_lr_final * code_lr
    gan_steps: int = 500         # image GAN steps (GAN / ACL-GAN)
    rec_weight: float = 1.0      # ACL-GAN: weight of ||x - G(E(x))||^2 (squared norm per image, not per pixel)
    cycle_weight: float = 0.0    # ACL-GAN: ||c - E(G(c))||^2 weight (optional)
    code_weight: float = 1.0     # ACL-GAN: weight of G_c's code-GAN loss in the generator step
    image_grad_to_code: bool = False  # ACL-GAN: the image-GAN loss also trains G_c (False: only D_c does)
    code_rounds: int = 1         # ACL-GAN: D_c / G_c rounds per image step (rounds after the first: code GAN only)
    code_refit: bool = True      # ACL-GAN: after the GAN phase, fit G_c / D_c on the cached codes E(x) for
                                 # code_steps (the code-only phase of fit_code_model); False: joint training only
    code_objective: str = "adv"  # ACL-GAN: "adv" (G_c against D_c, the paper's ACL) or "mmd" (the null: G_c matched to
                                 # E(x) by MMD^2 in the joint phase and in the refit, no D_c ever; `mmd.mmd_code_step`)
    null_batch: int = 0          # the MMD null's code batch (0: code_batch); tuned with ACL's on the same grid
    null_lr: float = 0.0         # the MMD null's Adam lr (0: code_lr)
    null_steps: int = 0          # the MMD null's steps (0: code_steps)
    log_every: int = 10

    def check(self) -> "Hyper":
        check_loss(self.loss)
        if self.mode not in MODES:
            raise UserError(f"unknown training mode {self.mode!r}; choose one of {', '.join(MODES)}")
        for k in ("code_dim", "z_dim", "hidden", "depth", "n_critic", "batch", "code_batch", "code_rounds"):
            if getattr(self, k) < 1:
                raise UserError(f"parameter {k} must be >= 1, got {getattr(self, k)}")
        if self.code_objective not in ("adv", "mmd"):
            raise UserError(f"unknown code_objective {self.code_objective!r}; choose adv or mmd")
        for k in ("null_batch", "null_lr", "null_steps"):
            if getattr(self, k) < 0:
                raise UserError(f"parameter {k} must be >= 0 (0: as ACL's code_*), got {getattr(self, k)}")
        if not 0 < self.code_lr_final <= 1:
            raise UserError(f"parameter code_lr_final must be in (0, 1], got {self.code_lr_final}")
        return self

    def null(self) -> "Hyper":
        """The MMD null's schedule: null_batch / null_lr / null_steps in place of code_batch / code_lr / code_steps
        (each 0 keeps ACL's), everything else (architecture, standardization, lr decay) as ACL's."""
        from dataclasses import replace
        return replace(self, code_batch=self.null_batch or self.code_batch, code_lr=self.null_lr or self.code_lr,
                       code_steps=self.null_steps or self.code_steps)

    @classmethod
    def from_cfg(cls, cfg, **over) -> "Hyper":
        names = set(cls.__dataclass_fields__)
        vals = {k: v for k, v in vars(cfg).items() if k in names}
        vals.update(over)
        return cls(**vals).check()


class Optimizers(dict):
    """Several optimizers checkpointed as one (common.checkpoint takes one `optimizer`)."""

    def state_dict(self):
        return {k: o.state_dict() for k, o in self.items()}

    def load_state_dict(self, state):
        for k, o in self.items():
            o.load_state_dict(state[k])


def _batch(x: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    return x[torch.randint(len(x), (n,), generator=gen).to(x.device)]


def _resume(ckpt, models, opts, gen) -> tuple[int, dict]:
    if ckpt is None or not Path(ckpt).exists():
        return 0, {}
    step, extra = load_checkpoint(ckpt, model=models, optimizer=opts)
    gen.set_state(extra["gen"])
    return step, extra.get("history", {})


def _save(ckpt, step, models, opts, gen, history, meta):
    _flush(history)
    if ckpt is not None:
        save_checkpoint(ckpt, step, model=models, optimizer=opts,
                        extra={"gen": gen.get_state(), "history": history, "meta": meta})


def _log(history: dict, step: int, **vals):
    """Append the losses of a log step, tensors kept as they are (reading one back would wait for the device at every
    log step); `_flush`, at each checkpoint and at the end, turns them into floats, the same numbers."""
    history.setdefault("step", []).append(step)
    for k, v in vals.items():
        history.setdefault(k, []).append(v.detach() if torch.is_tensor(v) else float(v))


def _flush(history: dict) -> None:
    """The logged tensors of `history` as floats, read back in one transfer per series."""
    for k, vals in history.items():
        at = [i for i, v in enumerate(vals) if torch.is_tensor(v)]
        if at:
            for i, x in zip(at, torch.stack([vals[i].reshape(()).float() for i in at]).cpu().tolist()):
                vals[i] = x


def sq_norm(diff: torch.Tensor) -> torch.Tensor:
    """||d||^2 per example (summed over every non-batch axis), averaged over the batch."""
    return diff.flatten(1).pow(2).sum(1).mean()


@torch.no_grad()
def encode_all(encode, x: torch.Tensor, batch: int = 2000) -> torch.Tensor:
    return torch.cat([encode(x[i:i + batch]) for i in range(0, len(x), batch)])


def cached_codes(encode, x: torch.Tensor, acl: CodeGAN, hp: Hyper, first: bool) -> torch.Tensor:
    """Codes E(x) of all of x for the code-only phase; at its first step (`first`) G_c / D_c take the
    exact statistics of these final codes (a resumed run has them in the checkpointed buffers)."""
    codes = encode_all(encode, x)
    if hp.normalize_codes and first:
        acl.set_scale(codes, whiten=hp.whiten_codes)
    return codes


def code_step(acl: CodeGAN, codes: torch.Tensor, opts: dict, hp: Hyper, gen: torch.Generator, k: int):
    """Step k of the code-only phase: `n_critic` D_c updates on cached codes E(x), one G_c update (l-GAN's GAN on
    a trained autoencoder's codes, Achlioptas et al. 2018; reconstructed, README "What is reconstructed").

    The learning rate is a function of k alone (linear decay to code_lr_final * code_lr), so a resumed
    run needs no scheduler state. ACL-AE, ACL-classifier and ACL-GAN's refit all go through here.
    Returns (D_c loss, G_c loss) as detached tensors: nothing is read back to the host per step.
    """
    lr = hp.code_lr * (1 - (1 - hp.code_lr_final) * k / max(1, hp.code_steps - 1))
    for key in ("D_c", "G_c"):
        for group in opts[key].param_groups:
            group["lr"] = lr
    ld = float("nan")
    for _ in range(hp.n_critic):
        ld = acl.d_step(_batch(codes, hp.code_batch, gen), opts["D_c"], gen)
    lg = acl.g_step(hp.code_batch, opts["G_c"], gen)
    return ld, lg


def fit_code_model(x: torch.Tensor, encoder: nn.Module, decoder: nn.Module, hp: Hyper, streams: Streams,
                   y: torch.Tensor | None = None, objective: str = "ae", ckpt=None, ckpt_every: int = 0,
                   stop_step: int | None = None, desc: str | None = None) -> dict:
    """Train an autoencoder (objective="ae") or a classifier (objective="classifier") with ACL attached (the
    abstract's "non-generative models (autoencoders, standard classifiers)" turned generators; reconstructed).

    Phases over one global step counter:
      1. classifier only: `cls_steps` of cross-entropy on (x, y) -- `encoder` is a `nets.Classifier`;
      2. `ae_steps` of reconstruction ||x - Dec(E(x))||^2 (E frozen for the classifier: the decoder
         inverts its penultimate features), with one D_c / G_c round per step when mode == "joint";
      3. `code_steps` of the code GAN alone on the cached codes of all of x.
    Returns {"models": ModuleDict(E, Dec, acl), "encode": fn, "history": dict, "steps": int, "codes": the codes E(x)
    of all of x that phase 3 trained on (the final encoder's: it does not move in phase 3), or None when this call
    ran no step of phase 3 (`train_codes` encodes them then)}.
    """
    if objective not in ("ae", "classifier"):
        raise UserError(f"unknown objective {objective!r}; choose ae or classifier")
    hp.check()
    encode = encoder.features if objective == "classifier" else encoder
    dev = x.device
    with torch.no_grad():
        code_dim = encode(x[:2]).shape[1]
    if code_dim != hp.code_dim:
        raise UserError(f"code_dim={hp.code_dim} does not match the encoder's output size {code_dim}; set code_dim={code_dim}")
    with streams.torch_global("gc-init"):   # the MMD null starts from the same G_c (`mmd.fit_mmd_code_generator`)
        acl = CodeGAN(hp.code_dim, hp.z_dim, hp.hidden, hp.depth, hp.loss, hp.gp_weight, hp.residual_gc).to(dev)
    models = nn.ModuleDict({"E": encoder, "Dec": decoder, "acl": acl})
    opts = Optimizers(acl.optimizers(hp.code_lr, hp.code_lr))
    rec_params = list(decoder.parameters()) + (list(encoder.parameters()) if objective == "ae" else [])
    opts["rec"] = adam(rec_params, hp.lr)
    if objective == "classifier":
        opts["cls"] = adam(encoder.parameters(), hp.lr)
    gen = streams.torch_generator("batches")
    start, history = _resume(ckpt, models, opts, gen)
    p1 = hp.cls_steps if objective == "classifier" else 0
    p2 = p1 + hp.ae_steps
    total = p2 + hp.code_steps
    meta = {"hyper": asdict(hp), "objective": objective, "streams": repr(streams)}
    codes = None
    for step in progress(range(start, total), total=total - start, desc=desc or f"ACL-{objective}"):
        if step < p1:  # 1. classifier
            idx = torch.randint(len(x), (hp.batch,), generator=gen).to(dev)
            loss = F.cross_entropy(encoder(x[idx]), y[idx])
            opts["cls"].zero_grad(set_to_none=True)
            loss.backward()
            opts["cls"].step()
            if step % hp.log_every == 0:
                _log(history, step, cls=loss)
        elif step < p2:  # 2. reconstruction (+ code GAN when joint)
            xb = _batch(x, hp.batch, gen)
            if objective == "classifier":
                with torch.no_grad():
                    c = encode(xb)
            else:
                c = encode(xb)
            rec = F.mse_loss(decoder(c), xb)
            loss = rec
            if objective == "ae" and hp.enc_adv_weight > 0:  # ARAE-style: codes move toward G_c's
                loss = loss + hp.enc_adv_weight * confuse_loss(hp.loss, acl.D(c))
            opts["rec"].zero_grad(set_to_none=True)
            loss.backward()
            opts["rec"].step()
            ld = lg = float("nan")
            if hp.mode == "joint":
                acl.observe(c, first=step == p1 and start <= p1, normalize=hp.normalize_codes)
                for _ in range(hp.n_critic):
                    ld = acl.d_step(c.detach(), opts["D_c"], gen)
                lg = acl.g_step(hp.batch, opts["G_c"], gen)
            if step % hp.log_every == 0:
                _log(history, step, rec=rec, d_c=ld, g_c=lg)
        else:  # 3. code GAN on cached codes
            if codes is None:
                codes = cached_codes(encode, x, acl, hp, first=step == p2)
            ld, lg = code_step(acl, codes, opts, hp, gen, step - p2)
            if step % hp.log_every == 0:
                _log(history, step, d_c=ld, g_c=lg)
        done = step + 1
        if ckpt is not None and ckpt_every and done % ckpt_every == 0:
            _save(ckpt, done, models, opts, gen, history, meta)
        if stop_step is not None and done >= stop_step:
            _save(ckpt, done, models, opts, gen, history, meta)
            return {"models": models, "encode": encode, "history": history, "steps": done}
    _save(ckpt, total, models, opts, gen, history, meta)
    return {"models": models, "encode": encode, "history": history, "steps": total, "codes": codes}


def train_codes(res: dict, x: torch.Tensor) -> torch.Tensor:
    """The codes E(x) of the training images x under a trained model `res` (`fit_code_model`'s output), encoded once
    and kept in `res["codes"]`: the baselines, the MMD null, the fitted Gaussian's map and the code two-sample test
    all read these same codes (they were encoded five times before, the same numbers each time)."""
    if res.get("codes") is None or len(res["codes"]) != len(x):
        res["codes"] = encode_all(res.get("encode") or res["models"]["E"], x)
    return res["codes"]


def fit_gan(x: torch.Tensor, G: nn.Module, Dx: nn.Module, hp: Hyper, streams: Streams, E: nn.Module | None = None,
            ckpt=None, ckpt_every: int = 0, stop_step: int | None = None, desc: str | None = None) -> dict:
    """A GAN (E is None: G consumes z ~ N(0, I) of size code_dim) or ACL-GAN (G consumes G_c(z); the abstract's
    "improve existing GANs", reconstructed after alpha-GAN, Rosca et al. 2017: E, G, D_x and a code discriminator).

    ACL-GAN, phase 1 (`gan_steps`), per step: D_x update; D_c update on E(x) vs G_c(z); then one
    generator update of G, G_c and E on  L_G(D_x(G(G_c(z)))) + code_weight L_G(D_c(G_c(z)))
    + rec_weight ||x - G(E(x))||^2 (+ cycle_weight ||c - E(G(c))||^2, + enc_adv_weight on E's codes).
    Phase 2 (`code_refit`, `code_steps`): G_c / D_c alone on the cached codes E(x) of the trained
    encoder -- the code-only phase of `fit_code_model` (`code_step`), ACL attached to the trained GAN.
    With `code_objective="mmd"` (the null of the GAN claims) no D_c ever trains: G_c's code term is MMD^2 to
    the batch's codes E(x) in phase 1, and phase 2 is `mmd.mmd_code_step` on the null's schedule (`Hyper.null`).
    """
    hp.check()
    adversarial = hp.code_objective == "adv"
    dev = x.device
    with streams.torch_global("gc-init"):
        acl = CodeGAN(hp.code_dim, hp.z_dim, hp.hidden, hp.depth, hp.loss, hp.gp_weight, hp.residual_gc).to(dev) if E is not None else None
    models = nn.ModuleDict({"G": G, "Dx": Dx} | ({"E": E, "acl": acl} if E is not None else {}))
    betas = (0.5, 0.999) if hp.loss == "ns" else (0.5, 0.9)
    gen_params = list(G.parameters()) + (list(E.parameters()) if E is not None else [])
    opts = Optimizers(G=adam(gen_params, hp.lr_g, betas=betas), Dx=adam(Dx.parameters(), hp.lr_d, betas=betas))
    if acl is not None:  # G_c / D_c: the same optimizers and code standardization as ACL-AE
        opts.update(acl.optimizers(hp.code_lr, hp.code_lr))
    gen = streams.torch_generator("batches")
    start, history = _resume(ckpt, models, opts, gen)
    meta = {"hyper": asdict(hp), "variant": "acl" if E is not None else "gan", "streams": repr(streams)}

    def codes(n):
        z = torch.randn(n, hp.z_dim if E is not None else hp.code_dim, generator=gen).to(dev)
        return acl.code(z) if E is not None else z

    def image_step(step):  # 1. one GAN / ACL-GAN step
        for _ in range(hp.n_critic):
            xb = _batch(x, hp.batch, gen)
            with torch.no_grad():
                fake = G(codes(hp.batch))
            ld = d_loss(hp.loss, Dx(xb), Dx(fake))
            if hp.loss == "wgan-gp":
                ld = ld + hp.gp_weight * gradient_penalty(Dx, xb, fake, gen)
            opts["Dx"].zero_grad(set_to_none=True)
            ld.backward()
            opts["Dx"].step()
        ldc = rec = float("nan")
        if E is not None:
            cx = E(xb)
            acl.observe(cx, first=step == 0, normalize=hp.normalize_codes)
        if E is not None and adversarial:
            for _ in range(hp.n_critic):
                ldc = acl.d_step(cx.detach(), opts["D_c"], gen)
            for _ in range(hp.code_rounds - 1):  # extra code-GAN rounds on this batch's codes
                acl.g_step(hp.batch, opts["G_c"], gen)
                for _ in range(hp.n_critic):
                    ldc = acl.d_step(cx.detach(), opts["D_c"], gen)
        c = codes(hp.batch)
        lg = g_loss(hp.loss, Dx(G(c if E is None or hp.image_grad_to_code else c.detach())))
        loss = lg
        if E is not None:
            if adversarial:
                loss = loss + hp.code_weight * g_loss(hp.loss, acl.D(acl.standardize(c)))
            else:  # the null: G_c pulled to this batch's codes by MMD^2, no D_c
                u = acl.standardize(cx).detach()
                loss = loss + hp.code_weight * mmd2(acl.standardize(c), u, batch_bandwidths(u))
            rec = sq_norm(G(cx) - xb)  # ||x - G(E(x))||^2 per image, batch mean
            loss = loss + hp.rec_weight * rec
            if hp.cycle_weight > 0:
                loss = loss + hp.cycle_weight * F.mse_loss(E(G(c.detach())), c.detach())
            if hp.enc_adv_weight > 0:
                loss = loss + hp.enc_adv_weight * confuse_loss(hp.loss, acl.D(cx))
        gsteps = [opts["G"]] + ([opts["G_c"]] if E is not None else [])
        for o in gsteps:
            o.zero_grad(set_to_none=True)
        loss.backward()
        for o in gsteps:
            o.step()
        return dict(d_x=ld, g_x=lg, d_c=ldc, rec=rec)

    null_hp = hp.null()
    refit_steps = hp.code_steps if adversarial else null_hp.code_steps
    total = hp.gan_steps + (refit_steps if E is not None and hp.code_refit else 0)
    cached = bandwidths = None
    for step in progress(range(start, total), total=total - start, desc=desc or "GAN"):
        if step < hp.gan_steps:
            logs = image_step(step)
        else:  # 2. ACL-GAN: G_c / D_c refit on the trained encoder's codes
            if cached is None:
                cached = cached_codes(E, x, acl, hp, first=step == hp.gan_steps)
                bandwidths = [median_distance(acl.standardize(cached)) * f for f in BANDWIDTH_FACTORS]
            if adversarial:
                ldc, lgc = code_step(acl, cached, opts, hp, gen, step - hp.gan_steps)
                logs = dict(d_c=ldc, g_c=lgc)
            else:
                logs = dict(g_c=mmd_code_step(acl, cached, opts["G_c"], null_hp, gen, step - hp.gan_steps, bandwidths))
        if step % hp.log_every == 0:
            _log(history, step, **logs)
        done = step + 1
        if ckpt is not None and ckpt_every and done % ckpt_every == 0:
            _save(ckpt, done, models, opts, gen, history, meta)
        if stop_step is not None and done >= stop_step:
            _save(ckpt, done, models, opts, gen, history, meta)
            return {"models": models, "history": history, "steps": done}
    _save(ckpt, total, models, opts, gen, history, meta)
    return {"models": models, "history": history, "steps": total}


def prior_dim(models: nn.ModuleDict, hp: Hyper) -> int:
    """Width of the prior noise a trained GAN / ACL-GAN consumes: z_dim for ACL-GAN (z -> G_c -> G),
    code_dim for the plain GAN (z straight into G, whose input is code_dim wide)."""
    return hp.z_dim if "acl" in models else hp.code_dim


@torch.no_grad()
def gan_sample(models: nn.ModuleDict, n: int, hp: Hyper, gen=None, z: torch.Tensor | None = None) -> torch.Tensor:
    """Images (or points) from a trained GAN / ACL-GAN, in eval mode; z, when given, is
    (n, prior_dim(models, hp))."""
    G = models["G"]
    was = G.training
    G.eval()
    dev = next(G.parameters()).device
    d = prior_dim(models, hp)
    z = torch.randn(n, d, generator=gen) if z is None else z
    if z.shape[-1] != d:
        raise ValueError(f"noise of width {z.shape[-1]} for a generator that takes {d} (prior_dim)")
    if "acl" in models:
        out = G(models["acl"].code(z.to(dev)))
    else:
        out = G(z.to(dev))
    G.train(was)
    return out


@torch.no_grad()
def acl_sample(models: nn.ModuleDict, n: int, gen=None, z: torch.Tensor | None = None) -> torch.Tensor:
    """Dec(G_c(z)): ACL-AE / ACL-classifier samples."""
    return models["Dec"](models["acl"].sample(n, gen, z))
