"""Agent runs that loop through variation, and the healthy runs shaped like them, as scripts for
``runs.judged`` (see runs.py). Shared by the detector tests and the end-to-end tests."""

from __future__ import annotations

import json
import uuid

# --- results as the agents' harnesses write them ------------------------------------------------


def codex(output: str, n: int, code: int = 0) -> str:
    """Codex CLI's exec_command output: a random chunk id, the wall time, the exit code and a
    token count around the command's own output."""
    return (
        f"Chunk ID: {(n * 7919 + 0x3F2A1B) % 0xFFFFFF:06x}\nWall time: 0.{n % 10}0{n % 7}1 seconds\n"
        f"Process exited with code {code}\nOriginal token count: {len(output) // 4 + n % 3}\nOutput:\n{output}"
    )


def openhands_refusal(old: str, path: str = "/workspace/app/models.py") -> str:
    return f"ERROR:\nNo replacement was performed, old_str `{old}` did not appear verbatim in {path}."


def swe_agent_refusal(code: str, n: int) -> str:
    window = "\n".join(f"{40 + k}:    {line}" for k, line in enumerate(code.splitlines()))
    return (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and "
        "then retry editing the file.\n\nERRORS:\n"
        f"- E999 IndentationError: unexpected indent\n\nThis is how your edit would have looked if applied\n"
        f"-------------------------------------------------\n[File: /repo/src/parser.py (212 lines total)]\n"
        f"({38 + n} more lines above)\n{window}\n(160 more lines below)\n"
        "-------------------------------------------------\n\nYour changes have NOT been applied. "
        "Please fix your edit command and try again."
    )


# --- class 2: failures that read as success -------------------------------------------------------


def shell_exit_code_with_think():
    steps = []
    for i in range(9):
        steps += [
            ("shell", {"command": "npm test"}, "> app@1.0.0 test\n> jest\n\n1 test suite failed\nExit code: 1"),
            ("think", {"thought": f"The tests fail ({i}); let me run them again to be sure."}, ""),
        ]
    return ["make the tests pass", *steps]


def codex_failing_command():
    return [
        "build it",
        *[("exec_command", {"cmd": "make build"}, codex("make: *** [build] Error 2", i, code=2)) for i in range(9)],
    ]


def refused_edits_between_test_runs():
    # Each refused edit quotes its own attempt: new text, but nothing changed in the repository.
    steps = []
    for i in range(9):
        old = f"    return self.value + {i}"
        steps += [
            (
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/app/models.py",
                    "old_str": old,
                    "new_str": "    return self.value",
                },
                openhands_refusal(old),
            ),
            (
                "execute_bash",
                {"command": "python -m pytest tests/test_models.py -q"},
                "F\n1 failed in 0.21s\nexit code 1",
            ),
        ]
    return ["fix the failing model test", *steps]


# --- class 3: persistent failure on one target ----------------------------------------------------


def openhands_edit_refused(between_reads: bool = False):
    steps = []
    for i in range(11):
        old = [
            "def total(self):\n    return sum(self.items)",
            "def total(self):\\n    return sum(self.items)",
            "",
            "  def total(self):",
            "def total( self ):",
        ][i % 5] + " " * (i // 5)
        steps.append(
            (
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/app/models.py",
                    "old_str": old,
                    "new_str": "def total(self):\n    return sum(i.price for i in self.items)",
                },
                openhands_refusal(old),
            )
        )
        if between_reads:
            steps.append(
                (
                    "str_replace_editor",
                    {"command": "view", "path": f"/workspace/app/module_{i}.py"},
                    f"Here's the result of running `cat -n` on /workspace/app/module_{i}.py:\n     1\timport os\n     2\tX = {i}\n",
                )
            )
    return ["fix the total", *steps]


def swe_agent_syntax_errors():
    steps = []
    for i in range(9):
        code = f"def parse(self, text):\n  {'  ' * (i % 3)}tokens = text.split()\n    return tokens[{i}:]"
        steps.append(("edit", {"start": 40, "end": 42, "replacement": code}, swe_agent_refusal(code, i)))
    return [
        "fix the parser",
        *[(tool, {**args, "path": "/repo/src/parser.py"}, result) for tool, args, result in steps],
    ]


