"""Training timelines -> a chat-messages SFT dataset (Hugging Face ``datasets``), SPEC §4.

* :mod:`clerk.sft.examples`: CONSOLIDATE and ANSWER rows, the mixture, the validation split;
* :mod:`clerk.sft.dataset`: the ``DatasetDict``, its fingerprint, stats and saving;
* :mod:`clerk.sft.cli`: ``clerk build-sft``.

    clerk build-sft --timelines results/data/137/train.jsonl --tokenizer resources/models/smollm2-135m \\
        --seed 137 --out results/sft/137
"""
