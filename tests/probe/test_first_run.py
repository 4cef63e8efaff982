"""The README's first probe: `trainlint --probe examples/offline_trainer_buggy.py` works on a fresh
machine without the hub (the script builds its tiny model, tokenizer and data) and confirms its bugs;
the fixed twin is all clear."""

from __future__ import annotations

import json

import pytest
from support import need_modules, run_cli

pytestmark = pytest.mark.probe


@pytest.fixture(scope="module", autouse=True)
def _frameworks():
    need_modules("torch", "transformers", "datasets", "tokenizers")


def probe(name: str):
    proc = run_cli("--probe", "--probe-timeout", "300", "--output-format", "json", f"examples/{name}",
                   env={"HF_HUB_OFFLINE": "1"}, timeout=400)
    return proc, json.loads(proc.stdout or "[]")


def test_the_bundled_example_confirms_its_bugs_offline():
    proc, findings = probe("offline_trainer_buggy.py")
    assert proc.returncode == 1, proc.stderr
    status = {f["code"]: f["probe"]["status"] for f in findings}
    assert status.get("TL301") == "confirmed", findings
    # labels outside the head stop the pipeline before the forward pass, not before collation
    assert status.get("TL201") == "confirmed", findings
    tl301 = next(f for f in findings if f["code"] == "TL301")
    # statically an info finding (the class count is only known at run time); confirmed, an error
    assert tl301["severity"] == "error", tl301
    evidence = tl301["probe"]["evidence"]
    assert "2 outputs" in evidence and "out of range" in evidence, evidence


def test_the_fixed_example_is_all_clear():
    proc, findings = probe("offline_trainer_fixed.py")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert findings == []
