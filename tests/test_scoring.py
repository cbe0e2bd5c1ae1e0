"""Tests for clerk.scoring: shared-prefix multiple-choice scoring against the naive reference.

Uses a tiny randomly initialised Llama (fixed seed) and a byte-level BPE tokenizer trained here.

    python -m pytest tests/test_scoring.py -q -x
"""

from __future__ import annotations

import json
import random

import pytest
import torch
from doctest_kit import run_package_doctests

from clerk import cli
from clerk.models import prefix as kv_prefix
from clerk.prompts import CHAT_TEMPLATE, SPECIAL_TOKENS, answer_messages
from clerk.scoring import bench as scoring_bench
from clerk.scoring import mc as scoring_mc
from clerk.scoring.mc import (
    encode_prefix,
    pick,
    score_batch,
    score_options,
    score_options_naive,
    score_with_prefix,
    split_is_exact,
)
from clerk.scoring.tree import Query, score_tree

_LINES = [
    "user: I moved to Oslo last spring and I work as a chef now.",
    "assistant: Noted. You live in Oslo and work as a chef.",
    "user: My cat is called Miso, and I play the cello on Sundays.",
    "user: I no longer go to the gym; my partner Sam drives a red car.",
    "Question: Where do I live? Which instrument do I play? What is my job?",
    "I don't know. That is no longer the case. Lisbon Nairobi Quito nurse pilot teacher.",
    "The weather was odd today. I watched a film last night. Work has been busy.",
    "[0,Ari,job,chef,nurse,1,0,4,2] [1,Ari,city,Oslo,,1,0,0,0] [2]",
]
_WORDS = sorted({w for line in _LINES for w in line.replace(".", " .").replace(",", " ,").split()})
TOL = 1e-4  # fp32 agreement between the shared-prefix and naive paths


def _make_tokenizer():
    """Byte-level BPE over _LINES with the chat special tokens, as a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_LINES, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def _make_model(vocab_size: int, attn: str = "sdpa"):
    """Tiny Llama with grouped-query attention; init std 0.1 so scores are well separated."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(1234)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        initializer_range=0.1,
        tie_word_embeddings=False,
        attn_implementation=attn,
    )
    return LlamaForCausalLM(config).eval()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tokenizer():
    return _make_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return _make_model(len(tokenizer))


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _case(rng: random.Random) -> tuple[str, list[str]]:
    """A random prompt ending like the answer prompt, and 10 distinct options of 1-8 words."""
    prompt = f"<|im_start|>user\n{_text(rng, 3, 60)}<|im_end|>\n<|im_start|>assistant\n"
    options: list[str] = []
    while len(options) < 10:
        option = _text(rng, 1, 8)
        if option not in options:
            options.append(option)
    return prompt, options


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _manual_scores(model, tokenizer, prompt: str, options: list[str]) -> list[float]:
    """Independent reference: full logits of prompt+option, no cache and no logits_to_keep."""
    out = []
    p = _ids(tokenizer, prompt)
    with torch.no_grad():
        for option in options:
            o = _ids(tokenizer, option)
            logits = model(input_ids=torch.tensor([p + o])).logits[0].double()
            lp = logits.log_softmax(-1)
            out.append(sum(lp[len(p) - 1 + j, t].item() for j, t in enumerate(o)) / len(o))
    return out


def _max_diff(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b)
    return max(abs(x - y) for x, y in zip(a, b))


class TestDoctests:
    def test_doctests_pass(self):
        """The >>> examples in every clerk.scoring module run and pass."""
        result = run_package_doctests("clerk.scoring")
        assert result.attempted > 0 and result.failed == 0


class TestPick:
    def test_highest_wins(self):
        """The index of the largest score is returned."""
        assert pick([-3.0, -0.2, -1.0]) == 1

    def test_ties_go_to_lower_index(self):
        """Equal best scores resolve to the first of them."""
        assert pick([-2.0, -0.5, -0.5, -0.5]) == 1
        assert pick([0.0, 0.0]) == 0

    def test_empty_raises(self):
        """An empty score list is an error, not index 0."""
        with pytest.raises(ValueError, match=r"^scores: expected at least one score, got an empty list$"):
            pick([])


