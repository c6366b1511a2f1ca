"""The HTML report, opened and read back with html.parser: totals, one timeline per
conversation, repeats highlighted, the step where each action would fire marked."""

from __future__ import annotations

import io
import re
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gateway.replay.command import run_replay

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replay"
ALL = [str(p) for p in sorted(FIXTURES.glob("*.json*"))]


class Page(HTMLParser):
    """Collects what the tests look at: elements by class, timeline rows, marks, totals."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.sections: list[dict] = []
        self.rows: dict[str, list[dict]] = defaultdict(list)  # section id -> timeline rows
        self.marks: dict[str, list[tuple[int, str, str]]] = defaultdict(list)  # id -> (step, action, detector)
        self.stats: dict[str, str] = {}
        self.text: list[str] = []
        self._section = self._row = self._stat = None
        self._in_value = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        self.tags.append((tag, attrs))
        if tag == "section" and "conversation" in classes:
            self._section = attrs["id"]
            self.sections.append(attrs)
        elif tag == "tr" and "call" in classes:
            self._row = {"step": int(attrs["data-step"]), "repeat": int(attrs["data-repeat"]), "classes": classes}
            self.rows[self._section].append(self._row)
        elif tag == "span" and "mark" in classes and "data-action" in attrs:
            self.marks[self._section].append((self._row["step"], attrs["data-action"], attrs["data-detector"]))
        elif tag == "div" and "stat" in classes:
            self._stat = attrs["data-stat"]
        elif tag == "span" and classes == ["v"] and self._stat:
            self._in_value = True

    def handle_data(self, data):
        self.text.append(data)
        if self._in_value:
            self.stats[self._stat] = data
            self._in_value, self._stat = False, None


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Page, str]:
    path = tmp_path_factory.mktemp("report") / "report.html"
    err = io.StringIO()
    assert run_replay(ALL, "default", html=str(path), out=io.StringIO(), err=err) == 0
    assert f"wrote {path}" in err.getvalue()
    html = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(html)
    return page, html


def test_self_contained(report):
    page, html = report
    assert html.startswith("<!doctype html>") and "<style>" in html
    assert not any(tag in ("script", "link", "img", "iframe") for tag, _ in page.tags)
    assert not any(
        v.startswith(("http:", "https:", "//"))
        for _, a in page.tags
        for k, v in a.items()
        if k in ("src", "href") and v
    )


def test_one_timeline_per_conversation(report):
    page, _ = report
    assert len(page.sections) == 5
    assert [s["data-affected"] for s in page.sections].count("true") == 3
    assert sum(1 for tag, a in page.tags if tag == "table" and a.get("class") == "timeline") == 5
    assert sum(len(rows) for rows in page.rows.values()) == 10 + 2 + 5 + 9 + 10  # every tool call a row


def _section(page: Page, steps: int, first_mark: tuple) -> str:
    return next(sid for sid, rows in page.rows.items() if len(rows) == steps and page.marks[sid][:1] == [first_mark])


def test_repeats_highlighted_and_actions_marked_where_they_fire(report):
    page, _ = report
    support = _section(page, 10, (3, "warn", "no_progress"))
    rows = page.rows[support]
    assert [r["repeat"] for r in rows] == list(range(1, 11))
    assert "repeat" not in rows[0]["classes"] and all("repeat" in r["classes"] for r in rows[1:])
    marks = page.marks[support]
    # The model asked for the vetoed call again right after: its re-asks end the run at step 5,
    # where the timeline stops too (summary and timeline agree).
    assert (5, "reject", "no_progress") in marks and (5, "terminate", "no_progress") in marks
    assert not [m for m in marks if m[0] > 5]
    assert "fires-warn" in rows[2]["classes"] and "fires-terminate" in rows[4]["classes"]
    # What follows the stop point (the first vetoed call, step 5) is shown as not having happened.
    assert all("after-stop" in r["classes"] for r in rows[5:]) and "after-stop" not in rows[4]["classes"]


def test_healthy_conversations_have_no_marks(report):
    page, _ = report
    healthy = [s["id"] for s in page.sections if s["data-affected"] == "false"]
    assert len(healthy) == 2 and not any(page.marks[sid] for sid in healthy)


def test_totals_with_tokens_and_cost_saved(report):
    page, html = report
    assert page.stats["conversations"] == "5" and page.stats["affected"] == "3"
    assert (page.stats["warn"], page.stats["reject"], page.stats["terminate"]) == ("3", "3", "2")
    assert int(page.stats["tokens saved"].replace(",", "")) > 0
    assert page.stats["cost saved"].startswith("$") and float(page.stats["cost saved"][1:]) > 0
    # The research agent's model has no price: estimated from characters, and the page says so.
    assert "acme-coder-7b" in html and "characters / 4" in html


def test_summary_and_timeline_agree_on_where_the_run_stops(report):
    _, html = report
    index, *sections = html.split('<section class="conversation ')
    rows = re.findall(r"<tr class=\"(?:affected|healthy)\">(.*?)</tr>", index)
    assert len(rows) == len(sections) == 5
    for row, section in zip(rows, sections):
        steps = re.findall(r"<td>(?:<span class=\"pill pill-\w+\">step (\d+)</span>|-)</td>", row)[-3:]
        terminate, reject = steps[2], steps[1]
        stop = re.search(r"stop-line.*?step (\d+)(.*?)</td>", section)
        if terminate:  # the summary's terminate step is where the timeline says the run stopped
            assert stop and stop.group(1) == terminate and "stopped at step" in stop.group(0)
        elif reject:  # a veto the model moved on from: the timeline says so, not "stopped"
            assert stop and stop.group(1) == reject and "vetoed" in stop.group(0)
        else:
            assert stop is None
        marked = [
            int(s) for s in re.findall(r"data-step=\"(\d+)\"[^>]*><td[^>]*>\d+</td>(?:(?!</tr>).)*mark-", section)
        ]
        assert not stop or all(s <= int(stop.group(1)) for s in marked)  # nothing marked after the stop


def test_with_labels_the_scores_and_the_disturbed_healthy_runs_come_first(tmp_path):
    sessions = Path(__file__).parents[1] / "fixtures" / "sessions"
    path = tmp_path / "labelled.html"
    labels = str(sessions / "labels.csv")
    assert (
        run_replay([str(sessions)], "default", html=str(path), labels=labels, out=io.StringIO(), err=io.StringIO()) == 0
    )
    html = path.read_text(encoding="utf-8")
    stopped = re.search(r'<tr data-label="loop"><td>loop</td>.*?data-col="stopped">(\d+)<', html)
    assert stopped and stopped.group(1) == "5"
    assert "No run labelled healthy would have been warned or stopped." in html
    assert html.index('class="scores"') < html.index('class="index"') < html.index('class="conversation')
    assert html.count('class="badge label-loop"') == 5


def test_over_two_hundred_runs_only_the_ones_to_read_get_a_timeline():
    from gateway.replay.model import Mark, Result, Row
    from gateway.replay.report_html import ALL_TIMELINES, render_html

    def result(n: int, acted: bool = False, label: str | None = None) -> Result:
        row = Row(1, 1, "read_file", "{}", "x", 1, [Mark("warn", "no_progress", "request", 3, "")] if acted else [])
        found = Result(f"run-{n}.jsonl", None, 3, 1, [row], label=label)
        if acted:
            found.first = {"warn": (1, "no_progress")}
        return found

    results = [result(n) for n in range(ALL_TIMELINES)] + [result(900, acted=True), result(901, label="loop")]
    page = render_html(results, policy="p", sources=["x"], unknown_models=[], generated="now")
    shown = re.findall(r'<section class="conversation [a-z]+" id="conv-\d+"[^>]*>\s*<h2>([^ <]+)', page)
    assert sorted(shown) == ["run-900.jsonl", "run-901.jsonl"]
    assert f"{ALL_TIMELINES} runs the policy left alone and not labelled a loop have no timeline" in page
    index = page.split('<section class="index">')[1].split("</section>")[0]
    assert index.count("<tr class=") == ALL_TIMELINES + 2  # every run has its line in the index