def claude_code_edit_not_found():
    steps = []
    for i in range(9):
        old = f"timeout = {['30', '30.0', ' 30', '30  # seconds'][i % 4]}{' ' * (i // 4)}"
        steps += [
            (
                "Edit",
                {"file_path": "/repo/client.py", "old_string": old, "new_string": "timeout = 60"},
                f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>",
            ),
            (
                "Grep",
                {"pattern": f"timeout{'.*' * (i % 3)}", "path": f"/repo/src{i}"},
                f"/repo/src{i}/x.py:3:timeout=5",
            ),
        ]
    return ["raise the client timeout", *steps]


def url_with_varying_headers():
    agents = [
        "curl/8.5",
        "Mozilla/5.0",
        "python-requests/2.32",
        "Wget/1.21",
        "HTTPie/3.2",
        "Go-http-client/1.1",
        "okhttp/4.12",
        "axios/1.7",
        "node-fetch/3",
    ]
    return [
        "download the report",
        *[
            (
                "fetch",
                {"url": "https://reports.example.com/q3.pdf", "headers": {"User-Agent": a}},
                "HTTP/1.1 403 Forbidden",
            )
            for a in agents
        ],
    ]


def npm_flags():
    flags = [
        "--legacy-peer-deps",
        "--force",
        "--no-audit",
        "--prefer-offline",
        "--no-fund",
        "--omit=dev",
        "--ignore-scripts",
        "--no-package-lock",
        "--strict-peer-deps",
    ]
    return [
        "install the dependencies",
        *[
            (
                "bash",
                {"command": f"cd /app && npm install {f}"},
                "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
            )
            for f in flags
        ],
    ]


def click_missing_element():
    return [
        "submit the order",
        *[
            (
                "browser_click",
                {"element": "Place order button", "ref": f"e{40 + 3 * i}"},
                "Error: Element is not visible or not attached to the DOM",
            )
            for i in range(9)
        ],
    ]


# --- class 5: volatile values inside arguments ----------------------------------------------------


def uuid_request_ids():
    return [
        "read a.txt",
        *[
            ("read_file", {"path": "a.txt", "request_id": str(uuid.UUID(int=i * 7919 + 12345))}, "hello from a.txt")
            for i in range(9)
        ],
    ]


def hex_nonces():
    return [
        "check the balance",
        *[
            (
                "get_balance",
                {"account": "acct-7", "nonce": f"{(i + 1) * 0x9E3779B97F4A7C15 % 2**64:016x}"},
                '{"balance": 120.5, "currency": "EUR"}',
            )
            for i in range(9)
        ],
    ]


def timestamps_in_args():
    return [
        "what is new?",
        *[
            (
                "list_events",
                {"calendar": "team", "since": "2026-12-01T00:00:00Z", "sent_at": f"2026-12-02T05:{i:02d}:13Z"},
                "No new events.",
            )
            for i in range(9)
        ],
    ]


def base64_tokens():
    tokens = [
        "dGhpcyBpcyBhIHRva2VuMTIzNDU2",
        "QmFzZTY0VG9rZW5Ob25jZTk4NzY1",
        "Wm1GclpWUnZhMlZ1TlRVME16SXg",
        "YW5vdGhlclRva2VuNjY3Nzg4OTk5",
        "TVRJek5EVTJOemc1TUdGaVkyUmw",
        "c29tZVJhbmRvbVN0cmluZzQ0NTU2",
        "ckV0clkxMjM0NTY3ODkwYWJjZGVm",
        "Tm9uY2VWYWx1ZTEyMzEyMzEyMzEy",
        "bGFzdFRva2VuOTk5ODg4Nzc3NjY2",
    ]
    return [
        "get the profile",
        *[("get_profile", {"user": "u-17", "signature": t}, '{"name": "Ada", "plan": "pro"}') for t in tokens],
    ]


# --- class 6: reworded requests to sub-agents -----------------------------------------------------

REWORDED = [
    "Find the refund policy for enterprise customers on the Acme website",
    "Look up Acme's enterprise refund policy on their site",
    "Go to the Acme site and locate the refund terms for enterprise plans",
    "Search Acme's website for how refunds work for enterprise accounts",
    "Check the Acme website for the enterprise refund policy page",
    "Navigate to Acme's site and find the policy on enterprise refunds",
]
TRANSCRIPTS = [
    "The footer has a link labelled Legal which lists terms of service but nothing about refunds.",
    "I scrolled through the page; the legal section covers terms of use only, refunds are not mentioned.",
    "Only general terms appeared there. No refund information for enterprise plans was visible.",
    "That page shows the terms of service. I could not see anything on refunds for enterprise customers.",
    "There is a terms page under Legal but it says nothing regarding refunds.",
    "Legal links to the terms of service; no refund details were present.",
]


