"""Tests of course_llm.train against independent oracles: torch's own schedulers, hand-computed
AdamW updates, a straight run vs an interrupted one, and one process vs two under torchrun."""
import json
import math
import os
import socket
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.core import set_seed
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.optim import adamw
from course_llm.optim import NonFiniteLossError
from course_llm.train import build_model, main
from course_llm.train_config import TrainConfig
from course_llm.trainer import Trainer
from course_llm.optim import cosine_schedule, param_groups
from course_llm.checkpoints import latest_checkpoint, load_weights, save_weights

ROOT = Path(__file__).resolve().parents[1]


class TinyLM(nn.Module):
    """A small causal LM with the GPT forward contract: two-token context, dropout, tied weights."""

    def __init__(self, vocab_size=11, d=16, dropout=0.1, explode_at=None):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d)
        self.prev = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(d, vocab_size, bias=False)
        self.head.weight = self.embed.weight                       # B = A^T
        self.explode_at, self.calls = explode_at, 0

    def forward(self, idx, targets=None, ignore_index=-100):
        h = self.embed(idx)                                        # (B, T, d)
        shifted = F.pad(h, (0, 0, 1, 0))[:, :-1]                   # (B, T, d): previous token
        logits = self.head(self.norm(self.drop(torch.tanh(h + self.prev(shifted)))))   # (B, T, V)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)
        self.calls += self.training                                # count training calls only
        if self.explode_at is not None and self.training and self.calls >= self.explode_at:
            loss = loss * float("nan")
        return logits, loss


def _ids(n=3000, vocab=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(vocab, (n,), generator=g)


def _config(**kw):
    base = dict(max_steps=20, batch_size=4, seq_len=16, grad_accum=2, max_lr=3e-2, min_lr=3e-3,
                warmup_steps=4, eval_interval=10, eval_tokens=512, seed=3)
    return TrainConfig(**{**base, **kw})


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return TinyLM(**kw)


def test_cosine_schedule_matches_torch_schedulers():
    max_steps, warmup, max_lr, min_lr = 50, 7, 0.5, 0.05
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=max_lr)
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, end_factor=1.0, total_iters=warmup - 1)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max_steps - warmup, eta_min=min_lr)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[warmup])
    for step in range(max_steps + 1):
        assert math.isclose(cosine_schedule(step, max_steps, warmup, max_lr, min_lr),
                            opt.param_groups[0]["lr"], rel_tol=1e-9, abs_tol=1e-12), step
        opt.step()
        sched.step()
    assert cosine_schedule(max_steps + 5, max_steps, warmup, max_lr, min_lr) == min_lr
    assert cosine_schedule(0, 10, 0, 1.0, 0.0) == 1.0                        # no warm-up


@pytest.mark.parametrize("kwargs", [dict(step=-1), dict(warmup_steps=11), dict(min_lr=2.0)])
def test_cosine_schedule_rejects_bad_input(kwargs):
    args = dict(step=0, max_steps=10, warmup_steps=2, max_lr=1.0, min_lr=0.1) | kwargs
    with pytest.raises(ValueError, match=next(iter(kwargs)).split("_")[0]):
        cosine_schedule(**args)


def test_param_groups_decay_matrices_only():
    model = _model()
    decay, no_decay = param_groups(model, 0.1)
    assert {id(p) for p in decay["params"]} == {id(p) for p in model.parameters() if p.dim() >= 2}
    assert {id(p) for p in no_decay["params"]} == {id(p) for p in model.parameters() if p.dim() < 2}
    assert no_decay["weight_decay"] == 0.0
    # oracle: with zero gradients, AdamW's only change is decoupled decay p <- p (1 - lr wd)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=0.5)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    for n, p in model.named_parameters():
        factor = 1 - 0.5 * 0.1 if p.dim() >= 2 else 1.0
        torch.testing.assert_close(p.detach(), before[n] * factor)


