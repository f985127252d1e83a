"""The herd plot against N draws one series per design, the consumer protocol's among them, each in its own
colour."""

from __future__ import annotations

from typing import Any

from harness.report import plots


def _metrics(impls: list[str]) -> Any:
    sizes = {"n1000": 1000, "n10000": 10000}
    return {
        "run": {"implementations": impls},
        "cases": [{"label": c, "members": n} for c, n in sizes.items()],
        "units": [{"impl": i, "case": c} for i in impls for c in sizes],
        "aggregates": [
            {
                "impl": i,
                "case": c,
                "trigger": "#1 join",
                "metric": "coordination_requests",
                "mean": float(n * (k + 1)),
                "ci95": [float(n * (k + 1)), float(n * (k + 1))],
            }
            for k, i in enumerate(impls)
            for c, n in sizes.items()
        ],
    }


def test_each_design_has_a_colour_of_its_own() -> None:
    designs = ["legacy_zk", "coordinator", "consumer"]
    colours = {plots._color(i, designs) for i in designs}  # pyright: ignore[reportPrivateUsage]
    assert len(colours) == 3


def test_the_herd_plot_draws_the_consumer_protocol_alone_or_beside_the_others(monkeypatch: Any) -> None:
    drawn: list[Any] = []
    real = plots.Figure.subplots

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        axes = real(self, *args, **kwargs)
        for ax in axes.flat:
            orig = ax.errorbar

            def errorbar(*a: Any, _orig: Any = orig, **k: Any) -> Any:
                drawn.append(k.get("label"))
                return _orig(*a, **k)

            ax.errorbar = errorbar
        return axes

    monkeypatch.setattr(plots.Figure, "subplots", spy)
    assert plots.herd_plot(_metrics(["consumer"])) is not None
    assert drawn == ["consumer"]
    drawn.clear()
    assert plots.herd_plot(_metrics(["legacy_zk", "coordinator", "consumer"])) is not None
    assert drawn == ["legacy_zk", "coordinator", "consumer"]
