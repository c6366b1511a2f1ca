"""Loops real agents make, and the healthy runs that look like them, under the shipped default
policy: interleaved repeats, the same failure across user turns, reworded requests answered the
same, retries with variation. Each loop must be caught (at least a warning); no healthy
look-alike may ever be rejected or terminated, and most must stay completely quiet."""

from __future__ import annotations

import json

import pytest
from runs import first, judged, strongest

from gateway.policy.actions import Action

LOCKED = "Error: order #W2378156 cannot be modified: order is locked by a pending exchange"


def think(i: int) -> tuple:
    return ("think", {"thought": f"The update failed ({i}). Maybe it works if I try once more, step {i}."}, "")


def update(result: str = LOCKED) -> tuple:
    return (
        "modify_pending_order_items",
        {
            "order_id": "#W2378156",
            "item_ids": ["1008292230"],
            "new_item_ids": ["1008292231"],
            "payment_method_id": "gift_card_1",
        },
        result,
    )


# --- 1. interleaved loops -------------------------------------------------------------------


def interleaved_think():
    return ["change the item in my order", *[s for i in range(9) for s in (update(), think(i))]]


def interleaved_todo():
    todos = lambda i: {"todos": [{"content": f"fix build attempt {i}", "status": "in_progress"}]}  # noqa: E731
    steps = []
    for i in range(9):
        steps += [
            ("Bash", {"command": "npm run build"}, 'npm ERR! Missing script: "build"\nexit code 1'),
            ("TodoWrite", todos(i), "Todos have been modified successfully."),
        ]
    return ["build the app", *steps]


def interleaved_unnamed_reasoning_tool():
    # No known name: neutral by shape (free text in, the text echoed back).
    steps = []
    for i in range(9):
        note = f"Attempt {i}: the flag service returned the same error again, I will retry the request now."
        steps += [
            ("submit_flag", {"flag": "CTF{n0t_th3_fl4g}"}, "Incorrect flag."),
            ("journal", {"entry": note}, f"Saved: {note}"),
        ]
    return ["find and submit the flag", *steps]


def interleaved_reads():
    steps = []
    for i in range(9):
        steps += [
            update(),
            ("get_user_details", {"user_id": f"user_{i}"}, json.dumps({"user_id": f"user_{i}", "orders": [i]})),
        ]
    return ["change the item in my order", *steps]


def interleaved_volatile_errors():
    steps = []
    for i in range(9):
        steps += [
            (
                "deploy",
                {"env": "staging"},
                f"Error: deploy rejected (request_id 7f3a9c1e2b4d5f60718293a4b5c6d7e{i}) at 2025-03-03T10:0{i}:00Z",
            ),
            ("log", {"message": f"deploy attempt {i} failed, retrying"}, "logged"),
        ]
    return ["deploy to staging", *steps]


def ctf_retry_with_shell_reads():
    looks = [
        "cat notes.txt",
        "ls -la /srv/www",
        "grep -rn admin /srv/www/config",
        "cat /srv/www/.htaccess",
        "ls /tmp",
        "head -20 /var/log/nginx/error.log",
        "strings ./client | grep key",
        "git log --oneline -3",
        "cat README.md",
    ]
    steps = []
    for i, look in enumerate(looks):
        steps += [
            ("bash", {"command": "curl -s http://target:8080/admin/flag"}, "<h1>403 Forbidden</h1>"),
            ("bash", {"command": look}, f"output of {look}: {i}"),
        ]
    return ["get the flag from the admin page", *steps]


LOOPS = {
    "the same request, reading files with the shell between": ctf_retry_with_shell_reads,
    "failing write, think between": interleaved_think,
    "failing build, todo list between": interleaved_todo,
    "wrong flag, a journaling tool between (neutral by shape)": interleaved_unnamed_reasoning_tool,
    "failing write, unrelated reads between": interleaved_reads,
    "failing deploy with volatile ids, log between": interleaved_volatile_errors,
}


@pytest.mark.parametrize("script", LOOPS.values(), ids=LOOPS.keys())
def test_interleaved_loops_are_warned_by_the_third_repeat(script):
    reached = first(script(), "warn")
    assert reached is not None and reached[0] <= 6  # the 3rd repeat, counting the calls between


@pytest.mark.parametrize("script", [interleaved_think, interleaved_todo, interleaved_volatile_errors])
def test_only_neutral_calls_between_is_full_evidence(script):
    assert strongest(script()) >= Action.REJECT