def reworded_web_agent(action: str = "I clicked 'Legal' in the footer of https://acme.example.com."):
    return [
        "what is acme's enterprise refund policy?",
        *[("web_agent", {"task": task}, f"{action}\n{answer}") for task, answer in zip(REWORDED, TRANSCRIPTS)],
    ]


def reworded_with_plans():
    out = ["what is acme's enterprise refund policy?"]
    for i, step in enumerate(reworded_web_agent()[1:]):
        out += [
            ("update_plan", {"plan": f"Attempt {i}: ask the web agent for the refund policy"}, "Plan updated"),
            step,
        ]
    return out


# --- class 7: volatile lines in results -----------------------------------------------------------


def codex_cat():
    return [
        "summarize a.txt",
        *[("exec_command", {"cmd": "cat a.txt"}, codex("alpha\nbeta\ngamma", i)) for i in range(30)],
    ]


def session_and_pid_lines():
    return [
        "is the server up?",
        *[
            (
                "shell",
                {"command": "./status.sh"},
                f"server pid {4100 + i * 13} running\nsession ID {9000 + i}\nchecked in {i}.{i}s\nstatus: degraded",
            )
            for i in range(9)
        ],
    ]


def random_request_tokens():
    tokens = [
        "a9Xk2Lm4Pq",
        "Z8c3Vb7Nm1",
        "q2W4e6R8t0",
        "Lk9J8h7G6f",
        "Pp3Oo5Ii7U",
        "m1N2b3V4c5",
        "Xx7Yy8Zz9A",
        "r5T6y7U8i9",
        "K1j2H3g4F5",
    ]
    return [
        "fetch the config",
        *[("fetch_config", {"service": "billing"}, f"trace={t}\nretries: 3\ntimeout: 30") for t in tokens],
    ]


LOOPS = {
    # class 2
    "exit code written in the result, think between": (shell_exit_code_with_think, None),
    "Codex exec_command exiting 2": (codex_failing_command, None),
    "refused edits (echoing each attempt) between identical test runs": (refused_edits_between_test_runs, None),
    # class 3
    "OpenHands str_replace refused eleven times": (openhands_edit_refused, None),
    "... with views of other files between": (lambda: openhands_edit_refused(True), None),
    "SWE-agent syntax errors on one file": (swe_agent_syntax_errors, None),
    "Claude Code Edit, string not found, greps between": (claude_code_edit_not_found, None),
    "one URL, another User-Agent each time": (url_with_varying_headers, None),
    "npm install, another flag each time": (npm_flags, None),
    "a click on one element, a new handle each time": (click_missing_element, None),
    # class 5
    "a UUID request id in every call": (uuid_request_ids, "no_progress"),
    "a hex nonce in every call": (hex_nonces, "no_progress"),
    "a timestamp in every call": (timestamps_in_args, "no_progress"),
    "a base64 signature in every call": (base64_tokens, "no_progress"),
    # class 6
    "a web agent asked the same thing in other words, the same action line": (reworded_web_agent, "stagnation"),
    "... with plan updates between": (reworded_with_plans, "stagnation"),
    # class 7
    "Codex cat a.txt, a new chunk id each time": (codex_cat, "no_progress"),
    "pids, session ids and elapsed seconds": (session_and_pid_lines, "no_progress"),
    "a random trace token in each result": (random_request_tokens, "no_progress"),
}

# --- healthy look-alikes ------------------------------------------------------------------------


def many_files_edited():
    return [
        "rename the logger everywhere",
        *[
            (
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": f"/workspace/app/mod_{i}.py",
                    "old_str": "log = get()",
                    "new_str": "logger = get()",
                },
                f"The file /workspace/app/mod_{i}.py has been edited.",
            )
            for i in range(17)
        ],
    ]


def same_file_explored():
    steps = []
    for i in range(8):
        steps += [
            (
                "bash",
                {"command": f"sed -n '{1 + 40 * i},{40 + 40 * i}p' src/engine.py"},
                "\n".join(f"line {40 * i + k}: code {i}-{k}" for k in range(6)),
            ),
            (
                "bash",
                {"command": f"grep -n 'def ' src/engine.py | head -{10 + i}"},
                f"12:def run\n40:def step\n{80 + i}:def f{i}",
            ),
        ]
        if i % 3 == 0:
            steps.append(("Read", {"file_path": "/repo/src/engine.py"}, "import os\n\nclass Engine:\n    ...\n"))
    return ["explain the engine", *steps]


