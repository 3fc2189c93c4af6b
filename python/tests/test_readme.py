"""The README's Python example runs as written."""

import os
import re

from conftest import ROOT


def test_readme_example_runs(tmp_path):
    text = (ROOT / "README.md").read_text()
    section = text.split("## Using bdl from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(blocks[0], "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
