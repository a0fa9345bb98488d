"""The README's Python example runs as written."""

import re
import subprocess
import sys

from conftest import REPO


def test_readme_example_runs(tmp_path):
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Python"):text.index("## Layout")]
    example = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    out = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "data" / "images" / "dict.zr").exists()