def test_adamw_first_step_matches_the_closed_form():
    # oracle: after one step, m_hat = g and v_hat = g^2, so p <- p (1 - lr wd) - lr g / (|g| + eps)
    model = _model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {n: torch.randn_like(p) for n, p in model.named_parameters()}
    opt = adamw(param_groups(model, 0.1), lr=0.01, eps=1e-8)
    assert opt.defaults["fused"]                       # CPU has the fused kernel (PyTorch >= 2.4)
    for n, p in model.named_parameters():
        p.grad = grads[n].clone()
    opt.step()
    for n, p in model.named_parameters():
        wd = 0.1 if p.dim() >= 2 else 0.0
        g = grads[n]
        expected = before[n] * (1 - 0.01 * wd) - 0.01 * g / (g.abs() + 1e-8)
        torch.testing.assert_close(p.detach(), expected, rtol=1e-5, atol=1e-7)


def test_adamw_refuses_to_be_told_the_implementation():
    with pytest.raises(ValueError, match="torch.optim.AdamW"):
        adamw(nn.Linear(2, 2).parameters(), lr=1e-3, fused=False)


def test_trainer_steps_with_the_fused_adamw():
    trainer = Trainer(_model(), _ids(), _ids(1000, seed=1), _config())
    assert isinstance(trainer.optimizer, torch.optim.AdamW) and trainer.optimizer.defaults["fused"]


def _train(config, seed=0, steps=None, resume=None, **model_kw):
    model = _model(seed, **model_kw)
    trainer = Trainer(model, _ids(), _ids(1000, seed=1), config)
    if resume is not None:
        trainer.load_checkpoint(resume)
    trainer.fit(steps)
    return trainer


def test_resume_gives_identical_weights(tmp_path):
    straight = _train(_config())
    first = _train(_config(out_dir=str(tmp_path)), steps=10)
    assert first.step == 10 and latest_checkpoint(tmp_path).name == "step_000010"
    resumed = _train(_config(out_dir=str(tmp_path)), seed=123, resume=tmp_path)   # other init: all restored
    assert resumed.step == 20
    for (n, a), b in zip(straight.raw_model.state_dict().items(), resumed.raw_model.state_dict().values()):
        assert torch.equal(a, b), n
    assert straight.history["train_loss"] == resumed.history["train_loss"]
    assert straight.history["val_loss"] == resumed.history["val_loss"]
    assert resumed.raw_model.head.weight is resumed.raw_model.embed.weight   # tie survives loading
    info = json.loads((latest_checkpoint(tmp_path) / "state.json").read_text())
    assert info["step"] == 20 and info["schedule"]["warmup_steps"] == 4
    state = torch.load(latest_checkpoint(tmp_path) / "optimizer.pt", weights_only=True)
    assert set(state) >= {"optimizer", "generator", "torch_rng"}
    assert sorted(p.name for p in tmp_path.glob("step_*")) == ["step_000010", "step_000020"]


def test_course_seed_moves_the_batch_sampler_and_resume_stays_exact(tmp_path, monkeypatch):
    draw = lambda g: torch.randint(1000, (8,), generator=g)
    monkeypatch.delenv("COURSE_LLM_SEED", raising=False)
    assert torch.equal(draw(Trainer(_model(), _ids(), None, _config()).generator),
                       draw(torch.Generator().manual_seed(3)))             # config.seed
    monkeypatch.setenv("COURSE_LLM_SEED", "2")
    assert torch.equal(draw(Trainer(_model(), _ids(), None, _config()).generator),
                       draw(torch.Generator().manual_seed(3 + 2)))         # + the offset
    straight = _train(_config())                                           # under the offset
    _train(_config(out_dir=str(tmp_path)), steps=10)
    resumed = _train(_config(out_dir=str(tmp_path)), seed=123, resume=tmp_path)
    for (n, a), b in zip(straight.raw_model.state_dict().items(), resumed.raw_model.state_dict().values()):
        assert torch.equal(a, b), n


