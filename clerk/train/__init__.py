"""LoRA SFT of a base model on the CLERK chat dataset (TRL ``SFTTrainer`` + PEFT), and its benchmark.

SPEC §5. Loss on assistant tokens only (``assistant_only_loss``: the CLERK chat template marks the
assistant turn with ``{% generation %}``). Deterministic on CPU given ``--seed``; resumable from
its last checkpoint; the same code runs on CPU (fp32 weights, optional bf16 autocast) and CUDA
(bf16 weights, LoRA weights in fp32).

Modules: :mod:`~clerk.train.config` (every knob, device and precision) ·
:mod:`~clerk.train.data` (the SFT dataset and the loss) · :mod:`~clerk.train.trainer` (the
trainer, its callbacks and resumption) · :mod:`~clerk.train.bench` (throughput and consolidation
benchmarks) · :mod:`~clerk.train.cli` (``clerk train``, ``clerk bench-train``).

Full size (default profile) and a tiny CPU run:

    clerk train --sft results/sft/137 --model resources/models/smollm2-135m --seed 137 --out results/adapters/137
    clerk train --sft results/sft/137 --model resources/models/scratch --seed 137 --out /tmp/adapter --max-steps 30 --bf16 off
"""
