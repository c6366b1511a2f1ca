"""The configuration reference page's table is the schema's: generated, complete, and never stale."""

from __future__ import annotations

import pytest

from gateway.config import Config
from gateway.config_docs import END, PAGE, START, keys, main, render_table, splice

REGENERATE = "run `python -m gateway.config_docs` to regenerate the table in docs/configuration.md"


def test_every_key_has_a_description():
    missing = [k.path for k in keys() if not k.description]
    assert not missing, f"add Field(description=...) for: {', '.join(missing)}; then {REGENERATE}"


def test_page_table_matches_the_schema():
    text = PAGE.read_text(encoding="utf-8")
    inside = text.partition(START)[2].partition(END)[0].strip()
    documented = {line.split("`")[1] for line in inside.splitlines() if line.startswith("| `")}
    schema = {k.path for k in keys()}
    assert not schema - documented, f"keys missing from the page: {sorted(schema - documented)}; {REGENERATE}"
    assert not documented - schema, (
        f"the page documents keys that no longer exist: {sorted(documented - schema)}; {REGENERATE}"
    )
    assert inside == render_table(), f"the page's table is stale; {REGENERATE}"
    assert main(["--check"]) == 0


def test_every_section_and_leaf_is_walked():
    paths = {k.path for k in keys()}
    for section, model in Config.model_fields.items():
        annotation = model.annotation
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            for name in annotation.model_fields:
                assert f"{section}.{name}" in paths or any(p.startswith(f"{section}.{name}.") for p in paths)
        else:
            assert section in paths
    assert {"audit.jsonl_path", "audit.webhook.url", "state.op_timeout_s", "sessions.metadata_key"} <= paths


def test_check_fails_on_a_stale_page_and_regenerating_fixes_it(tmp_path):
    page = tmp_path / "configuration.md"
    page.write_text(f"# x\n\n{START}\n| old |\n{END}\n\nafter\n", encoding="utf-8")
    assert main(["--check", "--page", str(page)]) == 1
    assert main(["--page", str(page)]) == 0
    assert main(["--check", "--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# x\n") and text.endswith(f"{END}\n\nafter\n") and "`server.port`" in text


def test_missing_markers_are_an_error():
    with pytest.raises(ValueError, match="markers"):
        splice("no markers here", "| t |")


def test_defaults_are_shown_as_yaml_would_write_them():
    rows = {k.path: k for k in keys()}
    assert rows["sessions.body_user"].default == "`true`"
    assert rows["upstream.timeout_s"].default == "`600`"
    assert rows["audit.webhook.url"].default == "required"
    assert rows["logging.format"].kind == "`json` or `console`"
    assert rows["server.port"].kind == "int >= 0 <= 65535"
