"""The collaborators ``Server`` is composed of, driven without trio: the ``Pipeline`` (its
middleware chain and the dispatcher built from it) and the ``Identity`` (its ``serverInfo``).
What they do for a served server is tested through it (tests/middleware, tests/composition)."""

from __future__ import annotations

import pytest

from runtime import Server
from runtime._pipeline import Pipeline
from runtime.core import Dispatcher
from runtime.middleware import Middleware


def _pipeline(serving: list[bool]) -> tuple[Pipeline, list[Dispatcher]]:
    built: list[Dispatcher] = []

    def build() -> Dispatcher:
        built.append(Server("built").dispatcher)  # a real dispatcher, one per build
        return built[-1]

    return Pipeline(Server("host"), build, lambda: serving[0]), built


def test_the_dispatcher_is_built_once_and_again_after_the_chain_changes() -> None:
    pipeline, built = _pipeline([False])
    first = pipeline.dispatcher()
    assert pipeline.dispatcher() is first and built == [first]
    logger = Middleware()
    pipeline.add([logger])
    assert pipeline.chain == [logger] and pipeline.built is None
    assert pipeline.dispatcher() is not first and len(built) == 2


def test_middleware_added_while_serving_is_refused_and_the_chain_kept() -> None:
    serving = [False]
    pipeline, _ = _pipeline(serving)
    first = Middleware()
    pipeline.add([first])
    held = pipeline.dispatcher()
    serving[0] = True
    with pytest.raises(RuntimeError, match="add middleware before serving"):
        pipeline.add([Middleware()])
    assert pipeline.chain == [first] and pipeline.dispatcher() is held


def test_put_first_puts_metrics_outermost_once() -> None:
    pipeline, _ = _pipeline([False])
    inner, metrics = Middleware(), Middleware()
    pipeline.add([inner])
    pipeline.dispatcher()
    pipeline.put_first(metrics)
    assert pipeline.chain == [metrics, inner] and pipeline.built is None
    held = pipeline.dispatcher()
    pipeline.put_first(metrics)  # a second serve_http with the same Metrics
    assert pipeline.chain == [metrics, inner] and pipeline.built is held


def test_server_info_is_made_once_and_again_when_a_field_is_set() -> None:
    app = Server("notes", "1.2.0", title="Notes")
    info = app.server_info()
    assert info == {"name": "notes", "version": "1.2.0", "title": "Notes"}
    assert app.server_info() is info
    app.website_url = "https://notes.example"
    app.icons = [{"src": "https://notes.example/icon.png"}]
    assert app.website_url == "https://notes.example"
    assert app.server_info() == {
        "name": "notes",
        "version": "1.2.0",
        "title": "Notes",
        "icons": [{"src": "https://notes.example/icon.png"}],
        "websiteUrl": "https://notes.example",
    }
    app.title = None
    assert "title" not in app.server_info() and app.name == "notes"
