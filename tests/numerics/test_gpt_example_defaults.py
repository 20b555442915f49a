"""examples/numerics_gpt_formats.py writes to ./out unless told otherwise (never into the
repository's docs/), and a missing matplotlib is reported before training starts, naming the
``plot`` extra that installs it."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("numerics_gpt_formats",
                                                  ROOT / "examples" / "numerics_gpt_formats.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # defines the configs only; main() is not run
    return mod


def test_default_output_folder_is_out_under_cwd(monkeypatch):
    mod = _example()
    monkeypatch.setattr(mod, "have_matplotlib", lambda: True)
    args = mod.parse([])
    assert pathlib.Path(args.out) == pathlib.Path("out")
    assert mod.parse(["--out", "elsewhere"]).out == "elsewhere"


def test_missing_matplotlib_fails_before_training(monkeypatch, capsys):
    mod = _example()
    monkeypatch.setattr(mod, "have_matplotlib", lambda: False)
    with pytest.raises(SystemExit) as e:
        mod.parse(["--tiny"])
    assert e.value.code == 2
    assert "pip install -e '.[plot]'" in capsys.readouterr().err
    assert mod.parse(["--tiny", "--no-plot"]).no_plot  # the table and curves need no plot


def test_plot_extra_declares_matplotlib():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]
    assert any(req.startswith("matplotlib") for req in extras["plot"])
