"""Tests for clerk.train: LoRA SFT on a tiny scratch model (loss, weights, determinism, resume,
adapter snapshots, the learning curve, bench).

    python -m pytest tests/test_train.py -q -x
"""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from doctest_kit import run_package_doctests
from signal_kit import wait_signalled

from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.evaluate.curve import COLUMNS as CURVE_COLUMNS
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.models.loading import load_model
from clerk.models.materialize import materialize
from clerk.models.spec import ModelSpec
from clerk.sft.dataset import sft_stats, to_dataset_dict, write_sft
from clerk.sft.examples import SFTDataConfig, build_rows
from clerk.train.bench import bench_throughput
from clerk.train.config import TrainConfig
from clerk.train.data import supervised_lm_loss
from clerk.train.trainer import LOG_COLUMNS, complete_checkpoints, run_training, truncate_log

TINY = dict(vocab_size=1000, hidden=64, layers=2, heads=4, intermediate=128, seed=0)
#: The run every test compares against: 30 steps, a checkpoint every 10, fp32, one thread, LoRA
#: dropout 0.05 and the validation loss at the end.
RUN = dict(seed=3, max_steps=30, batch_size=2, max_length=512, lr=3e-3, lora_r=4, lora_alpha=8,
           lora_targets=("q_proj", "v_proj"), save_steps=10, logging_steps=1, bf16="off", device="cpu", threads=1,
           precision="fp32", lora_dropout=0.05, validation_loss=True, snapshot_steps=0)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> dict[str, Path]:
    """Timelines, a tiny scratch model and the SFT dataset clerk build-sft makes of them (ledger
    views; one validation persona, named in sft_stats.json)."""
    root = tmp_path_factory.mktemp("train")
    timelines = generate(seed=2, split="train", personas=4, sessions=4)
    write_timelines(root / "train.jsonl", timelines)
    start = time.perf_counter()
    materialize(ModelSpec(kind="scratch", timelines=str(root / "train.jsonl"), **TINY), root / "model")
    sft_config = SFTDataConfig(seed=2, answer_ratio=1.0, val_fraction=0.25)
    rows, info = build_rows(timelines, sft_config)
    dataset = to_dataset_dict(rows)
    write_sft(dataset, root / "sft", sft_stats(dataset, sft_config, info["question_pool"]))
    return {"root": root, "model": root / "model", "sft": root / "sft", "timelines": root / "train.jsonl",
            "materialize_seconds": time.perf_counter() - start}


def config(workdir, out: str, **overrides) -> TrainConfig:
    return TrainConfig(sft=str(workdir["sft"]), model=str(workdir["model"]), out=str(workdir["root"] / out),
                       **{**RUN, **overrides})


@pytest.fixture(scope="module")
def reference(workdir):
    """The uninterrupted reference run, timed."""
    start = time.perf_counter()
    result = run_training(config(workdir, "ref"))
    result.metrics["wall"] = time.perf_counter() - start
    return result


class TestTrainConfig:
    def test_bad_bf16(self):
        """An unknown precision mode names the choices."""
        with pytest.raises(UserError, match=r"^--bf16 must be one of auto, on, off, got 'yes'$"):
            TrainConfig(sft="s", model="m", out="o", bf16="yes")

    def test_bad_max_steps(self):
        """max_steps is -1 or positive."""
        with pytest.raises(UserError, match=r"^--max-steps must be -1 or >= 1, got 0$"):
            TrainConfig(sft="s", model="m", out="o", max_steps=0)

    def test_doctests(self):
        """The >>> examples of every clerk.train module hold."""
        result = run_package_doctests("clerk.train")
        assert result.attempted > 0 and result.failed == 0

    def test_resolved_is_json(self):
        """The resolved config is plain JSON (tuples become lists)."""
        cfg = TrainConfig(sft="s", model="m", out="o", lora_targets=("q_proj",))
        assert json.loads(json.dumps(cfg.resolved()))["lora_targets"] == ["q_proj"]