@pytest.mark.parametrize("script", [interleaved_reads, interleaved_unnamed_reasoning_tool, ctf_retry_with_shell_reads])
def test_reads_or_calls_neutral_by_shape_only_between_are_weaker_evidence_and_only_warn(script):
    assert strongest(script()) == Action.WARN


# --- 1b. the same failure after each different fix ------------------------------------------
# A fix that leaves the failure exactly as it was (normalised: line numbers, paths, ids and
# timestamps aside) made no difference: each run is another attempt at one failing thing.


def edits_between_same_failure():
    steps = []
    for i in range(6):
        steps += [
            ("think", {"thought": f"Let me try a different fix, number {i}, for the failing test."}, ""),
            (
                "Edit",
                {"file_path": "/repo/app/io.py", "old_string": f"attempt {i}", "new_string": f"attempt {i + 1}"},
                "The file /repo/app/io.py has been updated.",
            ),
            (
                "Bash",
                {"command": "python -m pytest -q tests/test_io.py"},
                "FAILED tests/test_io.py::test_roundtrip - OSError\n1 failed in 0.4s\nexit code 1",
            ),
        ]
    return ["fix the failing test", *steps]


def thinking_through_pages():
    steps = []
    for page in range(10):
        steps += [
            ("think", {"thought": f"Page {page} looked fine, now the next page of the file."}, ""),
            (
                "Read",
                {"file_path": "/repo/src/big.py", "offset": page * 200, "limit": 200},
                "\n".join(f"{page * 200 + n}\tline {page}-{n}" for n in range(20)),
            ),
        ]
    return ["review big.py", *steps]


def waiting_while_reading():
    # A custom status tool answers the same while the agent reads other files: never blocked.
    steps = []
    for i in range(10):
        steps += [
            ("get_job_status", {"job_id": "build-1"}, '{"state": "RUNNING"}'),
            ("read_file", {"path": f"src/module_{i}.py"}, f"def f{i}():\n    return {i}\n" * 5),
        ]
    return ["wait for the build and review the code meanwhile", *steps]


def planning_a_migration():
    steps = []
    for i in range(8):
        steps += [
            (
                "update_plan",
                {"plan": f"Step {i} of the migration is done, next migrate table {i + 1}."},
                "Plan updated",
            ),
            ("run_sql", {"sql": f"ALTER TABLE t{i} ADD COLUMN tenant_id INT"}, f"ALTER TABLE t{i}: ok"),
        ]
    return ["migrate all tables", *steps]


def delegated_fixes_between_same_failure():
    # An orchestrator: a coding sub-agent gets a different fix to make each time and answers
    # "Done." (free text in, a trivial result out: neutral by shape), the test still fails.
    steps = []
    for i in range(8):
        steps += [
            (
                "delegate",
                {"instruction": f"Change the retry limit in the client to {i + 3} and the timeout accordingly."},
                "Done.",
            ),
            ("run_check", {"suite": "integration"}, "Error: 1 of 12 checks failed: test_sync_timeout"),
        ]
    return ["make the integration checks pass", *steps]


def shell_edits_between_same_failure():
    steps = []
    for i in range(6):
        steps += [
            ("bash", {"command": f"sed -i 's/retries = {i}/retries = {i + 1}/' client.py"}, ""),
            ("bash", {"command": "cat client.py"}, f"retries = {i + 1}\ntimeout = 5"),
            ("bash", {"command": "python -m pytest -q"}, "1 failed, 11 passed in 0.8s\nexit code 1"),
        ]
    return ["make the tests pass", *steps]


def exploring_rereads():
    # Coming back to the same unchanged file between reads of others is exploring, not a loop.
    steps = []
    for i in range(8):
        steps += [
            ("Read", {"file_path": "/repo/src/core.py"}, "class Core:\n    def run(self): ...\n" * 10),
            ("Read", {"file_path": f"/repo/src/plugin_{i}.py"}, f"from core import Core\nclass Plugin{i}(Core): ...\n"),
        ]
    return ["explain how plugins use core.py", *steps]


def test_the_same_failure_after_each_different_fix_is_warned_at_the_third_and_refused_at_the_sixth():
    script = edits_between_same_failure()
    assert first(script, "warn") == (9, "target_failure")  # the 3rd identical failure
    assert first(script, "reject") == (18, "target_failure")  # the 6th


@pytest.mark.parametrize("script", [shell_edits_between_same_failure, delegated_fixes_between_same_failure])
def test_the_same_failure_after_fixes_with_a_look_or_a_delegation_between_only_warns(script):
    """A read of the changed file, or a fix delegated to a sub-agent answering "Done.", might have
    been the agent finding something out: the same failure again is warned, never refused."""
    assert strongest(script()) == Action.WARN


