"""Runtime checks of the evaluation stage (child side: standard library + frameworks only).

One eval batch through the model, ``preprocess_logits_for_metrics`` and the user's ``compute_metrics``:

- TL601: logits (float, shape (batch, num_labels)) reach a metric / make ``compute_metrics`` fail;
- TL602: ``compute_metrics`` returns ``None``; TL603: ``preprocess_logits_for_metrics`` returns ``None``;
- TL606: ``metric_for_best_model`` is not among the returned keys;
- TL607: ``compute_metrics`` (or ``preprocess_logits_for_metrics``) raises on one eval batch.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import TRAINER_EVAL_BATCH, TrainerState
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import collator_name, error_text, first_batch, unwrap_model
from trainlint.stages.s2_batching.probe import collation_failure


def _numpify(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x)(_numpify(t) for t in x)
    if isinstance(x, dict):
        return {k: _numpify(v) for k, v in x.items()}
    if hasattr(x, "detach"):
        t = x.detach().cpu()
        if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
            t = t.float()
        return t.numpy()
    return x


def describe(x: Any) -> str:
    if isinstance(x, (tuple, list)):
        return "(" + ", ".join(describe(t) for t in x) + ")"
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{x.dtype} array of shape {tuple(x.shape)}"
    return type(x).__name__


def _is_logits(x: Any, num_labels: int | None) -> bool:
    if isinstance(x, (tuple, list)) and x:
        x = x[0]
    kind = getattr(getattr(x, "dtype", None), "kind", "")
    shape: Any = getattr(x, "shape", ())
    return kind == "f" and len(shape) >= 2 and (num_labels is None or shape[-1] == num_labels or num_labels <= 1)


@contextlib.contextmanager
def _watch_metric_calls(seen: list[Any]) -> Iterator[None]:
    """Record what `evaluate` metrics receive as predictions while compute_metrics runs."""
    ev = sys.modules.get("evaluate")
    module_cls = getattr(getattr(ev, "module", None), "EvaluationModule", None) if ev else None
    if module_cls is None:
        yield
        return
    originals = {name: getattr(module_cls, name) for name in ("compute", "add_batch")}

    def wrap(name: str) -> Any:
        original = originals[name]

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if "predictions" in kwargs:
                seen.append((getattr(self, "name", "metric"), kwargs["predictions"]))
            return original(self, *args, **kwargs)

        return wrapper

    for name in originals:
        setattr(module_cls, name, wrap(name))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(module_cls, name, fn)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _retry_with_argmax(compute_metrics: Any, eval_prediction: Any, preds: Any, label_ids: Any, kwargs: dict[str, Any]) -> Any:
    """compute_metrics' result when given class ids instead of logits; None when it still fails."""
    logits = preds[0] if isinstance(preds, (tuple, list)) else preds
    try:
        result = compute_metrics(eval_prediction(predictions=logits.argmax(-1), label_ids=label_ids, **kwargs))
    except Exception:  # noqa: BLE001
        return None
    return result if result is not None else None


@check(TRAINER_EVAL_BATCH, "TL601", "TL602", "TL603", "TL606", "TL607",
       # the evaluation batch can show the failures of the earlier stages too, when training did not
       "TL101", "TL201", "TL202", "TL106", "TL301", "TL707")
def check_trainer_eval(h: Harness, st: TrainerState) -> None:
    """Evaluation is independent of the training batch: probed even when training failed."""
    import torch

    with torch.no_grad():
        _check_trainer_eval(h, st)


