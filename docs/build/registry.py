"""Every artefact of the docs, by name."""

from __future__ import annotations

from docs.build import (
    bert_study,
    demo_timeline,
    memory_figures,
    validation_figure,
    view_screenshot,
)
from docs.build.artefacts import Artefact

ARTEFACTS: dict[str, Artefact] = {
    a.name: a
    for a in (
        Artefact(
            "demo_timeline",
            (demo_timeline.FIGURE,),
            demo_timeline.run,
            demo_timeline.draw,
            cheap=True,
        ),
        Artefact("bert_pod16", tuple(bert_study.FIGURES), bert_study.run, bert_study.draw, True),
        *(
            Artefact(
                prefix,
                (f"{prefix}_liveness", f"{prefix}_tiles"),
                memory_figures.runner(prefix),
                memory_figures.drawer(prefix),
                cheap=True,
            )
            for prefix in memory_figures.RUNS
        ),
        # Needs Chromium, so only the slow docs test regenerates it.
        Artefact(
            "view_screenshot",
            (view_screenshot.FIGURE,),
            view_screenshot.run,
            view_screenshot.draw,
            cheap=False,
        ),
        Artefact(
            "validation",
            (validation_figure.FIGURE,),
            validation_figure.run,
            validation_figure.draw,
            cheap=True,
        ),
    )
}


def by_name(names: list[str] | None) -> list[Artefact]:
    """The artefacts called ``names`` (all when None or empty).

    Raises:
        ValueError: for a name that is no artefact.
    """
    if not names:
        return list(ARTEFACTS.values())
    unknown = [n for n in names if n not in ARTEFACTS]
    if unknown:
        raise ValueError(f"no doc artefact {unknown}; there are {sorted(ARTEFACTS)}")
    return [ARTEFACTS[n] for n in names]