class TestRunTraining:
    def test_smoke_time(self, workdir, reference):
        """Scratch materialisation plus 30 training steps take well under 2 minutes on CPU."""
        assert reference.steps == 30
        assert workdir["materialize_seconds"] + reference.metrics["wall"] < 120

    def test_outputs(self, reference):
        """OUT holds the adapter, log, metrics and config; checkpoints are gone after success."""
        out = reference.out
        for name in ("adapter_model.safetensors", "adapter_config.json", "train_log.csv", "metrics.json",
                     "train_config.json"):
            assert (out / name).is_file(), name
        assert not (out / "checkpoints").exists()
        record = json.loads((out / "train_config.json").read_text())
        assert record["config"]["max_steps"] == 30 and record["config"]["lora_targets"] == ["q_proj", "v_proj"]
        assert record["gradient_checkpointing"] is False and record["bf16"] is False and record["device"] == "cpu"
        assert record["base_model_source"]["spec"]["kind"] == "scratch"
        assert {"torch", "transformers", "trl", "peft"} <= set(record["versions"])

    def test_loss_logged(self, reference):
        """train_log.csv has one finite row per step, with growing token counts and time."""
        with (reference.out / "train_log.csv").open() as handle:
            rows = list(csv.DictReader(handle))
        assert list(rows[0]) == list(LOG_COLUMNS)
        assert [int(r["step"]) for r in rows] == list(range(1, 31))
        assert all(math.isfinite(float(r["loss"])) for r in rows)
        tokens = [int(r["tokens_seen"]) for r in rows]
        assert tokens == sorted(tokens) and tokens[0] > 0
        metrics = json.loads((reference.out / "metrics.json").read_text())
        assert math.isfinite(metrics["eval_loss"]) and metrics["steps"] == 30

    def test_lora_changed_base_did_not(self, workdir, reference):
        """LoRA B matrices moved away from zero; every base weight equals the file on disk."""
        from safetensors.torch import load_file

        base = load_file(workdir["model"] / "model.safetensors")
        trained = reference.model
        lora_b = {n: p for n, p in trained.named_parameters() if "lora_B" in n}
        assert lora_b and all(p.abs().sum() > 0 for p in lora_b.values())
        state = trained.get_base_model().state_dict()
        for name, tensor in base.items():
            key = name if name in state else name.replace(".weight", ".base_layer.weight")  # LoRA-wrapped
            assert torch.equal(state[key], tensor), name

    def test_deterministic(self, workdir, reference):
        """The same seed gives a byte-identical adapter; another seed does not."""
        again = run_training(config(workdir, "again"))
        other = run_training(config(workdir, "other", seed=4, validation_loss=False))
        ref_bytes = (reference.out / "adapter_model.safetensors").read_bytes()
        assert (again.out / "adapter_model.safetensors").read_bytes() == ref_bytes
        assert (other.out / "adapter_model.safetensors").read_bytes() != ref_bytes

    def test_resume_after_sigterm(self, workdir, reference, capsys):
        """A run killed after its first checkpoint resumes on rerun, says so, and ends at the reference adapter."""
        out = workdir["root"] / "killed"
        args = ["train", "--sft", str(workdir["sft"]), "--model", str(workdir["model"]),
                "--out", str(out), "--seed", "3", "--max-steps", "30", "--batch-size", "2", "--max-length", "512",
                "--lr", "0.003", "--lora-r", "4", "--lora-alpha", "8", "--lora-targets", "q_proj,v_proj",
                "--save-steps", "10", "--logging-steps", "1", "--bf16", "off", "--precision", "fp32",
                "--device", "cpu", "--threads", "1", "--lora-dropout", "0.05", "--validation-loss",
                "--snapshot-steps", "0"]
        cmd = [sys.executable, "-m", "clerk.cli", *args]
        # CLERK_NUMERICS=native: the killed run computes with the kernel dispatch of this process
        # (torch was imported here before any pin could apply), where the rerun and the reference
        # run; with the CLI's pins (MKL_CBWR, once also AVX2 kernels) its first 10 steps could differ.
        env = {**os.environ, "OMP_NUM_THREADS": "1", "CLERK_NUMERICS": "native"}
        marker = out / "checkpoints" / "checkpoint-10" / "clerk_complete"
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_signalled(proc, marker, signal.SIGTERM, deadline=240)
        assert proc.returncode == -signal.SIGTERM, "the run finished before it could be interrupted"
        assert not (out / "adapter_model.safetensors").exists()

        # The rerun in this process (the same `clerk train` command line; a second interpreter
        # would only add its imports): it must find the checkpoint the killed process left.
        clerk_main(args)
        assert f"clerk train: resuming from checkpoint {out / 'checkpoints' / 'checkpoint-10'} (step 10)" in capsys.readouterr().err
        assert json.loads((out / "metrics.json").read_text())["resumed_from_step"] == 10
        assert (out / "adapter_model.safetensors").read_bytes() == (reference.out / "adapter_model.safetensors").read_bytes()
        with (out / "train_log.csv").open() as handle:
            assert [int(r["step"]) for r in csv.DictReader(handle)] == list(range(1, 31))

    def test_resume_refuses_other_config(self, workdir):
        """Checkpoints of a different config are not silently resumed."""
        cfg = config(workdir, "mismatch", max_steps=2, save_steps=1, keep_checkpoints=True)
        run_training(cfg)
        with pytest.raises(UserError, match="holds checkpoints of a run with a different config"):
            run_training(config(workdir, "mismatch", max_steps=2, save_steps=1, lr=1e-3))

    def test_unknown_lora_target_before_training(self, workdir):
        """A LoRA target the base model lacks fails before any step, naming the valid modules."""
        expected = (r"^--lora-targets \(config train.lora_targets\): 'qproj' not found in .*model; LoRA can adapt: "
                    r"down_proj, embed_tokens, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj$")
        with pytest.raises(UserError, match=expected):
            run_training(config(workdir, "badtarget", lora_targets=("q_proj", "qproj")))
        assert not (workdir["root"] / "badtarget" / "adapter_model.safetensors").exists()
        with pytest.raises(UserError, match=r"^--modules-to-save \(config train.modules_to_save\): 'lm_haed' "):
            run_training(config(workdir, "badsave", modules_to_save=("lm_haed",)))

    def test_modules_to_save_and_merge(self, workdir):
        """Full-trained modules are saved with the adapter, and load_model merges them into the base."""
        result = run_training(config(workdir, "mts", max_steps=3, modules_to_save=("embed_tokens", "lm_head"),
                                     bf16="on", validation_loss=False))
        from safetensors import safe_open

        with safe_open(str(result.out / "adapter_model.safetensors"), "pt") as handle:
            keys = list(handle.keys())
        assert any(k.endswith("embed_tokens.weight") for k in keys)
        base, _ = load_model(workdir["model"], device="cpu")
        merged, _ = load_model(workdir["model"], result.out, device="cpu")
        assert type(merged) is type(base)
        assert not torch.equal(merged.model.embed_tokens.weight, base.model.embed_tokens.weight)
        assert torch.equal(merged.model.layers[0].mlp.up_proj.weight, base.model.layers[0].mlp.up_proj.weight)


    def test_fused_loss_head(self, workdir):
        """TRL's own fused LM-head loss (the CUDA default) also trains and is recorded."""
        result = run_training(config(workdir, "fused", max_steps=2, loss_head="fused", validation_loss=False))
        assert json.loads((result.out / "train_config.json").read_text())["loss_head"] == "fused"
        assert math.isfinite(result.metrics["train_loss"])