def _check_trainer_eval(h: Harness, st: TrainerState) -> None:
    trainer = st.trainer
    compute_metrics = getattr(trainer, "compute_metrics", None)
    if compute_metrics is None:
        return
    if trainer.eval_dataset is None:
        h.note("compute_metrics is set but the Trainer has no eval_dataset: metrics not probed")
        return
    eval_ds = trainer.eval_dataset
    if isinstance(eval_ds, dict):
        eval_ds = next(iter(eval_ds))
    model = unwrap_model(trainer.model)
    main_input = getattr(model, "main_input_name", "input_ids") or "input_ids"
    ds = trainer.eval_dataset[eval_ds] if isinstance(eval_ds, str) else trainer.eval_dataset
    columns = getattr(ds, "column_names", None)
    removes = getattr(trainer.args, "remove_unused_columns", True)
    if removes and isinstance(columns, list) and main_input not in columns and "inputs_embeds" not in columns:
        h.finding(
            "TL101",
            f"the Trainer's eval_dataset has no `{main_input}` column: it holds raw data "
            f"(columns {', '.join(columns)}), not the tokenized dataset",
            evidence=f"eval_dataset columns {columns}; {type(model).__name__}.forward needs `{main_input}`",
            line=st.line,
        )
        return
    try:
        loader = trainer.get_eval_dataloader(eval_ds if isinstance(eval_ds, str) else None)
    except Exception as exc:  # noqa: BLE001  # evaluation would fail on exactly this
        h.finding("TL707", f"trainer.get_eval_dataloader() fails: {error_text(exc)}", evidence=error_text(exc),
                  line=st.line)
        return
    batch, error, features = first_batch(loader)
    if batch is None:
        if not {"TL201", "TL202", "TL101"} & h.emitted:  # else the training batch already failed the same way
            collation_failure(h, error or "no batch", features, main_input, collator_name(trainer.data_collator),
                              "evaluation", st.line, trainer=True)
        return
    trainer.model.eval()
    try:
        loss, logits, labels = trainer.prediction_step(trainer.model, batch, prediction_loss_only=False)
    except Exception as exc:  # noqa: BLE001
        text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        out_of_range = "out of bounds" in str(exc) and isinstance(exc, IndexError)
        code = "TL106" if out_of_range else "TL707"
        if code in h.emitted or (out_of_range and "TL301" in h.emitted):
            return  # the training batch already showed it
        h.finding(
            code,
            f"the forward pass fails on one evaluation batch: {text}",
            evidence=text,
            line=st.line,
            confirms=("TL301",) if out_of_range else (),
        )
        return
    finally:
        trainer.model.train()
    if logits is None or labels is None:
        h.note("one eval batch gave no logits or no labels: the Trainer would not call compute_metrics")
        return
    num_labels = getattr(getattr(model, "config", None), "num_labels", None)
    preprocess = getattr(trainer, "preprocess_logits_for_metrics", None)
    if preprocess is not None:
        try:
            logits = preprocess(logits, labels)
        except Exception as exc:  # noqa: BLE001
            line = h.user_line(exc.__traceback__) or st.line
            h.finding(
                "TL607",
                f"preprocess_logits_for_metrics raises on one eval batch: {type(exc).__name__}: {exc}",
                evidence=f"{type(exc).__name__}: {exc} at {h.where(line)}",
                line=line,
            )
            return
        if logits is None:
            h.finding(
                "TL603",
                "preprocess_logits_for_metrics returned None on one eval batch",
                evidence="preprocess_logits_for_metrics(logits, labels) → None; compute_metrics would get no predictions",
                line=st.line,
            )
            return
        h.checked("TL603")
    from transformers import EvalPrediction

    preds = _numpify(logits)
    label_ids = _numpify(labels)
    kwargs: dict[str, Any] = {}
    include = getattr(trainer.args, "include_for_metrics", None) or []
    if "inputs" in include:
        kwargs["inputs"] = _numpify(batch.get(main_input))
    if "loss" in include:
        kwargs["losses"] = _numpify(loss)
    pred_desc = describe(preds)
    label_desc = describe(label_ids)
    seen: list[Any] = []
    try:
        with _watch_metric_calls(seen):
            result = compute_metrics(EvalPrediction(predictions=preds, label_ids=label_ids, **kwargs))
    except Exception as exc:  # noqa: BLE001
        line = h.user_line(exc.__traceback__) or st.line
        err = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        fixed = _retry_with_argmax(compute_metrics, EvalPrediction, preds, label_ids, kwargs) if _is_logits(preds, num_labels) else None
        if fixed is not None:
            h.finding(
                "TL601",
                f"compute_metrics gets logits ({pred_desc}) as predictions and fails: {err}",
                evidence=(
                    f"EvalPrediction.predictions: {pred_desc} = (batch, num_labels) logits; label_ids: {label_desc}; "
                    f"compute_metrics raised {err} at {h.where(line)}; with predictions.argmax(-1) it returns "
                    f"{_short(fixed)} — take argmax(-1) first"
                ),
                line=line,
            )
        else:
            h.finding(
                "TL607",
                f"compute_metrics raises on one eval batch: {err}",
                evidence=f"predictions {pred_desc}, label_ids {label_desc}; {err} at {h.where(line)}",
                line=line,
            )
        return
    h.checked("TL607")
    fed = [(name, p) for name, p in seen if _is_logits(p, num_labels)]
    if fed:
        name, p = fed[0]
        h.finding(
            "TL601",
            f"compute_metrics hands logits ({describe(p)}) to the `{name}` metric as predictions",
            evidence=f"{name}.compute(predictions=<{describe(p)}>) — take argmax(-1) first; label_ids: {label_desc}",
            line=st.line,
        )
    else:
        h.checked("TL601")
    if result is None:
        h.finding(
            "TL602",
            "compute_metrics returned None on one eval batch",
            evidence=f"compute_metrics(EvalPrediction(predictions={pred_desc}, label_ids={label_desc})) → None",
            line=st.line,
        )
        return
    h.checked("TL602")
    h.detail(f"compute_metrics on one eval batch → {result!r}"[:400])
    best = getattr(trainer.args, "metric_for_best_model", None)
    if best and isinstance(result, dict):
        key = best[5:] if best.startswith("eval_") else best
        if key != "loss" and key not in result and f"eval_{key}" not in result:
            h.finding(
                "TL606",
                f"metric_for_best_model={best!r} is not returned by compute_metrics (keys {sorted(result)})",
                evidence=f"compute_metrics → {sorted(result)}; the Trainer looks up 'eval_{key}'",
                line=st.line,
            )
            return
    h.checked("TL606")
