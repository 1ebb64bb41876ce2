"""Tests of course_llm.checkpoints: checkpoints lose nothing. The oracles are the weights that were
saved (compared bit for bit), crashes injected at every file-system operation of a save, and
files truncated or replaced by hand."""
import json
import os
import pickle
import shutil
import time

import pytest
import torch
import torch.nn as nn

from course_llm.checkpoints import (clean_stale_checkpoints, latest_checkpoint, list_checkpoints,
                                    load_weights, prune_checkpoints, read_checkpoint, save_weights,
                                    write_checkpoint)
from course_llm.train_config import TrainConfig
from course_llm.trainer import Trainer


def _linear(seed):
    torch.manual_seed(seed)
    return nn.Linear(3, 3)


def _names(out):
    return [p.name for p in list_checkpoints(out)]


def test_list_orders_by_step_not_by_name(tmp_path):
    for n in ("step_999999", "step_1000000", "step_000002", "step_x", ".step_000001.tmp1"):
        (tmp_path / n).mkdir()
    assert _names(tmp_path) == ["step_000002", "step_999999", "step_1000000"]


def test_prune_keeps_latest_after_resume_from_older(tmp_path):
    lin = _linear(0)
    for step in (10, 20):
        write_checkpoint(tmp_path, step, lin, {}, {}, keep=2)
    read_checkpoint(tmp_path / "step_000010", lin)
    write_checkpoint(tmp_path, 15, _linear(1), {}, {}, keep=1)
    assert latest_checkpoint(tmp_path).name == "step_000015"
    assert _names(tmp_path) == ["step_000015"]
    back = nn.Linear(3, 3)
    read_checkpoint(tmp_path, back)
    assert torch.equal(back.weight, _linear(1).weight)


