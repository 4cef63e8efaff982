"""The probe-check registry (``trainlint.probe.child.checks``): checks declared by stage with a decorator, run
in pipeline order, the codes they declare matching the rule catalog and their own source. Fast: the
registry and the stage probe modules import only the standard library (no torch, no TensorFlow)."""

from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import pytest

from trainlint.probe.child import checks

SRC = Path(__file__).resolve().parents[2] / "trainlint"
PROBE_SOURCES = sorted(
    [*SRC.glob("stages/s*/probe.py"), *SRC.glob("stages/s*/probe_keras.py"),
     SRC / "probe" / "child" / "frameworks" / "hf_trainer.py", SRC / "probe" / "child" / "frameworks" / "keras_fit.py",
     SRC / "probe" / "child" / "torch_util.py",
     SRC / "probe" / "child" / "keras_util.py"]
)


def _code_literals(path: Path) -> set[str]:
    """Every string constant that is exactly a rule code (docstrings and comments are not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(r"TL\d{3}", n.value)}


def test_every_code_in_probe_source_is_declared():
    declared = checks.declared_codes()
    for path in PROBE_SOURCES:
        undeclared = _code_literals(path) - declared
        assert not undeclared, f"{path.relative_to(SRC)} reports {sorted(undeclared)} without declaring them"


def test_probe_codes_equal_the_rules_that_declare_a_probe():
    """The codes the probe can report are exactly the codes whose Rule says what the probe does."""
    from trainlint.rule import all_rules

    with_probe = {code for code, rule in all_rules().items() if rule.probe}
    declared = checks.declared_codes()
    assert not declared - with_probe, f"reported by the probe, no `probe` in their Rule: {sorted(declared - with_probe)}"
    assert not with_probe - declared, f"a `probe` in their Rule, never reported: {sorted(with_probe - declared)}"


@pytest.mark.parametrize("framework, path", [("torch", "trainer"), ("keras", "fit")])
def test_checks_run_in_pipeline_order(framework, path):
    found = checks.checks(framework, path)
    assert len(found) >= 7
    assert [c.order for c in found] == sorted(c.order for c in found)
    for c in found:
        digit = int(re.search(r"\.s(\d)_", c.fn.__module__).group(1))
        assert c.stage == digit and c.framework == framework
    # Where a check needs what another stage computes, its order says so.
    names = [c.name for c in found]
    if framework == "torch":
        assert names.index("s3_model.check_forward") < names.index("s4_loss.check_loss") < names.index(
            "s3_model.check_gradients") < names.index("s5_optimizer.check_trainer_step")
    else:
        assert names.index("s3_model.check_forward") < names.index("s1_data.check_label_range")


def test_no_stage_probe_reaches_into_another_stage_or_the_keras_plugin():
    for path in [*SRC.glob("stages/s*/probe.py"), *SRC.glob("stages/s*/probe_keras.py")]:
        own = path.parent.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                m = re.match(r"trainlint\.stages\.(s\d_\w+)", node.module)
                if m and m.group(1) != own:
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, f"{own}/{path.name} imports {private} from {node.module}"
                assert node.module != "trainlint.probe.child.frameworks.keras_fit", f"{own}/{path.name}: import cycle"


class _Harness:
    strict = False

    def __init__(self):
        self.phases, self.incompletes, self.ran = [], [], []

    def phase(self, name):
        self.phases.append(name)

    def incomplete(self, check, reason, codes=()):
        self.incompletes.append((check, reason, tuple(codes)))

    def note(self, text):
        raise AssertionError("an incomplete check must say so with incomplete(), not a note")


def test_a_check_that_fails_is_incomplete_and_a_stop_skips_the_rest():
    module = types.ModuleType("trainlint.stages.s2_batching.fake_probe")
    st = types.SimpleNamespace(stop=False)

    def broken(h, s):
        h.ran.append("broken")
        raise KeyError("input_ids")

    def stopper(h, s):
        h.ran.append("stopper")
        s.stop = True

    def later(h, s):
        h.ran.append("later")

    def always(h, s):
        h.ran.append("always")

    try:
        for fn, kw in ((broken, {}), (stopper, {"order": 210}), (later, {"order": 220}),
                       (always, {"order": 230, "after_stop": True})):
            fn.__module__ = module.__name__
            checks.probe_check("TL201", framework="torch", path="test-only", **kw)(fn)
        h = _Harness()
        checks.run(h, st, "torch", "test-only")
    finally:
        checks._CHECKS[:] = [c for c in checks._CHECKS if c.path != "test-only"]
    assert h.ran == ["broken", "stopper", "always"]
    [(name, reason, codes)] = h.incompletes
    assert name == "s2_batching.broken" and "KeyError" in reason and codes == ("TL201",)
    assert h.phases == ["batching"] * 3


def test_probe_check_rejects_what_is_not_a_rule_code():
    with pytest.raises(ValueError):
        checks.probe_check("T201", framework="torch")
    with pytest.raises(ValueError):
        checks.probe_check("TL201", framework="jax")
