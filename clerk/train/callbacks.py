"""The training run's callbacks: the CSV log, the checkpoint-complete marker and the learning
curve's adapter snapshots; and the sorted write of PEFT's adapter config (same bytes every run)."""

from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

LOG_COLUMNS = ("step", "loss", "lr", "tokens_seen", "seconds")
#: Written into a checkpoint directory once the Trainer has finished saving it; only marked
#: checkpoints are resumed from, so a kill in the middle of a save is harmless.
_COMPLETE_MARKER = "clerk_complete"


def _callbacks(log_path: Path, seconds_offset: float, extra: list | None):
    """The CSV logger and the checkpoint-complete marker, as TrainerCallbacks."""
    from transformers import TrainerCallback

    class CsvLog(TrainerCallback):
        """Append one ``train_log.csv`` row per training log event (flushed, so a kill keeps them)."""

        def __init__(self) -> None:
            self.start = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            new = not log_path.is_file()
            with log_path.open("a", newline="") as handle:
                writer = csv.writer(handle)
                if new:
                    writer.writerow(LOG_COLUMNS)
                writer.writerow([
                    state.global_step, f"{logs['loss']:.6f}", f"{logs.get('learning_rate', 0.0):.6e}",
                    int(logs.get("num_input_tokens_seen", state.num_input_tokens_seen)),
                    f"{seconds_offset + time.perf_counter() - self.start:.2f}",
                ])

    class MarkComplete(TrainerCallback):
        """Copy the log into a checkpoint, then mark it fully written (on_save runs after the
        Trainer finished saving it, and after the step's log row)."""

        def on_save(self, args, state, control, **kwargs):
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if ckpt.is_dir():
                if log_path.is_file():
                    shutil.copyfile(log_path, ckpt / log_path.name)
                (ckpt / _COMPLETE_MARKER).write_text(f"{state.global_step}\n")

    return [CsvLog(), MarkComplete(), *(extra or [])]


def _snapshot_callback(every: int, snapshot_dir: Path, examples_per_step: int):
    """Save the adapter every ``every`` optimizer steps into ``snapshot_dir/step-<n>`` (the
    learning curve's checkpoints of one run; kept beside the resumable checkpoints so a killed run
    keeps them, and copied into OUT when training ends)."""
    from transformers import TrainerCallback

    class Snapshot(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if every and state.global_step % every == 0:
                path = snapshot_dir / f"step-{state.global_step:05d}"
                model.save_pretrained(path)
                _sort_set_fields(path, model)
                (path / "README.md").unlink(missing_ok=True)
                (path / "snapshot.json").write_text(json.dumps(
                    {"step": state.global_step, "examples_seen": state.global_step * examples_per_step}) + "\n")

    return Snapshot()


def _sort_set_fields(out: Path, trained) -> None:
    """Rewrite ``adapter_config.json`` with its set-valued fields (``target_modules``) sorted.

    PEFT writes a set as a list in set order, which follows string hashing and so differs between
    processes (["v_proj", "q_proj"] in one run, ["q_proj", "v_proj"] in the next): sorted, the
    file, and the adapter directory's digest, are the same bytes on every run.
    """
    path = out / "adapter_config.json"
    config = trained.peft_config.get("default") if hasattr(trained, "peft_config") else None
    if config is None or not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    for name, value in vars(config).items():
        if isinstance(value, set) and name in data:
            data[name] = sorted(value)
    path.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")  # PEFT's own layout
