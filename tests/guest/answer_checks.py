"""Issue 65 item 1 in the guests: a line that names the cause of a spike names one culprit only
when it took at least half of the spike, and always gives the share. Checked for every guest on
the lines the guest's own binary printed (`rtscope run`'s `answer:` lines in campaign.log), and
on the host over the guest's database: the report's answer box and `rtscope runs explain` of
each run (`the worst spike (…) was caused by …`). A group (`4 lower-priority tasks holding the
CPU (51 % together, …)`) holds half together; a spread or mostly unexplained spike says so
without "caused by" (docs/explain.md, "The cause line").
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Callable, Iterable

# `was caused by WHAT (NN %`: the share right after what is named (a name may hold its own
# parentheses: `IRQ eth0 (irq 24) (29 %)`).
CAUSED = re.compile(r"was caused by (?P<what>.+?) \((?P<pct>\d+) %")
ANSWER = re.compile(r'id="answer".*?</ul>', re.S)
ITEM = re.compile(r"<li>(.*?)</li>", re.S)
TAG = re.compile(r"<[^>]+>")


def violations(lines: Iterable[str]) -> list[str]:
    """The lines that name a cause with less than half of its spike, or without its share."""
    bad = []
    for line in lines:
        if "was caused by" not in line:
            continue
        shares = [int(m.group("pct")) for m in CAUSED.finditer(line)]
        if not shares or min(shares) < 50:
            bad.append(line)
    return bad


def answer_lines(report_html: str) -> list[str]:
    """The report's answer box, one line per group, as text."""
    box = ANSWER.search(report_html)
    if box is None:
        return []
    return [html.unescape(TAG.sub("", li)) for li in ITEM.findall(box.group(0))]


def campaign_answers(campaign_log: str) -> list[str]:
    """`rtscope run`'s answer lines."""
    return [line for line in campaign_log.splitlines() if line.startswith("answer: ")]


def cause_lines(texts: Iterable[str]) -> list[str]:
    """The lines of `runs explain`/`runs show` that say what caused a spike."""
    return [line.strip() for text in texts for line in text.splitlines()
            if line.strip().startswith("the worst ")]


def verdict(lines: list[str]) -> tuple[bool, str]:
    """(no violation, what was read and the first offending lines)."""
    bad = violations(lines)
    caused = sum("was caused by" in line for line in lines)
    detail = f"{len(lines)} cause lines read, {caused} name a cause"
    if bad:
        detail += "; under half or without a share: " + " | ".join(line[-200:] for line in bad[:3])
    return not bad, detail


def check(c, kernel: str, campaign_log: bytes | None, report_html: Path,
          explain: Callable[[int], str], runs: list[dict]) -> None:
    """The function check of a guest (`c`: a checks.Checker): its `rtscope run` answer lines,
    the host's report of its database and `runs explain` of each of its runs (`explain(id)`:
    the text, empty for a run not explained)."""
    page = report_html.read_text(errors="replace") if report_html.exists() else ""
    lines = (campaign_answers((campaign_log or b"").decode(errors="replace"))
             + answer_lines(page)
             + cause_lines(explain(int(x["id"])) for x in runs))
    ok, detail = verdict(lines)
    c.expect(kernel, "no cause line names a culprit under half of its spike, or one without "
             "its share (issue 65)", ok, detail)
