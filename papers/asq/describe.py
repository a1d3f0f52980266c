"""asq: one line per profile key, shown by the README's generated Profiles table (common/README.md, `describe.py`)."""

DESCRIPTIONS = {
    # data and model
    "dataset": "training and test data (`digits`: sklearn 8x8; `imagenet` needs class folders and `arch=resnet34`)",
    "arch": "the network (`digits_cnn`, `small_resnet` = ResNet-8, `resnet20` for CIFAR-10, `resnet34` for ImageNet)",
    "width": "channels of the first stage of `digits_cnn` / `small_resnet` (the other architectures ignore it)",
    "n_train": "training images: a stratified subset of this size (0 = the whole split)",
    "n_test": "test images (0 = the whole test split)",
    "augment": "training augmentation: crop + flip (CIFAR), RandomResizedCrop + flip (ImageNet)",
    "image_size": "ImageNet only: side of the training crop and of the evaluation centre crop (the release's 224; the short side is resized to 256/224 of it)",
    "seeds": "training replicates of a run: replicate r draws from the run's keyed stream (\"train\", r) (float model, data order, adapters)",
    # float pre-training and QAT
    "fp_epochs": "float pre-training epochs (SGD momentum 0.9, cosine schedule)",
    "fp_lr": "float pre-training learning rate",
    "fp_wd": "float pre-training weight decay",
    "fp_checkpoint": "ImageNet: a torchvision-format float state dict to fine-tune from (\"\" = train the float model)",
    "qat_epochs": "QAT epochs per configuration (the released recipe: SGD momentum 0.9, cosine)",
    "qat_lr": "QAT learning rate",
    "qat_wd": "QAT weight decay",
    "cosine_per": "the cosine learning-rate schedule changes every `step`, or once per `epoch` as the release's CosineAnnealingLR (full)",
    "batch_size": "training batch (the global batch under torchrun)",
    "eval_batch": "evaluation batch (accuracy, the integer path)",
    "eval_each_epoch": "test accuracy after every QAT epoch: the best of them (the release's best_acc1) beside the final",
    "ckpt_dir": "checkpoint folder (\"\" = <run_dir>/checkpoints; point at a torchrun-trained cache to reuse it)",
    # the grid of QAT runs
    "qat_grid": "train the QAT comparison grid in the run (LSQ and ASQ at `bits`, the nulls at `sbeta_bits` / `frozen_bits`, the ablation, PTQ); off at quick, which trains only what its claims read (the float models; ASQ W4A4 POST of the first replicate for the integer path) and whose findings come from `devtune w2_finding` (quick's `bits`, `sbeta_bits`, `frozen_bits` on development seeds)",
    "bits": "weight/activation widths of the LSQ and ASQ runs (WkAk); quick: W2 and W4, trained by `devtune w2_finding` (the findings), not in a quick run; W3 at full",
    "first_last": "first and last layers: \"fp\" (the released default) or \"8bit\"",
    "ablation_bits": "width of the weight-grid ablation (WkAk with ASQ activations)",
    "ablation_grids": "weight grids of the ablation (uniform, POT, POST, APoT, and the released POST / POT); none at quick: its claims are judged at full",
    "sbeta_bits": "widths at which the trained null of ASQ's adaptivity runs (one scalar beta per layer, method sbeta; at quick in `devtune w2_finding` only)",
    "frozen_bits": "widths at which the trained ASQ model is evaluated again with each layer's beta frozen at its mean (a diagnostic; the control of asq-vs-sbeta-w2 at full; at quick in `devtune w2_finding` only)",
    "ptq_diagnostic": "also evaluate ASQ W4A4 before QAT (step sizes from one batch, no fine-tuning): a diagnostic, full only",
    "freeze_samples": "training images over which each layer's beta is averaged (the frozen-beta control)",
    "converged_qat_steps_min": "QAT steps before which LSQ's activation step has not converged (at quick's sizes; TUNED)",
    # accounting and weight errors
    "lut_arch": "model on which the LUT / adapter storage and MAC accounting is reported",
    "acct_size": "input size for counting MACs in the accounting",
    "mse_samples": "samples of the synthetic weight-error study per grid and width (notebook 02)",
}