def docstrings_read_in_ranges():
    # Google-style docstrings list "ValueError: ..." entries: reading them is no failure.
    return [
        "document the errors",
        *[
            (
                "Read",
                {"file_path": "/repo/src/parse.py", "offset": 40 * i, "limit": 40},
                f'def parse_{i}(text):\n    """Parse part {i}.\n\n    Raises:\n'
                f'        ValueError: if part {i} is empty.\n        KeyError: if it names no field.\n    """',
            )
            for i in range(8)
        ],
    ]


def paginated_scrolling():
    return [
        "read the whole log",
        *[
            (
                "browser_scroll",
                {"direction": "down", "page": p},
                f"{'=' * 40} APP LOG {'=' * 40}\n" + "\n".join(f"[{p * 20 + k}] event {p}-{k}" for k in range(5)),
            )
            for p in range(12)
        ],
    ]


PRODUCTS = [
    "Acme X200 blender",
    "Bosch K5 toaster",
    "Delonghi Magnifica espresso machine",
    "Philips 3200 airfryer",
    "Smeg retro kettle",
    "Breville Barista Express",
    "Ninja Foodi grill",
    "KitchenAid Artisan mixer",
    "Tefal ActiFry",
    "Dyson V15 vacuum",
    "Miele Triflex",
    "Nespresso Vertuo",
    "Instant Pot Duo",
    "Vitamix E310",
    "Sage Oracle Touch",
    "Krups Evidence",
    "Russell Hobbs Inspire",
]


def web_agent_17_items():
    return [
        "collect the price of each product",
        *[
            (
                "web_agent",
                {"task": f"Open the product page of the {p} on shop.example.com and report its price"},
                f"I opened the product page on shop.example.com.\nThe {p} costs {99 + 13 * i}.99 EUR, in stock, ships in 2 days.",
            )
            for i, p in enumerate(PRODUCTS)
        ],
    ]


def browser_17_pages():
    template = "Shop Example | Home | Kitchen | Appliances | Deals | Account | Cart\n" * 8
    return [
        "collect prices",
        *[
            (
                "browser_navigate",
                {"url": f"https://shop.example.com/kitchen/appliances/products/{p.lower().replace(' ', '-')}"},
                f"{template}\nProduct: {p}\nPrice: {99 + 13 * i}.99 EUR\n{template}",
            )
            for i, p in enumerate(PRODUCTS)
        ],
    ]


def edit_test_cycle_changing_output():
    steps = []
    for i in range(6):
        steps += [
            (
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/app/models.py",
                    "old_str": f"v{i}",
                    "new_str": f"v{i + 1}",
                },
                "The file /workspace/app/models.py has been edited.",
            ),
            (
                "execute_bash",
                {"command": "python -m pytest -q"},
                f"{'F' * (6 - i)}{'.' * i}\n{6 - i} failed, {i} passed in 0.5s\nexit code 1",
            ),
        ]
    return ["make the tests pass", *steps]


def payment_methods():
    methods = [
        ("credit_card_4421", "Error: card declined by issuer"),
        ("paypal_1093", "Error: PayPal account is not linked"),
        ("gift_card_7730", "Error: gift card balance $12.00 is insufficient"),
        ("credit_card_9912", "Payment accepted."),
    ]
    return ["pay for my order", *[("pay_order", {"order_id": "#W9", "payment_method_id": m}, r) for m, r in methods]]


def missing_modules():
    steps = []
    for module in ["numpy", "pandas", "scipy", "matplotlib", "sklearn", "yaml"]:
        steps += [
            (
                "bash",
                {"command": "python analyze.py"},
                f'Traceback (most recent call last):\n  File "analyze.py", line 3, in <module>\n'
                f"ModuleNotFoundError: No module named '{module}'\nexit code 1",
            ),
            ("bash", {"command": f"pip install {module}"}, f"Collecting {module}\nSuccessfully installed {module}-1.0"),
        ]
    return ["run the analysis", *steps, ("bash", {"command": "python analyze.py"}, "mean=3.2 std=0.4")]