class TestHelpers:
    @pytest.mark.parametrize("num_items", [None, 7])
    def test_supervised_lm_loss_equals_full_logits_loss(self, num_items):
        """Running the LM head only at supervised positions gives the model's own full-logits loss
        (same sum over supervised next tokens, same normalisation), and the same gradients."""
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2))
        input_ids = torch.randint(0, 97, (3, 11))
        attention_mask = torch.ones_like(input_ids)
        attention_mask[2, 8:] = 0  # a right-padded row
        labels = input_ids.clone()
        labels[:, :6] = -100  # prompt
        labels[2, 8:] = -100  # padding
        labels[1, :] = -100  # a row without supervision
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
        extra = {} if num_items is None else {"num_items_in_batch": torch.tensor(num_items)}
        reference = model(**inputs, **extra).loss
        reference.backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        loss = supervised_lm_loss(model, inputs, None if num_items is None else torch.tensor(num_items))
        loss.backward()
        assert loss.item() == pytest.approx(reference.item(), rel=1e-5)
        for got, want in zip((p.grad for p in model.parameters()), grads):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
        assert "labels" in inputs  # the caller's batch is not modified

    def test_truncate_log(self, tmp_path):
        """Rows after the checkpoint step are dropped and the clock continues from the last kept row."""
        path = tmp_path / "train_log.csv"
        path.write_text("step,loss,lr,tokens_seen,seconds\n1,2.0,1e-3,10,0.5\n2,1.9,1e-3,20,1.0\n3,1.8,1e-3,30,1.5\n")
        assert truncate_log(path, 2) == 1.0
        assert path.read_text().splitlines()[-1] == "2,1.9,1e-3,20,1.0"

    def test_complete_checkpoints(self, tmp_path):
        """Only checkpoints with the completion marker and trainer state count, sorted by step."""
        for step, complete in ((10, True), (20, False), (5, True)):
            ckpt = tmp_path / f"checkpoint-{step}"
            ckpt.mkdir()
            (ckpt / "trainer_state.json").write_text("{}")
            if complete:
                (ckpt / "clerk_complete").write_text("")
        assert [s for s, _ in complete_checkpoints(tmp_path)] == [5, 10]


