"""Knowledge distillation written the way current training repos write it: the student wrapped by
torch.compile(backend="aot_eager") (its checkpoint saved with the '_orig_mod.' keys of the compiled
module and resumed into a plain one nanoGPT-style, stripping the prefix), a frozen teacher
(requires_grad_(False), eval, logits under torch.inference_mode), Hinton's loss F.kl_div(log_softmax(s/T), log_softmax(t/T), log_target=True,
reduction='batchmean') * T^2 plus cross-entropy on mixup targets given as class probabilities
(one_hot(...).float() mixed with a NumPy Beta draw), torch.autocast(device_type='cpu',
enabled=False) as the use_amp switch, AdamW(foreach=True), CosineAnnealingWarmRestarts stepped
with a fractional epoch, clip_grad_norm_(error_if_nonfinite=True), zero_grad(set_to_none=True), and
the ImageNet example's top-k accuracy function."""

import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CLASSES, FEATURES = 5, 12
T = 2.0
ALPHA = 0.7
DROPOUT = 0.1


def mlp(hidden, dropout=0.0):
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
                         nn.GELU(), nn.Linear(hidden, CLASSES))


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.teacher = mlp(48)
        self.student = mlp(16, DROPOUT)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def distillation_loss(student_logits, teacher_logits, soft_targets):
    kd = F.kl_div(F.log_softmax(student_logits / T, dim=-1), F.log_softmax(teacher_logits / T, dim=-1),
                  reduction="batchmean", log_target=True) * (T * T)
    ce = F.cross_entropy(student_logits, soft_targets)
    return ALPHA * kd + (1.0 - ALPHA) * ce


def get_data():
    rng = np.random.default_rng(6)
    centers = rng.standard_normal((CLASSES, FEATURES)) * 2
    y = rng.integers(0, CLASSES, 96)
    x = centers[y] + rng.standard_normal((96, FEATURES))
    return {"x": x.astype(np.float32), "y": y.astype(np.int64), "lam": rng.beta(0.4, 0.4, 64).astype(np.float32),
            "perm": np.stack([rng.permutation(16) for _ in range(64)])}


def build():
    return Pair()


def train(model, data, steps, use_amp=False):
    torch.backends.cudnn.benchmark = True
    x_all, y_all = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    teacher = model.teacher
    teacher.requires_grad_(False)
    teacher.eval()
    # aot_eager: dynamo and AOTAutograd without inductor's C++ code generation (no compiler needed)
    student = torch.compile(model.student, backend="aot_eager")
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-2, weight_decay=0.05, foreach=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=1e-4)
    iters_per_epoch = 4
    losses = []
    student.train()
    for step in range(steps):
        start = (step * 16) % 80
        x, y = x_all[start:start + 16], y_all[start:start + 16]
        lam = float(data["lam"][step])
        perm = torch.from_numpy(data["perm"][step])
        x = lam * x + (1 - lam) * x[perm]
        y_soft = lam * F.one_hot(y, CLASSES).float() + (1 - lam) * F.one_hot(y[perm], CLASSES).float()
        with torch.inference_mode():
            teacher_logits = teacher(x)
        with torch.autocast(device_type="cpu", enabled=use_amp):
            logits = student(x)
            loss = distillation_loss(logits, teacher_logits.clone(), y_soft)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 2.0, error_if_nonfinite=True)
        optimizer.step()
        scheduler.step(step / iters_per_epoch)
        losses.append(loss.item())
    buffer = io.BytesIO()
    torch.save({"model": student.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, weights_only=True)
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."
    for k, _v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    resumed = mlp(16)
    resumed.load_state_dict(state_dict)
    resumed.eval()
    student.eval()
    with torch.no_grad():
        top1, top3 = accuracy(resumed(x_all[80:]), y_all[80:], topk=(1, 3))
        torch.testing.assert_close(resumed(x_all[80:]), student(x_all[80:]))
    assert 0.0 <= top1.item() <= top3.item() <= 100.0
    return losses
