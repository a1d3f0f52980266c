"""common.lifetime: releases registered once, run last-first at `end`, and safe to run again at exit."""
import atexit

from common import lifetime


def test_releases_run_last_registered_first_once_each(monkeypatch):
    monkeypatch.setattr(lifetime, "_RELEASES", [])
    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    ran = []

    def first():
        ran.append("first")

    @lifetime.at_end
    def second():
        ran.append("second")

    lifetime.at_end(first)
    lifetime.at_end(first)                  # a second registration changes nothing
    assert registered == [second, first]    # each also at exit, once
    lifetime.end()
    assert ran == ["first", "second"]
    lifetime.end()                          # ends again (the runner's last cell, then the exit)
    assert ran == ["first", "second"] * 2
