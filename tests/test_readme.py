"""The README's rule table is the catalog (regenerate with `python scripts/rule_table.py --write`)."""

import re
import subprocess
import sys

from support import ROOT


def test_readme_rule_table_matches_the_catalog():
    expected = subprocess.run([sys.executable, str(ROOT / "scripts" / "rule_table.py")], capture_output=True,
                              text=True, check=True).stdout.strip()
    readme = (ROOT / "README.md").read_text()
    table = re.search(r"<!-- rules:start -->\n(.*?)\n<!-- rules:end -->", readme, re.S)
    assert table is not None
    assert table.group(1).strip() == expected, "run `python scripts/rule_table.py --write`"