class TestBench:
    def test_throughput(self, workdir):
        """Every precision mode is timed on the same batches; ratios and loss gaps are against fp32."""
        result = bench_throughput(str(workdir["model"]), str(workdir["sft"]), steps=2, batch_size=2,
                                  max_length=256, threads=1)
        assert result["fp32"]["tokens"] == result["bf16-frozen"]["tokens"] == result["bf16-autocast"]["tokens"] > 0
        for mode in ("bf16-frozen", "bf16-autocast"):
            assert result["ratio"][mode] == pytest.approx(result[mode]["tok_per_s"] / result["fp32"]["tok_per_s"])
            assert result["cpu_ratio"][mode] > 0 and len(result[mode]["losses"]) == 3
        assert result["loss_diff"]["fp32"] == {"mean": 0.0, "mean_abs": 0.0, "max_abs": 0.0}
        assert result["fp32"]["cpu_seconds"] > 0



@pytest.fixture(scope="module")
def snapped(workdir):
    """A 5-step run with an adapter snapshot every 2 steps."""
    return run_training(config(workdir, "snap", max_steps=5, snapshot_steps=2, save_steps=2, validation_loss=False))


class TestSnapshots:
    def test_snapshots_written_and_copied(self, snapped):
        """OUT/snapshots holds one adapter per N steps with snapshot.json (step, examples seen); the
        checkpoint directory they were written into is gone."""
        snaps = snapped.out / "snapshots"
        assert sorted(p.name for p in snaps.iterdir()) == ["step-00002", "step-00004"]
        for step in (2, 4):
            path = snaps / f"step-{step:05d}"
            assert json.loads((path / "snapshot.json").read_text()) == {"step": step, "examples_seen": step * 2}
            assert (path / "adapter_model.safetensors").is_file() and not (path / "README.md").exists()
            targets = json.loads((path / "adapter_config.json").read_text())["target_modules"]
            assert targets == sorted(targets)
        assert not (snapped.out / "checkpoints").exists()

    def test_snapshots_are_the_adapter_of_their_step(self, snapped):
        """Snapshots differ from each other and from the final adapter (training moved on)."""
        blobs = [(snapped.out / "snapshots" / f"step-{s:05d}" / "adapter_model.safetensors").read_bytes() for s in (2, 4)]
        assert len({*blobs, (snapped.out / "adapter_model.safetensors").read_bytes()}) == 3

    def test_no_snapshots_by_default(self, reference):
        """snapshot_steps 0 writes no snapshots directory."""
        assert not (reference.out / "snapshots").exists()

    def test_learning_curve(self, workdir, snapped, tmp_path):
        """clerk learning-curve writes one CSV row per snapshot plus the final adapter, and the final
        adapter once more without the grammar, scored on the validation personas' sessions (op-F1
        overall and per kind, parse failures)."""
        from clerk.cli import main as clerk_main

        out = tmp_path / "curve.csv"
        clerk_main(["learning-curve", "--timelines", str(workdir["timelines"]), "--sft", str(workdir["sft"]),
                    "--model", str(workdir["model"]), "--adapter", str(snapped.out), "--out", str(out),
                    "--curve-sessions", "3", "--max-new-tokens", "16", "--batch-size", "3", "--threads", "1"])
        with out.open() as handle:
            rows = list(csv.DictReader(handle))
        assert list(rows[0]) == list(CURVE_COLUMNS)
        assert [(r["point"], int(r["step"]), int(r["examples_seen"]), r["constrained"], int(r["sessions"]))
                for r in rows] == [("snapshot", 2, 4, "True", 3), ("snapshot", 4, 8, "True", 3), ("final", 5, 10, "True", 3),
                                   ("free", 5, 10, "False", 3)]
        for row in rows:
            assert 0 <= float(row["op_f1"]) <= 1 and 0 <= float(row["parse_failure_rate"]) <= 1
            for kind in ("add", "update", "tombstone", "evict"):
                assert row[f"{kind}_f1"] == "" or 0 <= float(row[f"{kind}_f1"]) <= 1

    def test_points_and_validation_sessions(self, workdir, snapped, tmp_path, monkeypatch):
        """A snapshot at the final step is not scored twice; only validation personas' sessions are
        scored, at most --sessions of them, in file order."""
        import shutil

        import clerk.evaluate.curve as curve

        seen = []

        def fake_score(model_dir, adapter_dir, pairs, eval_config, predicates):
            seen.append((Path(adapter_dir).name, [(tl["name"], s["index"]) for tl, s in pairs]))
            return {"sessions": len(pairs), "op_f1": 1.0, "add_f1": 1.0, "update_f1": 1.0, "tombstone_f1": 1.0,
                    "evict_f1": 1.0, "parse_failure_rate": 0.0}

        monkeypatch.setattr(curve, "score_adapter", fake_score)
        adapter = tmp_path / "run"
        shutil.copytree(snapped.out, adapter)
        shutil.copytree(adapter, adapter / "snapshots" / "step-00005", ignore=shutil.ignore_patterns("snapshots"))
        (adapter / "snapshots" / "step-00005" / "snapshot.json").write_text(json.dumps({"step": 5, "examples_seen": 10}))
        cfg = curve.CurveConfig(timelines=str(workdir["timelines"]), sft=str(workdir["sft"]), model="m",
                                adapter=str(adapter), curve_sessions=2, max_new_tokens=8, batch_size=2, dtype="float32",
                                phrasings=None, threads=1)
        rows = curve.learning_curve(cfg)
        assert [(r["point"], r["step"]) for r in rows] == [("snapshot", 2), ("snapshot", 4), ("final", 5), ("free", 5)]
        assert [name for name, _ in seen] == ["step-00002", "step-00004", "step-00005", "step-00005"]
        held = json.loads((workdir["sft"] / "sft_stats.json").read_text())["splits"]["validation"]["personas"]
        assert {name for _, pairs in seen for name, _ in pairs} == set(held) and len(seen[0][1]) == 2

    def test_curve_input_errors(self, workdir, tmp_path):
        """A training output without metrics.json, or an SFT directory without stats, is refused by name."""

        from clerk.evaluate.curve import CurveConfig, learning_curve, validation_sessions

        cfg = CurveConfig(timelines="t", sft="s", model="m", adapter=str(tmp_path), threads=1)
        with pytest.raises(UserError, match=r"expected a finished clerk train output \(metrics.json\)$"):
            learning_curve(cfg)
        with pytest.raises(UserError, match=r"^--sft: expected .*sft_stats.json \(written by clerk build-sft\)$"):
            validation_sessions([], tmp_path, 0)
        (tmp_path / "sft_stats.json").write_text(json.dumps({"splits": {"validation": {"personas": []}}}))
        with pytest.raises(UserError, match=r"the validation split has no personas \(val_fraction 0\?\)$"):
            validation_sessions([], tmp_path, 0)