class TestScoreOptions:
    def test_matches_naive_on_random_cases(self, model, tokenizer):
        """On 80 random cases the shared-prefix and naive scorers pick alike and agree to 1e-4."""
        rng = random.Random(7)
        worst, cases = 0.0, 80
        for _ in range(cases):
            prompt, options = _case(rng)
            shared = score_options(model, tokenizer, prompt, options)
            naive = score_options_naive(model, tokenizer, prompt, options)
            assert pick(shared) == pick(naive)
            worst = max(worst, _max_diff(shared, naive))
        assert worst < TOL

    def test_matches_independent_reference(self, model, tokenizer):
        """Both scorers equal mean log-probs computed from full, uncached logits."""
        prompt, options = _case(random.Random(3))
        manual = _manual_scores(model, tokenizer, prompt, options)
        assert _max_diff(score_options(model, tokenizer, prompt, options), manual) < TOL
        assert _max_diff(score_options_naive(model, tokenizer, prompt, options), manual) < TOL

    def test_one_and_many_token_options(self, model, tokenizer):
        """A one-token option and a 20+-token option in one call both match the reference."""
        one = next(w for w in _WORDS if len(_ids(tokenizer, w)) == 1)
        many = " ".join(_WORDS[:12])
        assert len(_ids(tokenizer, one)) == 1 and len(_ids(tokenizer, many)) >= 20
        prompt = "<|im_start|>user\nWhere do I live?<|im_end|>\n<|im_start|>assistant\n"
        options = [many, one, "Oslo", "I don't know."]
        shared = score_options(model, tokenizer, prompt, options)
        assert _max_diff(shared, _manual_scores(model, tokenizer, prompt, options)) < TOL

    def test_only_one_token_options(self, model, tokenizer):
        """Options of one token each are scored from the prompt's last logits alone."""
        singles = [w for w in _WORDS if len(_ids(tokenizer, w)) == 1][:5]
        assert len(singles) == 5
        prompt = "<|im_start|>assistant\n"
        p = _ids(tokenizer, prompt)
        with torch.no_grad():
            lp = model(input_ids=torch.tensor([p])).logits[0, -1].log_softmax(-1)
        expected = [lp[_ids(tokenizer, w)[0]].item() for w in singles]
        assert _max_diff(score_options(model, tokenizer, prompt, singles), expected) < TOL

    def test_eager_attention_matches_naive(self, tokenizer):
        """The padded, masked batch is exact with eager attention too."""
        eager = _make_model(len(tokenizer), attn="eager")
        rng = random.Random(11)
        for _ in range(20):
            prompt, options = _case(rng)
            shared = score_options(eager, tokenizer, prompt, options)
            assert _max_diff(shared, score_options_naive(eager, tokenizer, prompt, options)) < TOL

    def test_option_forward_split_by_token_budget(self, model, tokenizer, monkeypatch):
        """With a token budget that forces one option per forward, scores still match naive."""
        monkeypatch.setattr(scoring_mc, "MAX_BATCH_TOKENS", 1)
        rng = random.Random(19)
        for _ in range(5):
            prompt, options = _case(rng)
            shared = score_options(model, tokenizer, prompt, options)
            assert _max_diff(shared, score_options_naive(model, tokenizer, prompt, options)) < TOL

    def test_peft_lora_model(self, tokenizer):
        """A PEFT LoRA-wrapped reader (non-zero adapter) scores like its naive reference."""
        from peft import LoraConfig, get_peft_model

        base = _make_model(len(tokenizer))
        torch.manual_seed(99)
        lora = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        wrapped = get_peft_model(base, lora).eval()
        assert kv_prefix._cache_kwarg(wrapped) == kv_prefix._cache_kwarg(base) == "cache"
        rng = random.Random(23)
        for _ in range(5):
            prompt, options = _case(rng)
            shared = score_options(wrapped, tokenizer, prompt, options)
            assert _max_diff(shared, score_options_naive(wrapped, tokenizer, prompt, options)) < TOL

    def test_deterministic(self, model, tokenizer):
        """Scoring the same case twice gives identical numbers."""
        prompt, options = _case(random.Random(5))
        assert score_options(model, tokenizer, prompt, options) == score_options(model, tokenizer, prompt, options)

    def test_no_options(self, model, tokenizer):
        """No options give no scores."""
        assert score_options(model, tokenizer, "x", []) == []
        assert score_options_naive(model, tokenizer, "x", []) == []

    def test_empty_option_raises(self, model, tokenizer):
        """An option without tokens is named by its index."""
        msg = r"^options\[1\]: expected text with at least one token, got ''$"
        with pytest.raises(ValueError, match=msg):
            score_options(model, tokenizer, "Where?", ["Oslo", ""])
        with pytest.raises(ValueError, match=msg):
            score_options_naive(model, tokenizer, "Where?", ["Oslo", ""])

    def test_empty_prompt_raises(self, model, tokenizer):
        """An empty prompt has no next-token distribution to score against."""
        msg = r"^prompt: expected text with at least one token, got ''$"
        with pytest.raises(ValueError, match=msg):
            score_options(model, tokenizer, "", ["Oslo"])
        with pytest.raises(ValueError, match=msg):
            score_options_naive(model, tokenizer, "", ["Oslo"])

    def test_training_mode_raises(self, tokenizer):
        """A model in training mode is refused (dropout would make scores random)."""
        train_model = _make_model(len(tokenizer)).train()
        with pytest.raises(ValueError, match=r"^model: expected eval mode \(call model.eval\(\)\), got training mode$"):
            score_options(train_model, tokenizer, "Where?", ["Oslo"])


