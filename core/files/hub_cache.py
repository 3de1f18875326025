"""Find a Hugging Face Hub model id in the local Hub cache, offline.

The cache layout is huggingface_hub's (``docs/source/en/guides/manage-cache.md``,
"Understand caching"): ``<cache>/models--<org>--<name>/`` holds ``refs/<ref>`` (a file
with the commit hash a branch or tag points to), ``snapshots/<commit>/`` (the repository's
files at that commit, as links into ``blobs/``) and ``blobs/``. The cache folder is
``$HF_HUB_CACHE`` (or the older ``$HUGGINGFACE_HUB_CACHE``), else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``
(huggingface_hub ``constants.py``).

Nothing is downloaded and no network is touched: an id that is not in the cache gets a
one-line message saying so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
"""``org/name`` as the Hub allows them (letters, digits, ``-``, ``_``, ``.``; ≤ 96 each)."""
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
REF_MAX_BYTES = 4096


class HubCacheError(ValueError):
    """A Hub id that cannot be resolved from the local cache; one line."""


def looks_like_hub_id(text: str) -> bool:
    """Whether ``text`` reads as ``org/name`` or ``org/name@revision`` (not a path)."""
    repo, _, revision = text.partition("@")
    if ".." in repo or not REPO_ID.match(repo):
        return False
    return not revision or (bool(REVISION.match(revision)) and ".." not in revision)


def hub_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The Hub cache folder from the environment (see the module docstring)."""
    env = os.environ if environ is None else environ
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return Path(env[name]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base.expanduser() / "huggingface" / "hub"


def resolve_hub_id(text: str, environ: Mapping[str, str] | None = None) -> Path:
    """The snapshot folder of ``org/name[@revision]`` in the local cache.

    ``revision`` (default ``main``) is a ref under ``refs/`` or a full commit hash under
    ``snapshots/``. Without ``refs/main`` a cache holding exactly one snapshot uses it.
    Raises :class:`HubCacheError` naming the id, the cache folder and what is missing.
    """
    repo, _, revision = text.partition("@")
    if not looks_like_hub_id(text):
        raise HubCacheError(f"{text!r} is not a Hugging Face model id (org/name[@revision])")
    cache = hub_cache_dir(environ)
    folder = cache / ("models--" + repo.replace("/", "--"))
    if not folder.is_dir():
        raise HubCacheError(
            f"{repo} is not in the local Hugging Face cache ({cache}); nothing is downloaded: "
            f"fetch it with `huggingface-cli download {repo}` or give a local folder"
        )
    snapshots = folder / "snapshots"
    commit = _commit(folder, revision or "main")
    if commit is None and not revision:
        present = sorted(p.name for p in snapshots.iterdir()) if snapshots.is_dir() else []
        if len(present) == 1:
            commit = present[0]
        elif present:
            raise HubCacheError(
                f"{repo}: no refs/main in the cache and {len(present)} snapshots; "
                f"name one as {repo}@<commit>"
            )
    if commit is None:
        raise HubCacheError(
            f"{repo}: revision {revision or 'main'!r} is not in the cache ({folder})"
        )
    snapshot = snapshots / commit
    if not snapshot.is_dir():
        raise HubCacheError(f"{repo}: snapshot {commit} is missing from the cache ({folder})")
    return snapshot


def _commit(folder: Path, revision: str) -> str | None:
    """The commit a ref names (``refs/<revision>``), or ``revision`` itself if it is a
    commit hash with a snapshot."""
    if COMMIT.match(revision) and (folder / "snapshots" / revision).is_dir():
        return revision
    ref = folder / "refs" / revision
    try:
        if not ref.is_file() or ref.stat().st_size > REF_MAX_BYTES:
            return None
        value = ref.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if COMMIT.match(value) else None
