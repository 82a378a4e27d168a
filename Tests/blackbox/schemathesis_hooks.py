"""schemathesis hooks for the negative run: a refused request must change nothing.

Loaded through SCHEMATHESIS_HOOKS; OBS_URL is the server under test, OBS_TOKEN its token.
Cases run one at a time (--workers 1), so the revision read before a call belongs to that call.
"""

import json
import os
import urllib.request

import schemathesis

BASE = os.environ["OBS_URL"]
_before = {"revision": None}


def _revision():
    request = urllib.request.Request(f"{BASE}/v1/stats", headers={"Authorization": f"Bearer {os.environ['OBS_TOKEN']}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)["revision"]


@schemathesis.hook
def before_call(context, case, kwargs):
    _before["revision"] = _revision()


@schemathesis.check
def refusal_is_a_json_error_and_changes_nothing(ctx, response, case):
    """A 4xx answer carries the contract's error body and takes no revision."""
    if response.status_code < 400:
        return None
    if response.status_code in (414, 431):
        # A request line or headers over 8 KiB: libmicrohttpd refuses it itself, with its own
        # short HTML body, before any handler runs (docs/API.md: the one non-JSON error).
        code = str(response.status_code)
    else:
        try:
            body = json.loads(response.content)
        except ValueError:
            raise AssertionError(f"a {response.status_code} answer that is not JSON: {response.content[:200]!r}")
        code = body.get("error", {}).get("code") if isinstance(body, dict) else None
        if not isinstance(code, str):
            raise AssertionError(f"a {response.status_code} answer without error.code: {body}")
    after = _revision()
    before = _before["revision"]
    if before is not None and after != before:
        made = _made_between(before, after)
        # A lease running out meanwhile (observers of 1 s are created by other cases) is the
        # server's own change, not the refused request's.
        if not made or any(event["data"].get("reason") != "expired" for event in made):
            raise AssertionError(f"a refused request ({response.status_code} {code}) took revision {after}: {made}")
    return None


def _made_between(before, after):
    """The admin stream's events of revisions after `before` up to `after` (a poll of its buffer)."""
    request = urllib.request.Request(
        f"{BASE}/v1/events?after=0&limit=1000",
        headers={"Authorization": f"Bearer {os.environ['OBS_TOKEN']}", "Accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        events = json.load(answer)["events"]
    return [
        event
        for event in events
        if isinstance(event.get("data"), dict) and before < event["data"].get("revision", before) <= after
    ]