def failing_tests_one_by_one():
    tests = ["roundtrip", "unicode", "empty_file", "large_file", "permissions", "symlink", "timeout"]
    return [
        "find out why the io tests fail",
        *[
            (
                "bash",
                {"command": f"python -m pytest tests/test_io.py -q -k {t}"},
                f"F\nFAILED tests/test_io.py::test_{t} - AssertionError: {t} mismatch\n1 failed in 0.2s\nexit code 1",
            )
            for t in tests
        ],
    ]


def maze_batch():
    return [
        "solve mazes 2 to 10",
        *[
            (
                "bash",
                {"command": f"cd /app && python solve.py --maze {i}"},
                f"Error: maze {i} has no path from S to E\nexit status 1",
            )
            for i in range(2, 11)
        ],
    ]


def maze_files_batch():
    return [
        "solve the maze files",
        *[
            ("bash", {"command": f"python solve.py mazes/maze_{i}.txt"}, "no path found\nexit code 1")
            for i in range(2, 11)
        ],
    ]


def sweep_timeouts():
    settings = [(0.1, 32), (0.05, 32), (0.01, 64), (0.005, 64), (0.001, 128), (0.0005, 128), (0.0001, 256)]
    return [
        "sweep the learning rate",
        *[
            ("bash", {"command": f"timeout 600 python train.py --lr {lr} --batch {bs}"}, "Terminated\nexit code 124")
            for lr, bs in settings
        ],
    ]


def tmux_panes():
    return [
        "set up a dev layout",
        ("bash", {"command": "tmux new-session -d -s dev"}, ""),
        ("bash", {"command": "tmux split-window -h -t dev"}, ""),
        ("bash", {"command": "tmux split-window -v -t dev"}, ""),
        ("bash", {"command": "tmux split-window -v -t dev"}, ""),
        ("bash", {"command": "tmux list-panes -t dev"}, "0: [80x24]\n1: [80x12]\n2: [80x12]\n3: [80x12]"),
    ]


BANNER = "\n".join(
    [
        "*" * 60,
        "*  WELCOME TO THE CAVES OF ZORK-LIKE ADVENTURE, VERSION 2.3  *",
        "*" * 60,
        "You are in a dark cave. Water drips from the ceiling. Exits are unclear.",
    ]
    * 4
)


def game_directions():
    return [
        "find the way out",
        *[
            ("game", {"command": f"go {d}"}, f"{BANNER}\nYou cannot go {d}: a wall blocks the way.")
            for d in ("north", "east", "south", "west")
        ],
    ]


def game_directions_shell():
    return [
        "find the way out",
        *[
            ("bash", {"command": f"./adventure.sh move {d}"}, f"{BANNER}\nYou moved {d}. Nothing here.")
            for d in ("north", "east", "south", "west")
        ],
    ]


def date_and_chunks():
    return [
        "how long does it take?",
        *[("exec_command", {"cmd": "date +%s%N"}, codex(f"17330{i}8123456789{i}", i)) for i in range(6)],
    ]


def uuid_records():
    ids = [str(uuid.UUID(int=i * 104729 + 99)) for i in range(8)]
    return [
        "summarize the orders",
        *[("get_order", {"order_id": o}, json.dumps({"order": o[:8], "total": 10 + i})) for i, o in enumerate(ids)],
    ]


HEALTHY = {
    "many files edited": many_files_edited,
    "the same file read in line ranges while exploring": same_file_explored,
    "paginated scrolling": paginated_scrolling,
    "reading a file's docstrings (Raises: ValueError: ...) in ranges": docstrings_read_in_ranges,
    "a web agent visiting 17 similar pages for 17 items": web_agent_17_items,
    "a browser visiting 17 similar pages": browser_17_pages,
    "an edit/test cycle whose output changes": edit_test_cycle_changing_output,
    "a payment retried with other methods": payment_methods,
    "installing one missing module, then re-running": missing_modules,
    "a batch over ids (the same script, maze 2..10)": maze_batch,
    "running the failing tests one by one": failing_tests_one_by_one,
    "a batch over files (maze_2.txt ...)": maze_files_batch,
    "a hyper-parameter sweep timing out": sweep_timeouts,
    "tmux new-session then three split-window": tmux_panes,
    "probing four directions, a long banner each time": game_directions,
    "... through a shell script": game_directions_shell,
    "a clock read through Codex's harness": date_and_chunks,
    "records fetched by UUID": uuid_records,
}