# --- healthy look-alikes of 1 ---------------------------------------------------------------


HEALTHY = {
    "re-reading one file between reads of others": exploring_rereads,
    "paginated reads with think between": thinking_through_pages,
    "a custom status poll while reading files": waiting_while_reading,
    "a plan updated between different migrations": planning_a_migration,
}


@pytest.mark.parametrize("script", HEALTHY.values(), ids=HEALTHY.keys())
def test_healthy_interleaving_is_never_blocked(script):
    assert strongest(script()) <= Action.WARN


@pytest.mark.parametrize(
    "script",
    [thinking_through_pages, planning_a_migration, exploring_rereads],
)
def test_healthy_interleaving_stays_quiet(script):
    assert strongest(script()) == Action.PASS


# --- 2. the same failure across user turns --------------------------------------------------


def across_turns(turns: int, between=()):
    script = ["please exchange the item in my order"]
    for t in range(turns):
        script += [*between, update()]
        script.append("please try again" if t % 2 == 0 else "it still doesn't work, try again please")
    return script[:-1]


def test_one_failure_per_user_turn_is_warned_at_the_third():
    assert first(across_turns(2), "warn") is None
    assert first(across_turns(3), "warn") == (3, "cross_turn")


def test_across_turns_the_ladder_needs_more_evidence():
    assert strongest(across_turns(5)) == Action.WARN
    assert first(across_turns(6), "reject") == (6, "cross_turn")
    assert first(across_turns(10), "terminate") == (10, "cross_turn")


def test_across_turns_with_reads_and_volatile_errors():
    lookup = ("get_order_details", {"order_id": "#W2378156"}, '{"status": "pending", "items": 3}')
    script = ["please exchange the item"]
    for t in range(4):
        script += [
            lookup,
            (
                "exchange_items",
                {"order_id": "#W2378156"},
                f"Error: upstream unavailable (request_id 9c1e2b4d5f607182{t:04d}93a4b5c6d7e8)",
            ),
            "try again",
        ]
    assert first(script[:-1], "warn") == (6, "cross_turn")


def test_the_retried_proposal_is_judged_across_turns_too():
    # On the response path the 6th attempt is refused before it runs.
    phases = judged(across_turns(6))
    assert phases[-2] == ("response", "reject", "cross_turn")


def healthy_corrected_ids():
    script = ["cancel my order"]
    for i in range(5):
        script += [("cancel_order", {"order_id": f"#W00{i}"}, "Error: order not found"), f"sorry, it is #W00{i + 1}"]
    return script


def healthy_retry_that_works():
    return [
        "cancel my order",
        update(),
        "please try again",
        update(),
        "try once more",
        update("Order updated."),
        "thanks, and again for the other one",
        update(),
    ]


def healthy_different_errors():
    errors = [
        "Error: service unavailable",
        "Error: payment method expired",
        "Error: item out of stock",
        "Error: order already shipped",
    ]
    script = ["exchange my item"]
    for e in errors:
        script += [update(e), "try again"]
    return script[:-1]


def healthy_same_read_every_turn():
    read = ("get_order_details", {"order_id": "#W1"}, '{"status": "delivered"}')
    return ["where is my order?", read, "and now?", read, "what about now?", read, "now?", read, "and now?", read]


TURN_HEALTHY = {
    "the user corrects the id each turn": healthy_corrected_ids,
    "a retry the user asked for works": healthy_retry_that_works,
    "a different error each turn": healthy_different_errors,
    "the same successful read every turn": healthy_same_read_every_turn,
}


@pytest.mark.parametrize("script", TURN_HEALTHY.values(), ids=TURN_HEALTHY.keys())
def test_healthy_multi_turn_runs_stay_quiet(script):
    assert strongest(script()) == Action.PASS


# --- 3. stagnation --------------------------------------------------------------------------

NOT_FOUND = (
    "I searched the company website for the refund policy for enterprise plans but could not find "
    "a page that describes it. The pricing page and the FAQ do not mention refunds for enterprise customers."
)


def reworded_subagent():
    asks = [
        "Search for the refund policy for enterprise plans",
        "Please look up the refund policy for enterprise plans again",
        "Find the refund policy for enterprise plans on the website",
        "Check the website for the enterprise plans refund policy",
    ]
    answers = [
        NOT_FOUND,
        NOT_FOUND.replace("could not find", "was unable to find"),
        NOT_FOUND.replace("The pricing page", "The pricing page I checked"),
        NOT_FOUND.replace("do not mention", "never mention"),
    ]
    return [
        "what is the enterprise refund policy?",
        *[("research_agent", {"task": a}, r) for a, r in zip(asks, answers)],
    ]


