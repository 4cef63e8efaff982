"""Keras probe, loss stage (child side: stdlib + TF only).

``check_loss``:

- TL401: the labels are a key of the feature dict while ``compile`` got a loss. With a transformers TF
  model, ``train_step`` takes them out as the target: no error, and the compiled loss runs on the logits
  (silently wrong when it expects probabilities). With a plain Keras model the step raises ("Target data
  is missing" on Keras 2, "None values not supported" on Keras 3): the probe runs that step and reports
  the exact error, then carries on with the batch split as ``(features, labels)``.
- TL402: a cross-entropy with ``from_logits=False`` applied to outputs that are not probabilities;
  evidence: the per-sample loss next to the ``from_logits=True`` value on the same batch.
- TL406: the per-sample loss the training uses is finite (rows with out-of-range labels excluded:
  TL106 reports those).
"""

from __future__ import annotations

from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_BATCH, KerasState
from trainlint.probe.child.registry import check

CE_CLASSES = {
    "SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
    "CategoricalCrossentropy": "categorical_crossentropy",
    "BinaryCrossentropy": "binary_crossentropy",
}
CE_NAMES = set(CE_CLASSES.values())
INTERNAL = ("auto_with_warning", "auto", "passthrough")


def loss_info(st: KerasState) -> dict[str, Any] | None:
    """What ``compile(loss=...)`` got: ``{"internal": bool, "text": str, "kind": ce-name | None,
    "from_logits": bool}``; None when there is no loss or several."""
    arg = st.compile.get("loss", None) if st.compile else getattr(st.model, "loss", None)
    if st.transformers and (arg in INTERNAL or (isinstance(arg, str) and arg in INTERNAL)):
        return {"internal": True, "text": "the model's internal loss", "kind": None, "from_logits": True}
    if arg is None or isinstance(arg, (dict, list, tuple)):
        return None
    if isinstance(arg, str):
        kind = arg if arg in CE_NAMES else CE_CLASSES.get(arg)
        return {"internal": False, "text": f"loss={arg!r}", "kind": kind, "from_logits": False}
    cls = type(arg).__name__
    if hasattr(arg, "get_config") and cls in CE_CLASSES:
        try:
            cfg = arg.get_config()
        except Exception:  # noqa: BLE001
            cfg = {}
        fl = bool(cfg.get("from_logits", getattr(arg, "from_logits", False)))
        return {"internal": False, "text": f"loss={cls}(from_logits={fl})", "kind": CE_CLASSES[cls], "from_logits": fl}
    name = getattr(arg, "__name__", cls)
    kind = name if name in CE_NAMES else None
    return {"internal": False, "text": f"loss={name}", "kind": kind, "from_logits": False}


def per_sample(st: KerasState, kind: str, labels: Any, outputs: Any, from_logits: bool) -> Any:
    fn = getattr(st.kmod.losses, kind)
    if kind == "binary_crossentropy" and getattr(labels, "ndim", 0) == getattr(outputs, "ndim", 0) - 1:
        # labels (N,) against one sigmoid unit (N, 1): fit's compiled loss expands them to the same rank.
        labels = labels.reshape(labels.shape + (1,))
    return ku.np_of(fn(labels, outputs, from_logits=from_logits))


def _in_range(st: KerasState) -> Any:
    import numpy as np

    n = st.labels.shape[0]
    return np.ones(n, dtype=bool) if st.out_of_range is None else ~np.asarray(st.out_of_range)


def looks_like_probabilities(out: Any, kind: str | None) -> bool:
    import numpy as np

    if out.size == 0 or out.min() < -1e-6 or out.max() > 1 + 1e-6:
        return False
    if kind != "binary_crossentropy" and out.ndim >= 2 and out.shape[-1] > 1:
        return bool(np.allclose(out.sum(axis=-1), 1.0, atol=1e-3))
    return True


