"""Hub ids from the local Hugging Face cache (core/files/hub_cache.py), offline.

The fake caches follow huggingface_hub's layout (guides/manage-cache.md):
models--<org>--<name>/{refs/<ref>, snapshots/<commit>/, blobs/}.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llm_planner.cli import main
from llm_planner.core.files.hf_import import HFImportError, import_model
from llm_planner.core.files.hub_cache import (
    HubCacheError,
    hub_cache_dir,
    looks_like_hub_id,
    resolve_hub_id,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hf"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
OTHER = "5206a32e0bd3067aef1ce90f5528ade7d866253f"


def _cache(root: Path, repo: str = "meta-llama/Llama-3.1-8B", commit: str = COMMIT) -> Path:
    folder = root / ("models--" + repo.replace("/", "--"))
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (folder / "blobs").mkdir(exist_ok=True)
    blob = folder / "blobs" / "abc123"
    shutil.copy(FIXTURES / "llama-3.1-8b" / "config.json", blob)
    (snapshot / "config.json").symlink_to(Path("../../blobs/abc123"))
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    return snapshot


def test_cache_folder_from_the_environment(tmp_path):
    assert hub_cache_dir({"HF_HUB_CACHE": str(tmp_path)}) == tmp_path
    assert hub_cache_dir({"HF_HOME": str(tmp_path)}) == tmp_path / "hub"
    assert hub_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "huggingface" / "hub"
    assert hub_cache_dir({}) == Path.home() / ".cache" / "huggingface" / "hub"
    both = {"HF_HUB_CACHE": str(tmp_path / "a"), "HF_HOME": str(tmp_path / "b")}
    assert hub_cache_dir(both) == tmp_path / "a"


def test_resolves_main_a_ref_and_a_commit(tmp_path):
    snapshot = _cache(tmp_path)
    env = {"HF_HUB_CACHE": str(tmp_path)}
    assert resolve_hub_id("meta-llama/Llama-3.1-8B", env) == snapshot
    assert resolve_hub_id(f"meta-llama/Llama-3.1-8B@{COMMIT}", env) == snapshot
    folder = tmp_path / "models--meta-llama--Llama-3.1-8B"
    (folder / "snapshots" / OTHER).mkdir()
    (folder / "refs" / "v1").write_text(OTHER)
    assert resolve_hub_id("meta-llama/Llama-3.1-8B@v1", env) == folder / "snapshots" / OTHER


def test_one_snapshot_without_refs(tmp_path):
    snapshot = _cache(tmp_path)
    (snapshot.parent.parent / "refs" / "main").unlink()
    assert resolve_hub_id("meta-llama/Llama-3.1-8B", {"HF_HUB_CACHE": str(tmp_path)}) == snapshot
    (snapshot.parent / OTHER).mkdir()
    with pytest.raises(HubCacheError, match="2 snapshots"):
        resolve_hub_id("meta-llama/Llama-3.1-8B", {"HF_HUB_CACHE": str(tmp_path)})


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("meta-llama/Llama-3.1-70B", "is not in the local Hugging Face cache"),
        ("meta-llama/Llama-3.1-8B@nope", "revision 'nope' is not in the cache"),
        ("../etc", "is not a Hugging Face model id"),
        ("a/../b", "is not a Hugging Face model id"),
    ],
)
def test_missing_ids_get_one_line(tmp_path, text, needle):
    _cache(tmp_path)
    with pytest.raises(HubCacheError) as caught:
        resolve_hub_id(text, {"HF_HUB_CACHE": str(tmp_path)})
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_ref_that_is_not_a_commit_is_not_followed(tmp_path):
    snapshot = _cache(tmp_path)
    (snapshot.parent.parent / "refs" / "main").write_text("../../../../etc")
    with pytest.raises(HubCacheError, match="not in the cache"):
        resolve_hub_id("meta-llama/Llama-3.1-8B@main", {"HF_HUB_CACHE": str(tmp_path)})


def test_id_syntax():
    assert looks_like_hub_id("Qwen/Qwen3-8B")
    assert looks_like_hub_id("google/gemma-3-1b-pt@main")
    assert not looks_like_hub_id("config.json")
    assert not looks_like_hub_id("/abs/path")
    assert not looks_like_hub_id("a/b/c")


def test_import_model_and_the_cli_resolve_a_cached_id(tmp_path, monkeypatch, capsys):
    _cache(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    imported = import_model("meta-llama/Llama-3.1-8B")
    assert imported.architecture.layers == 32
    assert main(["model", "meta-llama/Llama-3.1-8B"]) == 0
    assert "8,030,261,248" in capsys.readouterr().out  # Llama-3.1-8B, as from its folder
    assert main(["model", "meta-llama/Llama-3.1-70B"]) == 2
    err = capsys.readouterr().err
    assert "not in the local Hugging Face cache" in err
    assert err.count("\n") == 1
    with pytest.raises(HFImportError, match="not a Hugging Face id"):
        import_model("no such thing")