class TestScoreWithPrefix:
    @staticmethod
    def _split(rng: random.Random, tokenizer) -> tuple[str, str]:
        """A prefix/suffix split before a special token, where tokenization is additive."""
        memory = _text(rng, 20, 80)
        question = _text(rng, 2, 10)
        prefix = f"<|im_start|>system\nAnswer from memory.<|im_end|>\n<|im_start|>user\n{memory}"
        suffix = f"<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
        assert _ids(tokenizer, prefix) + _ids(tokenizer, suffix) == _ids(tokenizer, prefix + suffix)
        return prefix, suffix

    def test_equals_concatenation(self, model, tokenizer):
        """Prefix reuse scores exactly as the concatenated prompt, over many suffixes of one prefix."""
        rng = random.Random(21)
        prefix_text, _ = self._split(rng, tokenizer)
        prefix = encode_prefix(model, tokenizer, prefix_text)
        for _ in range(10):
            _, options = _case(rng)
            suffix = f"<|im_end|>\n<|im_start|>user\n{_text(rng, 2, 10)}<|im_end|>\n<|im_start|>assistant\n"
            reused = score_with_prefix(model, tokenizer, prefix, suffix, options)
            naive = score_options_naive(model, tokenizer, prefix_text + suffix, options)
            assert pick(reused) == pick(naive)
            assert _max_diff(reused, naive) < TOL

    def test_empty_suffix(self, model, tokenizer):
        """With no suffix, prefix scoring equals scoring the prefix as the prompt."""
        prompt, options = _case(random.Random(4))
        prefix = encode_prefix(model, tokenizer, prompt)
        assert (
            _max_diff(
                score_with_prefix(model, tokenizer, prefix, "", options),
                score_options(model, tokenizer, prompt, options),
            )
            < TOL
        )

    def test_prefix_not_mutated(self, model, tokenizer):
        """Scoring leaves the prefix's ids, cache tensors and log-probs unchanged, so repeats agree."""
        rng = random.Random(9)
        prefix_text, suffix = self._split(rng, tokenizer)
        prefix = encode_prefix(model, tokenizer, prefix_text)
        before = [(layer.keys.clone(), layer.values.clone()) for layer in prefix.cache.layers]
        ids_before, last_before = prefix.ids, prefix.last_logprobs.clone()
        options = _case(rng)[1]
        first = score_with_prefix(model, tokenizer, prefix, suffix, options)
        score_with_prefix(model, tokenizer, prefix, "", options)
        second = score_with_prefix(model, tokenizer, prefix, suffix, options)
        assert first == second
        assert prefix.ids == ids_before and torch.equal(prefix.last_logprobs, last_before)
        assert prefix.cache.get_seq_length() == len(ids_before)
        for layer, (k, v) in zip(prefix.cache.layers, before):
            assert torch.equal(layer.keys, k) and torch.equal(layer.values, v)

    def test_prefix_holds_ids(self, model, tokenizer):
        """encode_prefix keeps the prefix's token ids without special tokens added."""
        text = "<|im_start|>user\nI live in Oslo."
        prefix = encode_prefix(model, tokenizer, text)
        assert list(prefix.ids) == _ids(tokenizer, text) and len(prefix) == len(prefix.ids)

    def test_empty_prefix_raises(self, model, tokenizer):
        """An empty prefix is refused with the field named."""
        with pytest.raises(ValueError, match=r"^prefix_text: expected text with at least one token, got ''$"):
            encode_prefix(model, tokenizer, "")


