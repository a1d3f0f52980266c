"""Errors a user can cause and fix.

A `UserError` carries one line that names the fix. Command-line entry points catch it, print
`error: <line>` to stderr and exit with status 2, with no traceback.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

EXIT_USER_ERROR = 2


class UserError(Exception):
    """An error the user can fix (bad parameter, missing data, absent device)."""


@contextmanager
def user_errors_exit():
    """Turn a `UserError` (or Ctrl-C) into one line on stderr and exit status 2."""
    try:
        yield
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        print("error: interrupted; earlier complete results are untouched", file=sys.stderr)
        raise SystemExit(130) from None