def test_prune_keeps_latest_plus_highest_steps(tmp_path):
    for step in (1, 5, 3, 9):
        (tmp_path / f"step_{step:06d}").mkdir()
    (tmp_path / "latest.json").write_text(json.dumps({"checkpoint": "step_000003", "step": 3}))
    removed = prune_checkpoints(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == ["step_000001", "step_000005"]
    assert _names(tmp_path) == ["step_000003", "step_000009"]


def test_trainer_resume_from_older_checkpoint_keeps_what_it_writes(tmp_path):
    torch.manual_seed(0)
    ids = torch.randint(7, (500,))
    cfg = dict(max_steps=20, batch_size=2, seq_len=8, warmup_steps=0, eval_interval=10,
               out_dir=str(tmp_path), progress=False)

    class Bigram(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(7, 7)

        def forward(self, idx, targets=None):
            logits = self.table(idx)
            return logits, nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())

    Trainer(Bigram(), ids, None, TrainConfig(**cfg)).fit()
    assert _names(tmp_path) == ["step_000010", "step_000020"]
    again = Trainer(Bigram(), ids, None, TrainConfig(**{**cfg, "eval_interval": 5,
                                                          "keep_checkpoints": 1, "max_steps": 15}))
    assert again.load_checkpoint(tmp_path / "step_000010") == 10
    again.fit()
    assert latest_checkpoint(tmp_path).name == "step_000015"
    assert _names(tmp_path) == ["step_000015"]
    fresh = Trainer(Bigram(), ids, None, TrainConfig(**cfg))
    assert fresh.load_checkpoint(tmp_path) == 15
    assert torch.equal(fresh.raw_model.table.weight, again.raw_model.table.weight)


def _resave_with_crash_at(k, out, old, new, monkeypatch):
    """Save `new` at the step of `old`'s checkpoint with the k-th file operation failing."""
    calls = [0]
    real = {"replace": os.replace, "rmtree": shutil.rmtree, "copytree": shutil.copytree,
            "link": os.link}

    def failing(name):
        def op(*a, **kw):
            calls[0] += 1
            if calls[0] == k:
                raise OSError(f"injected crash at operation {k} ({name})")
            return real[name](*a, **kw)
        return op
    with monkeypatch.context() as m:
        m.setattr(os, "replace", failing("replace"))
        m.setattr(os, "link", failing("link"))
        m.setattr(shutil, "rmtree", failing("rmtree"))
        m.setattr(shutil, "copytree", failing("copytree"))
        try:
            write_checkpoint(out, 5, new, {"w": new.weight.detach()}, {})
        except OSError:
            return True
    return False


def test_saving_the_same_step_again_is_atomic(tmp_path, monkeypatch):
    old, new = _linear(0), _linear(1)
    k, crashes = 1, 0
    while True:
        out = tmp_path / f"run{k}"
        write_checkpoint(out, 5, old, {"w": old.weight.detach()}, {})
        crashed = _resave_with_crash_at(k, out, old, new, monkeypatch)
        back = nn.Linear(3, 3)
        ckpt = read_checkpoint(out, back)                 # latest.json names a complete checkpoint
        assert any(torch.equal(back.weight, m.weight) for m in (old, new)), k
        assert torch.equal(ckpt.state["w"], back.weight), k   # weights and state from one save
        if not crashed:
            assert torch.equal(back.weight, new.weight)
            assert not list(out.glob(".step_*"))
            break
        crashes += 1
        k += 1
    assert crashes >= 5                                   # every step of the swap was tried


def test_crash_while_writing_a_new_step_keeps_previous(tmp_path, monkeypatch):
    write_checkpoint(tmp_path, 1, _linear(0), {}, {})
    with monkeypatch.context() as m:
        m.setattr(torch, "save", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
        with pytest.raises(OSError, match="disk full"):
            write_checkpoint(tmp_path, 2, _linear(1), {}, {})
    assert latest_checkpoint(tmp_path).name == "step_000001"
    assert not list(tmp_path.glob(".step_*"))


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.pt", "state.json"])
@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_damaged_files_are_named(tmp_path, name, damage):
    write_checkpoint(tmp_path, 3, _linear(0), {"optimizer": {"x": torch.ones(4)}}, {"a": 1})
    file = tmp_path / "step_000003" / name
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\xff\xfe" + os.urandom(64))
    model = _linear(7)
    before = model.weight.detach().clone()
    with pytest.raises(ValueError, match=str(file)):
        read_checkpoint(tmp_path, model)
    assert torch.equal(model.weight, before)              # nothing loaded from a damaged checkpoint


@pytest.mark.parametrize("text", ['{"checkpoint": "step_0', "\xff", '["step_000003"]',
                                  '{"checkpoint": "../elsewhere"}', '{"checkpoint": "step_000009"}'])
def test_bad_latest_pointer_is_named(tmp_path, text):
    write_checkpoint(tmp_path, 3, _linear(0), {}, {})
    (tmp_path / "latest.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match="latest.json"):
        latest_checkpoint(tmp_path)
    with pytest.raises(ValueError, match="latest.json"):
        read_checkpoint(tmp_path, _linear(0))


def test_missing_file_is_named(tmp_path):
    write_checkpoint(tmp_path, 3, _linear(0), {}, {})
    (tmp_path / "step_000003" / "optimizer.pt").unlink()
    with pytest.raises(FileNotFoundError, match="optimizer.pt"):
        read_checkpoint(tmp_path, _linear(0))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        read_checkpoint(tmp_path / "nothing", _linear(0))


class _Evil:
    def __reduce__(self):
        return (print, ("this should never run",))


def test_pickled_code_is_refused(tmp_path, capsys):
    write_checkpoint(tmp_path, 3, _linear(0), {}, {})
    torch.save({"optimizer": _Evil()}, tmp_path / "step_000003" / "optimizer.pt")
    with pytest.raises(ValueError, match="optimizer.pt"):
        read_checkpoint(tmp_path, _linear(0))
    assert "never run" not in capsys.readouterr().out


def test_stale_temporaries_are_cleaned_but_fresh_ones_and_latest_kept(tmp_path):
    write_checkpoint(tmp_path, 1, _linear(0), {}, {})
    old = time.time() - 7200
    stale_dir, fresh_dir = tmp_path / ".step_000002.ab12", tmp_path / ".step_000003.cd34"
    stale_file = tmp_path / ".latest.json.xyz.tmp"
    stale_dir.mkdir(), fresh_dir.mkdir(), stale_file.write_text("half")
    for p in (stale_dir, stale_file):
        os.utime(p, (old, old))
    write_checkpoint(tmp_path, 4, _linear(0), {}, {})
    assert not stale_dir.exists() and not stale_file.exists() and fresh_dir.exists()
    # a temporary folder that latest.json names (a crash mid re-save) is never removed
    named = tmp_path / ".step_000004.ef56"
    shutil.copytree(tmp_path / "step_000004", named)
    os.utime(named, (old, old))
    (tmp_path / "latest.json").write_text(json.dumps({"checkpoint": named.name, "step": 4}))
    assert named not in clean_stale_checkpoints(tmp_path, max_age=0)
    assert named.exists() and not fresh_dir.exists()


def test_tied_weights_round_trip(tmp_path):
    tied = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    tied[1].weight = tied[0].weight
    stored = load_weights(tied, save_weights(tied, tmp_path / "w.safetensors"))
    assert list(stored) == ["0.weight"]


def test_bad_inputs(tmp_path):
    with pytest.raises(TypeError, match="model"):
        save_weights("not a model", tmp_path / "w.safetensors")
    with pytest.raises(TypeError, match="model"):
        write_checkpoint(tmp_path, 1, {"w": 1}, {}, {})
    with pytest.raises(ValueError, match="step"):
        write_checkpoint(tmp_path, -1, _linear(0), {}, {})
    with pytest.raises(ValueError, match="step"):
        write_checkpoint(tmp_path, 2, _linear(0), {}, {"step": 3})
    with pytest.raises(TypeError, match="state"):
        write_checkpoint(tmp_path, 1, _linear(0), [1], {})
    for keep in (0, -1):
        with pytest.raises(ValueError, match="keep"):
            prune_checkpoints(tmp_path, keep)
    with pytest.raises(TypeError, match="keep"):
        prune_checkpoints(tmp_path, 1.5)
    for age in (float("nan"), -1.0):
        with pytest.raises(ValueError, match="max_age"):
            clean_stale_checkpoints(tmp_path, age)
    with pytest.raises(FileNotFoundError, match="weights"):
        load_weights(_linear(0), tmp_path / "none.safetensors")


# ----- issue 31: a pointer that names nothing, all-or-nothing loads, two writers ----------------

@pytest.mark.parametrize("name", ["", ".", "..", "step_000003/..", "notes", ".hidden"])
def test_pointer_to_no_checkpoint_folder_is_refused_and_prune_deletes_nothing(tmp_path, name):
    for step in (1, 2, 3):
        write_checkpoint(tmp_path, step, _linear(step), {}, {})
    (tmp_path / "notes").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "latest.json").write_text(json.dumps({"checkpoint": name, "step": 3}))
    with pytest.raises(ValueError, match="latest.json"):
        prune_checkpoints(tmp_path, keep=1)
    assert _names(tmp_path) == ["step_000001", "step_000002", "step_000003"]
    write_checkpoint(tmp_path, 4, _linear(4), {}, {}, keep=4)     # a new save repairs it
    assert latest_checkpoint(tmp_path).name == "step_000004" and len(_names(tmp_path)) == 4


def test_a_check_that_fails_leaves_the_model_unchanged(tmp_path):
    write_checkpoint(tmp_path, 3, _linear(0), {"optimizer": {"state": {}}}, {"a": 1})
    model = _linear(7)
    before = model.weight.detach().clone()
    seen = []

    def check(ckpt):
        seen.append((ckpt.info["a"], sorted(ckpt.state)))
        raise ValueError("optimizer.pt does not fit")

    with pytest.raises(ValueError, match="does not fit"):
        read_checkpoint(tmp_path, model, check=check)
    assert seen == [(1, ["optimizer"])] and torch.equal(model.weight, before)
    with pytest.raises(TypeError, match="check"):
        read_checkpoint(tmp_path, model, check="yes")
    read_checkpoint(tmp_path, model, check=lambda ckpt: None)
    assert torch.equal(model.weight, _linear(0).weight)


def _adam_state(model, steps=1):
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    for _ in range(steps):
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
    return opt


def _torch_refuses(optimizer, saved):
    """The oracle: torch's own load_state_dict, then one step (which meets a wrong shape)."""
    import copy
    opt = copy.deepcopy(optimizer)
    try:
        opt.load_state_dict(saved)
        for group in opt.param_groups:
            for p in group["params"]:
                p.grad = torch.ones_like(p)
        opt.step()
    except Exception:  # noqa: BLE001 - whatever torch raises
        return True
    return False


def test_check_optimizer_state_refuses_what_torch_cannot_use():
    from course_llm.checkpoints import check_optimizer_state
    good = _adam_state(_linear(0)).state_dict()
    target = _adam_state(_linear(1))
    other = _adam_state(nn.Linear(3, 4)).state_dict()                        # other shapes
    two_groups = torch.optim.AdamW([{"params": [_linear(2).weight]},
                                    {"params": [_linear(2).bias]}]).state_dict()
    fewer = {**good, "param_groups": [{**good["param_groups"][0], "params": [0]}]}
    bad = [other, two_groups, fewer]
    for saved in bad:
        assert _torch_refuses(target, saved)
        with pytest.raises(ValueError, match="optimizer"):
            check_optimizer_state(target, saved)
    assert not _torch_refuses(target, good)
    check_optimizer_state(target, good)
    for saved in ([], {"state": {}}, {"state": [], "param_groups": []}):
        with pytest.raises(ValueError, match="optimizer"):
            check_optimizer_state(target, saved)
    with pytest.raises(TypeError, match="optimizer"):
        check_optimizer_state("adam", good)


def test_trainer_load_is_all_or_nothing(tmp_path):
    torch.manual_seed(0)
    ids = torch.randint(7, (500,))
    cfg = TrainConfig(max_steps=4, batch_size=2, warmup_steps=0, eval_interval=4,
                      out_dir=str(tmp_path), progress=False)

    class Bigram(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(7, 7)

        def forward(self, idx, targets=None):
            logits = self.table(idx)
            return logits, nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())

    Trainer(Bigram(), ids, None, cfg).fit()
    file = tmp_path / "step_000004" / "optimizer.pt"
    state = torch.load(file, weights_only=True)
    state["optimizer"]["param_groups"][0]["params"] = [0, 1]         # a parameter too many
    torch.save(state, file)
    fresh = Trainer(Bigram(), ids, None, cfg)
    before = fresh.raw_model.table.weight.detach().clone()
    with pytest.raises(ValueError, match="optimizer"):
        fresh.load_checkpoint(tmp_path)
    assert torch.equal(fresh.raw_model.table.weight, before) and fresh.step == 0


def _save_many(out, worker, n, results):
    from course_llm.checkpoints import CheckpointLockedError
    for i in range(n):
        try:
            write_checkpoint(out, worker * 1000 + i, _linear(i), {"w": torch.ones(64, 64)},
                             {"worker": worker}, keep=3)
            results.append("saved")
        except CheckpointLockedError as e:
            assert "checkpoint.lock" in str(e) and "pid" in str(e)
            results.append("locked")
        except Exception as e:  # noqa: BLE001 - what the lock must prevent
            results.append(f"{type(e).__name__}: {e}")


def test_two_writers_into_one_out_dir_get_a_clear_error_not_a_crash(tmp_path):
    import threading
    results = []
    threads = [threading.Thread(target=_save_many, args=(tmp_path, w, 25, results))
               for w in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 50
    assert all(r in ("saved", "locked") for r in results), [r for r in results if len(r) > 6]
    assert "saved" in results
    back = nn.Linear(3, 3)
    read_checkpoint(tmp_path, back)                       # latest.json names a complete one
    assert not (tmp_path / "checkpoint.lock").exists()    # released after every save
    assert len(_names(tmp_path)) <= 3


def _hold_lock(out, ready, release):
    from course_llm.checkpoints import checkpoint_lock
    with checkpoint_lock(out):
        ready.set()
        release.wait(10)


def test_a_second_process_is_refused_by_name_and_a_dead_holder_does_not_block(tmp_path):
    import multiprocessing as mp
    from course_llm.checkpoints import CheckpointLockedError
    ctx = mp.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(tmp_path, ready, release))
    holder.start()
    assert ready.wait(10)
    with pytest.raises(CheckpointLockedError, match=rf"pid {holder.pid}\b"):
        write_checkpoint(tmp_path, 1, _linear(0), {}, {})
    release.set()
    holder.join(10)
    write_checkpoint(tmp_path, 1, _linear(0), {}, {})     # released: saving works again
    # a lock left by a process that died is taken over (same host, pid gone)
    (tmp_path / "checkpoint.lock").write_text(json.dumps(
        {"pid": holder.pid, "host": __import__("socket").gethostname(), "since": 0}))
    write_checkpoint(tmp_path, 2, _linear(0), {}, {})
    assert latest_checkpoint(tmp_path).name == "step_000002"


@pytest.mark.parametrize("bad", [3, None, b"x", ""])
def test_paths_are_checked(tmp_path, bad):
    for call in (lambda: write_checkpoint(bad, 1, _linear(0), {}, {}),
                 lambda: read_checkpoint(bad, _linear(0)),
                 lambda: prune_checkpoints(bad, 1), lambda: latest_checkpoint(bad),
                 lambda: list_checkpoints(bad), lambda: clean_stale_checkpoints(bad),
                 lambda: save_weights(_linear(0), bad), lambda: load_weights(_linear(0), bad)):
        with pytest.raises((TypeError, ValueError), match="out_dir|path"):
            call()