def reworded_with_thinking():
    script = reworded_subagent()
    out = [script[0]]
    for i, step in enumerate(script[1:]):
        out += [
            step,
            ("think", {"thought": f"The researcher did not find it, attempt {i}, let me ask differently."}, ""),
        ]
    return out


def reworded_search_queries():
    hits = (
        "1. Acme pricing - acme.com/pricing\n2. Acme FAQ - acme.com/faq\n3. Acme blog: our plans - acme.com/blog/plans"
    )
    queries = [
        "acme enterprise refund policy",
        "acme refund policy enterprise plan",
        "refund policy acme enterprise plans",
    ]
    return ["find acme's refund policy", *[("web_search", {"query": q}, f"Results for {q}:\n{hits}") for q in queries]]


STAGNANT = {
    "a sub-agent asked the same thing reworded": reworded_subagent,
    "... with think calls between": reworded_with_thinking,
    "reordered search queries, the same hits": reworded_search_queries,
}


@pytest.mark.parametrize("script", STAGNANT.values(), ids=STAGNANT.keys())
def test_stagnation_is_warned_and_never_more(script):
    assert first(script(), "warn") is not None
    assert strongest(script()) == Action.WARN


def subagent_making_progress():
    return [
        "research the enterprise plan",
        ("research_agent", {"task": "Search for the refund policy for enterprise plans"}, NOT_FOUND),
        (
            "research_agent",
            {"task": "Search for the refund policy in the enterprise terms of service PDF"},
            "The terms of service (section 9.2) say enterprise customers may cancel within 30 days for a pro-rated refund.",
        ),
        (
            "research_agent",
            {"task": "Search for the cancellation notice period for enterprise plans"},
            "Section 9.4: cancellation requires 60 days written notice; refunds are issued within 14 business days.",
        ),
    ]


def subagent_different_topics():
    topics = ["pricing of the team plan", "pricing of the business plan", "pricing of the enterprise plan"]
    prices = [
        "$10 per user per month, billed yearly",
        "$25 per user per month with SSO included",
        "custom pricing; contact sales for a quote, minimum 100 seats",
    ]
    return [
        "compare the plans",
        *[("research_agent", {"task": f"Find the {t}"}, f"The {t} is {p}.") for t, p in zip(topics, prices)],
    ]


def status_report_counter():
    return [
        "watch the queue",
        *[
            ("queue_status", {"queue": "emails"}, f"Queue emails: {100 - i * 7} messages pending, 4 workers busy")
            for i in range(12)
        ],
    ]


@pytest.mark.parametrize("script", [subagent_making_progress, subagent_different_topics, status_report_counter])
def test_stagnation_look_alikes_stay_quiet(script):
    assert strongest(script()) == Action.PASS


# --- 6. retry with variation ----------------------------------------------------------------


def payment_alternatives():
    methods = [
        ("credit_card_4421", "Error: card declined by issuer"),
        ("paypal_1093", "Error: PayPal account is not linked to this user"),
        ("gift_card_7730", "Error: gift card balance $12.00 is insufficient"),
    ]
    return [
        "pay for my order",
        *[("pay_order", {"order_id": "#W9", "payment_method_id": m, "amount": 129.5}, e) for m, e in methods],
    ]


def id_guessing_with_different_errors():
    return [
        "find my reservation",
        *[
            ("get_reservation", {"reservation_id": r}, e)
            for r, e in [
                ("ABC123", "Error: reservation ABC123 belongs to another user"),
                ("ABC124", "Error: reservation ABC124 was cancelled"),
                ("ABC125", "Error: reservation ABC125 not found"),
            ]
        ],
    ]


def amounts_tried():
    return [
        "refund what you can",
        *[
            ("refund", {"order_id": "#W9", "amount": a}, e)
            for a, e in [
                (100, "Error: amount exceeds the refundable balance of 80"),
                (80, "Error: refunds above 50 need a manager"),
                (50, "Refund of 50 issued."),
            ]
        ],
    ]


@pytest.mark.parametrize("script", [payment_alternatives, id_guessing_with_different_errors, amounts_tried])
def test_retry_with_variation_stays_quiet(script):
    assert strongest(script()) == Action.PASS


def test_the_same_value_failing_the_same_way_is_still_a_loop():
    script = [
        "pay",
        *[("pay_order", {"order_id": "#W9", "payment_method_id": "credit_card_4421"}, "Error: card declined by issuer")]
        * 3,
    ]
    assert first(script, "warn") == (3, "no_progress")