def _run_step_error(st: KerasState) -> str | None:
    """The exact error of one real Keras train step on the batch as given to fit (plain Keras), in the
    execution mode fit would use (graph unless the script compiled with run_eagerly=True): the
    messages differ between the two."""
    ku.set_eager(st, bool(st.compile.get("run_eagerly")))
    try:
        st.model.train_on_batch(st.features, st.y, sample_weight=st.sample_weight)
    except Exception as exc:  # noqa: BLE001
        # The failed trace leaves a half-built train function: the next step must trace a new one.
        try:
            st.model.train_function = None
        except Exception:  # noqa: BLE001
            pass
        msg = ku.first_line(exc)
        if st.flavour == "keras" and ("None values not supported" in msg or "value (None)" in msg):
            msg += " (Keras 3 computes the loss with y=None: there are no targets)"
        return msg
    finally:
        ku.set_eager(st, True)
    return None


def _output_activation(st: KerasState) -> str | None:
    """The activation of a plain Keras model's last layer (``sigmoid``, ``softmax``, ...), if any."""
    try:
        layer = st.model.layers[-1]
    except Exception:  # noqa: BLE001
        return None
    act = getattr(layer, "activation", None)
    name = getattr(act, "__name__", None)
    if name is None and type(layer).__name__ in ("Softmax", "Activation"):
        name = "softmax" if type(layer).__name__ == "Softmax" else getattr(layer, "activation", None)
    return str(name) if name else None