def test_resume_keeps_this_machines_adamw_kernel(tmp_path):
    # a checkpoint written with the default (loop) AdamW, as on a machine without the fused kernel:
    # the saved groups say fused=None, and resuming must still step with this machine's kernel
    config = _config(out_dir=str(tmp_path))
    saver = Trainer(_model(), _ids(), _ids(1000, seed=1), config)
    saver.optimizer = torch.optim.AdamW(param_groups(saver.raw_model, config.weight_decay),
                                        lr=config.max_lr, betas=config.betas, eps=config.adam_eps)
    saver.fit(10)
    assert not saver.optimizer.state_dict()["param_groups"][0]["fused"]
    resumed = Trainer(_model(seed=5), _ids(), _ids(1000, seed=1), config)
    assert resumed.load_checkpoint(tmp_path) == 10
    assert all(g["fused"] for g in resumed.optimizer.param_groups)
    saved, loaded = saver.optimizer.state_dict()["state"], resumed.optimizer.state_dict()["state"]
    assert saved.keys() == loaded.keys()
    assert all(torch.equal(saved[k]["exp_avg_sq"], loaded[k]["exp_avg_sq"]) for k in saved)
    resumed.fit()
    assert resumed.step == 20


def test_validation_loss_is_mean_over_windows():
    model = _model(dropout=0.0)
    val = _ids(200, seed=5)
    trainer = Trainer(model, _ids(), val, _config(eval_tokens=None, seq_len=16))
    n = (len(val) - 1) // 16 * 16
    logits, _ = model(val[:n].view(-1, 16))
    want = F.cross_entropy(logits.flatten(0, 1), val[1:n + 1]).item()
    assert math.isclose(trainer.evaluate(), want, rel_tol=1e-5)


def test_loss_falls_on_learnable_data():
    ids = torch.arange(3000) % 7                       # next token fully determined
    trainer = Trainer(_model(dropout=0.0), ids, ids[:500], _config(max_steps=60, eval_interval=60))
    history = trainer.fit()
    assert history["val_loss"][-1] < 0.2 < math.log(7)


def test_checkpoint_from_other_config_lists_keys(tmp_path):
    path = save_weights(_model(d=16), tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match=r"prev\.weight.*\(16, 16\).*\(8, 8\)"):
        load_weights(_model(d=8), path)
    other = nn.Sequential(nn.Linear(3, 3))
    with pytest.raises(ValueError, match=r"missing keys \['0\.bias', '0\.weight'\]"):
        load_weights(other, path)


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    config = _config(out_dir=str(tmp_path), eval_interval=5, grad_accum=1)
    model = _model(explode_at=13)                      # training calls 1..12 fine, 13 gives NaN
    trainer = Trainer(model, _ids(), _ids(1000, seed=1), config)
    with pytest.raises(NonFiniteLossError, match=r"step 12.*step_000010"):
        trainer.fit()
    good = latest_checkpoint(tmp_path)
    assert good.name == "step_000010"
    fresh = Trainer(_model(seed=9), _ids(), None, config)
    assert fresh.load_checkpoint(tmp_path) == 10
    assert all(torch.isfinite(p).all() for p in fresh.raw_model.parameters())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_two_processes_equal_one_process(tmp_path):
    train_ids, val_ids = _ids(), _ids(1000, seed=1)
    torch.save(train_ids, tmp_path / "train.pt")
    torch.save(val_ids, tmp_path / "val.pt")
    per_process = dict(max_steps=6, batch_size=2, seq_len=16, grad_accum=2, max_lr=3e-2, min_lr=3e-3,
                       warmup_steps=2, eval_interval=3, eval_tokens=512, seed=3)
    model_kwargs = dict(vocab_size=11, d=16, dropout=0.0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
           "OMP_NUM_THREADS": "1"}
    cmd = [str(Path(sys.executable).with_name("torchrun")), "--nproc_per_node=2", "--nnodes=1",
           "--master_addr=127.0.0.1", f"--master_port={_free_port()}", "-m", "course_llm.train",
           "--model", "test_train:TinyLM", "--model-kwargs", json.dumps(model_kwargs),
           "--train-config", json.dumps(per_process), "--train-ids", str(tmp_path / "train.pt"),
           "--val-ids", str(tmp_path / "val.pt"), "--out", str(tmp_path / "ddp")]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    # one process with the same global batch: twice the windows per micro-step; set_seed, as
    # the command does, so that the two agree under any COURSE_LLM_SEED
    set_seed(3)
    single = Trainer(TinyLM(**model_kwargs), train_ids, val_ids, TrainConfig(**{**per_process, "batch_size": 4}))
    history = single.fit()
    torch.manual_seed(0)
    ddp_model = TinyLM(**model_kwargs)
    load_weights(ddp_model, latest_checkpoint(tmp_path / "ddp") / "model.safetensors")
    for (n, a), b in zip(single.raw_model.state_dict().items(), ddp_model.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=n)
    info = json.loads((latest_checkpoint(tmp_path / "ddp") / "state.json").read_text())
    assert info["world_size"] == 2
    assert info["history"]["val_loss"] == pytest.approx(history["val_loss"], rel=1e-4)
    assert info["history"]["train_loss"] == pytest.approx(history["train_loss"], rel=1e-4)


