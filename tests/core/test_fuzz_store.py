"""Fuzzing the loader: any bytes either load or raise ScenarioFileError; nothing else, no hang.

Three generators: arbitrary JSON values, structural mutations of a valid file (a value
replaced, a key deleted or added, at any depth), and byte-level mutations (flips,
truncations, insertions). Each example has a 2-second deadline (hypothesis fails a
slower one), so a hang or a quadratic blow-up fails the test. 150 examples per test by
default; ``LLM_PLANNER_FUZZ_EXAMPLES=5000`` for a longer run.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_planner.core.composition.scenario import SCHEMA_VERSION, Scenario
from llm_planner.core.files.store import ScenarioFileError, parse_scenario

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scenarios"
VALID = (FIXTURES / "v1-default.llmplan.json").read_bytes()
VALID_DOC: dict[str, Any] = json.loads(VALID)
LEGACY_DOC: dict[str, Any] = json.loads((FIXTURES / "v0-legacy.llmplan.json").read_bytes())

FUZZ = settings(
    max_examples=int(os.environ.get("LLM_PLANNER_FUZZ_EXAMPLES", "150")),
    deadline=timedelta(seconds=2),
    suppress_health_check=[HealthCheck.too_slow],
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["bf16", "h100-sxm", "llama-3.1-8b", "1e400", "", "NaN", "mfu"])
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.sampled_from(["name", "model", "gpu", "schema_version", "tokens", "x"]) | st.text(),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


def _outcome(data: bytes) -> Scenario | None:
    """Load ``data``: a Scenario, or None when refused with ScenarioFileError (and only that)."""
    try:
        return parse_scenario(data, "fuzz.llmplan.json")
    except ScenarioFileError as error:
        message = str(error)
        assert message.startswith("fuzz.llmplan.json: ")
        assert "\n" not in message
        assert len(message) <= 300
        return None


@FUZZ
@given(json_values)
def test_arbitrary_json_values(value: Any) -> None:
    _outcome(json.dumps(value).encode("utf-8"))


@FUZZ
@given(st.dictionaries(st.text(max_size=20), json_values, max_size=8), st.sampled_from([0, 1, 2]))
def test_arbitrary_objects_with_a_version(document: dict[str, Any], version: int) -> None:
    document["schema_version"] = version
    _outcome(json.dumps(document).encode("utf-8"))


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (dict keys / list indices) inside a JSON value."""
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*prefix, index))
    return found


def _mutate(document: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value
    doc = json.loads(json.dumps(document))
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[f"{last}_extra"] = value
    else:
        parent[last] = value
    return doc


@FUZZ
@given(st.data(), st.sampled_from(["replace", "delete", "add"]), json_values)
def test_structural_mutations_of_valid_files(data: st.DataObject, action: str, value: Any) -> None:
    base = data.draw(st.sampled_from([VALID_DOC, LEGACY_DOC]))
    path = data.draw(st.sampled_from(_paths(base)))
    mutated = _mutate(base, path, action, value)
    result = _outcome(json.dumps(mutated).encode("utf-8"))
    if result is not None:
        # whatever loads is a complete, current scenario
        assert result.schema_version == SCHEMA_VERSION


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["flip", "cut", "insert", "delete"]),
            st.integers(0, 10**6),
            st.binary(min_size=1, max_size=8),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_byte_mutations_of_a_valid_file(edits: list[tuple[str, int, bytes]]) -> None:
    data = bytearray(VALID)
    for action, position, payload in edits:
        at = position % (len(data) + 1)
        if action == "flip" and data:
            data[at % len(data)] ^= payload[0] or 1
        elif action == "cut":
            del data[at:]
        elif action == "insert":
            data[at:at] = payload
        else:
            del data[at : at + len(payload)]
    _outcome(bytes(data))


def test_the_unmutated_file_loads() -> None:
    """The fuzzers' starting point is valid, so a mutation is what makes a file fail."""
    assert _outcome(VALID) is not None
    assert _outcome(json.dumps(LEGACY_DOC).encode("utf-8")) is not None


@FUZZ
@given(st.integers(min_value=1, max_value=3000), st.sampled_from(["[", '{"a":']), st.data())
def test_deep_nesting_anywhere(depth: int, opener: str, data: st.DataObject) -> None:
    closer = "]" if opener == "[" else "}"
    nested = opener * depth + "0" + closer * depth
    key = data.draw(st.sampled_from(["name", "model", "compute", "extra"]))
    document = json.dumps({**VALID_DOC, key: 0}).replace(f'"{key}": 0', f'"{key}": {nested}')
    assert _outcome(document.encode("utf-8")) is None


@settings(max_examples=40, deadline=timedelta(seconds=5))
@given(
    st.lists(
        st.binary(max_size=2000) | json_values.map(lambda v: json.dumps(v).encode()), max_size=6
    )
)
def test_a_library_of_random_files_lists_every_good_one(junk: list[bytes]) -> None:
    import tempfile

    from llm_planner.core.files.library import Library
    from llm_planner.core.files.store import SUFFIX

    with tempfile.TemporaryDirectory() as folder:
        library = Library(Path(folder))
        library.folder.mkdir(parents=True)
        for i in range(2):
            (library.folder / f"good-{i}{SUFFIX}").write_bytes(VALID)
        for i, data in enumerate(junk):
            (library.folder / f"junk-{i}{SUFFIX}").write_bytes(data)
        listing = library.listing()
        assert {"good-0", "good-1"} <= {e.key for e in listing.entries}
        assert len(listing.entries) + len(listing.problems) == 2 + len(junk)
        kept = len(list(library.folder.iterdir())) + len(list(library.quarantine_folder.glob("*")))
        assert kept == 2 + len(junk)  # nothing deleted
