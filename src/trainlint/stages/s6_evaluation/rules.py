"""TL6xx: evaluation and metrics — what `compute_metrics` receives and returns."""

from __future__ import annotations

import libcst as cst

from trainlint.facts import MetricValue, argument, iter_calls, iter_nodes
from trainlint import codemod
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register

#: calls after which predictions are class ids (or at least not raw logits any more)
_TRANSFORMS = frozenset({
    "argmax", "argmin", "argsort", "topk", "max", "round", "rint", "floor", "ceil", "where", "sigmoid",
    "expit", "squeeze", "ravel", "flatten", "decode", "batch_decode", "astype", "greater", "int", "postprocess",
    "postprocess_text", "map", "apply", "vectorize", "threshold", "predict",
})
#: sklearn-style metric functions whose predictions must be class ids: name -> index of y_pred
_SKLEARN = {
    "accuracy_score": 1, "f1_score": 1, "precision_score": 1, "recall_score": 1, "matthews_corrcoef": 1,
    "classification_report": 1, "confusion_matrix": 1, "precision_recall_fscore_support": 1,
    "balanced_accuracy_score": 1, "cohen_kappa_score": 1,
}
_REGRESSION_METRICS = ("mse", "mae", "pearsonr", "spearmanr", "r_squared", "stsb", "rmse")


def compute_metrics_functions(ctx):
    """(function node, the call that registers it) for every `compute_metrics` given to a Trainer
    (without a `preprocess_logits_for_metrics`) or to `KerasMetricCallback(metric_fn=...)`."""
    facts = ctx.facts
    for call in facts.trainer_calls():
        if argument(call, "preprocess_logits_for_metrics") is not None:
            continue
        fn = facts.function_def(argument(call, "compute_metrics"), call)
        if fn is not None:
            yield fn, call
    for call in facts.index.get("Call", ()):
        qn = facts.callee(call) or ""
        if qn.endswith("KerasMetricCallback"):
            fn = facts.function_def(argument(call, "metric_fn", 0), call)
            if fn is not None:
                yield fn, call


@register
class MetricsWithoutArgmax(Rule):
    """`compute_metrics` hands the raw logits to a metric that expects class ids."""

    code = "TL601"
    name = "metrics-without-argmax"
    severity = Severity.ERROR
    probe = "Runs one evaluation batch through the model and the user's `compute_metrics`."
    triggers = ("compute_metrics", "metric_fn")
    fix = Applicability.UNSAFE

    def finish(self) -> None:
        seen = set()
        for fn, _ in compute_metrics_functions(self.ctx):
            if fn in seen or not isinstance(fn, cst.FunctionDef):
                continue
            seen.add(fn)
            self._check(fn)

    def _check(self, fn: cst.FunctionDef) -> None:
        params = fn.params.params
        if not params:
            return
        arg = params[0].name.value
        # any transformation or comparison anywhere: trust the author
        for c in iter_calls(fn.body):
            name = c.func.attr.value if isinstance(c.func, cst.Attribute) else c.func.value if isinstance(c.func, cst.Name) else None
            if name in _TRANSFORMS:
                return
        if next(iter_nodes(fn.body, (cst.Comparison, cst.For, cst.ListComp, cst.GeneratorExp)), None) is not None:
            return
        preds = self._prediction_names(fn, arg)
        where = self.ctx.facts.where
        # in document order: the first metric call that gets the logits is the one reported
        for c in sorted(iter_calls(fn.body), key=lambda n: where[n].order if n in where else 0):
            target = self._metric_prediction_arg(c, fn)
            if target is None:
                continue
            if (isinstance(target, cst.Name) and target.value in preds) or self._is_raw_predictions(target, arg):
                func = c.func.attr.value if isinstance(c.func, cst.Attribute) else getattr(c.func, "value", "")
                error = ("ValueError: Classification metrics can't handle a mix of binary and "
                         "continuous-multioutput targets" if func in _SKLEARN
                         else "Predictions and/or references don't match the expected format")
                self.report(
                    c,
                    f"`{fn.name.value}` passes the model's raw logits (`{self.ctx.code(target)}`, shape "
                    "(batch, num_labels)) to a metric that expects class ids: the first evaluation fails at the "
                    f"end of the epoch (\"{error}\")",
                    hint=f"take the class first: `{self.ctx.code(target)} = np.argmax({self.ctx.code(target)}, axis=-1)`",
                    fix=self._fix(target),
                )
                return

    def _fix(self, target: cst.BaseExpression):
        """Wrap the predictions handed to the metric in `np.argmax(..., axis=-1)` (unsafe: a model that
        returns a tuple of arrays, or a regression head, needs something else)."""
        got = codemod.ensure_name(self.ctx, "numpy.argmax", "import numpy as np", "np.argmax")
        if got is None:
            return None
        argmax, add = got
        new = f"{argmax}({self.ctx.code(target)}, axis=-1)"
        return self.ctx.fix(Applicability.UNSAFE, f"Pass `{new}` to the metric",
                            self.ctx.replace(target, new), *([add] if add is not None else []))

    @staticmethod
    def _is_raw_predictions(expr: cst.BaseExpression, arg: str) -> bool:
        # eval_pred.predictions / eval_pred[0]
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == arg:
            return expr.attr.value in ("predictions", "logits")
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            sl = expr.slice[0].slice
            first = isinstance(sl, cst.Index) and isinstance(sl.value, cst.Integer) and sl.value.value == "0"
            if isinstance(expr.value, cst.Name) and expr.value.value == arg:
                return first
            # eval_pred.predictions[0]: the logits when the model returns a tuple
            return first and MetricsWithoutArgmax._is_raw_predictions(expr.value, arg)
        if isinstance(expr, cst.IfExp):
            # `p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions`
            return MetricsWithoutArgmax._is_raw_predictions(expr.body, arg) and \
                MetricsWithoutArgmax._is_raw_predictions(expr.orelse, arg)
        return False

    def _prediction_names(self, fn: cst.FunctionDef, arg: str) -> set[str]:
        names: set[str] = set()
        for node in iter_nodes(fn.body, (cst.Assign,)):
            value = node.value
            for t in node.targets:
                tgt = t.target
                if isinstance(tgt, (cst.Tuple, cst.List)) and isinstance(value, cst.Name) and value.value == arg:
                    first = tgt.elements[0].value if tgt.elements else None
                    if isinstance(first, cst.Name):
                        names.add(first.value)
                elif isinstance(tgt, cst.Name) and self._is_raw_predictions(value, arg):
                    names.add(tgt.value)
        return names

    def _metric_prediction_arg(self, call: cst.Call, fn) -> cst.BaseExpression | None:
        facts = self.ctx.facts
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "compute":
            metric = facts.value_of(func.value, call if call in facts.where else None)
            if isinstance(metric, MetricValue) and metric.call is not None:
                spec = " ".join(str(facts.constant(a.value, metric.call)) for a in metric.call.args[:2])
                if any(r in spec.lower() for r in _REGRESSION_METRICS):
                    return None
            return argument(call, "predictions")
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name in _SKLEARN:
            return argument(call, "y_pred", _SKLEARN[name])
        return None


@register
class ComputeMetricsError(Rule):
    """(probe) `compute_metrics` raises, or returns no dict, on one real evaluation batch."""

    code = "TL607"
    name = "compute-metrics-error"
    severity = Severity.ERROR
    probe = "Runs one evaluation batch through the model and `compute_metrics`, before any training."