@check(FIT_BATCH, "TL401", "TL402", "TL403", "TL406")
def check_loss(h: Harness, st: KerasState) -> None:
    import numpy as np

    info = loss_info(st)
    model_name = type(st.model).__name__
    line = st.compile_line or st.line
    if info is None:
        h.incomplete("loss", "compile() got no single loss (none, or one per output)", codes=("TL401", "TL402", "TL406"))
        return
    # ------------------------------------------------------------ TL401
    if st.label_keys and st.y is None and not info["internal"]:
        key = st.label_name
        if st.transformers:
            import transformers

            wrong = info["kind"] in CE_NAMES and not info["from_logits"]
            evidence = (
                f"batch is one dict {sorted(st.features.keys())} with '{key}' inside and no separate labels; "
                f"compile({info['text']}): {model_name}.train_step (transformers {transformers.__version__}) "
                f"takes '{key}' out as the target, so fit raises nothing, and applies the compiled loss to the logits"
            )
            if st.outputs is not None and st.labels is not None and info["kind"] in CE_NAMES:
                ok = _in_range(st)
                try:
                    compiled = per_sample(st, info["kind"], st.labels[ok], st.outputs[ok], info["from_logits"])
                    right = per_sample(st, info["kind"], st.labels[ok], st.outputs[ok], True)
                    evidence += (
                        f": mean loss {float(np.mean(compiled)):.4g} where the model's own loss would be "
                        f"{float(np.mean(right)):.4g}"
                    )
                except Exception:  # noqa: BLE001
                    pass
            if wrong:
                h.finding(
                    "TL401",
                    f"'{key}' is inside the feature dict while compile() got {info['text']}: transformers "
                    f"moves it to the target silently and the loss runs on logits as if they were "
                    f"probabilities — training is wrong without an error",
                    evidence=evidence + " (from_logits=False on logits: see TL402)",
                    line=line,
                )
            else:
                h.checked("TL401")
                h.note(
                    f"'{key}' is inside the feature dict with compile({info['text']}): transformers' "
                    f"train_step uses it as the target, and the loss takes logits: this trains correctly"
                )
        else:
            error = _run_step_error(st)
            if error:
                h.finding(
                    "TL401",
                    f"'{key}' is inside the feature dict while compile() got {info['text']}: fit fails with "
                    f"{error.split(':', 1)[0]} — Keras expects (features, labels) pairs",
                    evidence=(
                        f"batch is one dict {sorted(st.features.keys())} with no separate labels; one real "
                        f"train step on it raised {error}"
                    ),
                    line=line,
                )
            else:
                h.checked("TL401")
            # The remaining checks use the batch as Keras expects it.
            label_tensor = st.features[key]
            st.features = {k: v for k, v in st.features.items() if k not in st.label_keys}
            st.y = label_tensor
            st.label_keys = []
            h.note(f"the remaining checks use the batch as (features, labels) with '{key}' as the labels")
    else:
        h.checked("TL401")

    if st.outputs is None or st.labels is None:
        return
    ok = _in_range(st)
    if not ok.any():
        h.note("every label of the batch is out of range: loss checks skipped")
        return
    labels, outputs = st.labels[ok], st.outputs[ok]
    # ------------------------------------------------------------ TL402
    if info["kind"] in CE_NAMES and not info["from_logits"]:
        if looks_like_probabilities(outputs, info["kind"]):
            h.checked("TL402")
        else:
            try:
                as_probs = per_sample(st, info["kind"], labels, outputs, False)
                as_logits = per_sample(st, info["kind"], labels, outputs, True)
                sums = outputs.sum(axis=-1) if outputs.ndim >= 2 else outputs
                h.finding(
                    "TL402",
                    f"compile({info['text']}) treats the model's outputs as probabilities, but {model_name} "
                    f"returns logits: use from_logits=True (or no loss: the model's own)",
                    evidence=(
                        f"outputs range [{float(outputs.min()):.3g}, {float(outputs.max()):.3g}], rows sum to "
                        f"{ku.short(sums, 4)}: logits; per-sample loss with from_logits=False "
                        f"{ku.short(as_probs, 8)} (mean {float(np.mean(as_probs)):.4g}) vs from_logits=True "
                        f"{ku.short(as_logits, 8)} (mean {float(np.mean(as_logits)):.4g})"
                    ),
                    line=line,
                )
            except Exception as exc:  # noqa: BLE001
                h.incomplete("loss", f"could not compute the per-sample loss: {ku.first_line(exc)}", codes=("TL402",))
    else:
        h.checked("TL402")
    # ------------------------------------------------------------ TL403 (Keras): probabilities as logits
    act = None if st.transformers or info["internal"] else _output_activation(st)
    if info["kind"] in CE_NAMES and info["from_logits"] and act in ("sigmoid", "softmax"):
        if looks_like_probabilities(outputs, info["kind"]):
            try:
                as_logits = per_sample(st, info["kind"], labels, outputs, True)
                as_probs = per_sample(st, info["kind"], labels, outputs, False)
                layer = st.model.layers[-1].name
                h.finding(
                    "TL403",
                    f"compile({info['text']}) treats the model's outputs as logits, but the last layer "
                    f"`{layer}` applies a {act}: the loss squashes probabilities a second time and its gradients "
                    f"vanish; drop from_logits=True (or the {act})",
                    evidence=(
                        f"outputs range [{float(outputs.min()):.3g}, {float(outputs.max()):.3g}] from a {act} "
                        f"layer; per-sample loss with from_logits=True {ku.short(as_logits, 8)} "
                        f"(mean {float(np.mean(as_logits)):.4g}) vs from_logits=False {ku.short(as_probs, 8)} "
                        f"(mean {float(np.mean(as_probs)):.4g})"
                    ),
                    line=line,
                )
            except Exception as exc:  # noqa: BLE001
                h.incomplete("loss", f"could not compute the per-sample loss: {ku.first_line(exc)}", codes=("TL403",))
        else:
            h.checked("TL403")
    else:
        h.checked("TL403")
    # ------------------------------------------------------------ TL406
    values, what = None, ""
    try:
        if info["internal"] and st.transformers:
            feats = ku.take_rows(dict(ku.features_without_labels(st)), ok)
            feats["labels"] = labels
            out = st.model(feats, training=False)
            if getattr(out, "loss", None) is not None:
                values, what = ku.np_of(out.loss).reshape(-1), f"{model_name}(batch).loss"
        elif info["kind"] in CE_NAMES:
            values = per_sample(st, info["kind"], labels, outputs, info["from_logits"]).reshape(-1)
            what = f"the compiled {info['kind']}"
    except Exception as exc:  # noqa: BLE001
        h.incomplete("loss", f"could not compute the per-sample loss: {ku.first_line(exc)}", codes=("TL406",))
        return
    if values is None:
        return
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        h.finding(
            "TL406",
            f"the loss is not finite for {bad.size} of {values.size} samples at initialisation",
            evidence=f"{what} per sample: {ku.short(values)}; non-finite at positions {ku.short(bad)} "
            f"(labels {ku.short(labels[bad] if labels.ndim == 1 else labels[bad][:, :4])})",
            line=st.line,
        )
    else:
        h.checked("TL406")
        h.detail(f"{what} per sample at initialisation: {ku.short(values)}")