def test_bad_inputs():
    with pytest.raises(ValueError, match="warmup_steps"):
        TrainConfig(max_steps=10, warmup_steps=20)
    with pytest.raises(ValueError, match="seq_len"):
        Trainer(_model(), _ids(10), None, _config(seq_len=16))
    with pytest.raises(TypeError, match="config"):
        Trainer(_model(), _ids(), None, {"max_steps": 3})


def test_cli_builds_gpt_from_config_json(tmp_path):
    fields = {"vocab_size": 11, "n_layer": 1, "n_head": 2, "d_model": 16, "max_len": 16}
    torch.manual_seed(5)
    built = build_model("course_llm.gpt:GPT", config=json.loads(json.dumps(fields)))
    torch.manual_seed(5)
    direct = GPT(GPTConfig(**fields))                               # the oracle: built by hand
    assert isinstance(built, GPT) and built.config == direct.config
    for (n, a), b in zip(built.state_dict().items(), direct.state_dict().values()):
        assert torch.equal(a, b), n
    llama = build_model("course_llm.gpt:GPT", config=fields, config_class="course_llm.gpt:GPTConfig.llama_style")
    assert llama.config == GPTConfig.llama_style(**fields)
    assert isinstance(build_model("test_train:TinyLM", {"vocab_size": 7}), TinyLM)   # kwargs route unchanged
    with pytest.raises(ValueError, match="config-class"):
        build_model("test_train:TinyLM", config={"d": 4})           # no TinyLMConfig
    with pytest.raises(ValueError, match="MODULE:NAME"):
        build_model("course_llm.gpt.GPT", config=fields)
    with pytest.raises(TypeError, match="config"):
        build_model("course_llm.gpt:GPT", config='{"n_layer": 1}')
    # the command line end to end: max_len filled in from the training configuration's seq_len
    torch.save(_ids(), tmp_path / "train.pt")
    history = main(["--model", "course_llm.gpt:GPT", "--model-config", json.dumps({k: v for k, v in fields.items() if k != "max_len"}),
                    "--train-config", json.dumps(dict(max_steps=2, batch_size=2, seq_len=8, warmup_steps=1)),
                    "--train-ids", str(tmp_path / "train.pt"), "--out", str(tmp_path / "gpt")])
    assert len(history["train_loss"]) == 2
    info = json.loads((latest_checkpoint(tmp_path / "gpt") / "state.json").read_text())
    assert info["model_config"] == asdict(GPTConfig(**{**fields, "max_len": 8}))


@pytest.mark.parametrize("field, value, error", [
    ("max_grad_norm", float("nan"), ValueError), ("max_grad_norm", -1.0, ValueError),
    ("max_grad_norm", None, TypeError), ("max_lr", 0.0, ValueError), ("max_lr", float("nan"), ValueError),
    ("max_lr", float("inf"), ValueError), ("min_lr", -1e-4, ValueError), ("min_lr", float("nan"), ValueError),
    ("adam_eps", 0.0, ValueError), ("weight_decay", -0.1, ValueError), ("weight_decay", float("inf"), ValueError),
    ("betas", (0.9,), ValueError), ("betas", (0.9, 1.0), ValueError), ("betas", (float("nan"), 0.9), ValueError),
    ("batch_size", 0, ValueError), ("batch_size", -2, ValueError), ("batch_size", 2.0, TypeError),
    ("seq_len", 0, ValueError), ("grad_accum", 0, ValueError), ("max_steps", True, TypeError),
    ("eval_interval", 0, ValueError), ("keep_checkpoints", 0, ValueError), ("eval_tokens", 0, ValueError),
    ("warmup_steps", -1, ValueError), ("seed", -1, ValueError), ("out_dir", 3, TypeError),
    ("progress", "yes", TypeError), ("mixed_precision", 1, TypeError),
])
def test_train_config_rejects_bad_fields(field, value, error):
    with pytest.raises(error, match=field.split("[")[0]):
        TrainConfig(**{field: value})