class TestScoreTree:
    @staticmethod
    def _tree(rng: random.Random, tokenizer, n_questions: int):
        """A view prefix (an answer prompt cut before its question line, as the reader cuts it) and
        questions whose suffixes and options differ in length (one token to a dozen)."""
        prefix_text = f"<|im_start|>user\n{_text(rng, 10, 60)}\n"
        questions = []
        for _ in range(n_questions):
            suffix = f"Q: {_text(rng, 1, 8)}?<|im_end|>\n<|im_start|>assistant\n"
            assert split_is_exact(tokenizer, prefix_text, suffix)
            options = [rng.choice([w for w in _WORDS if len(_ids(tokenizer, w)) == 1])]  # a one-token option
            while len(options) < rng.choice((2, 5, 10)):
                option = _text(rng, 1, 6)
                if option not in options:
                    options.append(option)
            questions.append((suffix, options))
        return prefix_text, questions

    @staticmethod
    def _queries(tokenizer, questions) -> list[Query]:
        return [Query(tuple(_ids(tokenizer, s)), tuple(tuple(_ids(tokenizer, o)) for o in opts)) for s, opts in questions]

    @pytest.mark.parametrize("attn", ["sdpa", "eager"])
    def test_equals_score_options_per_question(self, tokenizer, attn):
        """One packed forward scores every option of every question as its own prompt would, to 1e-4."""
        model = _make_model(len(tokenizer), attn=attn)
        rng = random.Random(31)
        worst = 0.0
        for _ in range(4):
            prefix_text, questions = self._tree(rng, tokenizer, rng.randint(1, 5))
            lengths = {len(_ids(tokenizer, o)) for _, opts in questions for o in opts}
            assert 1 in lengths and max(lengths) >= 4  # one-token and long options in the same tree
            prefix = kv_prefix.encode_text(model, tokenizer, prefix_text, "view")
            got = score_tree(model, prefix, self._queries(tokenizer, questions))
            assert [len(row) for row in got] == [len(opts) for _, opts in questions]
            for row, (suffix, options) in zip(got, questions):
                alone = score_options(model, tokenizer, prefix_text + suffix, options)
                assert pick(row) == pick(alone)
                worst = max(worst, _max_diff(row, alone))
        assert worst < TOL

    def test_order_and_company_do_not_matter(self, model, tokenizer):
        """A question scores the same alone, first or last in the tree (no attention across questions)."""
        prefix_text, questions = self._tree(random.Random(37), tokenizer, 4)
        prefix = kv_prefix.encode_text(model, tokenizer, prefix_text, "view")
        queries = self._queries(tokenizer, questions)
        together = score_tree(model, prefix, queries)
        reversed_ = score_tree(model, prefix, queries[::-1])[::-1]
        alone = [score_tree(model, prefix, [q])[0] for q in queries]
        for a, b, c in zip(together, reversed_, alone):
            assert _max_diff(a, b) < TOL and _max_diff(a, c) < TOL

    def test_prefix_not_mutated(self, model, tokenizer):
        """Scoring a tree leaves the view's cache as it was, so a second tree on it agrees."""
        prefix_text, questions = self._tree(random.Random(41), tokenizer, 3)
        prefix = kv_prefix.encode_text(model, tokenizer, prefix_text, "view")
        queries = self._queries(tokenizer, questions)
        first = score_tree(model, prefix, queries)
        assert prefix.cache.get_seq_length() == len(prefix)
        assert score_tree(model, prefix, queries) == first

    def test_empty_and_malformed(self, model, tokenizer):
        """No queries give no scores; an empty suffix or option is a ValueError."""
        prefix = kv_prefix.encode_text(model, tokenizer, "<|im_start|>user\n", "view")
        assert score_tree(model, prefix, []) == []
        with pytest.raises(ValueError, match=r"^score_tree: every query needs a non-empty suffix"):
            score_tree(model, prefix, [Query((), ((1,),))])
        with pytest.raises(ValueError, match=r"^score_tree: every option needs at least one token$"):
            score_tree(model, prefix, [Query((1,), ((1,), ()))])


class TestSplitIsExact:
    def test_split_before_special_token(self, tokenizer):
        """A split just before a special token tokenizes additively."""
        assert split_is_exact(tokenizer, "user: I live in Oslo.", "<|im_end|>\n<|im_start|>assistant\n")

    def test_split_inside_a_word(self, tokenizer):
        """A split inside a word changes the tokens, so it is reported as inexact."""
        assert not split_is_exact(tokenizer, "I live in Os", "lo.")