class TestBenchCli:
    def test_consolidation_mode_is_gone(self, workdir, capsys):
        """bench-train measures throughput only; consolidation quality is clerk learning-curve."""
        from clerk.cli import main as clerk_main

        with pytest.raises(SystemExit) as exc:
            clerk_main(["bench-train", "--consolidation", "--model", str(workdir["model"]), "--sft", str(workdir["sft"])])
        assert exc.value.code == 2
        assert "unrecognized arguments: --consolidation" in capsys.readouterr().err


class TestPrecision:
    """The precision modes: ``--precision auto|fp32|bf16-frozen``."""

    @pytest.mark.parametrize("units, expected", [(False, "fp32"), (True, "bf16-frozen")])
    def test_auto_follows_bf16_units(self, monkeypatch, units, expected):
        """auto trains bf16-frozen where the CPU has bf16 units and fp32 where it has none."""
        import clerk.models.device as device
        from clerk.train.config import resolve_train_precision

        monkeypatch.setattr(device, "bf16_units", lambda: {"available": units})
        assert resolve_train_precision("auto", "cpu") == expected
        assert resolve_train_precision("fp32", "cpu") == "fp32"
        assert resolve_train_precision("bf16-frozen", "cpu") == "bf16-frozen"
        assert resolve_train_precision("auto", "cpu", ("lm_head",)) == "fp32"  # whole modules train in fp32

    def test_bf16_frozen_with_modules_to_save_is_user_error(self):
        from clerk.train.config import resolve_train_precision

        with pytest.raises(UserError, match=r"^--precision bf16-frozen trains LoRA adapters only; with --modules-to-save"):
            resolve_train_precision("bf16-frozen", "cpu", ("embed_tokens", "lm_head"))

    def test_bad_precision(self):
        with pytest.raises(UserError, match=r"^--precision must be one of auto, fp32, bf16-frozen, got 'bf16'$"):
            TrainConfig(sft="s", model="m", out="o", precision="bf16")

    @pytest.mark.parametrize("flags, capability, available", [
        ({"avx512f", "avx512_bf16"}, "AVX512", True), ({"amx_bf16"}, "AVX512", True),
        ({"avx512f", "avx512_bf16"}, "AVX2", False),  # ATEN_CPU_CAPABILITY=avx2: no bf16 kernels
        ({"avx2", "fma"}, "AVX2", False), ({"avx512f"}, "AVX512", False)])
    def test_bf16_units_detection(self, monkeypatch, flags, capability, available):
        """bf16 units = a bf16 CPU flag (AMX or AVX512-BF16) and ATen dispatching to AVX-512."""
        import clerk.models.device as device

        monkeypatch.setattr(device, "_cpu_flags", lambda: set(flags))
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
        assert device.bf16_units()["available"] is available

    @pytest.mark.parametrize("precision", ["fp32", "bf16-frozen"])
    def test_trains_in_both_modes(self, workdir, precision):
        """A few steps train in each mode: bf16-frozen keeps the frozen weights bf16 and the LoRA
        adapters (the only trainable parameters, as saved) fp32; the record names the mode."""
        from safetensors import safe_open

        result = run_training(config(workdir, f"prec-{precision}", max_steps=3, save_steps=0, validation_loss=False,
                                     precision=precision))
        frozen = {p.dtype for p in result.model.parameters() if not p.requires_grad}
        trainable = {p.dtype for p in result.model.parameters() if p.requires_grad}
        assert frozen == {torch.bfloat16 if precision == "bf16-frozen" else torch.float32}
        assert trainable == {torch.float32}
        with safe_open(str(result.out / "adapter_model.safetensors"), "pt") as handle:
            assert {handle.get_tensor(k).dtype for k in handle.keys()} == {torch.float32}
        with (result.out / "train_log.csv").open() as handle:
            assert all(math.isfinite(float(r["loss"])) for r in csv.DictReader(handle))
        record = json.loads((result.out / "train_config.json").read_text())
        assert record["precision"] == precision and record["config"]["precision"] == precision
        assert isinstance(record["bf16_units"], bool) and "bf16_units" in record["numerics"]
        assert record["weights_dtype"] == ("bfloat16" if precision == "bf16-frozen" else "float32")