def _gpt(vocab_size=11):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=vocab_size, max_len=8, n_layer=1, d_model=16, n_head=2))


def test_trainer_rejects_ids_outside_the_vocabulary():
    cfg = _config(seq_len=8, max_steps=2, warmup_steps=0)
    for bad in (torch.arange(100) % 20, torch.arange(100) % 11 - 1):
        with pytest.raises(ValueError, match=r"train_ids.*vocabulary has 11 tokens"):
            Trainer(_gpt(), bad, None, cfg)
    with pytest.raises(ValueError, match=r"val_ids.*vocabulary"):
        Trainer(_gpt(), torch.arange(100) % 11, torch.arange(100) + 11, cfg)
    with pytest.raises(TypeError, match="train_ids"):
        Trainer(_gpt(), torch.arange(100.0), None, cfg)
    with pytest.raises(ValueError, match="seq_len=8"):
        Trainer(_gpt(), torch.arange(100) % 11, torch.arange(5), cfg)
    # a model that does not state its vocabulary: the embedding's IndexError becomes a ValueError
    trainer = Trainer(_model(vocab_size=7), torch.arange(100) % 9, None, cfg)
    with pytest.raises(ValueError, match="vocabulary"):
        trainer.fit()
    with pytest.raises(ValueError, match=r"ids.*vocabulary"):
        Trainer(_gpt(), torch.arange(100) % 11, None, cfg).evaluate(torch.arange(100) % 12)


def test_trainer_rejects_bad_fit_steps_and_bad_models():
    trainer = Trainer(_model(), _ids(), None, _config())
    for steps, error in ((0, ValueError), (-1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="steps"):
            trainer.fit(steps)

    class NoLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(11, 11)

        def forward(self, idx, targets=None):
            return self.table(idx)

    with pytest.raises(TypeError, match=r"\(logits, loss\)"):
        Trainer(NoLoss(), _ids(), None, _config()).fit(1)
    frozen = _model().requires_grad_(False)
    with pytest.raises(ValueError, match="trainable"):
        Trainer(frozen, _ids(), None, _config())
    with pytest.raises(TypeError, match="model"):
        Trainer(lambda x: x, _ids(), None, _config())


def test_nan_max_grad_norm_can_no_longer_switch_clipping_off():
    with pytest.raises(ValueError, match="max_grad_norm"):
        TrainConfig(max_grad_norm=float("nan"))
    # and a real clip does clip: the oracle is torch's clip_grad_norm_ applied by hand
    cfg = _config(max_grad_norm=1e-3, max_steps=1, warmup_steps=0, grad_accum=1)
    trainer = Trainer(_model(dropout=0.0), _ids(), None, cfg)
    trainer.train_step()
    norm = torch.nn.utils.get_total_norm([p.grad for p in trainer.raw_model.parameters()])
    assert float(norm) <= 1e-3 * (1 + 1e-4)


def test_ids_file_that_is_not_plain_tensors_is_named(tmp_path):
    bad = tmp_path / "ids.pt"
    bad.write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match=str(bad)):
        main(["--model", "test_train:TinyLM", "--train-ids", str(bad), "--out", str(tmp_path / "o")])


def test_cli_names_bad_flags(tmp_path):
    torch.save(_ids(), tmp_path / "train.pt")
    base = ["--model", "test_train:TinyLM", "--train-ids", str(tmp_path / "train.pt"), "--out", str(tmp_path / "o")]
    for flag, text in (("--train-config", "{max_steps: 2}"), ("--model-kwargs", "[1, 2]"),
                       ("--model-config", "3")):
        with pytest.raises(ValueError, match=flag):
            main(base + [flag, text])
    with pytest.raises(ValueError, match="cannot import"):
        build_model("no_such_module_xyz:Model")