class TestScoreBatch:
    def test_equals_per_item(self, model, tokenizer):
        """Batch scoring returns what score_options returns item by item."""
        rng = random.Random(13)
        items = [_case(rng) for _ in range(6)]
        got = score_batch(model, tokenizer, items, progress=False)
        assert got == [score_options(model, tokenizer, p, o) for p, o in items]

    def test_with_prefix(self, model, tokenizer):
        """With a shared prefix each item is a suffix scored after it."""
        rng = random.Random(17)
        prefix_text, suffix = TestScoreWithPrefix._split(rng, tokenizer)
        prefix = encode_prefix(model, tokenizer, prefix_text)
        items = [(suffix, _case(rng)[1]) for _ in range(3)]
        got = score_batch(model, tokenizer, items, prefix=prefix, progress=False)
        assert got == [score_with_prefix(model, tokenizer, prefix, s, o) for s, o in items]


class TestBenchScoringCli:
    def test_missing_model_dir(self, tmp_path, capsys):
        """A --model without config.json exits 2 with one message naming the field."""
        with pytest.raises(SystemExit) as exc:
            cli.main(["bench-scoring", "--model", str(tmp_path)])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err == (
            f"clerk bench-scoring: error: --model: expected a checkpoint directory containing config.json, "
            f"got {str(tmp_path)!r}"
        )

    def test_bad_token_range(self, tmp_path, capsys):
        """--max-tokens below --min-tokens is rejected."""
        with pytest.raises(SystemExit) as exc:
            cli.main(["bench-scoring", "--model", str(tmp_path), "--min-tokens", "50", "--max-tokens", "10"])
        assert exc.value.code == 2
        assert "--max-tokens: expected >= --min-tokens (50), got 10" in capsys.readouterr().err

    def test_runs_on_tiny_model(self, model, tokenizer, tmp_path, capsys):
        """The benchmark prints the speed-up and writes agreeing numbers for a saved tiny model."""
        model.save_pretrained(tmp_path / "m")
        tokenizer.save_pretrained(tmp_path / "m")
        out = tmp_path / "bench.json"
        argv = ["bench-scoring", "--model", str(tmp_path / "m"), "--cases", "2", "--min-tokens", "40"]
        cli.main(argv + ["--max-tokens", "60", "--out", str(out)])
        printed = capsys.readouterr().out
        assert "speed-up: " in printed and "same pick: 1.000" in printed
        result = json.loads(out.read_text())
        assert result["config"]["cases"] == 2 and result["same_pick"] == 1.0
        assert result["max_abs_diff"] < TOL and result["speedup"] > 0
        assert result["prompt_tokens_mean"] >= 40

    def test_bench_dtypes_on_tiny_model(self, model, tokenizer, tmp_path):
        """Reading and writing are timed per dtype on the same cases; fp32 agrees with itself exactly."""
        model.save_pretrained(tmp_path / "m")
        tokenizer.save_pretrained(tmp_path / "m")
        result = scoring_bench.bench_dtypes(str(tmp_path / "m"), cases=2, min_tokens=40, max_tokens=60, rounds=2,
                                            decode_prompts=2, max_new_tokens=3)
        for dtype in ("float32", "bfloat16"):
            assert result[dtype]["questions"] == 4 and result[dtype]["questions_per_s"] > 0
            assert 0 < result[dtype]["decode_tokens"] <= 2 * 2 * 3
        assert result["ratio"]["float32"] == 1.0 and result["ratio"]["bfloat16"] > 0
        assert result["agreement"]["float32"] == {"same_pick": 1.0, "max_abs_diff": 0.0}
        assert 0 <= result["agreement"]["bfloat16"]["same_pick"] <= 1

    def test_bench_case_prompt_uses_chat_template(self, tokenizer):
        """Benchmark prompts are rendered answer prompts ending in the assistant header."""
        prompt, options = scoring_bench._bench_case(random.Random(0), tokenizer, 50, 10)
        assert prompt.endswith("<|im_start|>assistant\n") and len(options) == 10 == len(set(options))
        head = tokenizer.apply_chat_template(
            answer_messages("MEMORY", "x"), chat_template=CHAT_TEMPLATE, tokenize=False, add_generation_prompt=True
        )
        assert prompt.startswith(head.split("MEMORY")[0]) and "\nQ: " in prompt
