import logging

from flashinfer_bench.timing import notices


def test_warn_once_logs_once_but_collects_every_time(monkeypatch, caplog):
    monkeypatch.setattr(notices, "_already_logged", set())
    caplog.set_level(logging.WARNING, logger=notices.LOGGER_NAME)
    a, b = [], []
    notices.warn_once("only once", a)
    notices.warn_once("only once", b)
    notices.warn("every time", a)
    notices.warn("every time")
    assert [r.getMessage() for r in caplog.records] == ["only once", "every time", "every time"]
    assert a == ["only once", "every time"] and b == ["only once"]