class TestTopLayers:
    def test_only_the_top_layers_are_adapted_and_backward_stops_below(self, workdir):
        """--lora-layers 1 on the 2-layer model: the adapter holds layer 1's LoRA weights only,
        and layer 0's output needs no gradient (so backward never runs through it)."""
        from safetensors import safe_open

        result = run_training(config(workdir, "top1", max_steps=3, save_steps=0, validation_loss=False, lora_layers=1))
        with safe_open(str(result.out / "adapter_model.safetensors"), "pt") as handle:
            keys = list(handle.keys())
        assert keys and all(".layers.1." in k for k in keys)
        seen = []
        layers = result.model.get_base_model().model.layers
        hooks = [layer.register_forward_hook(lambda _m, _i, out: seen.append(
            (out[0] if isinstance(out, tuple) else out).requires_grad)) for layer in layers]
        try:
            result.model(input_ids=torch.tensor([[1, 2, 3]]))
        finally:
            for hook in hooks:
                hook.remove()
        assert seen == [False, True]
        record = json.loads((result.out / "train_config.json").read_text())
        assert record["config"]["lora_layers"] == 1

    def test_more_layers_than_the_model_is_user_error(self, workdir):
        with pytest.raises(UserError, match=r"^--lora-layers \(config train.lora_layers\): 3 exceeds the model's 2 "
                                            r"decoder layers$"):
            run_training(config(workdir, "top3", max_steps=1, save_steps=0, validation_loss=False, lora_layers=3))

    def test_negative_is_user_error(self):
        with pytest.raises(UserError, match=r"^--lora-layers must be >= 0 \(0 = every layer\), got -1$"):
            TrainConfig(sft="s", model="m", out="o", lora_layers=-1)

    def test_bench_times_top_layer_modes(self, workdir):
        """clerk bench-train times '-topN' modes on the same batches; a bad name fails before training."""
        result = bench_throughput(str(workdir["model"]), str(workdir["sft"]), steps=2, batch_size=2, max_length=256,
                                  threads=1, modes=("fp32", "fp32-top1"))
        assert result["fp32"]["tokens"] == result["fp32-top1"]["tokens"] > 0
        assert result["loss_diff"]["fp32-top1"]["max_abs"] > 0  # a different model: layer 0 is not adapted
        for bad in ("fp32-top0", "fp16", "bf16-frozen-topx"):
            with pytest.raises(UserError, match=rf"^--modes: unknown '{bad}'; known: fp32, bf16-frozen, bf16-autocast"):
                bench_throughput(str(workdir["model"]), str(workdir["sft"]), steps=1, modes=("fp32", bad))
