"""Adapters on a frozen model (PEFT's LoRA and friends) and gradient checkpointing turned on for it.

``adapted_models(facts)`` lists where an adapter freezes a model's weights: `get_peft_model(model, config)`,
`PeftModel.from_pretrained(model, path, is_trainable=True)`, transformers' `model.add_adapter(config)`, each with a
config the source shows (a PEFT tuner whose trainable weights all sit inside the layers: not prompt tuning, no
`modules_to_save`, no trainable tokens, no adapter on the embeddings). ``input_grads_forced(facts)`` says whether the
file makes the embeddings' output require grad some way of its own (then reentrant checkpointing works).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import UNKNOWN, argument, dotted, keyword, literal

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

#: PEFT tuners whose trainable weights sit inside the layers they adapt (the embeddings stay frozen)
LAYER_TUNERS = frozenset({"LoraConfig", "AdaLoraConfig", "IA3Config", "LoHaConfig", "LoKrConfig", "OFTConfig",
                          "BOFTConfig", "VeraConfig", "FourierFTConfig", "HRAConfig", "VBLoRAConfig", "RandLoraConfig"})
#: calls that make the embeddings' output require grad, or make more than the adapters trainable
_INPUT_GRADS = frozenset({"enable_input_require_grads", "prepare_model_for_kbit_training",
                          "prepare_model_for_int8_training", "register_forward_hook", "requires_grad_"})


@dataclasses.dataclass(frozen=True)
class Adapted:
    """An adapter attached to a model whose own weights it freezes."""

    call: cst.Call  # get_peft_model(...), PeftModel.from_pretrained(...), model.add_adapter(...)
    base: cst.BaseExpression  # the model adapted
    #: the expression that holds the adapted model afterwards: the name `get_peft_model`'s result is bound to, or
    #: the receiver of `add_adapter` (None: the result is not bound to a name)
    result: cst.BaseExpression | None
    config: str  # the config class: "LoraConfig"


def _tuner_config(facts: Facts, expr: cst.BaseExpression | None, at: cst.CSTNode) -> str | None:
    """The PEFT config class ``expr`` makes (through a name), when its trainable weights all sit inside the layers."""
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        if b is None or not isinstance(b.value, cst.Call):
            return None
        expr = b.value
    elif isinstance(expr, cst.Attribute) and dotted(expr.value) == "self":
        expr = _self_value(facts, expr.attr.value, at)
    if not isinstance(expr, cst.Call):
        return None
    qn = facts.callee(expr) or ""
    cls = qn.rsplit(".", 1)[-1]
    if not qn.startswith("peft.") or cls not in LAYER_TUNERS:
        return None
    for name in ("modules_to_save", "trainable_token_indices"):
        kw = keyword(expr, name)
        if kw is not None and literal(kw.value) is not None:
            return None
    targets = keyword(expr, "target_modules")
    if targets is not None:
        value = facts.constant(targets.value, expr if expr in facts.where else at)
        names = [value] if isinstance(value, str) else value
        if value is UNKNOWN or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        if any("embed" in n or n in ("wte", "wpe", "shared") for n in names):
            return None
    return cls


def _self_value(facts: Facts, attr: str, at: cst.CSTNode) -> cst.BaseExpression | None:
    """The one value the methods of the class around ``at`` assign to `self.<attr>`."""
    w = facts.where.get(at)
    cls = next((b for b in reversed(w.blocks) if isinstance(b, cst.ClassDef)), None) if w is not None else None
    values = [a.value for a in facts.index.get("Assign", ()) if cls is not None and cls in facts.where[a].blocks
              and any(dotted(t.target) == f"self.{attr}" for t in a.targets)]
    return values[0] if len(values) == 1 else None


def adapted_models(facts: Facts) -> list[Adapted]:
    out = []
    for call in facts.index.get("Call", ()):
        qn = facts.callee(call) or ""
        f = call.func
        if qn in ("peft.get_peft_model", "peft.mapping.get_peft_model", "peft.PeftModel.from_pretrained",
                  "peft.PeftModelForCausalLM.from_pretrained"):
            if qn.endswith("from_pretrained"):
                if literal(argument(call, "is_trainable")) is not True:
                    continue
                config = "the adapter it loads"
            else:
                found = _tuner_config(facts, argument(call, "peft_config", 1), call)
                if found is None:
                    continue
                config = found
            base = argument(call, "model", 0)
            if base is None:
                continue
            out.append(Adapted(call, base, _bound_name(facts, call), config))
        elif isinstance(f, cst.Attribute) and f.attr.value == "add_adapter" and qn == "":
            found = _tuner_config(facts, argument(call, "adapter_config", 0), call)
            if found is not None:
                out.append(Adapted(call, f.value, f.value, found))
    return out


def _bound_name(facts: Facts, call: cst.Call) -> cst.BaseExpression | None:
    for h in facts.holders(call):
        if isinstance(h, cst.Assign) and len(h.targets) == 1:
            return h.targets[0].target
    return None


def input_grads_forced(facts: Facts) -> bool:
    """The file makes the input embeddings' output require grad itself (`enable_input_require_grads()`, PEFT's
    `prepare_model_for_kbit_training`, a forward hook), or sets `requires_grad` to True on some weights."""
    for call in facts.index.get("Call", ()):
        f = call.func
        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
        if name in _INPUT_GRADS and not (name == "requires_grad_" and call.args and literal(call.args[0].value) is False):
            return True
    for a in facts.index.get("Assign", ()):
        if any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad" for t in a.targets) \
                and literal(a.value) is not False:
            return True
    return False
